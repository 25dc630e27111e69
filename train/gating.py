"""Gating (``--mode agz``): a candidate checkpoint plays the current best and replaces it only if
it wins.  AlphaGo Zero's rule (55% of 400 games) with Leela Zero's early stop (SPRT).

**The rule** (:class:`GateRule`), applied after every counted game, first match wins:

1. the threshold is out of reach: even winning every game still allowed (up to ``max_games``)
   leaves the candidate below ``threshold`` -> reject ("early fail");
2. the threshold is guaranteed: the candidate's points already reach ``threshold * max_games``
   -> promote;
3. SPRT (:func:`train.match.stats.sprt`, H0 elo = ``elo0`` against H1 elo = ``elo1``): accept ->
   promote, reject -> reject.

At ``max_games`` counted games rule 1 or 2 always applies, so a decision never needs more.
Inside 400 games an SPRT accept (with the defaults 0/35/0.05/0.05) needs a score above 55%,
so the early stop never promotes a candidate that the plain rule would fail at that point.

**Counting without bias** (:class:`GateCoordinator`).  Short games return first (a candidate
that resigns quickly or wins by a quick capture race would have its results counted early) and
some games never return (a dead or stuck worker).  So games are numbered in the order they are
first started, number ``i`` always has the same colours and seed, and a result counts only once
every lower number has been counted: the tally is always a prefix of the numbers, the games a
one-at-a-time match would have counted, whatever the speeds and whoever died.

- An attempt is **declared lost** when its worker dies (at once) or when it passes its deadline
  (``max(deadline_min, deadline_factor * median duration of the games returned so far)``, doubled
  for each earlier lost attempt of the same number).  Its number is **played again** (any live
  worker; the lowest number first) and the order waits for it: a lost game is replaced, never
  skipped.  Skipping would bias the count: a game in flight at a random moment is more often a
  long one, and long games are more often losses when wins are quick, so the games a dead
  worker takes with it lean towards one result (``python -m tools.checks.gate_faults`` measures it).
- A replay stands in for the lost attempt only if it is **longer than the lost attempt had
  played** (in moves, from the workers' progress reports): the lost game was known to last
  beyond that many moves, so a replay that ended sooner is a different kind of game; it is
  discarded (``short``) and the number is played again.  With this rule the counted result of a
  number has the distribution of an undisturbed game even when a replay does not repeat the
  lost game move for move (batching and random symmetries make play vary), provided the moment
  a worker dies does not depend on its games.  A replay that does repeat the game passes it at
  once.
- A result that arrives after its attempt was declared lost is ignored (``late``): the number
  is someone else's now.
- **Bounded**: a number lost ``max_losses`` times (3) ends the match as VOID with the reason;
  the best model stays and the decision file says why.  A number whose replays were discarded
  ``max_short`` times (20; a lost game far in the tail of the lengths) takes the next one
  whatever its length (``waived``), so the rule costs at most that many games per lost game.  Only numbers below ``max_games`` are handed out (the rule
  always decides within them), and games still running at the decision are abandoned.

**Workers** (:class:`GateMatch`): threads, each with its own :class:`train.games.pool.GamePool` that
holds both networks, so one step makes one forward pass per network over all its games (the C
core and torch release the GIL).  Colours alternate with the start order (even games: candidate
Black), searches have no Dirichlet noise, the first ``gate_temperature_moves`` plies are sampled
at ``gate_temperature`` (otherwise two deterministic nets replay the same few games), later
moves take the most visited child.  The result that counts for each number (one per number,
replays included; not a late or short one) is written as an SGF (PB/PW = model ids) to
``gating/<candidate>/g<number>.sgf`` in the run directory.

Stage process: ``python -m train.gating --run-dir DIR`` (started by train.loop in agz mode).
Async pipeline: it gates the newest undecided checkpoint newer than the best (skipping older
ones); sync pipeline: the candidate named by the pipeline phase.  A promotion rewrites
``models/best.json`` (atomically) before the decision file, so a kill between the two never
leaves a promoted model unused.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine.core import BLACK, WHITE, Rules
from train import stage
from train.config import CONTINUE, PROMOTE, REJECT, GateRule, RunConfig
from train.games.pool import Agent, FinishedGame, GamePool, GameSpec, PlaySettings
from train.games.records import write_sgf
from train.rundir import RunDir
from train.selfplay import make_agent
from train.match.stats import elo_difference

VOID = "void"          # a game number failed too often: no decision


# ---------------------------------------------------------------------------------------------
# The rule: train.config.GateRule, a training run's --gate-* options


@dataclass
class Decision:
    """A gating verdict and the counts it rests on."""

    verdict: str                 # PROMOTE | REJECT | VOID (a game number failed too often: no decision)
    reason: str
    wins: int
    losses: int
    draws: int
    counted: int                 # games counted: game numbers 0 .. counted-1, none skipped
    started: int                 # game numbers handed out
    returned: int                # results accepted (counted, or returned after the decision)
    lost: int                    # attempts declared lost (dead worker or deadline)
    replayed: int                # attempts started under a game number played before
    short: int                   # replays discarded: no longer than the attempt they stand in for
    waived: int                  # game numbers whose next replay counts whatever its length
    late: int                    # results of attempts declared lost
    llr: float
    sprt_lower: float
    sprt_upper: float

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.counted if self.counted else math.nan

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        est = elo_difference(self.wins, self.losses, self.draws)
        d.update(score=self.score, elo=_finite(est.elo), elo_lower=_finite(est.lower),
                 elo_upper=_finite(est.upper))
        return d


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


# ---------------------------------------------------------------------------------------------
# Counting in start order


@dataclass
class _Game:
    index: int
    worker: int
    started: float
    state: str = "playing"       # playing | waiting (to be played again) | returned
    score: float | None = None
    moves: int = 0               # the playing attempt's moves so far (progress reports)
    floor: int = 0               # most moves an attempt had played when it was lost
    losses: int = 0              # attempts lost
    shorts: int = 0              # replays discarded as too short


class GateCoordinator:
    """Hands out gating games by number and counts their results in number order (see the
    module docstring).  Thread-safe; ``clock`` is injectable for tests.

    ``max_losses``: attempts of one game number that may be lost; one more and the match ends
    VOID with the reason.  ``max_short``: its replays that may be discarded as too short; the
    next one counts whatever its length (``waived``)."""

    def __init__(self, rule: GateRule, deadline_min: float = 120.0, deadline_factor: float = 4.0,
                 max_losses: int = 3, max_short: int = 20, clock: Callable[[], float] = time.monotonic):
        if max_losses < 1 or max_short < 1:
            raise ValueError("need max_losses >= 1 and max_short >= 1")
        self.rule = rule
        self.deadline_min = float(deadline_min)
        self.deadline_factor = float(deadline_factor)
        self.max_losses, self.max_short = int(max_losses), int(max_short)
        self.clock = clock
        self.games: list[_Game] = []
        self.sequence: list[float] = []       # counted scores, in number order
        self.counted_indices: list[int] = []
        self.decision: Decision | None = None
        self.wins = self.losses = self.draws = 0
        self.returned = self.lost = self.replayed = self.short = self.waived = self.late = 0
        self._next = 0                        # first game number not yet counted
        self._waiting: list[int] = []         # game numbers to play again
        self._stale: dict[int, set[int]] = {}   # worker -> its lost attempts it may still hold
        self._durations: list[float] = []
        self._lock = threading.Lock()

    # -- workers ----------------------------------------------------------------------------
    def claim(self, worker: int) -> int | None:
        """A game number for ``worker`` (even: candidate Black): the lowest one waiting to be
        played again, else the next new one; None when the match is decided or every number
        up to ``max_games`` is handed out.  A worker never gets a number whose lost attempt it
        may still hold (until :meth:`lost_games` has told it to drop it)."""
        with self._lock:
            if self.decision is not None:
                return None
            stale = self._stale.get(worker, ())
            again = [i for i in self._waiting if i not in stale]
            if again:
                index = min(again)
                self._waiting.remove(index)
                g = self.games[index]
                g.state, g.worker, g.started, g.moves = "playing", worker, self.clock(), 0
                self.replayed += 1
                return index
            if len(self.games) >= self.rule.max_games:
                return None
            index = len(self.games)
            self.games.append(_Game(index, worker, self.clock()))
            return index

    def progress(self, worker: int, moves: dict[int, int]) -> None:
        """Records the moves played so far in ``worker``'s games in flight (number -> moves)."""
        with self._lock:
            for index, n in moves.items():
                g = self.games[index]
                if g.state == "playing" and g.worker == worker:
                    g.moves = max(g.moves, int(n))

    def report(self, index: int, score: float, worker: int | None = None, moves: int | None = None) -> bool:
        """Records the candidate's ``score`` (1 win, 0.5 draw, 0 loss) in game ``index``, played
        by ``worker`` in ``moves`` moves (None: the playing attempt, length unchecked).  Returns
        True when it is that game number's result; False for the result of an attempt declared
        lost (``late``) or a replay no longer than the attempt it stands in for (``short``: the
        number is played again)."""
        with self._lock:
            g = self.games[index]
            if g.state != "playing" or (worker is not None and g.worker != worker):
                self.late += 1
                return False
            self._durations.append(self.clock() - g.started)
            if moves is not None and moves <= g.floor and g.shorts < self.max_short:
                g.shorts += 1
                self.short += 1
                if g.shorts == self.max_short:
                    self.waived += 1
                self._again(g, "", False)
                return False
            g.state, g.score = "returned", float(score)
            self.returned += 1
            self._advance()
            return True

    # -- failures ---------------------------------------------------------------------------
    def deadline(self) -> float:
        """Seconds a game's first attempt may run before it is declared lost (each later
        attempt of the same number gets twice its predecessor's)."""
        with self._lock:
            return self._deadline()

    def _deadline(self) -> float:
        if not self._durations:
            return self.deadline_min
        return max(self.deadline_min, self.deadline_factor * statistics.median(self._durations))

    def expire(self) -> list[int]:
        """Declares lost every attempt past its deadline; returns their game numbers."""
        with self._lock:
            now, limit = self.clock(), self._deadline()
            gone = [g.index for g in self.games[self._next:]
                    if g.state == "playing" and now - g.started > limit * 2 ** g.losses]
            for i in gone:
                self._stale.setdefault(self.games[i].worker, set()).add(i)
            self._lose(gone)
            return gone

    def worker_died(self, worker: int) -> list[int]:
        """Declares lost every game ``worker`` was playing (a replacement under the same
        worker number holds none of them); returns their numbers."""
        with self._lock:
            gone = [g.index for g in self.games if g.state == "playing" and g.worker == worker]
            self._stale.pop(worker, None)
            self._lose(gone)
            return gone

    def lost_games(self, worker: int) -> set[int]:
        """Numbers of ``worker``'s attempts declared lost that it may still hold; the caller
        drops them (abandons the games), after which the worker may be given them again."""
        with self._lock:
            return self._stale.pop(worker, set())

    def _lose(self, indices: list[int]) -> None:
        for i in indices:
            g = self.games[i]
            g.losses += 1
            g.floor = max(g.floor, g.moves)
            self.lost += 1
            self._again(g, f"game {i} lost {g.losses} times (dead gating clients or deadline)",
                        g.losses >= self.max_losses)

    def _again(self, g: _Game, why: str, give_up: bool) -> None:
        """Game ``g`` waits to be played again, or (``give_up``) the match ends VOID."""
        g.state = "waiting"
        self._waiting.append(g.index)
        if give_up and self.decision is None:
            self.decision = self._decision(VOID, f"{why}: no decision, the best model stays")

    # -- counting ---------------------------------------------------------------------------
    def _advance(self) -> None:
        """Counts the results that the number order now allows, deciding as soon as it can."""
        while self.decision is None and self._next < len(self.games):
            g = self.games[self._next]
            if g.state != "returned":
                return
            self._next += 1
            assert g.score is not None
            self.sequence.append(g.score)
            self.counted_indices.append(g.index)
            if g.score >= 1.0:
                self.wins += 1
            elif g.score <= 0.0:
                self.losses += 1
            else:
                self.draws += 1
            verdict, reason, _ = self.rule.decide(self.wins, self.losses, self.draws)
            if verdict != CONTINUE:
                self.decision = self._decision(verdict, reason)

    def _decision(self, verdict: str, reason: str) -> Decision:
        test = self.rule.decide(self.wins, self.losses, self.draws)[2]
        return Decision(verdict, reason, self.wins, self.losses, self.draws, len(self.sequence), len(self.games),
                        self.returned, self.lost, self.replayed, self.short, self.waived, self.late, test.llr, test.lower,
                        test.upper)

    @property
    def started(self) -> int:
        return len(self.games)

    def snapshot(self) -> Decision:
        """The counts so far as a Decision (verdict CONTINUE until decided)."""
        with self._lock:
            return self.decision if self.decision is not None else self._decision(CONTINUE, "")


