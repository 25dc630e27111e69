"""Winograd F(m x m, 3 x 3) convolutions for CPU inference (Lavin & Gray, 2016).

A 3x3 convolution over an N x N board costs N*N*9 multiplications per input/output channel
pair done directly; with Winograd's minimal filtering on m x m output tiles it costs
(m+2)^2 per tile: 225 instead of 729 on 9x9 (m = 3, nine tiles cover the board exactly) and 900
instead of 3,249 on 19x19 (m = 4), the transform Leela Zero's CPU path uses.  The data
transforms and the (m+2)^2 per-point channel products run fused in C (``src_c/winograd.c``,
channels innermost, per block of tiles sized for the L2 cache); shapes the C kernel does not
take (output channels not a multiple of 16, a compiler without vector extensions) run through
torch's convolution.

:func:`winograd_model` returns an inference copy of a net with every 3x3 convolution (stride 1,
padding 1, float32) replaced by :class:`WinogradConv3x3`; :mod:`engine.nets.precision` measures it
against the plain layouts and takes it only where it is faster and within tolerance.  The
transform matrices come from Toom-Cook interpolation points (0, +-1, +-2, +-1/2 and infinity)
and are checked exactly (:func:`transform_matrices`).
"""
from __future__ import annotations

import copy
import functools
from fractions import Fraction

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engine.native import ffi, lib

# Finite Toom-Cook points in the order they are taken; infinity is always the last point.
_POINTS = (Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2), Fraction(1, 2),
           Fraction(-1, 2))
MAX_TILE = lib.WINO_MAX_ALPHA - 2


