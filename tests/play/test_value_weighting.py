"""KataGo's valueWeightExponent and useNoisePruning in the C search: nodes recomputed from their
children, on hand-fed trees whose root value is computed by hand, and against the running sums
they must reproduce when the adjustment is negligible."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.play.test_fpu_parent import A, B, SIZE, logits     # the hand-fed root: priors 0.6, 0.3, 0.1

from engine.core import Game, Search, SearchParams
from engine.play import searchopts


def t3_cdf(z: float) -> float:
    """Student's t CDF with 3 degrees of freedom by numerical integration of its density (the
    C search uses the closed form)."""
    x = np.linspace(-200.0, z, 400001)
    pdf = 2.0 / (math.pi * math.sqrt(3.0)) * (1.0 + x * x / 3.0) ** -2
    return float(np.trapezoid(pdf, x))


def visit(tree: Search, targets: dict[int, int], black_value: float) -> None:
    """One descent under root targets; the leaf is valued ``black_value`` from Black's view."""
    tree.set_root_targets(targets)
    assert tree.collect(1) == 1
    stones = int(tree.planes[0][:2].sum())           # no captures or passes: depth = stones
    to_move_value = black_value if stones % 2 == 0 else -black_value
    tree.backup(logits(), np.array([to_move_value], np.float32))
    tree.set_root_targets(None)


def two_children(**options: float) -> Search:
    """Root (Black to move) valued 0 by the net; child A (prior 0.6) worth +0.4 to Black and
    child B (prior 0.3) worth -0.2, one visit each."""
    tree = Search(Game(SIZE), SearchParams(**options), max_batch=1, seed=1)
    visit(tree, {}, 0.0)
    visit(tree, {A: 1}, 0.4)
    visit(tree, {A: 1, B: 1}, -0.2)
    return tree


@pytest.mark.parametrize("exponent", [0.25, 1.0])
def test_value_weighting_by_hand(exponent):
    """Children mean (0.4 - 0.2) / 2 = 0.1, each child's sd sqrt(1e-8 + 1 / 1.5) (weight 1), so
    z = +-0.3 / sd; weights (T3(z) + 0.0001)^e scaled back to a total of 2; the root is its own
    evaluation (0, weight 1) plus the two children."""
    sd = math.sqrt(1e-8 + 1.0 / 1.5)
    wa, wb = ((t3_cdf(z) + 1e-4) ** exponent for z in (0.3 / sd, -0.3 / sd))
    wa, wb = 2 * wa / (wa + wb), 2 * wb / (wa + wb)
    want = (0.0 + wa * 0.4 + wb * -0.2) / 3.0
    tree = two_children(value_weight_exponent=exponent)
    assert tree.visits == 3 and tree.weight == pytest.approx(3.0)
    assert tree.value == pytest.approx(want, abs=1e-6)
    assert want > 0.2 / 3 + 0.01                     # leans toward A, past the plain mean
    assert two_children().value == pytest.approx(0.2 / 3, abs=1e-6)


def test_noise_pruning_by_hand():
    """A (prior 0.6): one visit, +0.1 to Black.  B (prior 0.3): three visits, every position
    in its subtree -0.5 to Black, so B's mean is -0.5 whatever its own weighting.  In prior
    order A comes first: B is 0.6 below A and its weight 3 exceeds twice its policy share,
    2 * 1 * 0.3 / 0.6 = 1, by 2, of which 2 (1 - exp(-0.6 / 0.15)) is pruned."""
    def tree_of(**options):
        tree = Search(Game(SIZE), SearchParams(**options), max_batch=1, seed=1)
        visit(tree, {}, 0.0)
        for k in (1, 2, 3):
            visit(tree, {B: k}, -0.5)
        visit(tree, {A: 1, B: 3}, 0.1)
        return tree
    wb = 3.0 - 2.0 * (1.0 - math.exp(-0.6 / 0.15))
    pruned = tree_of(noise_pruning=1.0)
    assert pruned.visits == 5
    assert pruned.weight == pytest.approx(2.0 + wb, rel=1e-6)
    assert pruned.value == pytest.approx((0.1 + wb * -0.5) / (2.0 + wb), abs=1e-6)
    assert tree_of().value == pytest.approx((0.1 - 1.5) / 5.0, abs=1e-6)
    # a gentler scale prunes less; visit counts stay counts
    gentle = tree_of(noise_pruning=1.0, noise_prune_utility_scale=1.0)
    wb1 = 3.0 - 2.0 * (1.0 - math.exp(-0.6))
    assert gentle.weight == pytest.approx(2.0 + wb1, rel=1e-6) and gentle.visits == 5
    assert {c.move: c.visits for c in pruned.children(False) if c.visits} == {A: 1, B: 3}


def random_search(seed: int, **options: float) -> Search:
    rng = np.random.default_rng(seed)
    tree = Search(Game(9), SearchParams(**options), max_batch=8, seed=5)
    for _ in range(50):
        n = tree.collect(8)
        if n == 0:
            continue
        tree.backup(rng.normal(size=(n, 82)).astype(np.float32), np.tanh(rng.normal(size=n)).astype(np.float32),
                    scores=(rng.normal(size=n) * 5).astype(np.float32))
    return tree


@pytest.mark.parametrize("extra", [{}, {"static_score_utility": 0.1, "dynamic_score_utility": 0.3,
                                        "subtree_bias_factor": 0.45, "cpuct_stdev_scale": 0.85}])
def test_a_negligible_adjustment_reproduces_the_running_sums(extra):
    """Recomputing every node from its children with weights left as they are gives back the
    sums the default backup keeps, value-bias correction included: the same tree, visit for
    visit."""
    plain, recomputed = random_search(3, **extra), random_search(3, value_weight_exponent=1e-9, **extra)
    assert recomputed.visits == plain.visits > 300
    assert recomputed.value == pytest.approx(plain.value, abs=2e-5)
    assert recomputed.score == pytest.approx(plain.score, abs=2e-4)
    a, b = plain.children(False), recomputed.children(False)
    assert [(c.move, c.visits) for c in a] == [(c.move, c.visits) for c in b]
    assert [c.q for c in a] == pytest.approx([c.q for c in b], abs=2e-5)
    assert recomputed.check() == 0
    # the real exponent changes the search
    weighted = random_search(3, value_weight_exponent=0.25, noise_pruning=1.0, **extra)
    assert [(c.move, c.visits) for c in weighted.children(False)] != [(c.move, c.visits) for c in a]
    assert weighted.check() == 0


def test_off_by_default_and_named_as_katago():
    p = SearchParams()
    assert (p.value_weight_exponent, p.noise_pruning, p.noise_prune_utility_scale) == (0.0, 0.0, 0.15)
    assert searchopts.parse_options("valueWeightExponent=0.25,useNoisePruning=true,noisePruneUtilityScale=0.2") \
        == {"value_weight_exponent": 0.25, "noise_pruning": 1.0, "noise_prune_utility_scale": 0.2}
    with pytest.raises(ValueError, match="outside"):
        searchopts.parse_options("valueWeightExponent=2")
