"""KataGo's fpuParentWeightByVisitedPolicy in the C search (``fpu_parent_nn``), on a hand-fed
tree: the parent Q that first-play urgency starts from blends the parent's mean with the net's
own value of the parent, by the share of the policy already visited."""
from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core import Game, Search, SearchParams
from engine.play import searchopts

SIZE = 5
A, B, C = 0, 12, 24
PASS = SIZE * SIZE


def logits() -> np.ndarray:
    out = np.full((1, PASS + 1), -30.0, np.float32)
    out[0, [A, B, C]] = np.log([0.6, 0.3, 0.1])
    return out


def third_choice(**options: float) -> int:
    """Root (Black to move) valued +0.3 by the net; its child A (prior 0.6) visited once and
    worth 0 to Black; returns the root's move of the next descent.

    By hand, with parent N = 2 and every U term c * sqrt(2) * prior / (1 + n): A's is
    c * sqrt(2) * 0.6 / 2 and B's (unvisited, prior 0.3) c * sqrt(2) * 0.3, the same, so B wins
    exactly when its FPU value beats A's Q of 0.  The root's mean is (0.3 + 0) / 2 = 0.15 and
    the reduction 0.25 * sqrt(0.6) = 0.194:
      - off: FPU = 0.15 - 0.194 = -0.044 < 0, so A;
      - on, power 2: w = 0.6^2 = 0.36, FPU = 0.36 * 0.15 + 0.64 * 0.3 - 0.194 = +0.052 > 0, so B;
      - on, power 0: w = 1, the mean alone, so A (as off)."""
    tree = Search(Game(SIZE), SearchParams(**options), max_batch=1, seed=1)
    assert tree.collect(1) == 1
    tree.backup(logits(), np.array([0.3], np.float32))           # the root, Black's view
    tree.set_root_targets({A: 1})
    assert tree.collect(1) == 1
    tree.backup(logits(), np.array([0.0], np.float32))           # A: White to move, even
    tree.set_root_targets(None)
    assert tree.collect(1) == 1
    stones = tree.planes[0][:2].sum(axis=0).ravel()
    if stones[A]:
        return A                                # through A to one of its children
    (point,) = np.flatnonzero(stones)           # a new child of the root
    return int(point)


def test_fpu_by_hand():
    red = SearchParams().fpu_reduction * math.sqrt(0.6)
    assert 0.15 - red < 0 < 0.36 * 0.15 + 0.64 * 0.3 - red      # the docstring's arithmetic
    assert third_choice() == A
    assert third_choice(fpu_parent_nn=1.0) == B
    assert third_choice(fpu_parent_nn=1.0, fpu_parent_nn_pow=0.0) == A
    assert third_choice(fpu_parent_nn=1.0, fpu_parent_nn_pow=5.0) == B


def test_off_by_default_and_named_as_katago():
    assert SearchParams().fpu_parent_nn == 0.0 and SearchParams().fpu_parent_nn_pow == 2.0
    assert searchopts.parse_options("fpuParentWeightByVisitedPolicy=true,fpuParentWeightByVisitedPolicyPow=1.5") \
        == {"fpu_parent_nn": 1.0, "fpu_parent_nn_pow": 1.5}
    with pytest.raises(ValueError, match="outside"):
        searchopts.parse_options("fpu_parent_nn_pow=6")