@functools.lru_cache(maxsize=None)
def transform_matrices(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T [m, a], G [a, 3], B^T [a, a]) in float64 for F(m, 3), a = m + 2, such that the 1-D
    correlation y_i = sum_k g_k d_{i+k} (i < m) equals A^T ((G g) * (B^T d)) for every d, g.

    A^T and G come from the interpolation points (Vandermonde rows, Lagrange denominators); B^T
    is solved from the identity in exact rational arithmetic, so a wrong matrix cannot pass.
    Raises ValueError for m outside 1..MAX_TILE."""
    if not 1 <= m <= MAX_TILE:
        raise ValueError(f"tile size m must be 1..{MAX_TILE}, got {m}")
    r, a = 3, m + 2
    pts = _POINTS[: a - 1]
    at = [[p ** i for p in pts] + [Fraction(1 if i == m - 1 else 0)] for i in range(m)]
    g = []
    for j, p in enumerate(pts):
        f = Fraction(1)
        for q in pts[:j] + pts[j + 1:]:
            f *= p - q
        g.append([p ** k / f for k in range(r)])
    g.append([Fraction(1 if k == r - 1 else 0) for k in range(r)])
    # Unknown B^T[j][l]: for all i < m, k < r, l < a: sum_j AT[i][j] G[j][k] BT[j][l] = [l == i+k].
    # For each l this is a linear system in the column BT[:, l] with rows (i, k).
    rows = [[at[i][j] * g[j][k] for j in range(a)] for i in range(m) for k in range(r)]
    bt = [[Fraction(0)] * a for _ in range(a)]
    for l in range(a):
        rhs = [Fraction(1 if l == i + k else 0) for i in range(m) for k in range(r)]
        col = _solve_exact(rows, rhs, a)
        for j in range(a):
            bt[j][l] = col[j]
    f64 = lambda mat: np.array([[float(x) for x in row] for row in mat], dtype=np.float64)  # noqa: E731
    return f64(at), f64(g), f64(bt)


def _solve_exact(rows: list[list[Fraction]], rhs: list[Fraction], n: int) -> list[Fraction]:
    """A solution of the (consistent, possibly overdetermined) system rows . x = rhs by
    Gauss-Jordan elimination over the rationals; raises ArithmeticError when inconsistent."""
    aug = [list(r) + [b] for r, b in zip(rows, rhs)]
    pivots, row = [], 0
    for col in range(n):
        pivot = next((i for i in range(row, len(aug)) if aug[i][col] != 0), None)
        if pivot is None:
            continue
        aug[row], aug[pivot] = aug[pivot], aug[row]
        inv = 1 / aug[row][col]
        aug[row] = [x * inv for x in aug[row]]
        for i in range(len(aug)):
            if i != row and aug[i][col] != 0:
                f = aug[i][col]
                aug[i] = [x - f * y for x, y in zip(aug[i], aug[row])]
        pivots.append(col)
        row += 1
    if any(all(x == 0 for x in r[:n]) and r[n] != 0 for r in aug):
        raise ArithmeticError("no Winograd transform for these points")
    x = [Fraction(0)] * n
    for i, col in enumerate(pivots):
        x[col] = aug[i][n]
    return x


def best_tile(size: int) -> int:
    """The output tile size m (2..4) with the fewest multiplications, (m+2)^2 * ceil(size/m)^2,
    on a size x size board (smaller m on ties: better rounding)."""
    return min(range(2, 5), key=lambda m: ((m + 2) ** 2 * (-(-size // m)) ** 2, m))


def _ptr(t: torch.Tensor, kind: str = "float *"):
    return ffi.cast(kind, t.data_ptr())


class WinogradConv3x3(nn.Module):
    """A float32 3x3 convolution (stride 1, padding 1, no groups) by Winograd's algorithm.

    Takes any NCHW tensor and returns a channels-last one (a contiguous NHWC buffer), so that
    consecutive layers never copy.  The transformed filters are computed once per tile size."""

    def __init__(self, conv: nn.Conv2d, tile: int | None = None) -> None:
        super().__init__()
        if not is_winograd_conv(conv):
            raise ValueError("WinogradConv3x3 needs a 3x3, stride 1, padding 1 convolution")
        self.in_channels, self.out_channels = conv.in_channels, conv.out_channels
        self.tile = tile
        self.register_buffer("weight", conv.weight.detach().float().cpu(), persistent=False)
        # A plain attribute, not a buffer: Module.to() must never swap it under the cached pointer.
        self.bias = conv.bias.detach().float().cpu().contiguous() if conv.bias is not None else None
        self._bias_ptr = _ptr(self.bias, "const float *") if self.bias is not None else ffi.NULL
        self._filters: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def _transformed(self, m: int) -> tuple:
        """(U [(m+2)^2, Ci rounded up to 8, Co], A^T, B^T, and their C pointers) for tile size m,
        computed once (two threads may both compute it the first time: the same value, stored in
        one step)."""
        found = self._filters.get(m)
        if found is None:
            at, g, bt = (torch.from_numpy(x) for x in transform_matrices(m))
            a = m + 2
            u = torch.einsum("ij,ocjk,lk->ilco", g, self.weight.double(), g).reshape(a * a, self.in_channels,
                                                                             self.out_channels)
            pad = -self.in_channels % 8        # the fused kernel takes channels in eights
            if pad:
                u = torch.cat([u, u.new_zeros(a * a, pad, self.out_channels)], dim=1)
            tensors = (u.float().contiguous(), at.float().contiguous(), bt.float().contiguous())
            found = tensors + tuple(_ptr(t, "const float *") for t in tensors)
            self._filters[m] = found
        return found

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None, relu: bool = False) -> torch.Tensor:
        """conv(x) + bias (+ residual, NCHW of the output's shape), then max(0, .) if relu."""
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"expected [B, {self.in_channels}, H, W], got {tuple(x.shape)}")
        if x.device.type != "cpu":
            raise ValueError("WinogradConv3x3 runs on the CPU")
        n, c, h, w = x.shape
        m = self.tile or best_tile(max(h, w))
        u, at, bt, pu, pat, pbt = self._transformed(m)
        xl = x.float().permute(0, 2, 3, 1)
        if u.shape[1] != c:                    # input channels padded to a multiple of 8
            xl = torch.nn.functional.pad(xl, (0, u.shape[1] - c))
        xl = xl.contiguous()
        px = _ptr(xl, "const float *")
        y = torch.empty(n, h, w, self.out_channels)
        res = ffi.NULL
        if residual is not None:
            rl = residual.float().permute(0, 2, 3, 1).contiguous()
            if rl.shape != y.shape:
                raise ValueError(f"residual shape {tuple(residual.shape)} does not match the output")
            res = _ptr(rl, "const float *")
        status = lib.wino_conv3x3(px, n, h, w, u.shape[1], self.out_channels, m, pbt, pat, pu,
                                  self._bias_ptr, res, int(relu), torch.get_num_threads(), _ptr(y))
        if status == 1:                        # no fused kernel for this shape: torch's convolution
            out = F.conv2d(x.float(), self.weight, self.bias, padding=1)
            if residual is not None:
                out = out + residual.float()
            return F.relu(out) if relu else out
        if status != 0:
            raise MemoryError("Winograd convolution failed (out of memory)")
        return y.permute(0, 3, 1, 2)


class WinogradResidual(nn.Module):
    """relu(x + conv2(relu(conv1(x)))) with the bias, skip connection and both relus done inside
    the output transforms: the residual block of AlphaGo Zero, Leela Zero and GoNet."""

    def __init__(self, conv1: WinogradConv3x3, conv2: WinogradConv3x3) -> None:
        super().__init__()
        self.conv1, self.conv2 = conv1, conv2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.conv1(x, relu=True), residual=x, relu=True)


