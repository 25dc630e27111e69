"""Writing KataGo model files (binary or text floats, see :mod:`engine.nets.kataweights` for the
format) and small random nets with every block kind, for tests."""

from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from engine.nets.katamodel import (SUPPORTED_VERSIONS, SPATIAL_INPUTS, GLOBAL_INPUTS,
                              DEFAULT_POSTPROCESS, Conv, BatchNorm, Activation, MatMul, MatBias,
                              RMSNorm, TRMSNorm, OrdinaryBlock, GPoolBlock, NestedBlock,
                              AttentionBlock, FFNBlock, Block, Trunk, PolicyHead, ValueHead,
                              KataModel)

# ----------------------------------------------------------------------------------------------
# Writing


class _Writer:
    def __init__(self, binary: bool) -> None:
        self.binary = binary
        self.parts: list[bytes] = []

    def line(self, *tokens: Any) -> None:
        self.parts.append((" ".join(str(t) for t in tokens) + "\n").encode("ascii"))

    def floats(self, values: np.ndarray) -> None:
        flat = np.ascontiguousarray(values, dtype="<f4").ravel()
        if self.binary:
            self.parts.append(b"@BIN@" + flat.tobytes() + b"\n")
        else:
            self.parts.append((" ".join("%.9g" % v for v in flat.tolist()) + "\n").encode("ascii"))

    def conv(self, c: Conv) -> None:
        cout, cin, ky, kx = c.weight.shape
        self.line(c.name, ky, kx, cin, cout, c.dilation[0], c.dilation[1])
        self.floats(c.weight.transpose(2, 3, 1, 0))

    def bn(self, b: BatchNorm) -> None:
        self.line(b.name, b.mean.size, repr(float(b.epsilon)), int(b.scale is not None), int(b.bias is not None))
        for arr in (b.mean, b.var, b.scale, b.bias):
            if arr is not None:
                self.floats(arr)

    def act(self, a: Activation, version: int) -> None:
        self.line(a.name, a.kind) if version >= 11 else self.line(a.name)

    def matmul(self, m: MatMul) -> None:
        self.line(m.name, *m.weight.shape)
        self.floats(m.weight)

    def bias(self, b: MatBias) -> None:
        self.line(b.name, b.weight.size)
        self.floats(b.weight)

    def trmsnorm(self, n: TRMSNorm) -> None:
        self.line(n.name, n.weight.size, repr(float(n.epsilon)))
        self.floats(n.weight)

    def block(self, b: Block, version: int) -> None:
        self.line(b.kind)
        if isinstance(b, OrdinaryBlock):
            self.line(b.name)
            self.bn(b.pre_bn); self.act(b.pre_act, version); self.conv(b.conv1)
            self.bn(b.mid_bn); self.act(b.mid_act, version); self.conv(b.conv2)
        elif isinstance(b, GPoolBlock):
            self.line(b.name)
            self.bn(b.pre_bn); self.act(b.pre_act, version); self.conv(b.conv1); self.conv(b.gpool_conv)
            self.bn(b.gpool_bn); self.act(b.gpool_act, version); self.matmul(b.gpool_to_bias)
            self.bn(b.mid_bn); self.act(b.mid_act, version); self.conv(b.conv2)
        elif isinstance(b, NestedBlock):
            self.line(b.name, len(b.blocks))
            self.bn(b.pre_bn); self.act(b.pre_act, version); self.conv(b.pre_conv)
            for inner in b.blocks:
                self.block(inner, version)
            self.bn(b.post_bn); self.act(b.post_act, version); self.conv(b.post_conv)
        elif isinstance(b, AttentionBlock):
            self.line(b.name, b.heads, b.kv_heads, b.q_dim, b.v_dim, int(b.rope), int(b.learnable_rope))
            self.trmsnorm(b.pre_ln)
            for m in (b.q, b.k, b.v, b.out):
                self.matmul(m)
            if b.rope and b.learnable_rope:
                self.line(b.rope_name, b.kv_heads, b.q_dim // 2, 2)
                self.floats(b.rope_freqs)
            elif b.rope:
                self.line(b.rope_name, repr(float(b.rope_theta)))
        elif isinstance(b, FFNBlock):
            self.line(b.name, b.linear1.weight.shape[0], b.hidden, int(b.swiglu))
            self.trmsnorm(b.pre_ln)
            self.matmul(b.linear1)
            if b.gate is not None:
                self.matmul(b.gate)
            self.matmul(b.linear2)
        else:
            raise TypeError(f"unknown block {type(b).__name__}")

    def model(self, m: KataModel) -> None:
        v = m.version
        self.line(m.name)
        self.line(v)
        self.line(m.spatial_inputs)
        self.line(m.global_inputs)
        if v >= 13:
            for x in m.postprocess:
                self.line(repr(float(x)))
        if v >= 15:
            self.line(m.meta_encoder_version)
            self.line(int(m.prefer_pass_alive_suicide))
            for _ in range(6):
                self.line(0)
        t = m.trunk
        self.line(t.name)
        self.line(len(t.blocks), t.channels, t.mid_channels, t.regular_channels, t.dilated_channels,
                  t.gpool_channels, *((t.norm_kind, 0, 0, 0, 0, 0) if v >= 15 else ()))
        self.conv(t.initial_conv)
        self.matmul(t.initial_matmul)
        for b in t.blocks:
            self.block(b, v)
        if t.norm_kind == 0:
            self.bn(t.tip_bn)
        else:
            r = t.tip_rms
            self.line(r.name, r.gamma.size, repr(float(r.epsilon)), int(r.spatial), 0)
            self.floats(r.gamma)
            self.floats(r.beta)
        self.act(t.tip_act, v)
        p = m.policy
        self.line(p.name)
        if v >= 17:
            self.line(p.out_channels, 0, 0, 0)
        self.conv(p.p1_conv); self.conv(p.g1_conv); self.bn(p.g1_bn); self.act(p.g1_act, v)
        self.matmul(p.gpool_to_bias); self.bn(p.p1_bn); self.act(p.p1_act, v); self.conv(p.p2_conv)
        self.matmul(p.gpool_to_pass)
        if v >= 15:
            self.bias(p.pass_bias); self.act(p.pass_act, v); self.matmul(p.pass_mul2)
        h = m.value
        self.line(h.name)
        if v >= 17:
            self.line(0, 0, 0)
        self.conv(h.v1_conv); self.bn(h.v1_bn); self.act(h.v1_act, v)
        self.matmul(h.v2_mul); self.bias(h.v2_bias); self.act(h.v2_act, v)
        self.matmul(h.v3_mul); self.bias(h.v3_bias); self.matmul(h.sv3_mul); self.bias(h.sv3_bias)
        self.conv(h.ownership_conv)


def model_bytes(model: KataModel, binary: bool = True) -> bytes:
    """The uncompressed file contents of ``model`` (binary or text floats)."""
    w = _Writer(binary)
    w.model(model)
    return b"".join(w.parts)


def write_model(path: str | Path, model: KataModel, binary: bool | None = None) -> None:
    """Write ``model`` to ``path``: gzip-compressed if it ends with ``.gz``; binary floats unless
    ``binary`` is False (default: text for ``.txt``/``.txt.gz`` names, else binary)."""
    path = Path(path)
    if binary is None:
        binary = ".txt" not in path.name
    data = model_bytes(model, binary)
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=1, mtime=0)
    path.write_bytes(data)


