"""A KataGo network as plain data: its layers and blocks as numpy arrays in KataGo's own
layout (conv weights [out, in, ky, kx] after reading, matmul weights [in, out] as stored), the
header's constants and the errors of its files.  :mod:`engine.nets.kataweights` reads and writes the
files (format described there); :mod:`engine.nets.katanet` runs a model in torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import numpy as np

SUPPORTED_VERSIONS = tuple(range(8, 18))   # V7 input features (22 spatial, 19 global)
TRAINED_SIZES = tuple(range(7, 20))         # KataGo's self-play board sizes (kata1 runs)
SPATIAL_INPUTS = 22
GLOBAL_INPUTS = 19
ACTIVATIONS = ("ACTIVATION_IDENTITY", "ACTIVATION_RELU", "ACTIVATION_MISH", "ACTIVATION_SILU")
# KataGo's defaults for nets older than version 13, which do not store them.
DEFAULT_POSTPROCESS = (20.0, 20.0, 20.0, 20.0, 40.0, 0.25, 30.0)
POSTPROCESS_NAMES = ("td_score", "score_mean", "score_stdev", "lead", "variance_time",
                     "shortterm_value_error", "shortterm_score_error")


class KataWeightsError(ValueError):
    """A KataGo model file that cannot be used; the message names the offset and the layer."""


# ----------------------------------------------------------------------------------------------
# Layers and blocks (KataGo's layout: conv weights [out, in, ky, kx] after reading, matmul
# weights [in, out] as stored)


@dataclass
class Conv:
    name: str
    weight: np.ndarray            # [out, in, ky, kx]
    dilation: tuple[int, int] = (1, 1)


@dataclass
class BatchNorm:
    name: str
    epsilon: float
    mean: np.ndarray
    var: np.ndarray
    scale: np.ndarray | None       # None: not stored (ones)
    bias: np.ndarray | None        # None: not stored (zeros)

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        """(scale, bias) of the equivalent per-channel affine map, computed as KataGo does."""
        scale = self.scale if self.scale is not None else np.ones_like(self.mean)
        bias = self.bias if self.bias is not None else np.zeros_like(self.mean)
        merged_scale = (scale.astype(np.float32) / np.sqrt(self.var.astype(np.float32) + np.float32(self.epsilon)))
        return merged_scale.astype(np.float32), (bias - merged_scale * self.mean).astype(np.float32)


@dataclass
class Activation:
    name: str
    kind: str = "ACTIVATION_RELU"


@dataclass
class MatMul:
    name: str
    weight: np.ndarray            # [in, out]


@dataclass
class MatBias:
    name: str
    weight: np.ndarray            # [C]


@dataclass
class RMSNorm:
    """Trunk-tip RMS norm (gamma and beta; ``spatial``: one RMS over the whole board)."""
    name: str
    epsilon: float
    spatial: bool
    gamma: np.ndarray
    beta: np.ndarray


@dataclass
class TRMSNorm:
    """Transformer RMS norm: per point over channels, weight only."""
    name: str
    epsilon: float
    weight: np.ndarray


@dataclass
class OrdinaryBlock:
    name: str
    pre_bn: BatchNorm
    pre_act: Activation
    conv1: Conv
    mid_bn: BatchNorm
    mid_act: Activation
    conv2: Conv
    kind = "ordinary_block"


@dataclass
class GPoolBlock:
    name: str
    pre_bn: BatchNorm
    pre_act: Activation
    conv1: Conv
    gpool_conv: Conv
    gpool_bn: BatchNorm
    gpool_act: Activation
    gpool_to_bias: MatMul
    mid_bn: BatchNorm
    mid_act: Activation
    conv2: Conv
    kind = "gpool_block"


@dataclass
class NestedBlock:
    name: str
    pre_bn: BatchNorm
    pre_act: Activation
    pre_conv: Conv
    blocks: list
    post_bn: BatchNorm
    post_act: Activation
    post_conv: Conv
    kind = "nested_bottleneck_block"


@dataclass
class AttentionBlock:
    name: str
    heads: int
    kv_heads: int
    q_dim: int
    v_dim: int
    rope: bool
    learnable_rope: bool
    pre_ln: TRMSNorm
    q: MatMul
    k: MatMul
    v: MatMul
    out: MatMul
    rope_name: str = ""
    rope_theta: float = 0.0
    rope_freqs: np.ndarray | None = None     # [kv_heads, q_dim // 2, 2] (x, y) when learnable
    kind = "transformer_attention_block"


@dataclass
class FFNBlock:
    name: str
    hidden: int
    swiglu: bool
    pre_ln: TRMSNorm
    linear1: MatMul
    gate: MatMul | None
    linear2: MatMul
    kind = "transformer_ffn_block"


Block = Union[OrdinaryBlock, GPoolBlock, NestedBlock, AttentionBlock, FFNBlock]


@dataclass
class Trunk:
    name: str
    channels: int
    mid_channels: int
    regular_channels: int
    dilated_channels: int
    gpool_channels: int
    norm_kind: int                 # 0 batch norm tip, 1 RMS norm tip (version >= 15)
    initial_conv: Conv
    initial_matmul: MatMul
    blocks: list
    tip_bn: BatchNorm | None
    tip_rms: RMSNorm | None
    tip_act: Activation


@dataclass
class PolicyHead:
    name: str
    out_channels: int
    p1_conv: Conv
    g1_conv: Conv
    g1_bn: BatchNorm
    g1_act: Activation
    gpool_to_bias: MatMul
    p1_bn: BatchNorm
    p1_act: Activation
    p2_conv: Conv
    gpool_to_pass: MatMul
    pass_bias: MatBias | None = None     # version >= 15
    pass_act: Activation | None = None
    pass_mul2: MatMul | None = None


@dataclass
class ValueHead:
    name: str
    v1_conv: Conv
    v1_bn: BatchNorm
    v1_act: Activation
    v2_mul: MatMul
    v2_bias: MatBias
    v2_act: Activation
    v3_mul: MatMul
    v3_bias: MatBias
    sv3_mul: MatMul
    sv3_bias: MatBias
    ownership_conv: Conv


@dataclass
class KataModel:
    """Everything a KataGo model file holds, in KataGo's own layout."""
    name: str
    version: int
    spatial_inputs: int
    global_inputs: int
    postprocess: tuple[float, ...]
    meta_encoder_version: int
    prefer_pass_alive_suicide: bool
    trunk: Trunk
    policy: PolicyHead
    value: ValueHead

    @property
    def postprocess_params(self) -> dict[str, float]:
        return dict(zip(POSTPROCESS_NAMES, self.postprocess))

    def block_kinds(self) -> list[str]:
        """Kinds of all blocks, nested ones included, in file order."""
        out: list[str] = []

        def walk(blocks: list) -> None:
            for b in blocks:
                out.append(b.kind)
                if isinstance(b, NestedBlock):
                    walk(b.blocks)
        walk(self.trunk.blocks)
        return out

    def num_parameters(self) -> int:
        total = 0

        def add(obj: Any) -> None:
            nonlocal total
            if isinstance(obj, np.ndarray):
                total += obj.size
            elif isinstance(obj, list):
                for o in obj:
                    add(o)
            elif hasattr(obj, "__dataclass_fields__"):
                for f in obj.__dataclass_fields__:
                    add(getattr(obj, f))
        add(self.trunk)
        add(self.policy)
        add(self.value)
        return total

    def meta(self) -> dict[str, Any]:
        """Metadata in the form :func:`load` returns."""
        return {
            "feature_set": feature_set_for(self),
            "board_sizes": list(TRAINED_SIZES),
            "name": self.name,
            "version": self.version,
            "blocks": len(self.trunk.blocks),
            "channels": self.trunk.channels,
            "block_kinds": sorted(set(self.block_kinds())),
            "parameters": self.num_parameters(),
        }


def feature_set_for(model: KataModel) -> str:
    """The C core's feature set for this net: ``kata7``, or ``kata7s`` when the net wants its
    pass-alive inputs computed as if multi-stone suicide were legal."""
    return "kata7s" if model.prefer_pass_alive_suicide else "kata7"
