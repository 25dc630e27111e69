"""Several pending batches on one tree (search slots) and the threaded Player on top of them."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from engine.core import Game, Search, SearchParams
from engine.nets.evaluator import RandomEvaluator
from engine.play.player import Player


def evaluate(ev, tree, slot):
    n = tree.pending_in(slot)
    return ev.evaluate(tree.slot_planes(slot)[:n])


def children(tree):
    moves, visits, q, prior = tree.root_arrays()
    return dict(zip(moves.tolist(), visits.tolist())), dict(zip(moves.tolist(), q.tolist()))


def test_two_pending_batches_every_leaf_backed_up_once():
    ev = RandomEvaluator(seed=3)
    # Root FPU 0 (as in self-play) spreads the first batches wide enough that both slots fill
    # from the first round; with play's root reduction the second batch can collide entirely.
    tree = Search(Game(9), SearchParams(fpu_reduction_root=0.0), max_batch=8, seed=1, slots=2)
    tree.collect(1, slot=0)
    tree.backup(*evaluate(ev, tree, 0)[:2], slot=0)       # the root
    for rnd in range(40):
        before = tree.visits
        a = tree.collect(8, slot=0)
        b = tree.collect(8, slot=1)
        assert a > 0 and b > 0 and tree.pending_total == a + b
        # Both batches are in flight at once: the second batch went around the first's leaves.
        assert tree.check() == 0
        first, second = (1, 0) if rnd % 2 else (0, 1)     # back up in either order
        out = evaluate(ev, tree, first)
        tree.backup(out.policy, out.value, slot=first)
        assert tree.visits == before + (b if first else a)
        out = evaluate(ev, tree, second)
        tree.backup(out.policy, out.value, slot=second)
        assert tree.visits == before + a + b            # every leaf exactly once
        assert tree.pending_total == 0
        assert tree.check() == 0                         # virtual loss gone, visits add up
    kids, _ = children(tree)
    assert sum(kids.values()) == tree.visits - 1
    visits = tree.visits
    tree.backup(out.policy, out.value, slot=0)           # nothing pending: backs up nothing
    assert tree.visits == visits and tree.check() == 0


def test_pipelined_slots_equal_one_batch_search():
    """Collect A, collect B, back up A, back up B gives the visits of one batch of A+B leaves
    evaluated in the same order (the same descents under the same virtual loss)."""
    ev = RandomEvaluator(seed=5)
    params = SearchParams(max_collisions=1000)
    one = Search(Game(19), params, max_batch=16, seed=2)
    two = Search(Game(19), params, max_batch=8, seed=2, slots=2)
    for _ in range(60):
        n = one.collect(16)
        out = ev.evaluate(one.planes[:n])
        one.backup(out.policy, out.value)
        a = two.collect(8, slot=0)
        b = two.collect(8, slot=1)
        assert a + b == n
        np.testing.assert_array_equal(np.concatenate([two.slot_planes(0)[:a], two.slot_planes(1)[:b]]),
                                      one.planes[:n])
        for slot in (0, 1):
            out = evaluate(ev, two, slot)
            two.backup(out.policy, out.value, slot=slot)
    assert one.visits == two.visits and one.nodes == two.nodes
    assert children(one) == children(two)
    assert one.pv() == two.pv()


def test_slots_one_after_another_equal_slot_zero():
    """Batches that do not overlap give the same tree whichever slot carries them."""
    ev = RandomEvaluator(seed=7)
    a = Search(Game(9), SearchParams(), max_batch=8, seed=3)
    b = Search(Game(9), SearchParams(), max_batch=8, seed=3, slots=3)
    for i in range(50):
        for tree, slot in ((a, 0), (b, i % 3)):
            tree.collect(8, slot=slot)
            out = evaluate(ev, tree, slot)
            tree.backup(out.policy, out.value, slot=slot)
    assert children(a) == children(b) and a.visits == b.visits


def test_cancel_and_refusals_while_pending():
    ev = RandomEvaluator(seed=1)
    tree = Search(Game(9), SearchParams(), max_batch=8, seed=1, slots=2)
    tree.collect(1)
    out = evaluate(ev, tree, 0)
    tree.backup(out.policy, out.value)
    visits = tree.visits
    tree.collect(8, slot=1)
    with pytest.raises(RuntimeError):
        tree.advance(40)                                 # a batch is pending in slot 1
    with pytest.raises(RuntimeError):
        tree.set_slots(1)
    tree.cancel(1)
    assert tree.visits == visits and tree.pending_total == 0 and tree.check() == 0
    # Cancelled leaves are collected (and evaluated) again later.
    n = tree.collect(8, slot=1)
    out = evaluate(ev, tree, 1)
    tree.backup(out.policy, out.value, slot=1)
    assert tree.visits == visits + n and tree.check() == 0
    # A slot collected twice without a backup withdraws its first batch.
    tree.collect(8, slot=0)
    n = tree.collect(8, slot=0)
    out = evaluate(ev, tree, 0)
    tree.backup(out.policy, out.value, slot=0)
    assert tree.check() == 0 and tree.pending_total == 0
    tree.advance(40)
    with pytest.raises(ValueError):
        Search(Game(9), slots=0)


def test_leaves_pending_in_another_slot_are_collisions():
    """On a 2x2 board the few leaves in reach are all pending in slot 0: slot 1 gets none."""
    ev = RandomEvaluator(seed=2)
    tree = Search(Game(2), SearchParams(), max_batch=16, seed=1, slots=2)
    tree.collect(1)
    out = evaluate(ev, tree, 0)
    tree.backup(out.policy, out.value)
    a = tree.collect(16, slot=0)
    b = tree.collect(16, slot=1)
    assert a >= 1 and b == 0
    out = evaluate(ev, tree, 0)
    tree.backup(out.policy, out.value, slot=0)
    assert tree.check() == 0


class SlowEvaluator:
    """RandomEvaluator outputs after a sleep (a forward pass that releases the GIL); records
    how many calls overlap."""

    feature_set = "rich"
    planes = None

    def __init__(self, delay=0.01, fail_after=None):
        self.inner = RandomEvaluator(seed=9)
        self.delay = delay
        self.active = 0
        self.most = 0
        self.calls = 0
        self.fail_after = fail_after
        self.lock = threading.Lock()

    def evaluate(self, planes, keys=None):
        with self.lock:
            self.active += 1
            self.calls += 1
            self.most = max(self.most, self.active)
            calls = self.calls
        try:
            if self.fail_after is not None and calls > self.fail_after:
                raise RuntimeError("network failed")
            time.sleep(self.delay)
            return self.inner.evaluate(planes)
        finally:
            with self.lock:
                self.active -= 1


@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_player_keeps_several_batches_in_flight(threads):
    ev = SlowEvaluator()
    player = Player(ev, SearchParams(), batch=8, seed=1, threads=threads)
    try:
        result = player.search(Game(9), visits=400)
        tree = player.search_tree
        assert result.visits == 400 and tree.visits == 400    # exactly the target, not more
        assert tree.pending_total == 0 and tree.check() == 0
        assert ev.most == threads          # every thread had a batch in the network at once
        assert result.evals == 400 - 0    # one evaluation per visit (no terminal positions yet)
        # Tree reuse and a time limit work the same way.
        game = Game(9)
        game.play(40)
        result = player.search(game, seconds=0.3)
        assert player.search_tree.check() == 0 and result.playouts > 0
        kids, _ = children(player.search_tree)
        assert sum(kids.values()) == player.search_tree.visits - 1
    finally:
        player.close()


def test_threaded_player_stop_callback_and_terminal_root():
    ev = SlowEvaluator(delay=0.002)
    player = Player(ev, SearchParams(), batch=4, seed=1, threads=2)
    calls = []
    flag = {"stop": False}

    def callback(tree):
        calls.append(tree.visits)
        flag["stop"] = tree.visits > 50

    result = player.search(Game(9), stop=lambda: flag["stop"], callback=callback, callback_interval=0.0)
    assert calls and result.visits > 50 and player.search_tree.check() == 0
    # A game already over: the root is terminal, the search ends instead of waiting.
    over = Game(5)
    over.play(25)
    over.play(25)
    result = player.search(over, visits=20)
    assert player.search_tree.pending_total == 0
    player.close()


def test_threaded_player_error_leaves_a_consistent_tree():
    ev = SlowEvaluator(delay=0.005, fail_after=10)
    player = Player(ev, SearchParams(), batch=4, seed=1, threads=2)
    with pytest.raises(RuntimeError, match="network failed"):
        player.search(Game(9), visits=500)
    tree = player.search_tree
    assert tree.pending_total == 0 and tree.check() == 0
    ev.fail_after = None
    result = player.search(Game(9), visits=100)      # the same tree goes on
    assert result.visits == 100 and player.search_tree.check() == 0
    player.close()


def test_one_thread_is_deterministic_and_threads_match_visit_totals():
    results = []
    for _ in range(2):
        player = Player(RandomEvaluator(seed=4), SearchParams(), batch=8, seed=1, threads=1)
        r = player.search(Game(9), visits=300)
        results.append([(c.move, c.visits) for c in r.children])
    assert results[0] == results[1]
    player = Player(RandomEvaluator(seed=4), SearchParams(), batch=8, seed=1, threads=4)
    r = player.search(Game(9), visits=300)
    assert r.visits == 300 and sum(c.visits for c in r.children) == 299
    player.close()


def test_gtp_engine_with_two_search_threads(monkeypatch, capsys, tmp_path):
    """python -m engine --threads 2: two search threads play and analyse through GTP."""
    import io
    import sys

    from engine import __main__ as cli
    from engine.nets import weights
    from engine.nets.network import NetConfig

    path = tmp_path / "tiny.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"board_sizes": [9], "step": 0, "parent": None})
    stdin = "genmove b\ngoengine-param analysis_min_visits 64\nkata-analyze w 1000\ngenmove w\nquit\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    rc = cli.main(["--weights", str(path), "--seed", "1", "--size", "9", "--visits", "64",
                   "--threads", "2", "--precision", "fp32"])
    out, err = capsys.readouterr()
    assert rc == 0
    blocks = out[:-2].split("\n\n")
    assert blocks[0].startswith("= ") and blocks[1] == "= " and blocks[2].startswith("= \ninfo move")
    assert blocks[3].startswith("= ")
    assert "precision: fp32 channels-last (forced by --precision)" in err
    assert "64 visits" in err
