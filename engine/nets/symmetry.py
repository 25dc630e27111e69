"""The 8 symmetries of the square board, for input planes, policy vectors and points.

Used by the evaluator (a random symmetry per evaluation, or the average of all 8) and by the
trainer (data augmentation). Every function accepts numpy arrays and torch tensors alike and
returns the same kind it was given.

Symmetry ``k`` (0..7) is "transpose if ``k >= 4``, then rotate ``k % 4`` quarter turns
counter-clockwise" (``np.rot90`` semantics, row 0 drawn on top). A point at (row, col) on an
N x N board goes to:

===  ==========================  =====================
k    what it is                  (row, col) goes to
===  ==========================  =====================
0    identity                    (r, c)
1    rotate 90 counter-clockwise (N-1-c, r)
2    rotate 180                  (N-1-r, N-1-c)
3    rotate 90 clockwise         (c, N-1-r)
4    mirror in main diagonal     (c, r)
5    mirror top <-> bottom       (N-1-r, c)
6    mirror in anti-diagonal     (N-1-c, N-1-r)
7    mirror left <-> right       (r, N-1-c)
===  ==========================  =====================

``INVERSE[k]`` undoes ``k``: rotations invert each other (1 <-> 3), mirrors are their own inverse.

Policy vectors have ``N*N + 1`` entries, point ``row * N + col`` then PASS last; PASS is fixed by
every symmetry. Flat per-point vectors of ``N*N`` entries (ownership) are handled by the same
functions.
"""

from __future__ import annotations

import functools
from typing import TypeVar, Union

import numpy as np
import torch

NUM_SYMMETRIES = 8
IDENTITY = 0
INVERSE: tuple[int, ...] = (0, 3, 2, 1, 4, 5, 6, 7)
NAMES: tuple[str, ...] = (
    "identity",
    "rot90",
    "rot180",
    "rot270",
    "transpose",
    "flip_rows",
    "anti_transpose",
    "flip_cols",
)

Array = TypeVar("Array", np.ndarray, torch.Tensor)
IntArray = Union[np.ndarray, torch.Tensor, list, tuple]


def _check_k(k: int) -> int:
    k = int(k)
    if not 0 <= k < NUM_SYMMETRIES:
        raise ValueError(f"symmetry index must be in 0..7, got {k}")
    return k


def compose(first: int, second: int) -> int:
    """Return the single symmetry equal to applying ``first`` and then ``second``."""
    first, second = _check_k(first), _check_k(second)
    probe = np.arange(9, dtype=np.int64).reshape(3, 3)
    target = apply_symmetry(apply_symmetry(probe, first), second)
    for k in range(NUM_SYMMETRIES):
        if np.array_equal(apply_symmetry(probe, k), target):
            return k
    raise AssertionError("the symmetries of the square form a group")  # pragma: no cover


def apply_symmetry(x: Array, k: int) -> Array:
    """Apply symmetry ``k`` to the last two (row, col) axes of ``x`` ([..., N, N]).

    Returns a new contiguous array/tensor of the same shape and dtype (numpy in, numpy out;
    torch in, torch out). Raises ValueError if k is not in 0..7 or the last two axes differ.
    """
    k = _check_k(k)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"board planes must be square, got shape {tuple(x.shape)}")
    transpose, turns = k >= 4, k % 4
    if isinstance(x, torch.Tensor):
        y = x.transpose(-2, -1) if transpose else x
        if turns:
            y = torch.rot90(y, turns, dims=(-2, -1))
        return y.contiguous()
    y = np.swapaxes(x, -2, -1) if transpose else x
    if turns:
        y = np.rot90(y, turns, axes=(-2, -1))
    return np.ascontiguousarray(y)


def transform_point(point: int, k: int, size: int) -> int:
    """Return where point ``row * size + col`` goes under symmetry ``k``; PASS (size*size) stays PASS.

    Raises ValueError for a point outside 0..size*size or k outside 0..7.
    """
    k = _check_k(k)
    if not 0 <= point <= size * size:
        raise ValueError(f"point {point} out of range for a {size}x{size} board")
    if point == size * size:
        return point
    r, c = divmod(point, size)
    if k >= 4:
        r, c = c, r
    for _ in range(k % 4):
        r, c = size - 1 - c, r
    return r * size + c


@functools.lru_cache(maxsize=None)
def _gather_index(k: int, size: int, with_pass: bool) -> np.ndarray:
    """Index ``g`` with ``transformed[..., q] == original[..., g[q]]`` (read-only)."""
    grid = np.arange(size * size, dtype=np.int64).reshape(size, size)
    g = apply_symmetry(grid, k).reshape(-1)
    if with_pass:
        g = np.append(g, size * size)
    g.setflags(write=False)
    return g


