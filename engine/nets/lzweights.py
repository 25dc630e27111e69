"""Leela Zero network weights: reading, writing and a torch model that evaluates them.

File format (Leela Zero 0.17, ``training/tf/tfprocess.py: save_leelaz_weights`` and
``src/Network.cpp: load_v1_network``): plain text, optionally gzip-compressed, one layer
parameter per line, numbers separated by whitespace.

* line 1: format version. ``1`` = Leela Zero (the value head predicts the side to move's
  winrate); ``2`` = identical layers but the value head predicts *Black's* winrate (ELF OpenGo
  conversions).
* then, for each 3x3 convolution of the tower (the input convolution, then two per residual
  block), four lines: weights ``[out][in][3][3]``, biases ``[out]``, batch-norm means ``[out]``,
  batch-norm variances ``[out]``.
* policy head (6 lines): conv 1x1 weights ``[2][filters]``, biases ``[2]``, BN means ``[2]``,
  BN variances ``[2]``, fully connected weights ``[362][2*361]``, biases ``[362]``.
* value head (8 lines): conv 1x1 weights ``[1][filters]``, biases ``[1]``, BN means ``[1]``,
  BN variances ``[1]``, FC1 weights ``[256][361]``, biases ``[256]``, FC2 weights ``[1][256]``,
  biases ``[1]``.

So a net with ``B`` residual blocks has ``1 + 4 + 8*B + 14`` lines; the number of filters is the
length of line 3 (the input convolution's biases).

Semantics reproduced from Leela Zero's CPU pipeline: batch norm has no gamma/beta; it computes
``relu((x - mean) / sqrt(var + 1e-5))`` (plus the skip connection before the ReLU in the second
convolution of a block). Convolution biases are folded into the means (``mean -= bias``), which
is the same as adding them. FC1 of the value head is followed by a ReLU, FC2 by ``tanh``; the
winrate is ``(1 + tanh) / 2``; the policy is ``softmax`` of the 362 FC outputs (pass last).

Leela Zero's internal board index is ``j = y*19 + x`` with ``y = 0`` the *bottom* row (A1), while
this project uses ``row*19 + col`` with row 0 the *top* row. :class:`LZNet` absorbs the difference
into its weights at load time (3x3 kernels flipped vertically, FC rows/columns permuted), so its
``forward`` takes and returns tensors in this project's layout at no runtime cost.
"""

from __future__ import annotations

import argparse
import gzip
import io
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import torch
from torch import nn

from engine.fileio import CorruptGzip, read_maybe_gzipped

__all__ = [
    "BN_EPSILON",
    "BOARD_SIZE",
    "INPUT_PLANES",
    "LZOutput",
    "LZWeightsError",
    "ConvLayer",
    "LZWeights",
    "LZNet",
    "parse_weights",
    "read_weights",
    "write_weights",
    "random_weights",
    "write_random",
    "build_model",
    "load",
    "main",
]

BOARD_SIZE = 19
POINTS = BOARD_SIZE * BOARD_SIZE
MOVES = POINTS + 1
INPUT_PLANES = 18
VALUE_HIDDEN = 256
BN_EPSILON = 1e-5
SUPPORTED_VERSIONS = (1, 2)
FIXED_LINES = 1 + 4 + 14  # version line, input convolution, policy + value heads
LINES_PER_BLOCK = 8
FEATURE_SET = "lz18"


class LZOutput(NamedTuple):
    """What :meth:`LZNet.forward` returns; the same fields as this project's own nets."""

    policy: torch.Tensor  # [B, 362] logits, our point order, pass last
    value: torch.Tensor  # [B] in [-1, 1], side to move's view
    ownership: None  # Leela Zero nets have no ownership head
    score: None  # ... nor a score head


class LZWeightsError(ValueError):
    """A Leela Zero weights file that cannot be used; the message names the offending line."""


