"""Batches that grow with the tree (``Player(ramp=...)``, ``--batch-ramp``): at most one leaf in
flight per ``ramp`` root visits, so a small search runs nearly one visit at a time and a large
one keeps its full batches."""
from __future__ import annotations

import io
import threading

from engine.core import Game, SearchParams
from engine.nets.evaluator import RandomEvaluator
from engine.play.player import Player
from engine.searchcore import ramp_leaves


class Recording:
    """A random evaluator that records each call's size and the root visits before it."""

    def __init__(self, player_ref: list):
        self.inner = RandomEvaluator(seed=2)
        self.feature_set = self.inner.feature_set
        self.planes = self.inner.planes
        self.calls: list[tuple[int, int]] = []
        self.in_flight = 0
        self.most_in_flight: list[tuple[int, int]] = []
        self._lock = threading.Lock()
        self._player = player_ref

    def evaluate(self, planes, keys=None):
        tree = self._player[0].search_tree
        with self._lock:
            self.in_flight += len(planes)
            self.calls.append((len(planes), tree.visits))
            self.most_in_flight.append((self.in_flight, tree.visits))
        try:
            return self.inner.evaluate(planes, keys=keys)
        finally:
            with self._lock:
                self.in_flight -= len(planes)


RAMP_CASES = [
    # visits, ramp, cap, in flight -> leaves
    (0, 8, 16, 0, 1),      # a fresh tree: one leaf at a time
    (7, 8, 16, 0, 1),
    (8, 8, 16, 0, 1),
    (16, 8, 16, 0, 2),
    (63, 8, 16, 0, 7),
    (400, 8, 16, 0, 16),   # a large tree keeps its batch
    (400, 8, 16, 10, 16),  # the cap is per collect; the ramp's bound (50) is on all in flight
    (40, 8, 16, 3, 2),     # 5 allowed, 3 out
    (40, 8, 16, 5, 0),     # all out: wait for a backup
    (40, 0, 16, 5, 16),    # no ramp: the batch, whatever is out
    (3, 8, 2, 0, 1),
]


def test_ramp_leaves_table():
    for visits, ramp, cap, in_flight, want in RAMP_CASES:
        assert ramp_leaves(visits, ramp, cap, in_flight) == want, (visits, ramp, cap, in_flight)


def search(ramp: int, visits: int, threads: int = 1, batch: int = 16):
    ref: list = []
    ev = Recording(ref)
    player = Player(ev, SearchParams(), batch=batch, seed=1, threads=threads, ramp=ramp)
    ref.append(player)
    result = player.search(Game(9), visits=visits)
    player.close()
    return ev, result


def test_leaves_per_call_follow_the_tree():
    ev, result = search(ramp=8, visits=200)
    assert result.visits == 200
    for n, visits in ev.calls:
        assert n <= max(1, visits // 8) and n <= 16
    assert [n for n, _ in ev.calls[:8]] == [1] * 8          # the first 8 visits one at a time
    assert max(n for n, _ in ev.calls) == 16                 # full batches once the tree is large
    plain, _ = search(ramp=0, visits=200)
    assert plain.calls[1][0] == 16 and len(plain.calls) < len(ev.calls)


def test_a_ramp_as_large_as_the_search_is_one_visit_at_a_time():
    """With one leaf per 64 visits, a 32-visit search is sequential: the same tree as --batch 1."""
    ramped, a = search(ramp=64, visits=32)
    single, b = search(ramp=0, visits=32, batch=1)
    assert {n for n, _ in ramped.calls} == {1}
    assert (a.move, a.visits, a.value) == (b.move, b.visits, b.value)
    assert [(c.move, c.visits) for c in a.children] == [(c.move, c.visits) for c in b.children]


def test_threads_share_the_ramp():
    ev, result = search(ramp=8, visits=300, threads=3, batch=8)
    assert result.visits >= 300
    # every leaf being evaluated is pending, and the pending total never passed the cap
    assert all(in_flight <= max(1, visits // 8) for in_flight, visits in ev.most_in_flight)


def test_engine_option_and_gtp_param():
    from engine.gtp import EngineConfig, GTPEngine, engine_play
    from engine.options import DEFAULTS, build_parser

    assert DEFAULTS.batch_ramp == 8
    assert build_parser().parse_args(["--batch-ramp", "0"]).batch_ramp == 0
    eng = GTPEngine(lambda n: RandomEvaluator(seed=1), EngineConfig(size=9, play=engine_play(16), seed=1, quiet=True),
                    stdout=io.StringIO(), stderr=io.StringIO())
    assert "[string] batch_ramp 8" in eng.command("goengine-param")
    assert eng.command("goengine-param batch_ramp 4") == ""
    eng.command("genmove b")
    assert eng.player.ramp == 4 and eng.config.batch_ramp == 4
