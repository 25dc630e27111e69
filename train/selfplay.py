"""The self-play stage: many games at once through :class:`train.games.pool.GamePool`, every finished
game written to the run directory (SGF + training record), the latest checkpoint picked up as
soon as the trainer writes it.

- **Batching**: ``parallel_games`` games advance together; each step makes one ``collect_many``
  C call over all their trees, one forward pass of ``batch`` leaves and one ``backup_many``.
- **Exploration**: Dirichlet noise (``--noise-epsilon``, 0.25) at the root of every full search;
  the first ``temperature_moves`` moves sample visits^(1/T) (``--temperature``, 1); later moves
  take the most visited child.  These are the agent's search parameters
  (:meth:`train.config.RunConfig.search_params`); the game pool turns them off where a move
  calls for it.
- **Targets**: the root visit distribution of each full search is the policy target; with
  playout cap randomisation (``cheap_visits``) the other moves get a cheap search (no noise) and
  are played but not trained on.  The search tree is reused from move to move.
- **Resignation** (AlphaGo Zero): a share (``no_resign_fraction``, 10%) of games may never
  resign and are played out.  In them we record, for every threshold, whether the eventual winner
  ever fell below it (a false positive) and who would have resigned first;
  :class:`ResignCalibrator` picks the highest winrate threshold at which at most ``resign_fp_target``
  (5%) of those games would have had a false resignation AND at most 5% of the resignations
  would have been false.  The false-positive rate measured on the no-resign games against the
  threshold in force while they were played is reported in the metrics.

- **Model**: the latest checkpoint (``--mode az``) or the current best (``agz``), polled every
  2 s; games in flight when it changes follow ``--on-new-model`` (discard / finish / switch, see
  :meth:`train.games.pool.GamePool.apply_new_model`).
- **Sync pipeline**: self-play plays while the phase (RUN_DIR/pipeline.json) is "selfplay" and the
  run holds fewer games than the phase's ``until_games``; otherwise it waits, games in flight
  paused, and counts the time (``wait_s``).
- **Accounting** (cumulative per session in every metrics record): games and training positions
  written, leaves sent to evaluators, those thrown away by discards (``discarded_leaves``) and
  by switches cutting a search short (``switched_leaves``), model adoptions and their lag
  (checkpoint written -> self-play plays it), time spent waiting.

Stage process: ``python -m train.selfplay --run-dir DIR [--worker K]`` (started by train.loop).
``python -m tools.bench.selfplay ...`` measures throughput without a run directory.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections import deque
from typing import Any

import numpy as np

from engine.nets import weights
from engine.core import BLACK, WHITE, SearchParams, winrate_of
from engine.nets.loading import load_evaluator
from train import stage
from train.config import RunConfig
from train.stage import StopFlag, stage_device, stage_start
from train.games.pool import Agent, FinishedGame, GamePool, GameSpec, PlaySettings, Slot
from train.games.records import GameRecord, read_npz, write_npz, write_sgf
from train.rundir import GameName, RunDir


class ResignCalibrator:
    """Chooses the resignation winrate from recent no-resign games (see the module docstring).

    ``threshold`` is None (nobody resigns) until ``min_games`` no-resign games are known; it is a
    winrate, on a grid of 0.005 up to ``cap``.  The games' root values become winrates once, as
    they are added (:func:`engine.core.winrate_of`)."""

    def __init__(self, fp_target: float = RunConfig.resign_fp_target, window: int = 200,
                 min_games: int = RunConfig.resign_min_games, cap: float = RunConfig.resign_max_winrate):
        self.fp_target = fp_target
        self.min_games = min_games
        self.cap = cap
        self.games: deque[tuple[np.ndarray, np.ndarray, int, float]] = deque(maxlen=window)
        self.threshold: float | None = None
        self.grid = np.round(np.arange(0.005, cap + 1e-9, 0.005), 3)

    def add(self, rec: GameRecord, calibrate: bool = True) -> None:
        """Takes a no-resign game into account (other games are ignored)."""
        if not rec.no_resign:
            return
        self.games.append((winrate_of(rec.values), rec.colors.astype(np.int8), int(rec.winner),
                           float(rec.resign_winrate)))
        if calibrate:
            self.calibrate()

    def rates(self, threshold: float) -> tuple[float, float, int]:
        """At ``threshold``: (share of no-resign games where the eventual winner fell below it,
        share of would-be resignations that were false, would-be resignations)."""
        winner_below, false, resigns = self.rates_at(np.array([threshold]))
        return float(winner_below[0]), float(false[0]), int(resigns[0])

    def rates_at(self, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`rates` at every one of ``thresholds`` at once, one pass per game: (share of
        games whose winner fell below, share of false resignations, resignations), an entry
        per threshold.  A game's running minimum says who would have resigned first at each."""
        winner_below = np.zeros(len(thresholds))
        resigns = np.zeros(len(thresholds))
        false = np.zeros(len(thresholds))
        for winrates, colors, winner, _ in self.games:
            if not len(winrates):
                continue                                  # no move: nobody fell below anything
            decided = winner in (BLACK, WHITE)
            lowest = winrates[colors == winner].min(initial=np.inf) if decided else winrates.min(initial=np.inf)
            winner_below += lowest < thresholds
            running_min = np.minimum.accumulate(winrates)
            first = np.searchsorted(-running_min, -thresholds, side="right")   # first move below each
            resigned = first < len(winrates)
            resigns += resigned
            if decided:
                false += resigned & (colors[np.minimum(first, len(winrates) - 1)] == winner)
            else:
                false += resigned                                           # in a draw any resignation is wrong
        n = max(1, len(self.games))
        return winner_below / n, np.divide(false, resigns, out=np.zeros(len(thresholds)), where=resigns > 0), resigns

    def calibrate(self) -> None:
        if len(self.games) < self.min_games:
            self.threshold = None
            return
        fp_games, fp_resigns, _ = self.rates_at(self.grid)
        ok = np.flatnonzero((fp_games <= self.fp_target) & (fp_resigns <= self.fp_target))
        self.threshold = float(self.grid[ok[-1]]) if len(ok) else None

    def measured_fp_rate(self) -> tuple[float | None, int]:
        """(share of no-resign games whose winner fell below the threshold that was in force
        while they were played, number of such games); (None, 0) before any threshold."""
        hits = 0
        n = 0
        for winrates, colors, winner, thr in self.games:
            if math.isnan(thr):
                continue
            n += 1
            mask = colors == winner if winner in (BLACK, WHITE) else np.ones(len(winrates), bool)
            hits += bool((winrates[mask] < thr).any())
        return (hits / n if n else None), n


