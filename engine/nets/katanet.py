"""A torch module that evaluates a KataGo network exactly as KataGo's CPU backend does.

Built from a parsed :class:`engine.nets.kataweights.KataModel`.  Input: ``[B, 41, N, N]`` planes of
the ``kata7`` feature set (``src_c/kata_features.h``): KataGo's 22 spatial input planes, then
its 19 global inputs, each broadcast over the board (the net reads them at point (0, 0)).
Plane 0 is KataGo's on-board mask: boards smaller than the tensor (padding) are handled as
KataGo does; the engine always passes exact N x N boards, for which the mask work is skipped.

Semantics reproduced from KataGo (``cpp/neuralnet/eigenbackend.cpp``, ``nneval.cpp``):

* batch norm = per-channel ``x * scale / sqrt(var + eps) + (bias - mean * that)``, then the
  activation, then the mask; a convolution directly followed by a batch norm is folded into it;
* global pooling of C channels gives 3C values: mean, ``mean * (sqrt(area) - 14) / 10`` and the
  maximum over the board (floored at -1, as KataGo's padding trick does); the value head pools
  mean, ``mean * (sqrt(area) - 14) / 10`` and ``mean * ((sqrt(area) - 14)^2 / 100 - 0.1)``;
* transformer blocks: RMS norm over channels (weight only), q/k/v projections without bias,
  rotary position encoding on channel pairs (2p, 2p+1) of each head (learnable per kv head
  frequencies: angle = col * f_x + row * f_y; fixed: the first half of the pairs rotate by
  row * theta^(-2p / (d/2)), the second half by col), softmax(q.k / sqrt(d)) over on-board
  points, output projection, residual add; SwiGLU feed-forward ``(silu(x W1) * (x Wg)) W2``;
* outputs: policy channel 0 over the points, then pass (and channel 1, the optimistic policy,
  as ``policy_opt``, for 2-channel heads and 4-channel heads from version 16: the search blends
  it in with KataGo's policy optimism when asked); value = P(win) -
  P(loss) of the softmax of (win, loss, no-result) logits, no-result suppressed (logit - 1e5)
  under a non-simple ko rule with area scoring; score lead = lead output * lead multiplier *
  (1 - P(no result)); ownership = tanh of the ownership output; short-term win/loss and score
  errors (model version >= 9) from the last two score channels: softplus (x 10 for the score,
  version 9), sqrt(softplus * multiplier) (versions 10-13), softplus(x / 2) * sqrt(multiplier)
  (version >= 14).  All from the side to move.

``forward`` returns :class:`KataOutput` ``(policy [B, N*N+1] logits, value [B], ownership
[B, N*N], score [B], uncertainty [B, 2] or None, policy_opt [B, N*N+1] or None)`` like this
project's nets (which have neither); ``forward_raw`` returns every output KataGo reports (see its docstring).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engine.nets import katamodel as kw

__all__ = ["KataNet", "KataOutput", "SPATIAL", "GLOBAL", "PLANES"]

SPATIAL = kw.SPATIAL_INPUTS
GLOBAL = kw.GLOBAL_INPUTS
PLANES = SPATIAL + GLOBAL
NO_RESULT_SUPPRESS = 100000.0


class KataOutput(NamedTuple):
    policy: torch.Tensor     # [B, N*N+1] logits, point row*N+col then pass
    value: torch.Tensor      # [B] P(win) - P(loss), side to move
    ownership: torch.Tensor  # [B, N*N] in [-1, 1], +1 = side to move
    score: torch.Tensor      # [B] score lead of the side to move, points
    # [B, 2] short-term win/loss error and score error (points), >= 0; None before version 9
    uncertainty: torch.Tensor | None = None
    # [B, N*N+1] logits of the optimistic policy head (KataGo's policy channel 1 for 2-channel
    # heads, and for 4-channel heads from version 16); None without one
    policy_opt: torch.Tensor | None = None


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))


def _activation(kind: str):
    if kind == "ACTIVATION_RELU":
        return F.relu
    if kind == "ACTIVATION_MISH":
        return F.mish
    if kind == "ACTIVATION_SILU":
        return F.silu
    if kind == "ACTIVATION_IDENTITY":
        return lambda x: x
    raise ValueError(f"unknown activation {kind}")


class _NormAct(nn.Module):
    """Batch norm (as a per-channel affine map), activation, mask; on [B, S, C]."""

    def __init__(self, bn: kw.BatchNorm, act: kw.Activation) -> None:
        super().__init__()
        scale, bias = bn.merged()
        self.register_buffer("scale", _t(scale))
        self.register_buffer("bias", _t(bias))
        self.act = _activation(act.kind)

    def forward(self, x: torch.Tensor, pool: "_Pool") -> torch.Tensor:
        y = self.act(torch.addcmul(self.bias, x, self.scale))
        return y if pool.mask is None else y * pool.mask


class _Conv(nn.Module):
    """A convolution on the [B, S, C] layout: a matrix product for 1x1 kernels, else conv2d on an
    NCHW view of the same memory (channels-last strides, no copy).  With ``fold``, the batch
    norm that follows it is folded in (scale into the weights, shift as the bias)."""

    def __init__(self, c: kw.Conv, fold: kw.BatchNorm | None = None) -> None:
        super().__init__()
        cout, cin, ky, kx = c.weight.shape
        w = c.weight
        bias = None
        if fold is not None:
            scale, bias = fold.merged()
            w = w * scale[:, None, None, None]
        self.pointwise = ky == 1 and kx == 1
        self.register_buffer("weight", _t(w[:, :, 0, 0] if self.pointwise else w))
        self.register_buffer("bias", None if bias is None else _t(bias))
        dy, dx = c.dilation
        self.padding = (dy * (ky // 2), dx * (kx // 2))
        self.dilation = (dy, dx)
        self.cout = cout

    def forward(self, x: torch.Tensor, hw: tuple[int, int]) -> torch.Tensor:
        if self.pointwise:
            return F.linear(x, self.weight, self.bias)
        b, s, c = x.shape
        h, w = hw
        img = x.reshape(b, h, w, c).permute(0, 3, 1, 2)
        y = F.conv2d(img, self.weight, self.bias, padding=self.padding, dilation=self.dilation)
        return y.permute(0, 2, 3, 1).reshape(b, s, self.cout)


class _Linear(nn.Module):
    """x @ W (no bias), W stored [in, out] as in the file; ``scale`` multiplies the outputs."""

    def __init__(self, m: kw.MatMul, scale: np.ndarray | None = None) -> None:
        super().__init__()
        w = m.weight if scale is None else m.weight * scale[None, :]
        self.register_buffer("weight", _t(w.T))   # [out, in] for F.linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)


class _Pool:
    """Board facts shared by one forward pass: size, mask [B, S, 1] (None on a full board), area."""

    def __init__(self, mask: torch.Tensor | None, h: int, w: int) -> None:
        self.mask = mask
        self.hw = (h, w)
        self.key_mask = None
        if mask is None:
            self.area = None
            self.area_scalar = float(h * w)
        else:
            self.area = mask.sum(dim=1)                         # [B, 1]

    def _sqrt_area(self) -> torch.Tensor | float:
        return math.sqrt(self.area_scalar) if self.area is None else torch.sqrt(self.area)

    def mean(self, x: torch.Tensor) -> torch.Tensor:
        s = x.sum(dim=1)
        return s / (self.area_scalar if self.area is None else self.area)

    def gpool(self, x: torch.Tensor) -> torch.Tensor:
        """[B, S, C] (masked) -> [B, 3C]: mean, size-scaled mean, max (floored at -1)."""
        mean = self.mean(x)
        sq = self._sqrt_area()
        mx = x.amax(dim=1) if self.mask is None else (x + (self.mask - 1.0)).amax(dim=1)
        return torch.cat([mean, mean * ((sq - 14.0) * 0.1), mx.clamp_min(-1.0)], dim=1)

    def value_pool(self, x: torch.Tensor) -> torch.Tensor:
        mean = self.mean(x)
        sq = self._sqrt_area()
        return torch.cat([mean, mean * ((sq - 14.0) * 0.1), mean * ((sq - 14.0) * (sq - 14.0) * 0.01 - 0.1)], dim=1)


# ----------------------------------------------------------------------------------------------
# Blocks.  Each takes and returns the residual stream [B, S, C] (S = N*N points, row-major).


class _Ordinary(nn.Module):
    def __init__(self, b: kw.OrdinaryBlock) -> None:
        super().__init__()
        self.pre = _NormAct(b.pre_bn, b.pre_act)
        self.conv1 = _Conv(b.conv1, fold=b.mid_bn)
        self.mid_act = _activation(b.mid_act.kind)
        self.conv2 = _Conv(b.conv2)

    def forward(self, x: torch.Tensor, pool: _Pool) -> torch.Tensor:
        y = self.mid_act(self.conv1(self.pre(x, pool), pool.hw))
        if pool.mask is not None:
            y = y * pool.mask
        return x + self.conv2(y, pool.hw)


class _GPool(nn.Module):
    def __init__(self, b: kw.GPoolBlock) -> None:
        super().__init__()
        self.pre = _NormAct(b.pre_bn, b.pre_act)
        scale, _ = b.mid_bn.merged()
        self.conv1 = _Conv(b.conv1, fold=b.mid_bn)
        self.gconv = _Conv(b.gpool_conv, fold=b.gpool_bn)
        self.gact = _activation(b.gpool_act.kind)
        self.to_bias = _Linear(b.gpool_to_bias, scale)
        self.mid_act = _activation(b.mid_act.kind)
        self.conv2 = _Conv(b.conv2)

    def forward(self, x: torch.Tensor, pool: _Pool) -> torch.Tensor:
        t = self.pre(x, pool)
        g = self.gact(self.gconv(t, pool.hw))
        if pool.mask is not None:
            g = g * pool.mask
        bias = self.to_bias(pool.gpool(g))
        y = self.mid_act(self.conv1(t, pool.hw) + bias[:, None, :])
        if pool.mask is not None:
            y = y * pool.mask
        return x + self.conv2(y, pool.hw)


class _Nested(nn.Module):
    def __init__(self, b: kw.NestedBlock) -> None:
        super().__init__()
        self.pre = _NormAct(b.pre_bn, b.pre_act)
        self.pre_conv = _Conv(b.pre_conv)
        self.stack = _Stack(b.blocks)
        self.post = _NormAct(b.post_bn, b.post_act)
        self.post_conv = _Conv(b.post_conv)

    def forward(self, x: torch.Tensor, pool: _Pool) -> torch.Tensor:
        mid = self.pre_conv(self.pre(x, pool), pool.hw)
        mid = self.stack(mid, pool)
        return x + self.post_conv(self.post(mid, pool), pool.hw)


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Per-point RMS norm over the last (channel) dimension."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


class _Attention(nn.Module):
    def __init__(self, b: kw.AttentionBlock) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.q_dim, self.v_dim = b.heads, b.kv_heads, b.q_dim, b.v_dim
        self.eps = float(b.pre_ln.epsilon)
        self.register_buffer("ln", _t(b.pre_ln.weight))
        # q, k and v in one projection: [C] -> [H*dq + KV*dq + KV*dv]
        self.register_buffer("qkv", _t(np.concatenate([b.q.weight, b.k.weight, b.v.weight], axis=1).T))
        self.out = _Linear(b.out)
        self.rope = b.rope
        self.learnable = b.learnable_rope
        self.theta = float(b.rope_theta)
        if b.rope_freqs is not None:
            self.register_buffer("freqs", _t(b.rope_freqs))   # [KV, dq/2, (x, y)]
        self._tables: dict = {}

    def _rope_tables(self, h: int, w: int, device: torch.device, dtype: torch.dtype):
        """cos and sin [heads, S, dq] for q and [kv heads, S, dq] for k, each value repeated for
        the two channels of its pair, sin signed for the rotation (-sin on even channels)."""
        key = (h, w, device, dtype)
        if key not in self._tables:
            rows = torch.arange(h, dtype=torch.float32).repeat_interleave(w)   # y of each point
            cols = torch.arange(w, dtype=torch.float32).repeat(h)              # x of each point
            pairs = self.q_dim // 2
            if self.learnable:
                f = self.freqs.float().cpu()                                     # [KV, P, 2]
                ang = cols[None, :, None] * f[:, None, :, 0] + rows[None, :, None] * f[:, None, :, 1]
            else:
                half = self.q_dim // 2
                per_dim = pairs // 2
                p = torch.arange(pairs, dtype=torch.float32)
                expo = torch.where(p < per_dim, 2 * p, 2 * (p - per_dim)) / half
                freq = torch.pow(torch.tensor(self.theta, dtype=torch.float32), -expo)
                pos = torch.where(p[None, :] < per_dim, rows[:, None], cols[:, None])
                ang = (pos * freq[None, :])[None]                                # [1, S, P]
            cos = torch.cos(ang).repeat_interleave(2, dim=-1)
            sin = torch.sin(ang).repeat_interleave(2, dim=-1)
            sign = torch.tensor([-1.0, 1.0]).repeat(pairs)
            sin = sin * sign
            group = self.heads // self.kv_heads
            if self.learnable:
                qc, qs = cos.repeat_interleave(group, dim=0), sin.repeat_interleave(group, dim=0)
            else:
                qc, qs = cos, sin
            self._tables[key] = tuple(t.to(device=device, dtype=dtype) for t in (qc, qs, cos, sin))
        return self._tables[key]

    @staticmethod
    def _rotate(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Rotate channel pairs (2p, 2p+1): x0' = x0 cos - x1 sin, x1' = x1 cos + x0 sin."""
        swapped = t.reshape(*t.shape[:-1], -1, 2).flip(-1).reshape(t.shape)   # (x1, x0) per pair
        return t * cos + swapped * sin

    def forward(self, x: torch.Tensor, pool: _Pool) -> torch.Tensor:
        b, s, _ = x.shape
        hq, hkv, dq, dv = self.heads, self.kv_heads, self.q_dim, self.v_dim
        t = _rms(x, self.ln, self.eps)
        qkv = F.linear(t, self.qkv)
        q = qkv[..., : hq * dq].reshape(b, s, hq, dq).transpose(1, 2)
        k = qkv[..., hq * dq: (hq + hkv) * dq].reshape(b, s, hkv, dq).transpose(1, 2)
        v = qkv[..., (hq + hkv) * dq:].reshape(b, s, hkv, dv).transpose(1, 2)
        if self.rope:
            qc, qs, kc, ks = self._rope_tables(pool.hw[0], pool.hw[1], x.device, x.dtype)
            q = self._rotate(q, qc, qs)
            k = self._rotate(k, kc, ks)
        if hkv != hq:
            k = k.repeat_interleave(hq // hkv, dim=1)
            v = v.repeat_interleave(hq // hkv, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=pool.key_mask)
        y = self.out(a.transpose(1, 2).reshape(b, s, hq * dv))
        if pool.mask is not None:
            y = y * pool.mask
        return x + y


class _FFN(nn.Module):
    def __init__(self, b: kw.FFNBlock) -> None:
        super().__init__()
        self.eps = float(b.pre_ln.epsilon)
        self.register_buffer("ln", _t(b.pre_ln.weight))
        self.swiglu = b.swiglu
        w1 = b.linear1.weight if b.gate is None else np.concatenate([b.linear1.weight, b.gate.weight], axis=1)
        self.register_buffer("w1", _t(w1.T))
        self.hidden = b.hidden
        self.w2 = _Linear(b.linear2)

    def forward(self, x: torch.Tensor, pool: _Pool) -> torch.Tensor:
        t = _rms(x, self.ln, self.eps)
        u = F.linear(t, self.w1)
        if self.swiglu:
            u = F.silu(u[..., : self.hidden]) * u[..., self.hidden:]
        else:   # KataGo's CPU backend only runs SwiGLU nets; a plain FFN would use ReLU here
            u = F.relu(u)
        y = self.w2(u)
        if pool.mask is not None:
            y = y * pool.mask
        return x + y


def _make_block(b: kw.Block) -> nn.Module:
    if isinstance(b, kw.OrdinaryBlock):
        return _Ordinary(b)
    if isinstance(b, kw.GPoolBlock):
        return _GPool(b)
    if isinstance(b, kw.NestedBlock):
        return _Nested(b)
    if isinstance(b, kw.AttentionBlock):
        return _Attention(b)
    if isinstance(b, kw.FFNBlock):
        return _FFN(b)
    raise TypeError(type(b).__name__)


class _Stack(nn.Module):
    def __init__(self, blocks: list) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([_make_block(b) for b in blocks])

    def forward(self, x: torch.Tensor, pool: _Pool) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, pool)
        return x


# ----------------------------------------------------------------------------------------------


class KataNet(nn.Module):
    """A KataGo network (model versions 8-17, no SGF metadata encoder); see the module docstring.

    Attributes: ``feature_set`` ("kata7" or "kata7s"), ``planes`` = ``in_planes`` = 41,
    ``version``, ``name``, ``postprocess`` (KataGo's output multipliers by name).  Inside, the
    residual stream is kept as [B, N*N, C] (points row-major, channels last): 1x1 convolutions
    and the transformer blocks are matrix products on it, wider kernels run on a view.
    """

    planes = PLANES
    in_planes = PLANES

    def __init__(self, model: kw.KataModel) -> None:
        super().__init__()
        self.name = model.name
        self.version = model.version
        self.feature_set = kw.feature_set_for(model)
        self.postprocess = model.postprocess_params
        t = model.trunk
        w = t.initial_conv.weight
        self.input_conv = nn.Conv2d(w.shape[1], w.shape[0], w.shape[2:], bias=False,
                                    padding=(t.initial_conv.dilation[0] * (w.shape[2] // 2),
                                             t.initial_conv.dilation[1] * (w.shape[3] // 2)),
                                    dilation=t.initial_conv.dilation)
        with torch.no_grad():
            self.input_conv.weight.copy_(_t(w))
        self.input_global = _Linear(t.initial_matmul)
        self.stack = _Stack(t.blocks)
        self.tip_rms_spatial = False
        if t.norm_kind == 0:
            self.tip = _NormAct(t.tip_bn, t.tip_act)
        else:
            r = t.tip_rms
            self.tip = None
            self.tip_rms_spatial = r.spatial
            self.tip_rms_eps = float(r.epsilon)
            self.register_buffer("tip_gamma", _t(r.gamma))
            self.register_buffer("tip_beta", _t(r.beta))
            self.tip_act = _activation(t.tip_act.kind)
        p = model.policy
        self.p1 = _Conv(p.p1_conv)
        self.g1 = _Conv(p.g1_conv, fold=p.g1_bn)
        self.g1_act = _activation(p.g1_act.kind)
        p1_scale, p1_bias = p.p1_bn.merged()
        self.g_to_p = _Linear(p.gpool_to_bias, p1_scale)
        self.register_buffer("p1_scale", _t(p1_scale))
        self.register_buffer("p1_bias", _t(p1_bias))
        self.p1_act = _activation(p.p1_act.kind)
        self.p2 = _Conv(p.p2_conv)
        self.g_to_pass = _Linear(p.gpool_to_pass)
        self.pass_two_layers = p.pass_mul2 is not None
        if self.pass_two_layers:
            self.register_buffer("pass_bias", _t(p.pass_bias.weight))
            self.pass_act = _activation(p.pass_act.kind)
            self.pass2 = _Linear(p.pass_mul2)
        v = model.value
        self.v1 = _Conv(v.v1_conv, fold=v.v1_bn)
        self.v1_act = _activation(v.v1_act.kind)
        self.v2 = _Linear(v.v2_mul)
        self.register_buffer("v2_bias", _t(v.v2_bias.weight))
        self.v2_act = _activation(v.v2_act.kind)
        self.v3 = _Linear(v.v3_mul)
        self.register_buffer("v3_bias", _t(v.v3_bias.weight))
        self.sv3 = _Linear(v.sv3_mul)
        self.register_buffer("sv3_bias", _t(v.sv3_bias.weight))
        self.own = _Conv(v.ownership_conv)
        self.requires_grad_(False)

    # -- the network -----------------------------------------------------------------------

    def _pool(self, x: torch.Tensor) -> _Pool:
        b, _, h, w = x.shape
        on_board = x[:, 0]
        if bool((on_board == 1.0).all()):
            return _Pool(None, h, w)
        mask = on_board.reshape(b, h * w, 1).to(x.dtype)
        pool = _Pool(mask, h, w)
        pool.key_mask = torch.where(mask.reshape(b, 1, 1, h * w) > 0, 0.0, float("-inf")).to(x.dtype)
        return pool

    def _tip(self, x: torch.Tensor, pool: _Pool) -> torch.Tensor:
        if self.tip is not None:
            return self.tip(x, pool)
        sq = x * x
        if self.tip_rms_spatial:
            count = (pool.area_scalar if pool.area is None else pool.area.view(-1, 1, 1)) * x.shape[-1]
            ms = sq.sum(dim=(1, 2), keepdim=True) / count
        else:
            ms = sq.mean(dim=-1, keepdim=True)
        y = self.tip_act(x * torch.rsqrt(ms + self.tip_rms_eps) * self.tip_gamma + self.tip_beta)
        return y if pool.mask is None else y * pool.mask

    def forward_raw(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """KataGo's raw outputs for ``x`` [B, 41, N, N]: ``policy`` [B, C, N*N] and
        ``policy_pass`` [B, C] logits (C = 1, 2 or 4 channels; channel 0 is the policy),
        ``value`` [B, 3] (win, loss, no-result logits), ``score`` [B, 6] (score mean, score
        stdev before softplus, lead, variance time, short-term errors; 4 for version 8),
        ``ownership`` [B, N*N] (before tanh).  Everything from the side to move's view."""
        if x.dim() != 4 or x.shape[1] != PLANES or x.shape[2] < 1:
            raise ValueError(f"expected input [B, {PLANES}, N, N], got {tuple(x.shape)}")
        bsz, _, h, w = x.shape
        pool = self._pool(x)
        glob = x[:, SPATIAL:, 0, 0]
        img = self.input_conv(x[:, :SPATIAL])
        trunk = img.permute(0, 2, 3, 1).reshape(bsz, h * w, -1) + self.input_global(glob)[:, None, :]
        trunk = self.stack(trunk, pool)
        trunk = self._tip(trunk, pool)
        # policy head
        g = self.g1_act(self.g1(trunk, pool.hw))
        if pool.mask is not None:
            g = g * pool.mask
        gp = pool.gpool(g)
        p = self.p1_act(torch.addcmul(self.p1_bias + self.g_to_p(gp)[:, None, :], self.p1(trunk, pool.hw),
                                      self.p1_scale))
        if pool.mask is not None:
            p = p * pool.mask
        policy = self.p2(p, pool.hw).transpose(1, 2)
        if self.pass_two_layers:
            policy_pass = self.pass2(self.pass_act(self.g_to_pass(gp) + self.pass_bias))
        else:
            policy_pass = self.g_to_pass(gp)
        # value head
        v1 = self.v1_act(self.v1(trunk, pool.hw))
        if pool.mask is not None:
            v1 = v1 * pool.mask
        v2 = self.v2_act(self.v2(pool.value_pool(v1)) + self.v2_bias)
        value = self.v3(v2) + self.v3_bias
        score = self.sv3(v2) + self.sv3_bias
        own = self.own(v1, pool.hw)[..., 0]
        return {"policy": policy, "policy_pass": policy_pass, "value": value, "score": score,
                "ownership": own, "global": glob}

    def postprocess_raw(self, raw: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """KataGo's post-processing (nneval.cpp) of :meth:`forward_raw`'s outputs, side to move:
        ``win``, ``loss``, ``no_result`` probabilities, ``lead``, ``score_mean``,
        ``score_stdev``, ``ownership`` (tanh), ``policy_logits`` [B, N*N+1], and for model
        versions >= 9 ``shortterm_value_error`` and ``shortterm_score_error`` (points)."""
        glob = raw["global"]
        logits = raw["value"].double()
        # KataGo suppresses "no result" unless the ko rule is simple (or scoring is territory).
        suppress = (glob[:, 6] != 0) & (glob[:, 9] == 0)
        logits = torch.cat([logits[:, :2], logits[:, 2:] - suppress.double()[:, None] * NO_RESULT_SUPPRESS], dim=1)
        probs = torch.softmax(logits, dim=1)
        probs = torch.where(suppress[:, None] & (torch.arange(3, device=probs.device) == 2)[None, :],
                            torch.zeros_like(probs), probs)
        probs = probs / probs.sum(dim=1, keepdim=True)
        no_result = probs[:, 2]
        score = raw["score"].double()
        pp = self.postprocess
        lead = score[:, 2] * pp["lead"] * (1.0 - no_result)
        mean = score[:, 0] * pp["score_mean"] * (1.0 - no_result)
        stdev = F.softplus(score[:, 1], threshold=40.0) * pp["score_stdev"]
        logits_policy = torch.cat([raw["policy"][:, 0], raw["policy_pass"][:, 0:1]], dim=1)
        out = {"win": probs[:, 0], "loss": probs[:, 1], "no_result": no_result, "lead": lead,
               "score_mean": mean, "score_stdev": stdev, "ownership": torch.tanh(raw["ownership"]),
               "policy_logits": logits_policy}
        channels = raw["policy"].shape[1]
        if channels == 2 or (channels == 4 and self.version >= 16):
            out["policy_opt_logits"] = torch.cat([raw["policy"][:, 1], raw["policy_pass"][:, 1:2]], dim=1)
        if self.version >= 9 and score.shape[1] >= 6:
            out["shortterm_value_error"], out["shortterm_score_error"] = self._shortterm_errors(score)
        return out

    def _shortterm_errors(self, score: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """KataGo's short-term win/loss and score errors from score channels 4 and 5."""
        pp = self.postprocess
        wl, sc = score[:, 4], score[:, 5]
        if self.version >= 14:
            return (F.softplus(wl * 0.5, threshold=40.0) * math.sqrt(pp["shortterm_value_error"]),
                    F.softplus(sc * 0.5, threshold=40.0) * math.sqrt(pp["shortterm_score_error"]))
        if self.version >= 10:
            return (torch.sqrt(F.softplus(wl, threshold=40.0) * pp["shortterm_value_error"]),
                    torch.sqrt(F.softplus(sc, threshold=40.0) * pp["shortterm_score_error"]))
        return F.softplus(wl, threshold=40.0), F.softplus(sc, threshold=40.0) * 10.0

    def forward(self, x: torch.Tensor) -> KataOutput:
        """Evaluate ``x`` [B, 41, N, N]; see the module docstring. ValueError on a bad shape."""
        out = self.postprocess_raw(self.forward_raw(x))
        errors = None
        if "shortterm_value_error" in out:
            errors = torch.stack([out["shortterm_value_error"], out["shortterm_score_error"]], dim=1).float()
        return KataOutput(out["policy_logits"].float(), (out["win"] - out["loss"]).float(),
                          out["ownership"].float(), out["lead"].float(), errors,
                          out["policy_opt_logits"].float() if "policy_opt_logits" in out else None)
