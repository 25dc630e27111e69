"""KataGo network weights: reading and writing KataGo's model files, and random test nets.

File format (KataGo ``cpp/neuralnet/desc.cpp``, written by ``python/export_model_pytorch.py``):
a stream of whitespace-separated tokens, gzip-compressed for ``.gz`` files.  Numbers that
describe the architecture are text; each block of weights is either text floats (``.txt``
models) or ``@BIN@`` followed by that many little-endian float32 (``.bin`` models).  Both may be
mixed; this reader decides per block.

* Header: ``name version numSpatialInputs numGlobalInputs``; for version >= 13 seven
  post-processing multipliers (td score, score mean, score stdev, lead, variance time,
  short-term value error, short-term score error); for version >= 15 ``metaEncoderVersion
  preferPassAliveUnderSuicideRules`` and six reserved zeros.
* Trunk: ``name numBlocks trunkC midC regularC dilatedC gpoolC`` (+ ``normKind`` and five
  zeros for version >= 15), the input convolution, the global-input matmul, (an SGF metadata
  encoder when metaEncoderVersion > 0, not supported here), the blocks, the tip norm (batch
  norm, or RMS norm when normKind = 1) and its activation.
* Blocks, each introduced by its kind:
  ``ordinary_block`` (BN, act, conv, BN, act, conv), ``gpool_block`` (BN, act, conv,
  gpool conv, BN, act, matmul 3G->C, BN, act, conv), ``nested_bottleneck_block`` (count, BN,
  act, conv in, that many inner blocks, BN, act, conv out), ``transformer_attention_block``
  (heads, kv heads, q head dim, v head dim, rope flag, learnable-rope flag, RMS norm, q/k/v/out
  matmuls, then the rope theta or learnable frequencies) and ``transformer_ffn_block``
  (channels, hidden channels, SwiGLU flag, RMS norm, matmuls).
* Policy head (``policyOutChannels`` and three zeros first for version >= 17), value head
  (three zeros first for version >= 17).
* Layers: conv ``name ky kx in out dy dx`` + weights in (y, x, in, out) order; batch norm
  ``name C epsilon hasScale hasBias`` + mean, variance[, scale][, bias]; activation ``name``
  (+ kind for version >= 11); matmul ``name in out`` + weights in (in, out) order; bias
  ``name C`` + values; RMS norm ``name C epsilon spatial groupSize`` + gamma, beta; transformer
  RMS norm ``name C epsilon`` + weight.

``read_model(path)`` parses a file into a :class:`KataModel` (:mod:`engine.nets.katamodel`: plain
numpy arrays, KataGo's own layout); ``write_model`` writes one (binary or text floats) and
``random_model`` makes small random nets with every block kind for tests (both
:mod:`engine.nets.katawriter`, re-exported here); ``load(path)`` returns ``(torch model, meta)`` like
``engine.nets.lzweights.load`` (see :mod:`engine.nets.katanet`).  Every error is a
:class:`KataWeightsError` naming the file, the byte offset (in the decompressed stream) and the
layer or block being read.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from engine.fileio import CorruptGzip, head_maybe_gzipped, read_maybe_gzipped
from engine.nets.katamodel import (ACTIVATIONS, Activation, AttentionBlock, BatchNorm, Conv,
                              DEFAULT_POSTPROCESS, FFNBlock, GLOBAL_INPUTS, GPoolBlock, KataModel,
                              KataWeightsError, MatBias, MatMul, NestedBlock, OrdinaryBlock,
                              POSTPROCESS_NAMES, PolicyHead, RMSNorm, SPATIAL_INPUTS,
                              SUPPORTED_VERSIONS, TRMSNorm, Trunk, ValueHead,
                              feature_set_for)
from engine.nets.katanet import KataNet
from engine.nets.katawriter import model_bytes, random_model, write_model

__all__ = [
    "KataWeightsError", "KataModel", "read_model", "parse_model", "write_model", "model_bytes",
    "random_model", "load", "feature_set_for", "SUPPORTED_VERSIONS", "main",
]

# ----------------------------------------------------------------------------------------------
# Reading

_TOKEN = re.compile(rb"\S+")
_SPACE = re.compile(rb"\s*")


class _Reader:
    """Tokens and float blocks of a decompressed model stream, with error context."""

    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.pos = 0
        self.source = source
        self.context: list[str] = []

    def fail(self, message: str, pos: int | None = None) -> KataWeightsError:
        where = " > ".join(self.context) if self.context else "header"
        at = self.pos if pos is None else pos
        return KataWeightsError(f"{self.source}: offset {at}: {where}: {message}")

    def token(self, what: str) -> str:
        m = _TOKEN.search(self.data, self.pos)
        if m is None:
            raise self.fail(f"file ends where {what} was expected (truncated file?)")
        if m.group().startswith(b"@BIN@"):
            raise self.fail(f"found binary weights where {what} was expected "
                            "(wrong layer layout for this model version?)", m.start())
        self.pos = m.end()
        try:
            return m.group().decode("ascii")
        except UnicodeDecodeError:
            raise self.fail(f"non-text bytes where {what} was expected", m.start()) from None

    def int(self, what: str) -> int:
        start = self.pos
        tok = self.token(what)
        try:
            return int(tok)
        except ValueError:
            raise self.fail(f"expected an integer for {what}, got {tok[:40]!r}", start) from None

    def float(self, what: str) -> float:
        start = self.pos
        tok = self.token(what)
        try:
            value = float(tok)
        except ValueError:
            raise self.fail(f"expected a number for {what}, got {tok[:40]!r}", start) from None
        if not math.isfinite(value):
            raise self.fail(f"{what} is not finite", start)
        return value

    def zeros(self, count: int, what: str) -> None:
        for i in range(count):
            start = self.pos
            if self.int(f"{what} {i + 1}") != 0:
                raise self.fail(f"unsupported option: reserved {what} {i + 1} is not 0", start)

    def floats(self, count: int, what: str) -> np.ndarray:
        """``count`` floats, binary (``@BIN@``) or text, checked finite."""
        m = _SPACE.match(self.data, self.pos)
        start = m.end()
        if self.data.startswith(b"@", start):
            if not self.data.startswith(b"@BIN@", start):
                raise self.fail(f"bad binary block marker for {what}", start)
            begin = start + 5
            end = begin + 4 * count
            if end > len(self.data):
                raise self.fail(f"{what}: expected {count} binary floats ({4 * count} bytes), "
                                f"the file has {len(self.data) - begin} bytes left (truncated file?)",
                                begin)
            values = np.frombuffer(self.data, dtype="<f4", count=count, offset=begin).astype(np.float32)
            self.pos = end
        else:
            values = np.empty(count, dtype=np.float32)
            it = _TOKEN.finditer(self.data, start)
            for i in range(count):
                tok = next(it, None)
                if tok is None:
                    raise self.fail(f"{what}: expected {count} numbers, the file ends after {i}")
                try:
                    values[i] = float(tok.group())
                except ValueError:
                    raise self.fail(f"{what}: expected a number, got {tok.group()[:40]!r}",
                                    tok.start()) from None
                self.pos = tok.end()
        if not np.all(np.isfinite(values)):
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
            raise self.fail(f"{what}: value {bad} is NaN or infinite", start)
        return values

    # -- layers ----------------------------------------------------------------------------

    def conv(self) -> Conv:
        name = self.token("conv layer name")
        self.context.append(name)
        ky, kx = self.int("conv height"), self.int("conv width")
        cin, cout = self.int("conv input channels"), self.int("conv output channels")
        dy, dx = self.int("conv dilation y"), self.int("conv dilation x")
        if min(ky, kx, cin, cout, dy, dx) <= 0 or ky % 2 == 0 or kx % 2 == 0:
            raise self.fail(f"bad convolution shape {ky}x{kx} {cin}->{cout} dilation {dy},{dx}")
        w = self.floats(ky * kx * cin * cout, "conv weights").reshape(ky, kx, cin, cout)
        self.context.pop()
        return Conv(name, np.ascontiguousarray(w.transpose(3, 2, 0, 1)), (dy, dx))

    def bn(self) -> BatchNorm:
        name = self.token("batch norm name")
        self.context.append(name)
        c = self.int("batch norm channels")
        eps = self.float("batch norm epsilon")
        has_scale, has_bias = self.int("batch norm hasScale"), self.int("batch norm hasBias")
        if c < 1 or eps <= 0:
            raise self.fail(f"bad batch norm: {c} channels, epsilon {eps}")
        mean = self.floats(c, "batch norm mean")
        var = self.floats(c, "batch norm variance")
        scale = self.floats(c, "batch norm scale") if has_scale else None
        bias = self.floats(c, "batch norm bias") if has_bias else None
        self.context.pop()
        return BatchNorm(name, eps, mean, var, scale, bias)

    def act(self, version: int) -> Activation:
        name = self.token("activation name")
        if version < 11:
            return Activation(name)
        start = self.pos
        kind = self.token("activation kind")
        if kind not in ACTIVATIONS:
            raise self.fail(f"{name}: unknown activation {kind[:40]!r}", start)
        return Activation(name, kind)

    def matmul(self) -> MatMul:
        name = self.token("matmul name")
        self.context.append(name)
        cin, cout = self.int("matmul input channels"), self.int("matmul output channels")
        if cin < 1 or cout < 1:
            raise self.fail(f"bad matmul shape {cin}->{cout}")
        w = self.floats(cin * cout, "matmul weights").reshape(cin, cout)
        self.context.pop()
        return MatMul(name, w)

    def bias(self) -> MatBias:
        name = self.token("bias name")
        self.context.append(name)
        c = self.int("bias channels")
        if c < 1:
            raise self.fail(f"bad bias size {c}")
        w = self.floats(c, "bias values")
        self.context.pop()
        return MatBias(name, w)

    def rmsnorm(self) -> RMSNorm:
        name = self.token("RMS norm name")
        self.context.append(name)
        c = self.int("RMS norm channels")
        eps = self.float("RMS norm epsilon")
        spatial = self.int("RMS norm spatial flag")
        group = self.int("RMS norm group size")
        if c < 1 or not 0 < eps <= 1:
            raise self.fail(f"bad RMS norm: {c} channels, epsilon {eps}")
        if group != 0:
            raise self.fail(f"grouped RMS norm (group size {group}) is not supported")
        gamma = self.floats(c, "RMS norm gamma")
        beta = self.floats(c, "RMS norm beta")
        self.context.pop()
        return RMSNorm(name, eps, bool(spatial), gamma, beta)

    def trmsnorm(self) -> TRMSNorm:
        name = self.token("transformer RMS norm name")
        self.context.append(name)
        c = self.int("RMS norm channels")
        eps = self.float("RMS norm epsilon")
        if c < 1 or not 0 < eps <= 1:
            raise self.fail(f"bad RMS norm: {c} channels, epsilon {eps}")
        w = self.floats(c, "RMS norm weight")
        self.context.pop()
        return TRMSNorm(name, eps, w)

    # -- blocks ----------------------------------------------------------------------------

    def blocks(self, count: int, channels: int, version: int) -> list:
        out = []
        for i in range(count):
            start = self.pos
            kind = self.token(f"kind of block {i + 1} of {count}")
            if kind == "ordinary_block":
                block = self.ordinary(version)
                ends = (block.pre_bn.mean.size, block.conv2.weight.shape[0])
            elif kind == "gpool_block":
                block = self.gpool(version)
                ends = (block.pre_bn.mean.size, block.conv2.weight.shape[0])
            elif kind == "nested_bottleneck_block":
                block = self.nested(version)
                ends = (block.pre_bn.mean.size, block.post_conv.weight.shape[0])
            elif kind == "transformer_attention_block":
                block = self.attention()
                ends = (block.q.weight.shape[0], block.out.weight.shape[1])
            elif kind == "transformer_ffn_block":
                block = self.ffn()
                ends = (block.linear1.weight.shape[0], block.linear2.weight.shape[1])
            else:
                raise self.fail(f"unknown block kind {kind[:40]!r}", start)
            if ends != (channels, channels):
                raise self.fail(f"block {block.name} maps {ends[0]} -> {ends[1]} channels, "
                                f"the stack has {channels}", start)
            out.append(block)
        return out

    def _block_name(self) -> str:
        name = self.token("block name")
        self.context.append(name)
        return name

    def ordinary(self, version: int) -> OrdinaryBlock:
        name = self._block_name()
        b = OrdinaryBlock(name, self.bn(), self.act(version), self.conv(), self.bn(),
                          self.act(version), self.conv())
        self._check(b.conv1.weight.shape[1] == b.pre_bn.mean.size
                    and b.mid_bn.mean.size == b.conv1.weight.shape[0] == b.conv2.weight.shape[1],
                    "channel counts of the block's layers do not chain")
        self.context.pop()
        return b

    def gpool(self, version: int) -> GPoolBlock:
        name = self._block_name()
        b = GPoolBlock(name, self.bn(), self.act(version), self.conv(), self.conv(), self.bn(),
                       self.act(version), self.matmul(), self.bn(), self.act(version), self.conv())
        c_in, c_mid, g = b.pre_bn.mean.size, b.conv1.weight.shape[0], b.gpool_conv.weight.shape[0]
        self._check(b.conv1.weight.shape[1] == c_in and b.gpool_conv.weight.shape[1] == c_in
                    and b.gpool_bn.mean.size == g and b.gpool_to_bias.weight.shape == (3 * g, c_mid)
                    and b.mid_bn.mean.size == c_mid and b.conv2.weight.shape[1] == c_mid,
                    "channel counts of the block's layers do not chain")
        self.context.pop()
        return b

    def nested(self, version: int) -> NestedBlock:
        name = self._block_name()
        count = self.int("number of inner blocks")
        if count < 1:
            raise self.fail(f"nested block with {count} inner blocks")
        pre_bn, pre_act, pre_conv = self.bn(), self.act(version), self.conv()
        inner = self.blocks(count, pre_conv.weight.shape[0], version)
        b = NestedBlock(name, pre_bn, pre_act, pre_conv, inner, self.bn(), self.act(version), self.conv())
        self._check(pre_conv.weight.shape[1] == pre_bn.mean.size
                    and b.post_bn.mean.size == pre_conv.weight.shape[0] == b.post_conv.weight.shape[1],
                    "channel counts of the block's layers do not chain")
        self.context.pop()
        return b

    def attention(self) -> AttentionBlock:
        name = self._block_name()
        heads, kv = self.int("number of heads"), self.int("number of kv heads")
        qd, vd = self.int("q head dimension"), self.int("v head dimension")
        rope, learn = self.int("rope flag") != 0, self.int("learnable rope flag") != 0
        if heads < 1 or kv < 1 or heads % kv or qd < 1 or vd < 1 or (rope and qd % 2):
            raise self.fail(f"bad attention shape: {heads} heads, {kv} kv heads, dims {qd}/{vd}")
        b = AttentionBlock(name, heads, kv, qd, vd, rope, learn, self.trmsnorm(), self.matmul(),
                           self.matmul(), self.matmul(), self.matmul())
        c = b.q.weight.shape[0]
        self._check(b.pre_ln.weight.size == c and b.q.weight.shape == (c, heads * qd)
                    and b.k.weight.shape == (c, kv * qd) and b.v.weight.shape == (c, kv * vd)
                    and b.out.weight.shape[0] == heads * vd, "projection shapes do not match the heads")
        if rope and learn:
            b.rope_name = self.token("rope frequencies name")
            n_kv, pairs, two = self.int("rope kv heads"), self.int("rope pairs"), self.int("rope dim")
            if (n_kv, pairs, two) != (kv, qd // 2, 2):
                raise self.fail(f"rope frequencies shape {n_kv}x{pairs}x{two}, expected {kv}x{qd // 2}x2")
            b.rope_freqs = self.floats(kv * (qd // 2) * 2, "rope frequencies").reshape(kv, qd // 2, 2)
        elif rope:
            b.rope_name = self.token("rope theta name")
            b.rope_theta = self.float("rope theta")
            if b.rope_theta <= 0:
                raise self.fail(f"rope theta {b.rope_theta} is not positive")
        self.context.pop()
        return b

    def ffn(self) -> FFNBlock:
        name = self._block_name()
        c, hidden = self.int("channels"), self.int("hidden channels")
        swiglu = self.int("SwiGLU flag") != 0
        if c < 1 or hidden < 1:
            raise self.fail(f"bad feed-forward shape {c} -> {hidden}")
        pre_ln, lin1 = self.trmsnorm(), self.matmul()
        gate = self.matmul() if swiglu else None
        b = FFNBlock(name, hidden, swiglu, pre_ln, lin1, gate, self.matmul())
        self._check(pre_ln.weight.size == c and lin1.weight.shape == (c, hidden)
                    and (gate is None or gate.weight.shape == (c, hidden))
                    and b.linear2.weight.shape == (hidden, c), "layer shapes do not chain")
        self.context.pop()
        return b

    def _check(self, ok: bool, message: str) -> None:
        if not ok:
            raise self.fail(message)

    # -- model -----------------------------------------------------------------------------

    def model(self) -> KataModel:
        name = self.token("model name")
        version = self.int("model version")
        if version not in SUPPORTED_VERSIONS:
            raise self.fail(f"model version {version} is not supported (supported: "
                            f"{SUPPORTED_VERSIONS[0]}..{SUPPORTED_VERSIONS[-1]})")
        n_spatial, n_global = self.int("spatial input count"), self.int("global input count")
        if (n_spatial, n_global) != (SPATIAL_INPUTS, GLOBAL_INPUTS):
            raise self.fail(f"{n_spatial} spatial / {n_global} global inputs; version {version} "
                            f"nets have {SPATIAL_INPUTS} / {GLOBAL_INPUTS}")
        post = DEFAULT_POSTPROCESS
        if version >= 13:
            post = tuple(self.float(f"{n} multiplier") for n in POSTPROCESS_NAMES)
            if min(post) <= 0:
                raise self.fail("post-processing multipliers must be positive")
        meta_version, prefer = 0, False
        if version >= 15:
            meta_version = self.int("metaEncoderVersion")
            if meta_version != 0:
                raise self.fail(f"SGF metadata encoder (version {meta_version}, human-style nets) "
                                "is not supported")
            p = self.int("preferPassAliveUnderSuicideRules")
            if p not in (0, 1):
                raise self.fail(f"preferPassAliveUnderSuicideRules must be 0 or 1, got {p}")
            prefer = bool(p)
            self.zeros(6, "model option")
        self.context.append("trunk")
        trunk = self.trunk(version)
        self.context[-1] = "policy head"
        policy = self.policy_head(version, trunk.channels)
        self.context[-1] = "value head"
        value = self.value_head(version, trunk.channels)
        self.context.pop()
        if _TOKEN.search(self.data, self.pos):
            raise self.fail("unexpected data after the value head")
        return KataModel(name, version, n_spatial, n_global, post, meta_version, prefer,
                         trunk, policy, value)

    def trunk(self, version: int) -> Trunk:
        name = self.token("trunk name")
        nblocks = self.int("trunk block count")
        chans = [self.int(what) for what in ("trunk channels", "mid channels", "regular channels",
                                             "dilated channels", "gpool channels")]
        norm_kind = 0
        if version >= 15:
            norm_kind = self.int("trunk norm kind")
            if norm_kind not in (0, 1):
                raise self.fail(f"unknown trunk norm kind {norm_kind}")
            self.zeros(5, "trunk option")
        if nblocks < 1 or min(chans) < 1:
            raise self.fail(f"bad trunk: {nblocks} blocks, channels {chans}")
        c = chans[0]
        initial_conv = self.conv()
        initial_matmul = self.matmul()
        self._check(initial_conv.weight.shape[:2] == (c, SPATIAL_INPUTS)
                    and initial_matmul.weight.shape == (GLOBAL_INPUTS, c),
                    "input layers do not map the inputs to the trunk channels")
        blocks = self.blocks(nblocks, c, version)
        tip_bn = tip_rms = None
        if norm_kind == 0:
            tip_bn = self.bn()
            self._check(tip_bn.mean.size == c, "trunk tip norm has the wrong channel count")
        else:
            tip_rms = self.rmsnorm()
            self._check(tip_rms.gamma.size == c, "trunk tip norm has the wrong channel count")
        return Trunk(name, c, chans[1], chans[2], chans[3], chans[4], norm_kind, initial_conv,
                     initial_matmul, blocks, tip_bn, tip_rms, self.act(version))

    def policy_head(self, version: int, c: int) -> PolicyHead:
        name = self.token("policy head name")
        if version >= 17:
            out = self.int("policy output channels")
            if out not in (2, 4):
                raise self.fail(f"policy output channels {out} (expected 2 or 4)")
            self.zeros(3, "policy option")
        else:
            out = 4 if version == 16 else 2 if version >= 12 else 1
        h = PolicyHead(name, out, self.conv(), self.conv(), self.bn(), self.act(version),
                       self.matmul(), self.bn(), self.act(version), self.conv(), self.matmul())
        p, g = h.p1_conv.weight.shape[0], h.g1_conv.weight.shape[0]
        ok = (h.p1_conv.weight.shape[1] == c == h.g1_conv.weight.shape[1] and h.g1_bn.mean.size == g
              and h.gpool_to_bias.weight.shape == (3 * g, p) and h.p1_bn.mean.size == p
              and h.p2_conv.weight.shape[:2] == (out, p) and h.gpool_to_pass.weight.shape[0] == 3 * g)
        if version >= 15:
            h.pass_bias, h.pass_act, h.pass_mul2 = self.bias(), self.act(version), self.matmul()
            ok = ok and h.gpool_to_pass.weight.shape[1] == h.pass_bias.weight.size == p \
                and h.pass_mul2.weight.shape == (p, out)
        else:
            ok = ok and h.gpool_to_pass.weight.shape[1] == out
        self._check(ok, "policy head layer shapes do not chain")
        return h

    def value_head(self, version: int, c: int) -> ValueHead:
        name = self.token("value head name")
        if version >= 17:
            self.zeros(3, "value option")
        h = ValueHead(name, self.conv(), self.bn(), self.act(version), self.matmul(), self.bias(),
                      self.act(version), self.matmul(), self.bias(), self.matmul(), self.bias(),
                      self.conv())
        v = h.v1_conv.weight.shape[0]
        hidden = h.v2_mul.weight.shape[1]
        n_score = 6 if version >= 9 else 4
        self._check(h.v1_conv.weight.shape[1] == c and h.v1_bn.mean.size == v
                    and h.v2_mul.weight.shape[0] == 3 * v and h.v2_bias.weight.size == hidden
                    and h.v3_mul.weight.shape == (hidden, 3) and h.v3_bias.weight.size == 3
                    and h.sv3_mul.weight.shape == (hidden, n_score) and h.sv3_bias.weight.size == n_score
                    and h.ownership_conv.weight.shape[:2] == (1, v),
                    "value head layer shapes do not chain")
        return h


def parse_model(data: bytes, source: str = "<model>") -> KataModel:
    """Parse a decompressed KataGo model stream. Raises KataWeightsError."""
    return _Reader(data, source).model()


def read_model(path: str | Path) -> KataModel:
    """Read a KataGo model file (``.bin.gz``, ``.bin``, ``.txt.gz`` or ``.txt``; gzip is
    detected by its magic bytes). Raises KataWeightsError (a ValueError) or OSError."""
    path = Path(path)
    try:
        raw = read_maybe_gzipped(path)
    except CorruptGzip as exc:
        raise KataWeightsError(f"{path}: offset 0: corrupt gzip data ({exc})") from None
    return parse_model(raw, str(path))


# ----------------------------------------------------------------------------------------------
# Loading into torch


def load(path: str | Path) -> tuple[Any, dict]:
    """Load a KataGo model file as a torch module (:class:`engine.nets.katanet.KataNet`, eval mode,
    float32, CPU) and its metadata (feature_set, name, version, blocks, channels, ...).
    Raises KataWeightsError naming the offset and layer for a malformed file."""
    model = read_model(path)
    return KataNet(model).eval(), model.meta()


def looks_like_kata(path: str | Path) -> bool:
    """True if the file starts like a KataGo model (name line then a version number), plain
    or gzipped. OSError if unreadable."""
    head = head_maybe_gzipped(path, 4096)
    if head is None:
        return False
    tokens = head.split(None, 3)
    return (len(tokens) >= 3 and not tokens[0].isdigit() and b"@BIN@" not in tokens[0]
            and tokens[1].isdigit() and 3 <= int(tokens[1]) <= 99 and tokens[2].isdigit())


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m engine.nets.kataweights {info,random} ...``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m engine.nets.kataweights", description="KataGo model files")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="describe a model file")
    info.add_argument("file")
    rnd = sub.add_parser("random", help="write a small random KataGo net")
    rnd.add_argument("--blocks", nargs="+", default=["ordinary", "gpool", "nested", "attention", "ffn"])
    rnd.add_argument("--channels", type=int, default=16)
    rnd.add_argument("--version", type=int, default=15)
    rnd.add_argument("--seed", type=int, default=0)
    rnd.add_argument("-o", "--output", required=True, help=".bin.gz, .bin, .txt.gz or .txt")
    args = parser.parse_args(argv)
    try:
        if args.command == "random":
            m = random_model(args.blocks, args.channels, args.version, args.seed)
            write_model(args.output, m)
            print(f"wrote {args.output}: version {m.version}, {len(m.trunk.blocks)} blocks, "
                  f"{m.num_parameters()} parameters")
            return 0
        m = read_model(args.file)
    except (KataWeightsError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for key, value in m.meta().items():
        print(f"{key}: {value}")
    print("postprocess: " + ", ".join(f"{k}={v:g}" for k, v in m.postprocess_params.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
