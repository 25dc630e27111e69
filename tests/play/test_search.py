"""The C PUCT search with hand-fed evaluations (no network needed)."""
import collections

import numpy as np
import pytest

from engine.core import BLACK, WHITE, Game, Rules, Search, SearchParams, board_from_ascii, collect_many, backup_many
from engine.coords import from_gtp
from engine.play.player import Player

Evaluation = collections.namedtuple("Evaluation", "policy value ownership score")


class FixedEvaluator:
    """Policy from a fixed logit vector; value from a function of the planes."""

    feature_set = "rich"

    def __init__(self, logits, value_fn=None):
        self.logits = np.asarray(logits, np.float32)
        self.value_fn = value_fn or (lambda planes: 0.0)
        self.calls = []

    def evaluate(self, planes, keys=None):
        self.calls.append(len(planes))
        n = len(planes)
        return Evaluation(np.tile(self.logits, (n, 1)),
                          np.array([self.value_fn(p) for p in planes], np.float32), None, None)


def run(tree, ev, visits):
    while tree.visits < visits:
        n = tree.collect()
        if n == 0:
            break
        out = ev.evaluate(tree.planes[:n])
        tree.backup(out.policy, out.value)


def test_visits_follow_priors():
    size = 5
    logits = np.full(size * size + 1, -30.0, np.float32)
    a, b = from_gtp("C3", size), from_gtp("B2", size)
    logits[a], logits[b] = np.log(0.7), np.log(0.3)
    tree = Search(Game(size), SearchParams(lcb_z=0.0), max_batch=1, seed=1)
    run(tree, FixedEvaluator(logits), 400)
    kids = {c.move: c for c in tree.children(with_pv=False)}
    assert abs(kids[a].prior - 0.7) < 1e-4 and abs(kids[b].prior - 0.3) < 1e-4
    # With equal values, PUCT gives visits in proportion to priors.
    ratio = kids[a].visits / kids[b].visits
    assert 1.8 < ratio < 2.9, ratio
    assert sum(c.visits for c in kids.values()) == tree.visits - 1


def test_value_steers_visits():
    """A move whose resulting positions evaluate well for the mover collects the visits."""
    size = 5
    good = from_gtp("D4", size)
    r, c = divmod(good, size)

    def value(planes):
        # After Black plays D4 it is White's turn; plane 1 = opponent (Black) stones.
        return -0.8 if planes[1, r, c] == 1.0 else 0.0

    tree = Search(Game(size), SearchParams(), max_batch=4, seed=2)
    run(tree, FixedEvaluator(np.zeros(26, np.float32), value), 600)
    best = tree.children(with_pv=False)[0]
    assert best.move == good
    assert best.q > 0.2   # 0.8 at depth 1, 0 deeper (the stone moves to plane 0)
    assert tree.choose() == good


def test_virtual_loss_spreads_a_batch():
    tree = Search(Game(9), SearchParams(), max_batch=16, seed=3)
    ev = FixedEvaluator(np.zeros(82, np.float32))
    assert tree.collect() == 1          # only the root is known at first
    out = ev.evaluate(tree.planes[:1])
    tree.backup(out.policy, out.value)
    n = tree.collect(16)
    assert n == 16
    keys = set(int(k) for k in tree.keys[:n])
    assert len(keys) == 16              # sixteen distinct leaves, not one leaf sixteen times
    out = ev.evaluate(tree.planes[:n])
    tree.backup(out.policy, out.value)
    assert tree.visits == 17


ONE_EYE = """
X X X X X
X O O O X
X O . O X
X O O O X
X X X X .
"""


