"""Gumbel root search (sequential halving, move choice, improved policy target) and forced
playouts with policy-target pruning, on hand-fed priors and values (no network)."""
import math

import numpy as np
import pytest

from engine.core import BLACK, Game, Rules, Search, SearchParams
from engine.nets.evaluator import Evaluation
from engine.play.rootsearch import (C_VISIT, GumbelRoot, GumbelSettings, halving_schedule, phase_visits,
                               pruned_visits, puct_scale)
from train.config import SELFPLAY_SEARCH
from train.games.pool import Agent, GamePool, GameSpec, PlaySettings

SIZE = 5
RULES = Rules.preset("chinese", 0.5)
OWN, OPP, BLACK_TO_MOVE = 0, 1, 14


class HandFed:
    """The same policy logits for every position; value = tanh(sum of w over Black's stones),
    from the side to move's view, so each root move has its own value."""

    feature_set = "rich"
    planes = 20

    def __init__(self, seed: int):
        rng = np.random.default_rng(seed)
        self.logits = rng.normal(0, 1.0, SIZE * SIZE + 1).astype(np.float32)
        self.w = rng.normal(0, 0.6, SIZE * SIZE).astype(np.float32)

    def evaluate(self, planes, keys=None):
        n = len(planes)
        black_to_move = planes[:, BLACK_TO_MOVE, 0, 0] > 0.5
        black = np.where(black_to_move[:, None], planes[:, OWN].reshape(n, -1), planes[:, OPP].reshape(n, -1))
        v_black = np.tanh(black @ self.w)
        value = np.where(black_to_move, v_black, -v_black).astype(np.float32)
        return Evaluation(np.tile(self.logits, (n, 1)), value, None, None)


def run_gumbel(budget: int, m: int, seed: int, batch: int = 8):
    ev = HandFed(seed)
    tree = Search(Game(SIZE, RULES), SearchParams(), max_batch=batch, seed=seed)
    g = GumbelRoot(tree, budget, np.random.default_rng(seed), GumbelSettings(considered=m))
    visits_after_phase = []
    phase = -1
    while not g.update():
        if g._phase != phase:           # a phase began: record what the previous one left
            if phase >= 0:
                visits_after_phase.append(dict(zip(*[a.tolist() for a in tree.root_arrays()[:2]])))
            phase = g._phase
        n = tree.collect(batch)
        assert n > 0
        out = ev.evaluate(tree.planes[:n])
        tree.backup(out.policy, out.value)
    visits_after_phase.append(dict(zip(*[a.tolist() for a in tree.root_arrays()[:2]])))
    return ev, tree, g, visits_after_phase


def test_halving_schedule_matches_the_paper():
    # m = 8, n = 32: ceil(log2 8) = 3 phases of floor(n / (3 * survivors)) visits, never fewer than
    # two survivors, and the phases go on until the budget is spent (the last one cut short).
    assert halving_schedule(32, 8) == [(8, 1), (4, 2), (2, 5), (2, 3)]
    assert halving_schedule(16, 4) == [(4, 2), (2, 4)]
    assert halving_schedule(5, 1) == [(1, 5)]
    for n, m in [(32, 8), (16, 16), (200, 16), (7, 4), (64, 2), (3, 16)]:
        rows = phase_visits(n, m)
        assert sum(map(sum, rows)) == n
        assert all(row == sorted(row, reverse=True) for row in rows)   # cut-short: best first


def test_sequential_halving_spends_the_budget_by_the_schedule():
    ev, tree, g, phases = run_gumbel(32, 8, seed=3)
    moves, visits, q, prior = tree.root_arrays()
    assert tree.visits == 33                        # the root's own evaluation + 32 simulations
    assert sorted(visits.tolist(), reverse=True)[:8] == [11, 11, 3, 3, 1, 1, 1, 1]
    assert int((visits > 0).sum()) == 8
    # Phase by phase: the survivors are the moves with the most visits, in the schedule's counts.
    expected = [[1] * 8, [3] * 4 + [1] * 4, [8, 8, 3, 3, 1, 1, 1, 1], [11, 11, 3, 3, 1, 1, 1, 1]]
    for got, want in zip(phases, expected):
        assert sorted(got.values(), reverse=True)[:8] == want
    # The considered moves are Gumbel-top-8 of g + logits (sampling without replacement).
    scores = g.gumbel + g.logits
    assert set(moves[visits > 0].tolist()) == set(moves[np.argsort(-scores)[:8]].tolist())


def test_chosen_move_is_argmax_of_gumbel_logits_sigma_q_among_survivors():
    for seed in range(4):
        ev, tree, g, _ = run_gumbel(32, 8, seed=seed)
        moves, visits, q, prior = tree.root_arrays()
        survivors = np.flatnonzero(visits == visits.max())
        assert len(survivors) == 2
        q01 = (q.astype(np.float64) + 1) / 2
        score = g.gumbel + np.log(prior.astype(np.float64)) + (C_VISIT + visits.max()) * q01
        assert g.move == int(moves[survivors[np.argmax(score[survivors])]])