@dataclass
class ConvLayer:
    """One convolution followed by Leela Zero's parameter-free batch norm.

    Arrays are float32 exactly as stored in the file: ``weight`` ``[out, in, k, k]``, the others
    ``[out]``.
    """

    weight: np.ndarray
    bias: np.ndarray
    mean: np.ndarray
    var: np.ndarray

    def folded(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (weight, bias) of a single convolution equal to conv + bias + batch norm.

        ``(conv(x) + b - mean) / sqrt(var + eps) == conv'(x) + b'`` with
        ``conv' = conv * s`` and ``b' = (b - mean) * s``, ``s = 1 / sqrt(var + eps)``.
        """
        scale = 1.0 / np.sqrt(self.var.astype(np.float64) + BN_EPSILON)
        weight = self.weight.astype(np.float64) * scale.reshape(-1, *([1] * (self.weight.ndim - 1)))
        bias = (self.bias.astype(np.float64) - self.mean.astype(np.float64)) * scale
        return weight.astype(np.float32), bias.astype(np.float32)


@dataclass
class LZWeights:
    """All parameters of a Leela Zero network, in Leela Zero's own (bottom-row-first) layout."""

    version: int
    tower: list[ConvLayer]  # input convolution, then two per residual block
    policy_conv: ConvLayer  # 1x1, 2 outputs
    policy_fc_w: np.ndarray  # [362, 722]
    policy_fc_b: np.ndarray  # [362]
    value_conv: ConvLayer  # 1x1, 1 output
    value_fc1_w: np.ndarray  # [256, 361]
    value_fc1_b: np.ndarray  # [256]
    value_fc2_w: np.ndarray  # [1, 256]
    value_fc2_b: np.ndarray  # [1]

    @property
    def blocks(self) -> int:
        """Number of residual blocks."""
        return (len(self.tower) - 1) // 2

    @property
    def filters(self) -> int:
        """Number of filters of the residual tower."""
        return int(self.tower[0].weight.shape[0])

    def lines(self) -> list[np.ndarray]:
        """The parameter lines (everything after the version line), in file order."""
        out: list[np.ndarray] = []
        for layer in [*self.tower, self.policy_conv]:
            out += [layer.weight, layer.bias, layer.mean, layer.var]
        out += [self.policy_fc_w, self.policy_fc_b]
        v = self.value_conv
        out += [v.weight, v.bias, v.mean, v.var]
        out += [self.value_fc1_w, self.value_fc1_b, self.value_fc2_w, self.value_fc2_b]
        return out

    def meta(self) -> dict:
        """Metadata in the form :func:`load` returns."""
        return {
            "feature_set": FEATURE_SET,
            "board_sizes": [BOARD_SIZE],
            "blocks": self.blocks,
            "filters": self.filters,
            "version": self.version,
        }


# ----------------------------------------------------------------------------------------------
# Parsing


def _expected_shapes(blocks: int, filters: int) -> list[tuple[int, ...]]:
    """Shapes of the parameter lines (after the version line) of a ``blocks x filters`` net."""
    shapes: list[tuple[int, ...]] = []
    conv = [(filters, INPUT_PLANES, 3, 3)] + [(filters, filters, 3, 3)] * (2 * blocks)
    for w in conv:
        shapes += [w, (filters,), (filters,), (filters,)]
    shapes += [(2, filters, 1, 1), (2,), (2,), (2,), (MOVES, 2 * POINTS), (MOVES,)]
    shapes += [(1, filters, 1, 1), (1,), (1,), (1,)]
    shapes += [(VALUE_HIDDEN, POINTS), (VALUE_HIDDEN,), (1, VALUE_HIDDEN), (1,)]
    return shapes


_LINE_NAMES_HEAD = [
    "policy conv weights", "policy conv biases", "policy BN means", "policy BN variances",
    "policy FC weights", "policy FC biases",
    "value conv weights", "value conv biases", "value BN means", "value BN variances",
    "value FC1 weights", "value FC1 biases", "value FC2 weights", "value FC2 biases",
]
_CONV_PARTS = ["weights", "biases", "BN means", "BN variances"]


def _line_name(index: int, blocks: int) -> str:
    """Human-readable name of parameter line ``index`` (0 = the line after the version line)."""
    conv_lines = 4 * (1 + 2 * blocks)
    if index < conv_lines:
        layer, part = divmod(index, 4)
        if layer == 0:
            where = "input conv"
        else:
            block, which = divmod(layer - 1, 2)
            where = f"residual block {block + 1} conv {which + 1}"
        return f"{where} {_CONV_PARTS[part]}"
    return _LINE_NAMES_HEAD[index - conv_lines]


def _parse_numbers(text: str, lineno: int, source: str) -> np.ndarray:
    """Parse one whitespace-separated line of numbers into float32; LZWeightsError on failure."""
    tokens = text.split()
    try:
        values = np.array(tokens, dtype=np.float64)
    except ValueError:
        bad = next(t for t in tokens if not _is_number(t))
        raise LZWeightsError(
            f"{source}: line {lineno}: non-numeric token {bad[:40]!r}") from None
    if not np.all(np.isfinite(values)):
        raise LZWeightsError(f"{source}: line {lineno}: non-finite number (nan or inf)")
    return values.astype(np.float32)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _split_lines(text: str) -> list[str]:
    """Split into lines like std::getline: a final newline does not start an extra line.

    Trailing blank lines are ignored (editors and ``echo`` add them), blank lines elsewhere are
    kept so that they are reported.
    """
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def parse_weights(text: str, source: str = "<weights>") -> LZWeights:
    """Parse the text of a Leela Zero weights file.

    Raises LZWeightsError (a ValueError) naming ``source`` and the 1-based line number for a
    wrong version, a wrong number of lines, a non-numeric token or a line of the wrong length.
    """
    lines = _split_lines(text)
    if not lines:
        raise LZWeightsError(f"{source}: line 1: empty file (expected the format version)")
    head = lines[0].split()
    if len(head) != 1 or not head[0].lstrip("+-").isdigit():
        raise LZWeightsError(
            f"{source}: line 1: expected the format version (1 or 2), got {lines[0][:40]!r}")
    version = int(head[0])
    if version not in SUPPORTED_VERSIONS:
        raise LZWeightsError(
            f"{source}: line 1: unsupported format version {version} (supported: 1, 2)")
    n = len(lines)
    if n < FIXED_LINES or (n - FIXED_LINES) % LINES_PER_BLOCK:
        near = FIXED_LINES if n < FIXED_LINES else n + (-(n - FIXED_LINES)) % LINES_PER_BLOCK
        raise LZWeightsError(
            f"{source}: line {n}: file ends after {n} lines, but a Leela Zero net has "
            f"{FIXED_LINES} + 8*blocks lines (next valid count: {near}); truncated or extra layers")
    blocks = (n - FIXED_LINES) // LINES_PER_BLOCK
    filters = len(lines[2].split())
    if filters == 0:
        raise LZWeightsError(f"{source}: line 3: input conv biases are empty (no filters)")
    shapes = _expected_shapes(blocks, filters)
    arrays: list[np.ndarray] = []
    for index, shape in enumerate(shapes):
        lineno = index + 2
        values = _parse_numbers(lines[index + 1], lineno, source)
        expected = math.prod(shape)
        if values.size != expected:
            raise LZWeightsError(
                f"{source}: line {lineno}: {_line_name(index, blocks)}: expected {expected} "
                f"numbers for a {blocks}x{filters} net, got {values.size}")
        if _line_name(index, blocks).endswith("variances") and np.any(values + BN_EPSILON <= 0):
            raise LZWeightsError(f"{source}: line {lineno}: negative batch-norm variance")
        arrays.append(values.reshape(shape))

    def conv(i: int) -> ConvLayer:
        return ConvLayer(*arrays[i:i + 4])

    tower = [conv(4 * k) for k in range(1 + 2 * blocks)]
    h = 4 * len(tower)
    return LZWeights(
        version=version,
        tower=tower,
        policy_conv=conv(h),
        policy_fc_w=arrays[h + 4],
        policy_fc_b=arrays[h + 5],
        value_conv=conv(h + 6),
        value_fc1_w=arrays[h + 10],
        value_fc1_b=arrays[h + 11],
        value_fc2_w=arrays[h + 12],
        value_fc2_b=arrays[h + 13],
    )


def read_weights(path: str | Path) -> LZWeights:
    """Read a Leela Zero weights file, plain text or gzip (detected by its magic bytes)."""
    path = Path(path)
    try:
        raw = read_maybe_gzipped(path)
    except CorruptGzip as exc:
        raise LZWeightsError(f"{path}: line 1: corrupt gzip data ({exc})") from None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        lineno = raw[:exc.start].count(b"\n") + 1
        raise LZWeightsError(f"{path}: line {lineno}: not a text weights file") from None
    return parse_weights(text, str(path))


# ----------------------------------------------------------------------------------------------
# Writing and random nets


def _format_line(values: np.ndarray) -> str:
    """Format numbers compactly; float32 values survive the round trip exactly."""
    flat = np.asarray(values, dtype=np.float32).ravel()
    return " ".join(["%.9g" % value for value in flat.tolist()])


def write_weights(path: str | Path, weights: LZWeights) -> None:
    """Write ``weights`` in Leela Zero's format; gzip-compressed if ``path`` ends with ``.gz``."""
    buf = io.StringIO()
    buf.write(f"{weights.version}\n")
    for values in weights.lines():
        buf.write(_format_line(values))
        buf.write("\n")
    data = buf.getvalue().encode("ascii")
    path = Path(path)
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=1, mtime=0)
    path.write_bytes(data)