def _log_stderr(text: str) -> None:
    print(f"selfplay: {text}", file=sys.stderr, flush=True)


def make_agent(path, cfg: RunConfig, seed: int, *, params: SearchParams, device: str | None = None) -> Agent:
    """An agent for the checkpoint at ``path``: a TorchEvaluator (random symmetry per
    evaluation, cache) searching with ``params``: self-play's (:meth:`RunConfig.search_params`),
    or, where the run's checkpoints play each other, gating's
    (:meth:`RunConfig.gate_search_params`: no noise, ``--gate-temperature``)."""
    # Our own checkpoints only (weights.load); the precision measured at a batch of at most 128.
    ev = load_evaluator(path, device, cfg.board_size, cfg.inference_dtype, batch=min(cfg.batch, 128),
                        seed=seed, symmetries="random", cache_size=cfg.cache_size, log=_log_stderr,
                        log_once=True, net=weights.load(path), cuda_graphs=cfg.selfplay_cuda_graphs)
    return Agent(RunDir.model_id(path), ev, params)


def play_settings(cfg: RunConfig) -> PlaySettings:
    return dataclasses.replace(cfg.play, temperature_moves=cfg.temperature_plies(), resign=0.0,
                               max_moves=cfg.move_cap())


class SelfPlayWorker:
    """One self-play process's state: pool, agent, calibrator, counters."""

    def __init__(self, rd: RunDir, cfg: RunConfig, worker: int = 0, max_games: int | None = None,
                 stop: StopFlag | None = None):
        self.rd, self.cfg, self.worker = rd, cfg, worker
        self.max_games = max_games
        self.stop = stop
        self.device = stage_device(cfg, "selfplay")
        self.rules = cfg.rules
        self.settings = play_settings(cfg)
        self.calibrator = ResignCalibrator(cfg.resign_fp_target, 200, cfg.resign_min_games, cfg.resign_max_winrate)
        self.seq = rd.next_game_seq(worker)
        self.games_on_disk = rd.count_games()
        self.session_start_games = self.games_on_disk
        self.started_games = 0
        self.written = 0
        self.positions_written = 0
        self.wait_s = 0.0
        self.adoptions = 0
        self.adopt_lag_sum = 0.0
        self.last_adopt_lag: float | None = None
        self.session_start = time.time()
        self.lengths: deque[int] = deque(maxlen=200)
        self.resigned: deque[bool] = deque(maxlen=200)
        self._rng = np.random.default_rng([cfg.seed, worker, self.games_on_disk, 1])
        self._known: dict[int, tuple[Any, int]] = {}
        self._retired_evals = 0
        self._load_calibration()
        latest = rd.selfplay_model(cfg.mode)
        if latest is None:
            raise FileNotFoundError(f"{rd.models}: no model to play with")
        self.model_step = latest[0]
        self.agent = make_agent(latest[1], cfg, seed=int(self._rng.integers(1 << 31)), device=self.device,
                                params=cfg.search_params())
        self.pool = GamePool(cfg.parallel_games, self._next_game, batch=cfg.batch,
                             max_leaves_per_search=cfg.max_leaves_per_search, lanes=cfg.selfplay_lanes,
                             search_threads=cfg.selfplay_search_threads, batch_ramp=cfg.batch_ramp)

    def _load_calibration(self, scan: int = 3000) -> None:
        """Reads the no-resign games among the most recent ``scan`` games on disk."""
        for _, path in self.rd.list_games()[-scan:]:
            try:
                rec = read_npz(path)
            except ValueError as exc:        # the message names the file
                print(f"selfplay: resign calibration skips game record {exc}", file=sys.stderr, flush=True)
                continue
            self.calibrator.add(rec, calibrate=False)
        self.calibrator.calibrate()
        self._update_threshold()

    def resign_threshold(self) -> float | None:
        """The calibrated resignation winrate in force (None: nobody resigns)."""
        return self.calibrator.threshold if self.cfg.allow_resign else None

    def _update_threshold(self) -> None:
        self.settings.resign = self.resign_threshold() or 0.0

    def _next_game(self, slot: Slot) -> GameSpec | None:
        if self.stop is not None and (self.stop or self.stop.drain):
            return None
        if self.max_games is not None:
            unwritten = self.pool.stats.games - self.written     # finished in this step, not yet on disk
            if self.games_on_disk + unwritten + len(self.pool.active()) >= self.max_games:
                return None
        self.started_games += 1
        seed = int(np.random.SeedSequence([self.cfg.seed, self.worker, self.session_start_games,
                                           self.started_games]).generate_state(1)[0])
        allow_resign = self.cfg.allow_resign and self._rng.random() >= self.cfg.no_resign_fraction
        return GameSpec(self.cfg.board_size, self.rules, self.agent, self.agent, self.settings,
                        seed=seed, allow_resign=allow_resign)

    def write(self, fg: FinishedGame) -> GameRecord:
        """Writes a finished game: SGF first, then the .npz that makes it count."""
        rec = fg.record()
        name = GameName(self.seq, self.worker)
        npz, sgf = self.rd.game_paths(name)
        write_sgf(sgf, rec, game_name=name.stem)
        write_npz(npz, rec)
        self.seq += 1
        self.account(rec)
        return rec

    def account(self, rec: GameRecord) -> None:
        """Counts a written game and feeds no-resign games to the resign calibration."""
        self.written += 1
        self.positions_written += rec.num_positions
        self.games_on_disk += 1
        self.lengths.append(rec.length)
        self.resigned.append(rec.resigned)
        if rec.no_resign:
            self.calibrator.add(rec)
            self._update_threshold()

    def poll_model(self) -> bool:
        """Switches to a newer checkpoint (the latest in az mode, the best in agz) if there is
        one, applying ``--on-new-model`` to the games in flight; returns whether it did."""
        latest = self.rd.selfplay_model(self.cfg.mode)
        if latest is None or latest[0] <= self.model_step:
            return False
        try:
            agent = make_agent(latest[1], self.cfg, seed=int(self._rng.integers(1 << 31)), device=self.device,
                               params=self.cfg.search_params())
        except ValueError as exc:               # a file being replaced: try again later
            print(f"selfplay: cannot load {latest[1]}: {exc}", file=sys.stderr, flush=True)
            return False
        self.model_step = latest[0]
        self.agent = agent
        self.pool.apply_new_model(agent, self.cfg.on_new_model)
        try:
            lag = time.time() - latest[1].stat().st_mtime
        except OSError:
            lag = None
        if lag is not None:
            self.adoptions += 1
            self.adopt_lag_sum += lag
            self.last_adopt_lag = lag
        return True

    def may_play(self, phase: dict[str, Any] | None) -> bool:
        """Whether the sync pipeline's ``phase`` lets self-play work now (always in async)."""
        if phase is None:
            return True
        until = phase.get("until_games")
        return phase.get("phase") == "selfplay" and (until is None or self.games_on_disk < int(until))

    def metrics(self, since: "_Mark", now_mark: "_Mark") -> dict[str, Any]:
        d = now_mark.stats.minus(since.stats)
        wall = max(1e-9, now_mark.time - since.time)
        games = now_mark.written - since.written
        evals = now_mark.net_evals - since.net_evals
        fp, fp_n = self.calibrator.measured_fp_rate()
        return {
            "source": "selfplay", "worker": self.worker, "model": self.agent.model_id,
            "games": self.games_on_disk, "session_games": self.written,
            "games_per_hour": games * 3600.0 / wall,
            "session_games_per_hour": self.written * 3600.0 / max(1e-9, now_mark.time - self.session_start),
            "positions_per_s": d.moves / wall, "train_positions_per_s": d.full_moves / wall,
            "evals_per_s": d.leaves / wall, "net_evals_per_s": evals / wall,
            "mean_batch": d.leaves / d.forward_passes if d.forward_passes else 0.0,
            "net_share": d.net_seconds / wall, "search_share": d.search_seconds / wall,
            "move_share": d.move_seconds / wall,
            "mean_game_length": float(np.mean(self.lengths)) if self.lengths else None,
            "resigned_share": float(np.mean(self.resigned)) if self.resigned else None,
            "resign_winrate": self.resign_threshold(),
            "resign_fp_rate": fp, "resign_fp_games": fp_n,
            "no_resign_games": len(self.calibrator.games),
            "in_flight": len(self.pool.active()), "abandoned": d.abandoned,
            # cumulative over this session (since the process started)
            "session_seconds": now_mark.time - self.session_start,
            "session_positions": self.positions_written, "session_moves": now_mark.stats.moves,
            "session_leaves": now_mark.stats.leaves,
            "session_discarded": now_mark.stats.discarded,
            "session_discarded_leaves": now_mark.stats.discarded_leaves,
            "session_switched_leaves": now_mark.stats.switched_leaves,
            "session_abandoned_leaves": now_mark.stats.abandoned_leaves,
            "wait_s": self.wait_s, "adoptions": self.adoptions,
            "adopt_lag_mean_s": self.adopt_lag_sum / self.adoptions if self.adoptions else None,
            "adopt_lag_s": self.last_adopt_lag,
        }

    def mark(self) -> "_Mark":
        return _Mark(time.time(), self.pool.stats.snapshot(), self.written, self._net_evals())

    def _net_evals(self) -> int:
        """Positions that went through a network (cache misses), over every evaluator used,
        including old models still finishing games."""
        live = {id(self.agent.evaluator): self.agent.evaluator}
        for slot in self.pool.active():
            for a in slot.agents.values():
                live[id(a.evaluator)] = a.evaluator
        for k in list(self._known):
            if k not in live:
                self._retired_evals += self._known.pop(k)[1]
        for k, ev in live.items():
            self._known[k] = (ev, int(getattr(ev, "positions_evaluated", 0)))
        return self._retired_evals + sum(n for _, n in self._known.values())