def test_policy_target_is_softmax_of_logits_plus_sigma_completed_q():
    ev, tree, g, _ = run_gumbel(32, 8, seed=5)
    moves, visits, q, prior = tree.root_arrays()
    game = Game(SIZE, RULES)
    raw = float(ev.evaluate(game.features()[None]).value[0])          # the root's network value
    q01 = (q.astype(np.float64) + 1) / 2
    seen = visits > 0
    pi = prior.astype(np.float64)
    v_mix = ((raw + 1) / 2 + visits.sum() * (pi[seen] * q01[seen]).sum() / pi[seen].sum()) / (1 + visits.sum())
    completed = np.where(seen, q01, v_mix)
    logits = ev.logits[moves].astype(np.float64)                       # the legal moves' logits
    z = logits + (C_VISIT + visits.max()) * completed
    want = np.exp(z - z.max())
    want /= want.sum()
    target = g.policy_target()
    assert target.sum() == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(target[moves], want, atol=2e-5)
    assert g.raw_value01() == pytest.approx((raw + 1) / 2, abs=1e-4)


def test_gumbel_self_play_game_in_the_pool():
    ev = HandFed(7)
    agent = Agent("hand", ev, SELFPLAY_SEARCH)          # its noise and temperature: not used at a Gumbel root
    settings = PlaySettings(visits=16, cheap_visits=4, full_search_prob=0.5, root="gumbel",
                            gumbel_considered=8, max_moves=30)
    specs = iter([GameSpec(SIZE, RULES, agent, agent, settings, seed=s) for s in range(3)])
    pool = GamePool(3, lambda slot: next(specs, None), batch=24)
    done = list(pool.run())
    assert len(done) == 3
    for fg in done:
        rec = fg.record()
        assert rec.length > 0
        for t in np.flatnonzero(rec.full):
            assert rec.policy_target(t).sum() == pytest.approx(1.0, abs=1e-2)
        # Cheap searches (4 simulations, m = 4) and full ones (16): visits of a move's search are
        # at most what the reused subtree held plus the budget.
        assert all(v >= 1 for v in rec.visits)


# ---------------------------------------------------------------------------------------------
# Forced playouts


def test_pruned_target_drops_exactly_the_forced_visits_of_the_formula():
    params = SearchParams(c_puct=1.1, forced_playouts_k=2.0)
    visits = np.array([60, 20, 12, 6, 2])
    q = np.array([0.10, 0.05, -0.20, 0.30, -0.5])
    prior = np.array([0.40, 0.30, 0.15, 0.10, 0.05])
    got = pruned_visits(visits, q, prior, params)
    total = visits.sum()
    scale = puct_scale(params, total)
    best = q[0] + scale * prior[0] / (1 + visits[0])
    want = [60.0]
    for i in range(1, 5):
        forced = math.floor(math.sqrt(2.0 * prior[i] * total))
        # the fewest visits n >= visits - forced with Q + scale * P / (1 + n) <= best's PUCT value
        n = visits[i]
        while n > max(0, visits[i] - forced) and q[i] + scale * prior[i] / n <= best:
            n -= 1
        want.append(0.0 if n <= 1 else float(n))
    np.testing.assert_array_equal(got, want)
    # And by hand for this tree: child 2 (bad Q) loses all its forced visits, child 4 is dropped.
    assert got[2] == visits[2] - math.floor(math.sqrt(2.0 * 0.15 * total))
    assert got[4] == 0
    assert got[0] == 60 and got[3] <= visits[3]


def test_pruning_is_off_without_forced_playouts_and_keeps_the_best_child():
    visits = np.array([10, 5, 1])
    q = np.array([0.0, 0.0, 0.0])
    prior = np.array([0.5, 0.3, 0.2])
    np.testing.assert_array_equal(pruned_visits(visits, q, prior, SearchParams()), visits)
    got = pruned_visits(visits, q, prior, SearchParams(forced_playouts_k=2.0))
    assert got[0] == 10


def test_forced_playouts_give_visited_children_their_share():
    """A child with a tiny prior and a bad value, once visited, gets sqrt(k * P * N) visits."""
    k = 2.0
    ev = HandFed(11)
    params = SearchParams(forced_playouts_k=k, noise_epsilon=0.0)
    tree = Search(Game(SIZE, RULES), params, max_batch=4, seed=1)
    while tree.visits < 400:
        n = tree.collect(4)
        out = ev.evaluate(tree.planes[:n])
        tree.backup(out.policy, out.value)
    moves, visits, q, prior = tree.root_arrays()
    total = visits.sum()
    for i in np.flatnonzero(visits > 0):
        # forced visits are owed to every visited child (up to the last batch's slack)
        assert visits[i] >= math.floor(math.sqrt(k * prior[i] * total)) - 4
    plain = Search(Game(SIZE, RULES), SearchParams(), max_batch=4, seed=1)
    while plain.visits < 400:
        n = plain.collect(4)
        out = ev.evaluate(plain.planes[:n])
        plain.backup(out.policy, out.value)
    # plain PUCT leaves most children at a visit or two; forced playouts give each its share
    plain_visits = plain.root_arrays()[1]
    assert visits[visits > 0].min() > plain_visits[plain_visits > 0].min()
