"""Gating with clients that die: is the promotion decision still unbiased?
``python -m tools.checks.gate_faults --gates 2000 --win-rate 0.55 --kills 4``

Many gates are simulated with a known true win rate ``p``, through the real
:class:`train.gating.GateCoordinator` and :class:`train.gating.GateRule` (number-order counting,
lost games played again, SPRT early stop): ``workers`` gating clients each keep ``slots`` games in
flight; a game's result is a win with probability ``p`` and its duration depends on the result
(``--win-length``: a candidate that wins does so in fewer moves, the seed's "short games return
first"); in each gate ``--kills`` clients are killed at random moments (uniform over the match),
every game in flight on the killed client is declared lost (``worker_died``, after the client's
progress report: moves so far) and the client comes back empty after ``--restart`` time units.

Game number ``i`` of gate ``g`` has the same result and length in every count below (paired
seeds), so the counts differ only in how they treat what the kills take away:

- ``no kills``: the reference promotion rate;
- ``kills, replay (same game)``: the coordinator as shipped, a replay repeating the lost game;
- ``kills, replay (new game)``: the coordinator as shipped, a replay being a new draw (play that
  varies from one attempt to the next: batching, random symmetries), the length rule applied;
- ``kills, replay (new game), no length rule``: the same without progress reports, so every
  replay stands in for the lost game whatever its length;
- ``kills, skip lost``: the count before replays (start order, a lost game skipped and a new
  number started instead);
- ``return order``: the same games counted as they come back (what a naive gate does), which
  favours the short games.

Promotion rates come with Wilson 95% intervals and the difference to the reference with a
normal 95% interval.  A game in flight at a random moment is more often a long one, so when
results and lengths are correlated the games a kill takes lean towards one result; the counted
win rate beside ``p`` shows what each count keeps of that.
"""
from __future__ import annotations

import argparse
import heapq
import json
import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from train.gating import CONTINUE, PROMOTE, VOID, GateCoordinator, GateRule

MOVES_PER_UNIT = 100          # a game's moves per time unit (the length rule compares moves)
COUNTS = ("replay (same game)", "replay (new game)", "replay (new game), no length rule", "skip lost",
          "return order")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (c - h, c + h)


@dataclass
class GateOutcome:
    verdict: str
    lost: int
    counted: int
    counted_wins: int
    replayed: int = 0
    short: int = 0


class _Tally:
    """A count that applies the rule to results in the order it is given them."""

    def __init__(self, rule: GateRule):
        self.rule, self.wins, self.losses, self.lost, self.decision = rule, 0, 0, 0, None

    def _count(self, score: float) -> None:
        self.wins += score >= 1.0
        self.losses += score < 1.0
        verdict = self.rule.decide(self.wins, self.losses)[0]
        if verdict != CONTINUE:
            self.decision = verdict

    def progress(self, worker: int, moves: dict[int, int]) -> None:
        pass


class _ReturnOrder(_Tally):
    """The naive count: results in the order they come back, lost games simply dropped."""

    def __init__(self, rule: GateRule):
        super().__init__(rule)
        self.n = 0

    def claim(self, worker: int) -> int | None:
        self.n += 1
        return None if self.decision else self.n - 1

    def report(self, index: int, score: float, **_: Any) -> None:
        if self.decision is None:
            self._count(score)

    def worker_died(self, worker: int) -> None:
        pass


class _SkipLost(_Tally):
    """Start order with lost games skipped (counted as not played) and a new number started
    in their place, up to ``max_games + slack`` numbers not lost."""

    def __init__(self, rule: GateRule, slack: int):
        super().__init__(rule)
        self.slack, self.state, self.owner, self.score, self.next = slack, [], [], [], 0

    def claim(self, worker: int) -> int | None:
        if self.decision is not None or len(self.state) - self.lost >= self.rule.max_games + self.slack:
            return None
        self.state.append("playing")
        self.owner.append(worker)
        self.score.append(0.0)
        return len(self.state) - 1

    def report(self, index: int, score: float, **_: Any) -> None:
        if self.state[index] == "playing":
            self.state[index], self.score[index] = "returned", score
            self._advance()

    def worker_died(self, worker: int) -> None:
        for i, s in enumerate(self.state):
            if s == "playing" and self.owner[i] == worker:
                self.state[i] = "lost"
                self.lost += 1
        self._advance()

    def _advance(self) -> None:
        while self.decision is None and self.next < len(self.state) and self.state[self.next] != "playing":
            self.next += 1
            if self.state[self.next - 1] == "returned":
                self._count(self.score[self.next - 1])