def _sample_planes(rng: np.random.Generator, count: int) -> np.ndarray:
    """Random "lz18" planes (Leela Zero layout) used to calibrate random nets."""
    x = np.zeros((count, INPUT_PLANES, BOARD_SIZE, BOARD_SIZE), dtype=np.float32)
    for i in range(count):
        # A quarter of the sample is the (nearly) empty board, the rest up to 40% stones.
        density = rng.uniform(0.0, 0.02) if i % 4 == 0 else rng.uniform(0.02, 0.4)
        stones = rng.choice(3, size=(BOARD_SIZE, BOARD_SIZE),
                            p=[1 - density, density / 2, density / 2])
        history = rng.integers(1, 9)
        for h in range(history):
            x[i, h] = stones == 1
            x[i, 8 + h] = stones == 2
            # Older positions have a few stones fewer.
            stones = np.where(rng.random(stones.shape) < 0.03, 0, stones)
        x[i, 16 + (i % 2)] = 1.0
    return x


def random_weights(blocks: int, filters: int, seed: int, scale: float = 1.0,
                   version: int = 1) -> LZWeights:
    """Random Leela Zero weights whose outputs are far from trivial, for any tower size.

    Weights are Gaussian; conv biases are random (exercising Leela Zero's folding of biases
    into the means). The batch-norm means and variances are then set, layer by layer, to the
    statistics of the layer's output over a sample of random positions (as a trained net's
    running statistics would be), slightly perturbed, so activations keep unit scale through
    any tower. Finally the policy FC weights are scaled so that the logits have a standard
    deviation of ``2.5 * scale`` over the sample (a clearly peaked policy: the top moves get
    tens to hundreds of per mille), and the value FC2 weights so that the value head's input to
    tanh has a standard deviation of ``0.6 * scale`` (values spread over about [-0.9, 0.9]).
    """
    if blocks < 0 or filters < 1:
        raise ValueError("need blocks >= 0 and filters >= 1")
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"version must be one of {SUPPORTED_VERSIONS}")
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(_sample_planes(rng, 16)).double()

    def normal(shape: tuple[int, ...], std: float) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def conv(inp: torch.Tensor, out: int, k: int, residual: torch.Tensor | None = None,
             shift: float = 0.0) -> tuple[ConvLayer, torch.Tensor]:
        """A random conv layer calibrated on ``inp``; returns it and its activated output.

        ``shift`` lowers the BN means by that many standard deviations, keeping more of the
        layer's outputs above the ReLU threshold (used for the narrow heads, where a dead
        channel would hide whole parts of the input from the test).
        """
        channels = inp.shape[1]
        weight = normal((out, channels, k, k), math.sqrt(2.0 / (channels * k * k)))
        bias = normal((out,), 0.1)
        y = torch.nn.functional.conv2d(inp, torch.from_numpy(weight).double(),
                                       torch.from_numpy(bias).double(), padding=k // 2)
        mean = y.mean(dim=(0, 2, 3)).numpy()
        std = y.std(dim=(0, 2, 3)).numpy() + 1e-3
        layer = ConvLayer(
            weight=weight,
            bias=bias,
            mean=(mean + (0.2 * rng.standard_normal(out) - shift) * std).astype(np.float32),
            var=(std * std * rng.uniform(0.7, 1.4, out)).astype(np.float32),
        )
        inv_std = torch.from_numpy(1.0 / np.sqrt(layer.var.astype(np.float64) + BN_EPSILON))
        z = (y - torch.from_numpy(layer.mean.astype(np.float64)).view(1, -1, 1, 1)) \
            * inv_std.view(1, -1, 1, 1)
        if residual is not None:
            z = z + residual
        return layer, torch.relu(z)

    first, h = conv(x, filters, 3)
    tower = [first]
    for _ in range(blocks):
        c1, y = conv(h, filters, 3)
        c2, h = conv(y, filters, 3, residual=h)
        tower += [c1, c2]

    policy_conv, p = conv(h, 2, 1, shift=1.0)
    policy_fc_w = rng.standard_normal((MOVES, 2 * POINTS))
    logits = p.flatten(1) @ torch.from_numpy(policy_fc_w).T
    policy_fc_w *= 2.5 * scale / (float(logits.std()) + 1e-6)

    value_conv, v = conv(h, 1, 1, shift=1.0)
    value_fc1_w = normal((VALUE_HIDDEN, POINTS), math.sqrt(2.0 / POINTS))
    value_fc1_b = normal((VALUE_HIDDEN,), 0.1)
    hidden = torch.relu(v.flatten(1) @ torch.from_numpy(value_fc1_w).double().T
                        + torch.from_numpy(value_fc1_b).double())
    value_fc2_w = rng.standard_normal((1, VALUE_HIDDEN))
    out = hidden @ torch.from_numpy(value_fc2_w).T
    value_fc2_w *= 0.6 * scale / (float(out.std()) + 1e-6)
    value_fc2_b = -float(out.mean()) * 0.6 * scale / (float(out.std()) + 1e-6)

    return LZWeights(
        version=version,
        tower=tower,
        policy_conv=policy_conv,
        policy_fc_w=policy_fc_w.astype(np.float32),
        policy_fc_b=normal((MOVES,), 0.5 * scale),
        value_conv=value_conv,
        value_fc1_w=value_fc1_w,
        value_fc1_b=value_fc1_b,
        value_fc2_w=value_fc2_w.astype(np.float32),
        value_fc2_b=np.array([value_fc2_b], dtype=np.float32),
    )


def write_random(path: str | Path, blocks: int, filters: int, seed: int, scale: float = 1.0,
                 version: int = 1) -> LZWeights:
    """Write a random Leela Zero net (see :func:`random_weights`) to ``path``; return it.

    The file is gzip-compressed if ``path`` ends with ``.gz``, plain text otherwise.
    """
    weights = random_weights(blocks, filters, seed, scale=scale, version=version)
    write_weights(path, weights)
    return weights


# ----------------------------------------------------------------------------------------------
# The torch model


class _ResidualBlock(nn.Module):
    """Two 3x3 convolutions (batch norm folded in) with a skip connection."""

    def __init__(self, filters: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(filters, filters, 3, padding=1)
        self.conv2 = nn.Conv2d(filters, filters, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        return torch.relu(self.conv2(y) + x)


class LZNet(nn.Module):
    """A Leela Zero network working in this project's board layout.

    ``forward(x)`` takes ``[B, 18, 19, 19]`` "lz18" planes (row 0 = top row; planes 0-7 side to
    move's stones at t..t-7, 8-15 the opponent's, 16 ones if Black is to move, 17 ones if White
    is) and returns :class:`LZOutput` ``(policy [B, 362], value [B], None, None)``: the softmax
    of the policy logits is Leela Zero's policy in our point order (pass last), and the value in
    [-1, 1] is from the side to move's view for both format versions.

    Batch norm is folded into the convolutions, so the module has no mode-dependent layers;
    build it with :func:`build_model` or :func:`load`. It runs on any device and dtype; for
    exact comparisons with leelaz use float32 on the CPU (CUDA convolutions may use TF32).
    """

    feature_set = FEATURE_SET
    board_size = BOARD_SIZE
    planes = INPUT_PLANES

    def __init__(self, blocks: int, filters: int, version: int = 1) -> None:
        super().__init__()
        if version not in SUPPORTED_VERSIONS:
            raise ValueError(f"version must be one of {SUPPORTED_VERSIONS}")
        self.blocks = blocks
        self.filters = filters
        self.version = version
        self.value_from_black = version == 2
        self.input_conv = nn.Conv2d(INPUT_PLANES, filters, 3, padding=1)
        self.tower = nn.Sequential(*[_ResidualBlock(filters) for _ in range(blocks)])
        self.policy_conv = nn.Conv2d(filters, 2, 1)
        self.policy_fc = nn.Linear(2 * POINTS, MOVES)
        self.value_conv = nn.Conv2d(filters, 1, 1)
        self.value_fc1 = nn.Linear(POINTS, VALUE_HIDDEN)
        self.value_fc2 = nn.Linear(VALUE_HIDDEN, 1)

    def forward(self, x: torch.Tensor) -> LZOutput:
        """Evaluate a batch of "lz18" planes; see the class docstring.

        Raises ValueError unless ``x`` has shape [B, 18, 19, 19].
        """
        if x.dim() != 4 or tuple(x.shape[1:]) != (INPUT_PLANES, BOARD_SIZE, BOARD_SIZE):
            raise ValueError(f"expected input [B, {INPUT_PLANES}, {BOARD_SIZE}, {BOARD_SIZE}], "
                             f"got {tuple(x.shape)}")
        h = torch.relu(self.input_conv(x))
        h = self.tower(h)
        p = torch.relu(self.policy_conv(h)).flatten(1)
        logits = self.policy_fc(p)
        v = torch.relu(self.value_conv(h)).flatten(1)
        v = torch.relu(self.value_fc1(v))
        value = torch.tanh(self.value_fc2(v)).squeeze(1)
        if self.value_from_black:
            # Version 2 nets predict Black's value; Leela Zero flips it when White is to move.
            black_to_move = x[:, 16, 0, 0] > 0.5
            value = torch.where(black_to_move, value, -value)
        return LZOutput(logits, value, None, None)


def _row_flip_permutation() -> np.ndarray:
    """perm[p] = Leela Zero's index of our point p (row 0 top <-> y 0 bottom)."""
    rows, cols = np.divmod(np.arange(POINTS), BOARD_SIZE)
    return (BOARD_SIZE - 1 - rows) * BOARD_SIZE + cols


def _set(param: torch.Tensor, value: np.ndarray) -> None:
    with torch.no_grad():
        param.copy_(torch.from_numpy(np.ascontiguousarray(value, dtype=np.float32)))


def build_model(weights: LZWeights) -> LZNet:
    """Build an :class:`LZNet` (eval mode, float32, CPU) from parsed weights.

    Leela Zero's convolutions run on boards stored bottom row first. Flipping the rows of the
    input and of every 3x3 kernel gives the same result on boards stored top row first, and the
    FC layers only need their spatial inputs/outputs permuted; so the model works directly in
    our layout.
    """
    model = LZNet(weights.blocks, weights.filters, weights.version)
    perm = _row_flip_permutation()

    def set_conv(module: nn.Conv2d, layer: ConvLayer, flip: bool) -> None:
        w, b = layer.folded()
        if flip:
            w = w[:, :, ::-1, :]
        _set(module.weight, w)
        _set(module.bias, b)

    set_conv(model.input_conv, weights.tower[0], flip=True)
    for i, block in enumerate(model.tower):
        set_conv(block.conv1, weights.tower[1 + 2 * i], flip=True)
        set_conv(block.conv2, weights.tower[2 + 2 * i], flip=True)
    set_conv(model.policy_conv, weights.policy_conv, flip=False)
    set_conv(model.value_conv, weights.value_conv, flip=False)

    # Policy FC: inputs are channel-major (c*361 + j), outputs 361 points then pass.
    in_perm = np.concatenate([perm, POINTS + perm])
    out_perm = np.concatenate([perm, [POINTS]])
    _set(model.policy_fc.weight, weights.policy_fc_w[out_perm][:, in_perm])
    _set(model.policy_fc.bias, weights.policy_fc_b[out_perm])
    _set(model.value_fc1.weight, weights.value_fc1_w[:, perm])
    _set(model.value_fc1.bias, weights.value_fc1_b)
    _set(model.value_fc2.weight, weights.value_fc2_w)
    _set(model.value_fc2.bias, weights.value_fc2_b)
    return model.eval()


def load(path: str | Path) -> tuple[LZNet, dict]:
    """Load a Leela Zero weights file (text or gzip, version 1 or 2).

    Returns ``(model, meta)``; ``meta`` = ``{"feature_set": "lz18", "board_sizes": [19],
    "blocks": B, "filters": F, "version": V}``. Raises LZWeightsError for a malformed file.
    """
    weights = read_weights(path)
    return build_model(weights), weights.meta()


# ----------------------------------------------------------------------------------------------
# Command line


def _empty_board_summary(model: LZNet) -> str:
    """One line describing the net's output on the empty board with Black to move."""
    x = torch.zeros(1, INPUT_PLANES, BOARD_SIZE, BOARD_SIZE)
    x[0, 16] = 1.0
    with torch.inference_mode():
        logits, value, _, _ = model(x)
    probs = torch.softmax(logits[0].double(), 0)
    top = int(probs.argmax())
    where = "pass" if top == POINTS else f"row {top // BOARD_SIZE} col {top % BOARD_SIZE}"
    return (f"empty board, Black to move: value {float(value[0]):+.4f}, "
            f"top move {where} p={float(probs[top]):.4f}, "
            f"policy entropy {float(-(probs * probs.clamp_min(1e-30).log()).sum()):.3f} nats")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m engine.nets.lzweights {random,info} ...``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m engine.nets.lzweights",
                                     description="Leela Zero weight files")
    sub = parser.add_subparsers(dest="command", required=True)
    rnd = sub.add_parser("random", help="write a random Leela Zero net")
    rnd.add_argument("--blocks", type=int, default=6)
    rnd.add_argument("--filters", type=int, default=64)
    rnd.add_argument("--seed", type=int, default=1)
    rnd.add_argument("--scale", type=float, default=1.0,
                     help="spread of the policy logits and of the value (default 1.0)")
    rnd.add_argument("--version", type=int, choices=SUPPORTED_VERSIONS, default=1)
    rnd.add_argument("-o", "--output", required=True, help="output file (.gz = gzip)")
    info = sub.add_parser("info", help="describe a weights file")
    info.add_argument("file")
    args = parser.parse_args(argv)

    if args.command == "random":
        weights = write_random(args.output, args.blocks, args.filters, args.seed,
                               scale=args.scale, version=args.version)
        print(f"wrote {args.output}: version {weights.version}, "
              f"{weights.blocks} blocks x {weights.filters} filters")
        return 0
    try:
        model, meta = load(args.file)
    except (LZWeightsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    params = sum(p.numel() for p in model.parameters())
    for key, value in meta.items():
        print(f"{key}: {value}")
    print(f"parameters: {params}")
    print(_empty_board_summary(model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
