"""Gating with clients that die: is the promotion decision still unbiased?
``python -m tools.gate_faults --gates 2000 --win-rate 0.55 --kills 4``

Many gates are simulated with a known true win rate ``p``, through the real
:class:`train.gating.GateCoordinator` and :class:`train.gating.GateRule` (start-order counting,
SPRT early stop): ``workers`` gating clients each keep ``slots`` games in flight; a game's
result is a win with probability ``p`` and its duration depends on the result (``--win-length``:
a candidate that wins does so in fewer moves, the seed's "short games return first"); in each
gate ``--kills`` clients are killed at random moments (uniform over the match), every game in
flight on the killed client is declared lost (``worker_died``) and the client comes back empty
after ``--restart`` time units, claiming new games.

Three counts of the same simulated games, each over ``--gates`` gates:

- ``no kills``: the reference promotion rate;
- ``kills, start order``: the coordinator as shipped;
- ``kills, return order``: the same games counted as they come back (what a naive gate does),
  which favours the short games and shows what start-order counting guards against.

Promotion rates come with Wilson 95% intervals and the difference to the reference with a
normal 95% interval.  Lost games are a sample of the games in flight at a random moment, so
when results and lengths are correlated the games lost lean towards long ones; the residual
effect on the counted sample is reported as the counted win rate beside ``p``.
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

from train.gating import CONTINUE, PROMOTE, GateCoordinator, GateRule


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


class _ReturnOrder:
    """The naive count: results in the order they come back, lost games simply dropped."""

    def __init__(self, rule: GateRule):
        self.rule, self.n, self.lost, self.wins, self.losses, self.verdict = rule, 0, 0, 0, 0, CONTINUE
        self.decision = None

    def claim(self, worker: int) -> int | None:
        self.n += 1
        return None if self.decision else self.n - 1

    def report(self, index: int, score: float) -> None:
        if self.decision is None:
            self.wins += score >= 1.0
            self.losses += score < 1.0
            verdict = self.rule.decide(self.wins, self.losses)[0]
            if verdict != CONTINUE:
                self.decision = verdict

    def worker_died(self, worker: int) -> None:
        pass


def simulate_gate(games_rng: np.random.Generator, kill_rng: np.random.Generator, rule: GateRule, p: float,
                  workers: int, slots: int, kills: int, win_length: float, restart: float,
                  start_order: bool = True) -> GateOutcome:
    """One gate (see the module docstring); time is in units of a lost game's mean length."""
    clock = [0.0]
    coord: Any = (GateCoordinator(rule, slack=workers * slots, deadline_min=1e9, clock=lambda: clock[0])
                  if start_order else _ReturnOrder(rule))
    events: list[tuple[float, int, str, int, int]] = []     # (time, seq, kind, worker, index)
    seq = [0]
    alive = [True] * workers
    playing: list[set[int]] = [set() for _ in range(workers)]
    results: dict[int, float] = {}
    lost = [0]

    def push(t: float, kind: str, w: int, index: int = -1) -> None:
        seq[0] += 1
        heapq.heappush(events, (t, seq[0], kind, w, index))

    def fill(w: int) -> None:
        while alive[w] and len(playing[w]) < slots:
            index = coord.claim(w)
            if index is None:
                return
            win = games_rng.random() < p
            results[index] = 1.0 if win else 0.0
            playing[w].add(index)
            push(clock[0] + games_rng.gamma(4.0, (win_length if win else 1.0) / 4.0), "end", w, index)

    # the expected match length (in time units) to spread the kills over
    horizon = 1.3 * rule.max_games / (workers * slots) * (p * win_length + (1 - p))
    for _ in range(kills):
        push(float(kill_rng.uniform(0, horizon)), "kill", int(kill_rng.integers(workers)))
    for w in range(workers):
        fill(w)
    while events and coord.decision is None:
        t, _, kind, w, index = heapq.heappop(events)
        clock[0] = t
        if kind == "end":
            if index not in playing[w]:
                continue                       # its client was killed meanwhile
            playing[w].discard(index)
            coord.report(index, results[index])
            fill(w)
        elif kind == "kill" and alive[w]:
            coord.worker_died(w)
            lost[0] += len(playing[w])
            playing[w].clear()
            alive[w] = False
            push(t + restart, "restart", w)
        elif kind == "restart":
            alive[w] = True
            fill(w)
    d = coord.decision
    assert d is not None, "a gate ran out of games"
    if start_order:
        return GateOutcome(d.verdict, d.lost, d.counted, d.wins)
    return GateOutcome(d, lost[0], coord.wins + coord.losses, coord.wins)


