"""Subtree value-bias correction and the LCB on utility in the C search, on hand-fed trees.

The value-bias tree: a 5x5 board where Black has a stone at C5-ish (row 2, col 4) and White
has passed.  Black's move P (row 0, col 0) then has the same key at the root (previous move
White's pass) and three moves deeper, after Black Q (row 4, col 4, outside P's 5x5
neighbourhood) and White's pass: what the search learns below the deep P carries over to the
root's P."""
from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core import BLACK, WHITE, Game, Search, SearchParams

SIZE = 5
P, Q, S, X, R = 0, 24, 20, 14, 18          # compact points (row * 5 + col)
PASS = SIZE * SIZE


def policy(*moves: int) -> np.ndarray:
    """Logits: 10 on the given moves, -20 elsewhere."""
    out = np.full((1, PASS + 1), -20.0, np.float32)
    out[0, list(moves)] = 10.0
    return out


def step(tree: Search, logits: np.ndarray, value: float) -> np.ndarray:
    """Collects one leaf and backs it up; returns the leaf's stone planes (both colours)."""
    assert tree.collect(1) == 1
    stones = tree.planes[0][:2].sum(axis=0).ravel().copy()
    tree.backup(logits, np.array([value], np.float32))
    return stones


def grown_tree(factor: float) -> Search:
    """The tree of the module docstring: root (P, Q, S equally likely), Q -> pass -> P -> R with
    every value 0 except R's (+0.5 for Black, to move there), then one visit each to the root's
    P (value 0) and S (+0.1 for Black)."""
    game = Game(SIZE)
    game.play(X, BLACK)
    game.play(PASS, WHITE)
    p = SearchParams(subtree_bias_factor=factor, subtree_bias_weight_exponent=0.85)
    tree = Search(game, p, max_batch=1, seed=3)
    step(tree, policy(P, Q, S), 0.0)                  # the root
    tree.set_root_targets({Q: 4})
    step(tree, policy(PASS), 0.0)                     # Q: White to move, passes
    step(tree, policy(P), 0.0)                        # Q, pass: Black to move, plays P
    stones = step(tree, policy(R), 0.0)               # Q, pass, P: White to move
    assert stones[P] == 1 and stones[Q] == 1
    stones = step(tree, policy(PASS), 0.5)            # Q, pass, P, R: Black to move, +0.5
    assert stones[R] == 1
    tree.set_root_targets({P: 1})
    assert step(tree, policy(R), 0.0)[P] == 1         # the root's P: White to move, 0
    tree.set_root_targets({S: 1})
    assert step(tree, policy(R), -0.1)[S] == 1        # the root's S: White to move, -0.1
    tree.set_root_targets(None)
    assert tree.check() == 0
    return tree


def test_the_entry_carries_what_the_deep_node_learned():
    """The deep P's children average +0.5 for Black and the net said 0: its entry holds delta
    0.5 at weight 1^0.85.  The root's P shares the entry and has no children of its own, so the
    entry is unchanged and the root's P is worth 0 + factor * 0.5 to selection, its winrate
    still 0."""
    tree = grown_tree(0.45)
    delta, weight = tree.child_bias(P)
    assert weight == pytest.approx(1.0) and delta == pytest.approx(0.5)
    assert tree.child_utility(P) == pytest.approx(0.45 * 0.5, abs=1e-6)
    assert tree.child_utility(S) == pytest.approx(0.1, abs=1e-6)   # S has no learned bias
    q = {c.move: c.q for c in tree.children(with_pv=False)}
    assert q[P] == pytest.approx(0.0, abs=1e-6) and q[S] == pytest.approx(0.1, abs=1e-6)
    assert grown_tree(0.0).child_bias(P) is None                    # off: no table at all


def chosen_by_hand(tree: Search) -> int:
    """The root child PUCT picks, from the children's selection utilities and priors."""
    p = tree.params
    n = float(tree.visits)
    cp = p.c_puct + p.c_puct_factor * math.log((n + p.c_puct_base + 1.0) / p.c_puct_base)
    scale = cp * math.sqrt(n)
    scores = {c.move: tree.child_utility(c.move) + scale * c.prior / (1.0 + c.visits)
              for c in tree.children(with_pv=False) if c.visits > 0}
    return max(scores, key=scores.get)


