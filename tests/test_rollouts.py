"""Random playouts mixed into the net's value at the leaves (``rollout_weight``, ``rollouts``;
src_c/search.h): the mixed value on positions whose playouts have one possible result, the
options by name, and reproducibility."""
from __future__ import annotations

import numpy as np
import pytest

from engine.core import BLACK, WHITE, Game, Search, SearchParams
from engine.rules import Rules
from engine.nets.evaluator import Evaluation
from engine.play import searchopts

SIZE = 5


class FixedEvaluator:
    """Uniform policy (pass ruled out), value ``value`` for Black to move and ``-value`` for
    White (rich plane 14: Black to move)."""

    feature_set = "rich"

    def __init__(self, value: float):
        self.value = value

    def evaluate(self, planes, keys=None):
        n = len(planes)
        policy = np.zeros((n, SIZE * SIZE + 1), np.float32)
        policy[:, -1] = -30.0
        values = np.array([self.value if p[14, 0, 0] > 0.5 else -self.value for p in planes], np.float32)
        return Evaluation(policy, values, None, None)


def black_wall(to_move: int) -> Game:
    """Black on every point but two separate one-point eyes (A1 and E5), komi 0.5: every
    random playout ends in two passes with all 25 points Black's (White may not play in
    either eye, Black does not fill its own), a sure win for Black."""
    game = Game(SIZE, Rules(komi=0.5))
    for p in range(SIZE * SIZE):
        if p not in (0, SIZE * SIZE - 1):
            game.play(p, BLACK)
    game.set_to_move(to_move)
    return game


def root_value(game: Game, value: float, **params) -> float:
    tree = Search(game, SearchParams(**params), max_batch=1, seed=3)
    ev = FixedEvaluator(value)
    n = tree.collect(1)
    out = ev.evaluate(tree.planes[:n])
    tree.backup(out.policy, out.value)
    assert tree.visits == 1
    return tree.value


@pytest.mark.parametrize("to_move,value,weight,expected", [
    (BLACK, 0.0, 0.0, 0.0),           # off: the net's value alone
    (BLACK, 0.0, 0.25, 0.25),         # playouts all won: 0.75 * 0 + 0.25 * 1
    (BLACK, 0.6, 0.25, 0.7),          # 0.75 * 0.6 + 0.25 * 1
    (BLACK, -0.4, 1.0, 1.0),          # playouts alone
    (WHITE, 0.0, 0.25, -0.25),        # White to move: every playout lost
    (WHITE, 0.2, 0.5, -0.6),          # the net says -0.2 for White: 0.5 * -0.2 + 0.5 * -1
])
def test_mixed_leaf_value(to_move, value, weight, expected):
    got = root_value(black_wall(to_move), value, rollout_weight=weight, rollouts=8)
    assert got == pytest.approx(expected, abs=1e-5)


def test_rollouts_reproducible_and_used():
    """The same search twice gives the same tree (playouts seeded by position and seed);
    with playouts the values differ from the net's alone."""
    def search(weight: float) -> tuple[float, list[int]]:
        game = Game(SIZE, Rules(komi=0.5))
        for p in (6, 7, 12, 18):
            game.play(p)
        tree = Search(game, SearchParams(rollout_weight=weight, rollouts=4), max_batch=4, seed=11)
        ev = FixedEvaluator(0.0)
        while tree.visits < 60:
            n = tree.collect()
            out = ev.evaluate(tree.planes[:n])
            tree.backup(out.policy, out.value)
        return tree.value, [c.visits for c in tree.children(with_pv=False)]

    a, b = search(0.5), search(0.5)
    assert a == b
    plain = search(0.0)
    assert plain[0] == pytest.approx(0.0, abs=1e-6)
    assert abs(a[0]) > 1e-3


def test_options_by_name():
    opts = searchopts.parse_options("rollout_weight=0.5,rollouts=8")
    assert opts == {"rollout_weight": 0.5, "rollouts": 8.0}
    assert SearchParams().rollout_weight == 0.0
    with pytest.raises(ValueError):
        searchopts.parse_options("rollout_weight=1.5")
    with pytest.raises(ValueError):
        searchopts.parse_options("rollouts=0")