# ---------------------------------------------------------------------------------------------
# Playing a match with worker threads


class GateError(RuntimeError):
    """Gating cannot reach a decision (every worker died)."""


def candidate_score(fg: FinishedGame, candidate: Agent) -> float:
    """1, 0.5 or 0: the candidate's result in a finished gating game."""
    color = BLACK if fg.spec.black is candidate else WHITE
    if fg.winner == color:
        return 1.0
    return 0.5 if fg.winner not in (BLACK, WHITE) else 0.0


class GateMatch:
    """One gating match: ``workers`` threads, each running a GamePool of its share of ``slots``
    games with its own (candidate, best) agents from ``make_agents(worker)``.

    ``on_game(index, finished_game, counted)`` is called (from the worker thread) for every
    finished game; ``counted`` is True for the one result of each game number (write its SGF
    then) and False for a late or short attempt.  ``step_hook(worker, pool)`` is called before every
    pool step (tests inject slow and dead workers with it).  ``stop()`` abandons the match.
    """

    def __init__(self, make_agents: Callable[[int], tuple[Agent, Agent]], rule: GateRule, size: int,
                 rules: Rules, settings: PlaySettings, *, workers: int = 2, slots: int = 32,
                 batch: int = 256, max_leaves_per_search: int = 8, batch_ramp: int = 0,
                 deadline_min: float = 120.0,
                 deadline_factor: float = 4.0, max_losses: int = 3, max_short: int = 20, seed: int = 0,
                 on_game: Callable[[int, FinishedGame, bool], None] | None = None,
                 step_hook: Callable[[int, GamePool], None] | None = None,
                 stop: Callable[[], bool] | None = None, poll_s: float = 0.02,
                 clock: Callable[[], float] = time.monotonic):
        if workers < 1 or slots < workers:
            raise ValueError("need workers >= 1 and slots >= workers")
        self.make_agents = make_agents
        self.size, self.rules, self.settings = size, rules, settings
        self.workers = int(workers)
        self.slots = [slots // workers + (1 if w < slots % workers else 0) for w in range(workers)]
        self.batch, self.max_leaves, self.batch_ramp = int(batch), int(max_leaves_per_search), int(batch_ramp)
        self.seed = int(seed)
        self.on_game = on_game
        self.step_hook = step_hook
        self.stop = stop
        self.poll_s = poll_s
        self.coordinator = GateCoordinator(rule, deadline_min=deadline_min, deadline_factor=deadline_factor,
                                           max_losses=max_losses, max_short=max_short, clock=clock)
        self.finished_games = 0          # games played to the end (counted or not)
        self.errors: dict[int, str] = {}
        self._done = threading.Event()
        self._count_lock = threading.Lock()

    def _spec(self, index: int, candidate: Agent, best: Agent) -> GameSpec:
        seed = int(np.random.SeedSequence([self.seed, index]).generate_state(1)[0])
        black, white = (candidate, best) if index % 2 == 0 else (best, candidate)
        return GameSpec(self.size, self.rules, black, white, self.settings, seed=seed, allow_resign=True,
                        tag=index)

    def _work(self, w: int) -> None:
        candidate, best = self.make_agents(w)
        coord = self.coordinator

        def next_game(slot) -> GameSpec | None:
            if self._done.is_set():
                return None
            index = coord.claim(w)
            return None if index is None else self._spec(index, candidate, best)

        pool = GamePool(self.slots[w], next_game, batch=self.batch, max_leaves_per_search=self.max_leaves,
                        batch_ramp=self.batch_ramp)
        while not self._done.is_set():
            if self.step_hook is not None:
                self.step_hook(w, pool)
            for fg in pool.step():
                index = fg.spec.tag
                counted = coord.report(index, candidate_score(fg, candidate), worker=w, moves=len(fg.moves))
                with self._count_lock:
                    self.finished_games += 1
                if self.on_game is not None:
                    self.on_game(index, fg, counted)
            lost = coord.lost_games(w)
            for slot in pool.active():
                if slot.spec is not None and slot.spec.tag in lost:
                    pool.abandon(slot.index, why="lost")
            coord.progress(w, {s.spec.tag: len(s.moves) for s in pool.active() if s.spec is not None})
            if pool.idle:
                time.sleep(self.poll_s)
        pool.abandon_all()

    def _guard(self, w: int) -> None:
        try:
            self._work(w)
        except BaseException as exc:          # the thread dies; the coordinator hears of it
            self.errors[w] = f"{type(exc).__name__}: {exc}"

    def run(self) -> Decision | None:
        """Plays until a decision (returned) or ``stop()`` (None).  Raises GateError when every
        worker has died without a decision."""
        threads = [threading.Thread(target=self._guard, args=(w,), name=f"gate-w{w}", daemon=True)
                   for w in range(self.workers)]
        for t in threads:
            t.start()
        dead: set[int] = set()
        coord = self.coordinator
        decision = None
        try:
            while True:
                coord.expire()
                for w, t in enumerate(threads):
                    if w not in dead and not t.is_alive():
                        dead.add(w)
                        coord.worker_died(w)
                decision = coord.decision
                if decision is not None:
                    return decision
                if len(dead) == self.workers:
                    errors = "; ".join(f"w{w}: {e}" for w, e in sorted(self.errors.items()))
                    raise GateError(f"every gating worker died: {errors or 'no error recorded'}")
                if self.stop is not None and self.stop():
                    return None
                time.sleep(self.poll_s)
        finally:
            self._done.set()
            deadline = time.monotonic() + 2.0
            for t in threads:              # a stuck worker is left behind (daemon thread)
                t.join(timeout=max(0.0, deadline - time.monotonic()))


# ---------------------------------------------------------------------------------------------
# The stage: gating checkpoints of a run directory


def gate_settings(cfg: RunConfig) -> PlaySettings:
    """Gating's play settings: the run's gating PlaySettings (``cfg.gate_play``), with self-play's
    visits where it names none, its opening moves and the move cap on the run's board.  Its
    players search with :meth:`RunConfig.gate_search_params` (no noise, ``--gate-temperature``)."""
    return dataclasses.replace(cfg.gate_play, visits=cfg.gate_play.visits or cfg.play.visits,
                               temperature_moves=cfg.gate_temperature_plies(), max_moves=cfg.move_cap())


def pick_candidate(rd: RunDir) -> tuple[int, Path] | None:
    """Async pipeline: the newest checkpoint newer than the best, unless already decided."""
    latest, best = rd.latest_model(), rd.best_model()
    if latest is None or best is None or latest[0] <= best[0]:
        return None
    if rd.read_decision(rd.model_id(latest[1])) is not None:
        return None
    return latest


def gate_candidate(rd: RunDir, cfg: RunConfig, candidate: tuple[int, Path], *, stop: Callable[[], bool] | None = None,
                   generation: int | None = None, device: str | None = None,
                   step_hook: Callable[[int, GamePool], None] | None = None,
                   make_match: Callable[..., GateMatch] | None = None) -> dict[str, Any] | None:
    """Plays ``candidate`` against the run's best, writes the SGFs, the decision (and the new
    best pointer on a promotion) and a metrics record; returns the decision record, or None if
    ``stop()`` interrupted the match.  ``make_match(candidate, best, *args, **kwargs)`` builds
    the match instead of ``GateMatch(*args, **kwargs)`` (Ray: gating workers on other machines,
    :class:`train.cluster.gate.RemoteGateMatch`)."""
    best = rd.best_model()
    cand_id, best_id = rd.model_id(candidate[1]), rd.model_id(best[1])
    written = candidate[1].stat().st_mtime
    seeds = np.random.SeedSequence([cfg.seed, candidate[0], 7]).generate_state(2 * cfg.gate_workers)

    def make_agents(w: int) -> tuple[Agent, Agent]:
        params = cfg.gate_search_params()
        return (make_agent(candidate[1], cfg, seed=int(seeds[2 * w]), device=device, params=params),
                make_agent(best[1], cfg, seed=int(seeds[2 * w + 1]), device=device, params=params))

    def on_game(index: int, fg: FinishedGame, counted: bool) -> None:
        if not counted:          # a late or short attempt: the number's own result is written
            return
        write_sgf(rd.gating_sgf_path(cand_id, index), fg.record(), game_name=f"{cand_id} gating game {index}")

    args = (make_agents, cfg.gate, cfg.board_size, cfg.rules,
            gate_settings(cfg))
    kwargs = dict(workers=cfg.gate_workers, slots=cfg.gate_parallel_games,
                  batch=cfg.gate_batch or cfg.batch, max_leaves_per_search=cfg.max_leaves_per_search,
                  batch_ramp=cfg.batch_ramp, deadline_min=cfg.gate_deadline_min, deadline_factor=cfg.gate_deadline_factor,
                  seed=cfg.seed * 1_000_003 + candidate[0], on_game=on_game, step_hook=step_hook, stop=stop)
    match = GateMatch(*args, **kwargs) if make_match is None else make_match(candidate, best, *args, **kwargs)
    t0 = time.time()
    decision = match.run()
    if decision is None:
        return None
    now = time.time()
    rec = {"candidate": cand_id, "candidate_step": candidate[0], "best": best_id, "best_step": best[0],
           **decision.to_dict(), "games_played": match.finished_games, "match_seconds": round(now - t0, 3),
           "checkpoint_time": written, "decided": now, "lag_s": round(now - written, 3),
           "generation": generation, "worker_errors": match.errors or None}
    if decision.verdict == PROMOTE:
        rd.set_best(candidate[0], previous=best_id)
    rd.write_decision(cand_id, rec)
    rd.append_metrics({"source": "gate", "event": "decision", **rec})
    return rec


def next_candidate(rd: RunDir, phase: dict[str, Any] | None) -> tuple[tuple[int, Path] | None, int | None]:
    """(candidate to gate now or None, its sync generation): async pipeline (``phase`` None):
    :func:`pick_candidate`; sync: the undecided candidate the "gate" phase names."""
    if phase is None:
        return pick_candidate(rd), None
    if phase.get("phase") == "gate" and phase.get("candidate") is not None:
        path = rd.model_path(int(phase["candidate"]))
        if path.is_file() and rd.read_decision(rd.model_id(path)) is None:
            return (int(phase["candidate"]), path), phase.get("generation")
    return None, None


def run(run_dir: str, parent_pid: int | None = None) -> int:
    """The gating stage (see the module docstring).  SIGTERM: abandon the match and exit;
    SIGUSR1: exit once nothing is left to gate."""
    start = stage.stage_start("gate", run_dir, parent_pid)
    rd, cfg, stop, device = start.rd, start.cfg, start.stop, start.device
    print(f"gate: {cfg.gate_workers} workers, {cfg.gate_parallel_games} games in flight, "
          f"{cfg.gate.threshold:.0%} of {cfg.gate.max_games}, SPRT({cfg.gate.elo0:g}, {cfg.gate.elo1:g})", flush=True)
    last = [time.time()]

    def progress(worker: int, pool: GamePool) -> None:
        # the match's CPU seconds and FLOPs reach the metrics (and the run's compute budget)
        # while it is played, not only at its decision
        if time.time() - last[0] >= cfg.metrics_every:
            last[0] = time.time()
            rd.append_metrics({"source": "gate", "event": "progress"})

    while not stop:
        phase = rd.read_pipeline()
        candidate, generation = next_candidate(rd, phase)
        if candidate is None:
            if stop.drain:
                break
            time.sleep(0.1 if phase is not None else 0.5)
            continue
        rec = gate_candidate(rd, cfg, candidate, stop=lambda: bool(stop), generation=generation, device=device,
                             step_hook=progress)
        if rec is not None:
            print(f"gate: {rec['candidate']} vs {rec['best']}: {rec['verdict']} ({rec['reason']}; "
                  f"+{rec['wins']} ={rec['draws']} -{rec['losses']}, {rec['games_played']} games played, "
                  f"{rec['lost']} lost, lag {rec['lag_s']:.1f}s)", flush=True)
    rd.append_metrics({"source": "gate", "event": "stop"})
    print("gate: stopped", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    return stage.main("python -m train.gating", "The gating stage of an agz run (normally started by train.loop).",
                      run, argv)


if __name__ == "__main__":
    sys.exit(main())