def test_terminal_scoring_finds_the_only_winning_move():
    # White has passed; Black's pass ends the game (conservative pass off: tests/
    # test_conservative_pass.py has it on).  By Tromp-Taylor count Black is 17 - 9 = +8:
    # with komi 10.5 passing loses and only the capture at C3 wins.
    game = board_from_ascii(ONE_EYE, Rules.preset("chinese", 10.5))
    game.play(game.pass_point, WHITE)
    assert game.to_move == BLACK and game.passes == 1
    assert set(game.legal_moves()) == {from_gtp("C3", 5), game.pass_point}
    ev = FixedEvaluator(np.zeros(26, np.float32))
    tree = Search(game, SearchParams(conservative_pass=0.0), max_batch=8, seed=4)
    run(tree, ev, 300)
    kids = {c.move: c for c in tree.children(with_pv=False)}
    assert kids[game.pass_point].q == -1.0          # exact terminal loss, never a net guess
    assert tree.choose() == from_gtp("C3", 5)       # never pass into a lost count
    # With komi 5.5 passing wins: the pass child is an exact win.
    game2 = board_from_ascii(ONE_EYE, Rules.preset("chinese", 5.5))
    game2.play(game2.pass_point, WHITE)
    tree2 = Search(game2, SearchParams(conservative_pass=0.0), max_batch=8, seed=4)
    run(tree2, ev, 300)
    kids2 = {c.move: c for c in tree2.children(with_pv=False)}
    assert kids2[game2.pass_point].q == 1.0


def test_tree_reuse_keeps_the_subtree():
    tree = Search(Game(7), SearchParams(), max_batch=8, seed=6)
    run(tree, FixedEvaluator(np.zeros(50, np.float32)), 2000)
    best = tree.children(with_pv=False)[0]
    tree.advance(best.move)
    assert tree.visits == best.visits
    assert tree.game.moves == [(BLACK, best.move)]
    # An unexpected colour resets the tree.
    tree.advance(tree.game.pass_point, BLACK)
    assert tree.visits == 0


def test_superko_moves_are_never_children():
    # Positional superko: a move recreating an earlier position is not offered.
    rules = Rules.preset("tromp-taylor", 0.5)
    game = Game(4, rules)
    # Single-stone suicide under Tromp-Taylor recreates the current position: superko-illegal.
    for pt, col in [(1, BLACK), (4, BLACK)]:
        game.play(pt, col)
    game.set_to_move(WHITE)
    assert game.illegal_reason(0, WHITE) == "superko"
    tree = Search(game, SearchParams(), max_batch=1, seed=7)
    run(tree, FixedEvaluator(np.zeros(17, np.float32)), 50)
    assert 0 not in {c.move for c in tree.children(with_pv=False)}


def test_memory_cap_is_respected():
    cap = 400_000
    params = SearchParams(max_memory=cap)
    tree = Search(Game(9), params, max_batch=8, seed=8)
    run(tree, FixedEvaluator(np.zeros(82, np.float32)), 5000)
    assert tree.visits >= 5000          # keeps searching the existing tree
    assert tree.memory_bytes <= cap
    assert tree.full_events > 0
    # Without the cap the same search needs more memory.
    free = Search(Game(9), SearchParams(), max_batch=8, seed=8)
    run(free, FixedEvaluator(np.zeros(82, np.float32)), 5000)
    assert free.memory_bytes > cap


def test_pool_collects_from_many_games_in_one_call():
    games = [Game(5) for _ in range(6)]
    trees = [Search(g, SearchParams(), max_batch=2, seed=i) for i, g in enumerate(games)]
    planes = np.zeros((12, 20, 5, 5), np.float32)
    keys = np.zeros(12, np.uint64)
    counts = np.zeros(6, np.int32)
    ev = FixedEvaluator(np.zeros(26, np.float32))
    for _ in range(10):
        total = collect_many(trees, 2, planes, keys, counts)
        assert total == counts.sum()
        out = ev.evaluate(planes[:total])
        backup_many(trees, counts, out.policy, out.value)
    assert all(t.visits > 10 for t in trees)


def test_noise_changes_root_priors_only_when_asked():
    logits = np.zeros(26, np.float32)
    t1 = Search(Game(5), SearchParams(noise_epsilon=0.25), max_batch=1, seed=9)
    t1.request_noise()
    run(t1, FixedEvaluator(logits), 2)
    priors = [c.prior for c in t1.children(with_pv=False)]
    assert np.std(priors) > 1e-3 and abs(sum(priors) - 1) < 1e-4
    t2 = Search(Game(5), SearchParams(noise_epsilon=0.25), max_batch=1, seed=9)
    run(t2, FixedEvaluator(logits), 2)
    assert np.std([c.prior for c in t2.children(with_pv=False)]) < 1e-6