# ----------------------------------------------------------------------------------------------
# Random nets for tests


class _Random:
    def __init__(self, seed: int, version: int, activation: str) -> None:
        self.rng = np.random.default_rng(seed)
        self.version = version
        self.activation = activation

    def arr(self, shape: tuple[int, ...], std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def conv(self, name: str, cin: int, cout: int, k: int = 3, gain: float = 1.0) -> Conv:
        return Conv(name, self.arr((cout, cin, k, k), gain * math.sqrt(2.0 / (cin * k * k))))

    def bn(self, name: str, c: int) -> BatchNorm:
        r = self.rng
        return BatchNorm(name, 1e-3, self.arr((c,), 0.2), r.uniform(0.6, 1.5, c).astype(np.float32),
                         r.uniform(0.7, 1.3, c).astype(np.float32), self.arr((c,), 0.2))

    def act(self, name: str) -> Activation:
        return Activation(name, self.activation)

    def matmul(self, name: str, cin: int, cout: int, gain: float = 1.0) -> MatMul:
        return MatMul(name, self.arr((cin, cout), gain * math.sqrt(1.0 / cin)))

    def bias(self, name: str, c: int, std: float = 0.1) -> MatBias:
        return MatBias(name, self.arr((c,), std))

    def trms(self, name: str, c: int) -> TRMSNorm:
        return TRMSNorm(name, 1e-6, self.rng.uniform(0.7, 1.3, c).astype(np.float32))

    def block(self, kind: str, name: str, c: int, spec: dict) -> Block:
        mid, g = spec["mid"], spec["gpool"]
        if kind == "ordinary":
            return OrdinaryBlock(name, self.bn(name + ".norm1", c), self.act(name + ".act1"),
                                 self.conv(name + ".conv1", c, mid), self.bn(name + ".norm2", mid),
                                 self.act(name + ".act2"), self.conv(name + ".conv2", mid, c, gain=0.5))
        if kind == "gpool":
            return GPoolBlock(name, self.bn(name + ".norm1", c), self.act(name + ".act1"),
                              self.conv(name + ".conv1r", c, mid), self.conv(name + ".conv1g", c, g),
                              self.bn(name + ".normg", g), self.act(name + ".actg"),
                              self.matmul(name + ".linear_g", 3 * g, mid),
                              self.bn(name + ".norm2", mid), self.act(name + ".act2"),
                              self.conv(name + ".conv2", mid, c, gain=0.5))
        if kind.startswith("nested"):
            inner_kinds = spec.get("inner", ["ordinary", "gpool"])
            inner = [self.block(k, f"{name}.blockstack.{i}", mid, {**spec, "mid": max(2, mid // 2)})
                     for i, k in enumerate(inner_kinds)]
            return NestedBlock(name, self.bn(name + ".normactconvp.norm", c), self.act(name + ".normactconvp.act"),
                               self.conv(name + ".normactconvp.conv", c, mid, k=1), inner,
                               self.bn(name + ".normactconvq.norm", mid), self.act(name + ".normactconvq.act"),
                               self.conv(name + ".normactconvq.conv", mid, c, k=1, gain=0.5))
        if kind.startswith("attention"):
            heads, kv, qd, vd = spec["heads"], spec["kv_heads"], spec["q_dim"], spec["v_dim"]
            learn = kind == "attention_learned"
            b = AttentionBlock(name, heads, kv, qd, vd, True, learn, self.trms(name + ".norm", c),
                               self.matmul(name + ".q", c, heads * qd), self.matmul(name + ".k", c, kv * qd),
                               self.matmul(name + ".v", c, kv * vd),
                               self.matmul(name + ".out", heads * vd, c, gain=0.5))
            if learn:
                b.rope_name = name + ".rope_freqs"
                b.rope_freqs = self.rng.uniform(-1.0, 1.0, (kv, qd // 2, 2)).astype(np.float32)
            else:
                b.rope_name = name + ".rope_theta"
                b.rope_theta = 100.0
            return b
        if kind == "ffn":
            hidden = spec["ffn"]
            return FFNBlock(name, hidden, True, self.trms(name + ".norm", c),
                            self.matmul(name + ".linear1", c, hidden), self.matmul(name + ".gate", c, hidden),
                            self.matmul(name + ".linear2", hidden, c, gain=0.5))
        raise ValueError(f"unknown block kind {kind!r}")


def random_model(blocks: Sequence[str] = ("ordinary", "gpool", "nested", "attention", "ffn"),
                 channels: int = 16, version: int = 15, seed: int = 0, *,
                 mid: int = 8, gpool: int = 4, heads: int = 2, kv_heads: int = 1, q_dim: int = 4,
                 v_dim: int = 4, ffn: int = 24, head_channels: int = 6, value_hidden: int = 8,
                 activation: str | None = None, rms_tip: bool | None = None,
                 prefer_pass_alive_suicide: bool = False, name: str = "random-kata") -> KataModel:
    """A small random KataGo net with the given trunk block kinds, in order: ``ordinary``,
    ``gpool``, ``nested`` (a nested bottleneck holding an ordinary and a gpool block),
    ``attention`` (rotary positions from theta), ``attention_learned`` (learnable rotary
    frequencies) and ``ffn`` (SwiGLU feed-forward).  Version >= 11 nets use mish unless
    ``activation`` says otherwise; version >= 15 nets end the trunk with an RMS norm when
    ``rms_tip`` (default: when the trunk holds a transformer block)."""
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"version must be in {SUPPORTED_VERSIONS}")
    if activation is None:
        activation = "ACTIVATION_MISH" if version >= 11 else "ACTIVATION_RELU"
    if version < 11 and activation != "ACTIVATION_RELU":
        raise ValueError("nets before version 11 only have ReLU")
    if rms_tip is None:
        rms_tip = version >= 15 and any(b.startswith(("attention", "ffn")) for b in blocks)
    if rms_tip and version < 15:
        raise ValueError("an RMS-norm trunk tip needs version >= 15")
    r = _Random(seed, version, activation)
    c = channels
    spec = dict(mid=mid, gpool=gpool, heads=heads, kv_heads=kv_heads, q_dim=q_dim, v_dim=v_dim, ffn=ffn)
    trunk_blocks = [r.block(kind, f"blocks.{i}", c, spec) for i, kind in enumerate(blocks)]
    tip_bn = None if rms_tip else r.bn("norm_trunkfinal", c)
    tip_rms = RMSNorm("norm_trunkfinal", 1e-6, False, r.rng.uniform(0.7, 1.3, c).astype(np.float32),
                      r.arr((c,), 0.1)) if rms_tip else None
    trunk = Trunk("trunk", c, mid, mid, mid, gpool, 1 if rms_tip else 0,
                  r.conv("conv_spatial", SPATIAL_INPUTS, c, gain=1.5),
                  r.matmul("linear_global", GLOBAL_INPUTS, c, gain=1.5), trunk_blocks,
                  tip_bn, tip_rms, r.act("act_trunkfinal"))
    p, g = head_channels, max(2, head_channels // 2)
    out = 4 if version == 16 else 2 if version >= 12 else 1
    policy = PolicyHead("policy_head", out, r.conv("conv1p", c, p, k=1), r.conv("conv1g", c, g, k=1),
                        r.bn("norm1g", g), r.act("act1g"), r.matmul("linear_g", 3 * g, p),
                        r.bn("norm2", p), r.act("act2"), r.conv("conv2p", p, out, k=1, gain=2.0),
                        r.matmul("linear_pass", 3 * g, p if version >= 15 else out, gain=2.0))
    if version >= 15:
        policy.pass_bias = r.bias("linear_pass_bias", p)
        policy.pass_act = r.act("act_pass")
        policy.pass_mul2 = r.matmul("linear_pass2", p, out, gain=2.0)
    n_score = 6 if version >= 9 else 4
    v = head_channels
    value = ValueHead("value_head", r.conv("conv1", c, v, k=1), r.bn("norm1", v), r.act("act1"),
                      r.matmul("linear2", 3 * v, value_hidden), r.bias("bias2", value_hidden), r.act("act2"),
                      r.matmul("linear_valuehead", value_hidden, 3, gain=1.5), r.bias("bias_valuehead", 3, 0.5),
                      r.matmul("linear_miscvaluehead", value_hidden, n_score), r.bias("bias_miscvaluehead", n_score),
                      r.conv("conv_ownership", v, 1, k=1, gain=1.5))
    post = DEFAULT_POSTPROCESS if version < 13 else (20.0, 20.0, 20.0, 20.0, 40.0, 0.25, 150.0)
    return KataModel(name, version, SPATIAL_INPUTS, GLOBAL_INPUTS, post, 0,
                     prefer_pass_alive_suicide and version >= 15, trunk, policy, value)