@functools.lru_cache(maxsize=None)
def _gather_index_torch(k: int, size: int, with_pass: bool, device: str) -> torch.Tensor:
    return torch.from_numpy(_gather_index(k, size, with_pass).copy()).to(device)


def policy_permutation(k: int, size: int, with_pass: bool = True) -> np.ndarray:
    """Return the gather index ``g`` (int64, read-only) such that ``policy[..., g]`` is the policy
    transformed by symmetry ``k`` (the same mapping ``apply_symmetry`` does to planes).

    Length is ``size*size + 1`` (PASS last, fixed) when ``with_pass``, else ``size*size``.
    """
    return _gather_index(_check_k(k), int(size), bool(with_pass))


def _flat_size(n: int) -> tuple[int, bool]:
    """Board size and whether a PASS entry is present for a flat vector of length n."""
    for with_pass in (False, True):
        m = n - 1 if with_pass else n
        size = int(round(m ** 0.5))
        if m >= 1 and size * size == m:
            return size, with_pass
    raise ValueError(f"cannot read a board from a flat vector of length {n}")


def apply_policy_symmetry(x: Array, k: int, size: int | None = None) -> Array:
    """Apply symmetry ``k`` to flat per-point vectors ``x`` ([..., N*N+1] policy with PASS last,
    or [..., N*N] e.g. ownership).

    ``size`` is N; it is inferred from the last axis when omitted (a perfect square ``N*N`` is a
    per-point vector, ``N*N + 1`` a policy; no length >= 4 is both). Consistent with ``apply_symmetry``:
    ``apply_policy_symmetry(planes.reshape(N*N), k) == apply_symmetry(planes, k).reshape(N*N)``.
    Returns a new array/tensor of the same kind. Raises ValueError on a length that fits no board.
    """
    k = _check_k(k)
    n = x.shape[-1]
    if size is None:
        size, with_pass = _flat_size(n)
    elif n == size * size + 1:
        with_pass = True
    elif n == size * size:
        with_pass = False
    else:
        raise ValueError(f"last axis {n} fits neither N*N nor N*N+1 for N={size}")
    if isinstance(x, torch.Tensor):
        g = _gather_index_torch(k, size, with_pass, str(x.device))
        return x.index_select(-1, g)
    return x[..., _gather_index(k, size, with_pass)]


def inverse_policy_symmetry(x: Array, k: int, size: int | None = None) -> Array:
    """Undo ``apply_policy_symmetry(., k)``: map a policy/ownership vector produced in the
    coordinates of symmetry ``k`` back to the original board coordinates."""
    return apply_policy_symmetry(x, INVERSE[_check_k(k)], size)


def inverse_apply_symmetry(x: Array, k: int) -> Array:
    """Undo ``apply_symmetry(., k)`` on planes [..., N, N]."""
    return apply_symmetry(x, INVERSE[_check_k(k)])


def _as_index_list(ks: IntArray, batch: int) -> np.ndarray:
    ks = np.asarray(ks.cpu() if isinstance(ks, torch.Tensor) else ks, dtype=np.int64).reshape(-1)
    if ks.shape[0] != batch:
        raise ValueError(f"need one symmetry per batch item: {ks.shape[0]} for {batch}")
    if ks.size and (ks.min() < 0 or ks.max() >= NUM_SYMMETRIES):
        raise ValueError("symmetry indices must be in 0..7")
    return ks


def _per_item(x: Array, ks: IntArray, transform) -> Array:
    """``transform(x[i:j], k)`` for each group of batch items sharing symmetry ``ks[i] = k``."""
    ks = _as_index_list(ks, x.shape[0])
    out = torch.empty_like(x) if isinstance(x, torch.Tensor) else np.empty_like(x)
    for k in np.unique(ks):
        idx = np.nonzero(ks == k)[0]
        sel = torch.from_numpy(idx).to(x.device) if isinstance(x, torch.Tensor) else idx
        out[sel] = transform(x[sel], int(k))
    return out


def apply_symmetries(x: Array, ks: IntArray) -> Array:
    """Apply symmetry ``ks[i]`` to batch item ``x[i]`` (planes [B, ..., N, N]).

    Returns a new array/tensor of the same shape. Raises ValueError if len(ks) != B.
    """
    return _per_item(x, ks, apply_symmetry)


def apply_policy_symmetries(x: Array, ks: IntArray, size: int | None = None) -> Array:
    """Apply symmetry ``ks[i]`` to the flat policy/ownership vector ``x[i]`` ([B, N*N(+1)])."""
    return _per_item(x, ks, lambda v, k: apply_policy_symmetry(v, k, size))