def simulate_gate(gate_seed: list[int], rule: GateRule, p: float, workers: int, slots: int, kills: int,
                  win_length: float, restart: float, count: str = "replay (same game)") -> GateOutcome:
    """One gate (see the module docstring); time is in units of a lost game's mean length."""
    if count not in COUNTS:
        raise ValueError(f"unknown count {count!r} (known: {', '.join(COUNTS)})")
    games_rng, kill_rng = np.random.default_rng([*gate_seed, 1]), np.random.default_rng([*gate_seed, 2])
    fresh_rng = np.random.default_rng([*gate_seed, 3])
    table: list[tuple[float, float]] = []          # number -> (result, length): the same in every count

    def draw(rng: np.random.Generator) -> tuple[float, float]:
        win = rng.random() < p
        return (1.0 if win else 0.0), float(rng.gamma(4.0, (win_length if win else 1.0) / 4.0))

    coord: Any
    if count.startswith("replay"):
        coord = GateCoordinator(rule, deadline_min=1e9, clock=lambda: clock[0])
    else:
        coord = _SkipLost(rule, workers * slots) if count == "skip lost" else _ReturnOrder(rule)
    same, moves_known = count == "replay (same game)", not count.endswith("no length rule")
    clock = [0.0]
    events: list[tuple[float, int, str, int, int]] = []     # (time, seq, kind, worker, index)
    seq = [0]
    alive = [True] * workers
    playing: list[dict[int, tuple[int, float, float, float]]] = [{} for _ in range(workers)]
    lost = [0]

    def push(t: float, kind: str, w: int, index: int = -1) -> int:
        seq[0] += 1
        heapq.heappush(events, (t, seq[0], kind, w, index))
        return seq[0]

    def fill(w: int) -> None:
        while alive[w] and len(playing[w]) < slots:
            index = coord.claim(w)
            if index is None:
                return
            while len(table) <= index:
                table.append(draw(games_rng))
            replay = isinstance(coord, GateCoordinator) and coord.games[index].losses + coord.games[index].shorts > 0
            score, length = draw(fresh_rng) if replay and not same else table[index]
            token = push(clock[0] + length, "end", w, index)
            playing[w][index] = (token, clock[0], score, length)

    # the expected match length (in time units) to spread the kills over
    horizon = 1.3 * rule.max_games / (workers * slots) * (p * win_length + (1 - p))
    for _ in range(kills):
        push(float(kill_rng.uniform(0, horizon)), "kill", int(kill_rng.integers(workers)))
    for w in range(workers):
        fill(w)
    while events and coord.decision is None:
        t, token, kind, w, index = heapq.heappop(events)
        clock[0] = t
        if kind == "end":
            if playing[w].get(index, (None,))[0] != token:
                continue                       # its client was killed meanwhile
            _, _, score, length = playing[w].pop(index)
            coord.report(index, score, worker=w, moves=math.ceil(length * MOVES_PER_UNIT))
            fill(w)
        elif kind == "kill" and alive[w]:
            if moves_known:
                coord.progress(w, {i: math.floor((t - start) * MOVES_PER_UNIT) for i, (_, start, _, _) in playing[w].items()})
            coord.worker_died(w)
            lost[0] += len(playing[w])
            playing[w].clear()
            alive[w] = False
            push(t + restart, "restart", w)
            for v in range(workers):           # clients with a free slot take the lost games
                fill(v)
        elif kind == "restart":
            alive[w] = True
            fill(w)
    d = coord.decision
    assert d is not None, "a gate ran out of games"
    if isinstance(coord, GateCoordinator):
        return GateOutcome(d.verdict, d.lost, d.counted, d.wins, d.replayed, d.short)
    return GateOutcome(d, lost[0], coord.wins + coord.losses, coord.wins)