class _Mark:
    def __init__(self, t: float, stats, written: int, net_evals: int):
        self.time, self.stats, self.written, self.net_evals = t, stats, written, net_evals


def run(run_dir: str, worker: int = 0, parent_pid: int | None = None, max_games: int | None = None,
        model_poll_s: float = 2.0) -> int:
    """The self-play stage (see the module docstring).  SIGTERM/SIGINT: abandon the games in
    flight and exit; SIGUSR1: finish them, start no more, exit.  Returns an exit status."""
    start = stage_start("selfplay", run_dir, parent_pid)
    rd, cfg, stop = start.rd, start.cfg, start.stop
    w = SelfPlayWorker(rd, cfg, worker, max_games, stop)
    print(f"selfplay[{worker}]: model {w.agent.model_id}, {cfg.parallel_games} games in flight, "
          f"batch {cfg.batch}, {cfg.play.visits} visits, next game {w.seq}, device {w.agent.evaluator.device}",
          flush=True)
    last_poll = time.time()
    mark = w.mark()
    exit_reason = "idle"
    phase = rd.read_pipeline()
    last_phase = time.time()
    waiting = False
    while True:
        if stop:
            gone = w.pool.abandon_all()
            exit_reason = f"stopped ({len(gone)} games in flight abandoned)"
            break
        now = time.time()
        if now - last_phase >= 0.1:
            phase, last_phase = rd.read_pipeline(), now
            if phase is not None and cfg.selfplay_workers > 1:
                w.games_on_disk = rd.count_games()
        if not w.may_play(phase):
            waiting = True                   # sync pipeline: training or gating has the machine
            time.sleep(0.05)
            w.wait_s += time.time() - now
        else:
            if waiting:
                waiting = False
                last_poll = 0.0               # a new generation: pick up the new model first
            if now - last_poll >= model_poll_s:
                last_poll = now
                if w.poll_model():
                    print(f"selfplay[{worker}]: now playing {w.agent.model_id}", flush=True)
            for fg in w.pool.step():
                w.write(fg)
            if w.pool.idle:
                exit_reason = "budget reached" if not stop.drain else "drained"
                break
        now = time.time()
        if now - mark.time >= cfg.metrics_every:
            m = w.mark()
            rd.append_metrics(w.metrics(mark, m))
            mark = m
    m = w.mark()
    rec = w.metrics(mark, m)
    rec["event"] = "stop"
    rd.append_metrics(rec)
    print(f"selfplay[{worker}]: {exit_reason}; wrote {w.written} games this session", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    return stage.main("python -m train.selfplay", "The self-play stage of a run (normally started by train.loop). "
                      "Its throughput: python -m tools.bench.selfplay.", run, argv, [
                          ("--worker", dict(type=int, default=0, help="worker number (names its games)")),
                          ("--max-games", dict(type=int, default=None, help="stop once the run has this many games"))])


if __name__ == "__main__":
    sys.exit(main())