@pytest.mark.parametrize("factor,want", [(0.0, S), (0.45, P)])
def test_the_correction_chooses_the_child(factor, want):
    """P and S have one visit and the same prior: without the correction S's +0.1 wins; with it
    P's 0.225 does, exactly as computed by hand from the children's utilities."""
    tree = grown_tree(factor)
    assert chosen_by_hand(tree) == want
    assert tree.collect(1) == 1
    assert tree.planes[0][:2].sum(axis=0).ravel()[want] == 1
    tree.cancel()


def test_cutting_the_tree_releases_the_discarded_share():
    """Black plays S and White passes: the Q subtree is gone, and 80% (free_prop) of the deep
    P's contribution left the entry with it.  After those two moves P again follows White's pass
    with the same neighbourhood, so the new root's P shares the entry: 0.1 at weight 0.2, the
    same mean, and the same correction for selection."""
    tree = grown_tree(0.45)
    tree.advance(S, BLACK)
    tree.advance(PASS, WHITE)
    assert tree.visits == 0
    step(tree, policy(P, Q), 0.0)
    tree.set_root_targets({P: 1})
    assert step(tree, policy(R), 0.0)[P] == 1
    delta, weight = tree.child_bias(P)
    assert delta == pytest.approx(0.1, abs=1e-6) and weight == pytest.approx(0.2, abs=1e-6)
    assert tree.child_utility(P) == pytest.approx(0.45 * 0.5, abs=1e-6)
    assert tree.check() == 0


def test_bias_keeps_the_tree_consistent_under_a_full_search():
    """A real search with the correction: visits add up, values stay win/loss, and a different
    factor moves visits without touching any child's mean value formula."""
    rng = np.random.default_rng(0)
    table = rng.uniform(-0.6, 0.6, 1 << 16).astype(np.float32)
    results = {}
    for factor in (0.0, 0.45):
        tree = Search(Game(SIZE), SearchParams(subtree_bias_factor=factor), max_batch=4, seed=2)
        while tree.visits < 600:
            n = tree.collect()
            planes = tree.planes[:n]
            keys = [hash(p[:2].tobytes()) & 0xFFFF for p in planes]
            pol = np.zeros((n, PASS + 1), np.float32)
            pol[:, PASS] = -5.0
            tree.backup(pol, table[keys])
        assert tree.check() == 0
        results[factor] = {c.move: c.visits for c in tree.children(with_pv=False)}
    assert results[0.0] != results[0.45]


@pytest.mark.parametrize("lcb_utility,want", [(0.0, S), (1.0, P)])
def test_lcb_on_utility_by_hand(lcb_utility, want):
    """Eleven visits each: below P every position is even for Black but 20 points up, below S
    Black is +0.05 and 20 points down.  On values the LCB prefers S; on value plus score
    utility (static factor 1: 2/pi * atan(+-20 / 10) = +-0.705) it prefers P."""
    p = SearchParams(static_score_utility=1.0, lcb_utility=lcb_utility)
    tree = Search(Game(SIZE), p, max_batch=1, seed=1)
    for targets in (None, {P: 11}, {S: 11}):
        tree.set_root_targets(targets)
        while tree.collect(1) == 1:
            planes = tree.planes[0]
            stones = planes[:2].sum(axis=0).ravel()
            black = planes[14, 0, 0] > 0.5                 # rich plane 14: Black to move
            value, lead = (0.0, 20.0) if stones[P] else (0.05, -20.0) if stones[S] else (0.0, 0.0)
            sign = 1.0 if black else -1.0
            logits = policy(P, S) if targets is None else policy(R, 6, 7, 12)  # P, S: root only
            tree.backup(logits, np.array([sign * value], np.float32),
                        scores=np.array([sign * lead], np.float32))
            if targets is None:
                break
    visits = {c.move: c.visits for c in tree.children(with_pv=False)}
    assert visits[P] == visits[S] == 11
    assert tree.choose() == want
