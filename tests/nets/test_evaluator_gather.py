"""The evaluator's one-gather random symmetries equal engine.nets.symmetry's per-item transforms."""
import numpy as np
import pytest
import torch

from engine.nets import symmetry
from engine.nets.evaluator import _gather_points


@pytest.mark.parametrize("n", [2, 5, 9, 19])
def test_gather_points_matches_symmetry_module(n):
    rng = np.random.default_rng(n)
    ks = rng.integers(0, 8, 11)
    x = torch.from_numpy(rng.random((11, 6, n, n), dtype=np.float32))
    assert torch.equal(_gather_points(x, ks, n, False), symmetry.apply_symmetries(x, ks))
    p = torch.from_numpy(rng.random((11, n * n + 1), dtype=np.float32))
    assert torch.equal(_gather_points(p, ks, n, True), symmetry.apply_policy_symmetries(p, ks))
    o = torch.from_numpy(rng.random((11, n * n), dtype=np.float32))
    assert torch.equal(_gather_points(o, ks, n, False), symmetry.apply_policy_symmetries(o, ks))
    inverse = np.asarray(symmetry.INVERSE)[ks]
    back = _gather_points(_gather_points(p, ks, n, True), inverse, n, True)
    assert torch.equal(back, p)