def test_temperature_sampling_and_visit_distribution():
    tree = Search(Game(5), SearchParams(temperature=1.0), max_batch=4, seed=10)
    run(tree, FixedEvaluator(np.zeros(26, np.float32)), 200)
    dist = tree.visit_distribution()
    assert dist.shape == (26,) and abs(dist.sum() - 1) < 1e-5
    moves = {tree.choose() for _ in range(30)}
    assert len(moves) > 3


@pytest.mark.parametrize("df, t", [(1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042),
                                   (120, 1.980), (5000, 1.960)])
def test_lcb_multiplier_is_students_t(df, t):
    """At z 1.96 the multiplier is the two-sided 95% t of a printed table (df = visits - 1)."""
    from engine.core import lib
    assert abs(lib.search_t_quantile(1.96, df) - t) < 2e-3 * t


def test_lcb_does_not_trust_three_visits():
    """A game against KataGo (32 visits, same net): the old z-only bound let a child with 3
    visits and Q 0.108 (winrate 55.4%) beat the move with 17 visits and Q 0.103.  With Student's
    t the 3-visit child's bound is far below; with many visits the higher mean wins."""
    from engine.core import lib
    z = SearchParams().lcb_z
    def lcb(n, q, sd):
        return lib.search_lcb(z, n, n * q, n * (q * q + sd * sd * (n - 1) / n))
    few, many = lcb(3, 0.108, 0.05), lcb(17, 0.103, 0.12)
    assert few < many - 0.5
    assert lcb(400, 0.11, 0.1) > lcb(2000, 0.09, 0.1)      # enough visits: the better mean wins
    assert lib.search_lcb(z, 1, 0.9, 0.81) < -1e5            # one visit never competes


def test_avoided_moves_by_colour_and_depth():
    """search_set_avoid: Black's C3 and B2 (the two policy favourites) kept out for 3 moves:
    never a root child (depth 0) nor Black's move at depth 2, allowed again at depth 4; White's
    moves untouched.  A node left with no move ignores the table; set_avoid with a changed
    table clears the tree, advance clears the table."""
    size = 5
    logits = np.zeros(size * size + 1, np.float32)
    a, b = from_gtp("C3", size), from_gtp("B2", size)
    logits[a] = logits[b] = 3.0
    ev = FixedEvaluator(logits)
    tree = Search(Game(size), SearchParams(lcb_z=0.0), max_batch=4, seed=2)
    run(tree, ev, 200)
    assert tree.children(with_pv=False)[0].move in (a, b)
    tree.set_avoid({BLACK: {a: 3, b: 3}})
    assert tree.visits == 0                        # a changed table clears the tree
    run(tree, ev, 600)
    kids = [c for c in tree.children(with_pv=True) if c.visits > 0]
    assert not {c.move for c in kids} & {a, b}
    pvs = [c.pv for c in kids if len(c.pv) >= 3]
    assert pvs and all(pv[2] not in (a, b) for pv in pvs)          # Black at depth 2
    assert any(pv[1] in (a, b) for pv in pvs if len(pv) >= 2)      # White is free
    searched = tree.visits
    tree.set_avoid({BLACK: {a: 3, b: 3}})
    assert tree.visits == searched >= 600          # the same table keeps the tree
    # every move but pass avoided at the root: the table is ignored there
    tree.set_avoid({BLACK: {p: 1 for p in range(size * size + 1)}})
    run(tree, ev, 50)
    assert tree.visits >= 50 and tree.children(with_pv=False)[0].visits > 0
    tree.advance(tree.children(with_pv=False)[0].move)
    tree.set_avoid(None)
    with pytest.raises(ValueError, match="off a 5x5 board"):
        tree.set_avoid({WHITE: {26: 1}})