def measure(gates: int, p: float, kills: int, *, seed: int = 0, workers: int = 8, slots: int = 4,
            win_length: float = 0.6, restart: float = 1.0, rule: GateRule | None = None) -> dict[str, Any]:
    """Promotion rates over ``gates`` gates without and with ``kills`` killed clients per gate
    (the same seeds for both, so the comparison is paired by gate)."""
    rule = rule or GateRule()
    rows: dict[str, Any] = {}
    for name, k in (("no kills", 0), ("kills", kills)):
        for order in ("start order", "return order"):
            games_rng, kill_rng = np.random.default_rng([seed, 1]), np.random.default_rng([seed, 2])
            outs = [simulate_gate(games_rng, kill_rng, rule, p, workers, slots, k, win_length, restart,
                                  order == "start order") for _ in range(gates)]
            promoted = sum(o.verdict == PROMOTE for o in outs)
            lo, hi = wilson(promoted, gates)
            rows[f"{name}, {order}"] = {
                "promoted": promoted, "gates": gates, "rate": promoted / gates, "ci95": [lo, hi],
                "lost_games_per_gate": sum(o.lost for o in outs) / gates,
                "counted_win_rate": sum(o.counted_wins for o in outs) / max(1, sum(o.counted for o in outs))}
    ref = rows["no kills, start order"]["rate"]
    for key, row in rows.items():
        diff = row["rate"] - ref
        se = math.sqrt(row["rate"] * (1 - row["rate"]) / gates + ref * (1 - ref) / gates)
        row["diff_vs_no_kills"] = diff
        row["diff_ci95"] = [diff - 1.96 * se, diff + 1.96 * se]
    return {"p": p, "kills_per_gate": kills, "workers": workers, "slots": slots, "win_length": win_length,
            "rule": {"threshold": rule.threshold, "max_games": rule.max_games, "elo1": rule.elo1}, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.gate_faults", description=__doc__.split("\n")[0])
    ap.add_argument("--gates", type=int, default=2000)
    ap.add_argument("--win-rate", type=float, nargs="+", default=[0.5, 0.55, 0.6])
    ap.add_argument("--kills", type=int, default=4, help="clients killed per gate")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--slots", type=int, default=4, help="games in flight per client")
    ap.add_argument("--win-length", type=float, default=0.6, help="a win's mean length over a loss's")
    ap.add_argument("--max-games", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.gates < 1 or a.kills < 0 or a.workers < 1 or a.slots < 1 or not all(0 <= p <= 1 for p in a.win_rate):
        ap.error("need --gates, --workers, --slots >= 1, --kills >= 0 and win rates in [0, 1]")
    print("| true win rate | count | promoted | rate [95%] | minus no-kill rate [95%] | lost games/gate | counted win rate |")
    print("|---|---|---|---|---|---|---|")
    out = []
    for p in a.win_rate:
        m = measure(a.gates, p, a.kills, seed=a.seed, workers=a.workers, slots=a.slots, win_length=a.win_length,
                    rule=GateRule(max_games=a.max_games))
        out.append(m)
        for key, r in m["rows"].items():
            print(f"| {p:g} | {key} | {r['promoted']}/{r['gates']} | {r['rate']:.3f} [{r['ci95'][0]:.3f}, "
                  f"{r['ci95'][1]:.3f}] | {r['diff_vs_no_kills']:+.3f} [{r['diff_ci95'][0]:+.3f}, "
                  f"{r['diff_ci95'][1]:+.3f}] | {r['lost_games_per_gate']:.1f} | {r['counted_win_rate']:.3f} |")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