class WinogradKataConv(nn.Module):
    """A KataGo net's 3x3 convolution (``engine.nets.katanet._Conv``: activations [B, H*W, C], which
    is the channels-last layout the Winograd kernel reads and writes) by Winograd's algorithm."""

    def __init__(self, conv: WinogradConv3x3) -> None:
        super().__init__()
        self.conv = conv

    def forward(self, x: torch.Tensor, hw: tuple[int, int]) -> torch.Tensor:
        b, s, c = x.shape
        h, w = hw
        y = self.conv(x.reshape(b, h, w, c).permute(0, 3, 1, 2))       # [B, Co, H, W], NHWC memory
        return y.permute(0, 2, 3, 1).reshape(b, s, self.conv.out_channels)


def _kata_conv(module: nn.Module) -> nn.Conv2d | None:
    """An equivalent nn.Conv2d for a KataGo net's plain 3x3 convolution, else None."""
    from engine.nets.katanet import _Conv

    if type(module) is not _Conv or module.pointwise or tuple(module.weight.shape[2:]) != (3, 3) \
            or tuple(module.dilation) != (1, 1) or module.weight.dtype != torch.float32:
        return None
    cout, cin = module.weight.shape[:2]
    conv = nn.Conv2d(cin, cout, 3, padding=1, bias=module.bias is not None)
    with torch.no_grad():
        conv.weight.copy_(module.weight)
        if module.bias is not None:
            conv.bias.copy_(module.bias)
    return conv


def _residual_convs(module: nn.Module) -> tuple[nn.Conv2d, nn.Conv2d] | None:
    """The two convolutions of a plain residual block (GoNet's ``ResBlock`` with its batch norms
    folded, Leela Zero's block), or None for any other module."""
    from engine.nets.lzweights import _ResidualBlock
    from engine.nets.network import ResBlock

    if type(module) is _ResidualBlock:
        return module.conv1, module.conv2
    if type(module) is ResBlock and all(isinstance(c.bn, nn.Identity) for c in (module.conv1, module.conv2)):
        return module.conv1.conv, module.conv2.conv
    return None


def _folded_conv(module: nn.Module) -> nn.Conv2d | None:
    """The convolution of a GoNet ``ConvBN`` whose batch norm is folded into it, when it can run
    by Winograd's algorithm; else None."""
    from engine.nets.network import ConvBN

    if type(module) is ConvBN and isinstance(module.bn, nn.Identity) and is_winograd_conv(module.conv):
        return module.conv
    return None


def is_winograd_conv(module: nn.Module) -> bool:
    """True for a float32 3x3 convolution with stride 1, padding 1, no dilation, one group."""
    return (isinstance(module, nn.Conv2d) and tuple(module.kernel_size) == (3, 3)
            and tuple(module.stride) == (1, 1) and tuple(module.padding) == (1, 1)
            and tuple(module.dilation) == (1, 1) and module.groups == 1
            and module.padding_mode == "zeros" and module.weight.dtype == torch.float32)


def winograd_model(model: nn.Module) -> nn.Module:
    """A copy of ``model`` (eval mode, CPU) with every Winograd-able 3x3 convolution replaced by a
    :class:`WinogradConv3x3` (a KataGo net's by a :class:`WinogradKataConv`) and every plain
    residual block by a :class:`WinogradResidual`;
    returns the copy (the original is untouched).  Batch norms must already be folded (a GoNet's
    ``fused()`` copy) for its residual blocks to be fused too."""
    net = copy.deepcopy(model).eval().cpu()

    def swap(parent: nn.Module) -> None:
        for name, child in parent.named_children():
            convs = _residual_convs(child)
            if convs is not None and all(is_winograd_conv(c) for c in convs):
                setattr(parent, name, WinogradResidual(*(WinogradConv3x3(c) for c in convs)))
            elif _kata_conv(child) is not None:
                setattr(parent, name, WinogradKataConv(WinogradConv3x3(_kata_conv(child))))
            elif _folded_conv(child) is not None:      # a ConvBN whose batch norm is folded
                setattr(parent, name, WinogradConv3x3(_folded_conv(child)))
            elif is_winograd_conv(child):
                setattr(parent, name, WinogradConv3x3(child))
            else:
                swap(child)
    swap(net)
    return net


def count_winograd(model: nn.Module) -> int:
    """How many convolutions of ``model`` run by Winograd's algorithm."""
    return sum(isinstance(m, WinogradConv3x3) for m in model.modules())


__all__ = ["transform_matrices", "best_tile", "WinogradConv3x3", "winograd_model", "is_winograd_conv",
           "count_winograd", "WinogradResidual", "WinogradKataConv", "MAX_TILE"]