def measure(gates: int, p: float, kills: int, *, seed: int = 0, workers: int = 8, slots: int = 4,
            win_length: float = 0.6, restart: float = 1.0, rule: GateRule | None = None,
            counts: tuple[str, ...] = COUNTS) -> dict[str, Any]:
    """Promotion rates over ``gates`` gates without and with ``kills`` killed clients per gate,
    for each count (gate ``g`` has the same games and kill moments in every row: paired)."""
    rule = rule or GateRule()
    plan = [("no kills, start order", 0, "replay (same game)"), ("no kills, return order", 0, "return order")]
    plan += [(f"kills, {c}", kills, c) for c in counts]
    rows: dict[str, Any] = {}
    for name, k, count in plan:
        outs = [simulate_gate([seed, g], rule, p, workers, slots, k, win_length, restart, count) for g in range(gates)]
        promoted = sum(o.verdict == PROMOTE for o in outs)
        lo, hi = wilson(promoted, gates)
        rows[name] = {
            "promoted": promoted, "gates": gates, "rate": promoted / gates, "ci95": [lo, hi],
            "void": sum(o.verdict == VOID for o in outs), "lost_games_per_gate": sum(o.lost for o in outs) / gates,
            "replays_per_gate": sum(o.replayed for o in outs) / gates,
            "short_per_gate": sum(o.short for o in outs) / gates,
            "counted_win_rate": sum(o.counted_wins for o in outs) / max(1, sum(o.counted for o in outs))}
    ref = rows["no kills, start order"]["rate"]
    for row in rows.values():
        diff = row["rate"] - ref
        se = math.sqrt(row["rate"] * (1 - row["rate"]) / gates + ref * (1 - ref) / gates)
        row["diff_vs_no_kills"] = diff
        row["diff_ci95"] = [diff - 1.96 * se, diff + 1.96 * se]
    return {"p": p, "kills_per_gate": kills, "workers": workers, "slots": slots, "win_length": win_length,
            "rule": {"threshold": rule.threshold, "max_games": rule.max_games, "elo1": rule.elo1}, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.checks.gate_faults", description=__doc__.split("\n")[0])
    ap.add_argument("--gates", type=int, default=2000)
    ap.add_argument("--win-rate", type=float, nargs="+", default=[0.5, 0.55, 0.6])
    ap.add_argument("--kills", type=int, default=4, help="clients killed per gate")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--slots", type=int, default=4, help="games in flight per client")
    ap.add_argument("--win-length", type=float, default=0.6, help="a win's mean length over a loss's")
    ap.add_argument("--max-games", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.gates < 1 or a.kills < 0 or a.workers < 1 or a.slots < 1 or a.max_games < 1 \
            or not all(0 <= p <= 1 for p in a.win_rate) or a.win_length <= 0:
        ap.error("need --gates, --workers, --slots, --max-games >= 1, --kills >= 0, win rates in [0, 1] "
                 "and --win-length > 0")
    print("| true win rate | count | promoted | rate [95%] | minus no-kill rate [95%] | lost games/gate "
          "| replays/gate (short) | void | counted win rate |")
    print("|---|---|---|---|---|---|---|---|---|")
    out = []
    for p in a.win_rate:
        m = measure(a.gates, p, a.kills, seed=a.seed, workers=a.workers, slots=a.slots, win_length=a.win_length,
                    rule=GateRule(max_games=a.max_games))
        out.append(m)
        for key, r in m["rows"].items():
            print(f"| {p:g} | {key} | {r['promoted']}/{r['gates']} | {r['rate']:.3f} [{r['ci95'][0]:.3f}, "
                  f"{r['ci95'][1]:.3f}] | {r['diff_vs_no_kills']:+.3f} [{r['diff_ci95'][0]:+.3f}, "
                  f"{r['diff_ci95'][1]:+.3f}] | {r['lost_games_per_gate']:.1f} | {r['replays_per_gate']:.1f} "
                  f"({r['short_per_gate']:.1f}) | {r['void']} | {r['counted_win_rate']:.3f} |", flush=True)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
