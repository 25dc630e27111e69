"""Our own policy/value network: a residual tower with KataGo-style global pooling.

The net is fully convolutional: no layer's shape depends on the board, and board-wide information
(whose group is weaker, how big the board is, whether passing is good) reaches every point through
global pooling (mean, size-scaled mean and max of some channels) feeding biases. So ONE set of
weights evaluates every board size from 2x2 to 19x19.

``GoNet.forward(x)`` takes input planes ``x: [B, P, N, N]`` (side-to-move view, as written by the
C feature encoder) and returns, all float32:

- ``policy``    [B, N*N+1]: logits, point ``row * N + col`` then PASS last;
- ``value``     [B]: tanh, expected result for the side to move in [-1, 1];
- ``ownership`` [B, N*N]: tanh, +1 = the side to move owns the point, -1 = the opponent does;
- ``score``     [B]: predicted score lead of the side to move, in points.

Works under ``torch.autocast`` (bf16 on CPU; fp16/bf16 on CUDA) and with channels_last inputs.
This module does not need the C core; only ``feature_planes_for`` of a feature set other than
"lz18" asks ``engine.core`` (lazily) how many planes that set has.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from engine.nets.netconfig import KNOWN_FEATURE_PLANES, NetConfig, feature_planes_for  # noqa: F401 (re-exported)


class NetOutput(NamedTuple):
    """What ``GoNet.forward`` returns (see the module docstring for shapes and meanings)."""

    policy: torch.Tensor
    value: torch.Tensor
    ownership: torch.Tensor
    score: torch.Tensor


def global_pool(x: torch.Tensor) -> torch.Tensor:
    """Pool [B, C, N, N] to [B, 3C]: mean, mean * (N - 14) / 10 (tells the board size), max."""
    n = (x.shape[-2] * x.shape[-1]) ** 0.5
    mean = x.mean(dim=(-2, -1))
    return torch.cat([mean, mean * ((n - 14.0) / 10.0), x.amax(dim=(-2, -1))], dim=1)


class ConvBN(nn.Module):
    """Convolution (no bias, 'same' padding) followed by batch norm; ``fuse()`` folds the two."""

    def __init__(self, c_in: int, c_out: int, kernel: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False)
        self.bn: nn.Module = nn.BatchNorm2d(c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x))

    def fuse(self) -> None:
        """Fold the batch norm (its running statistics) into the convolution, for inference only."""
        if isinstance(self.bn, nn.BatchNorm2d):
            self.conv = fuse_conv_bn_eval(self.conv.eval(), self.bn.eval())
            self.bn = nn.Identity()


class ResBlock(nn.Module):
    """Two 3x3 ConvBN layers and a skip connection (post-activation, as in AlphaGo Zero)."""

    def __init__(self, filters: int) -> None:
        super().__init__()
        self.conv1 = ConvBN(filters, filters, 3)
        self.conv2 = ConvBN(filters, filters, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv1(x))
        return F.relu(x + self.conv2(y))


class GlobalPoolBlock(nn.Module):
    """A residual block whose middle activation gets a per-channel bias computed from globally
    pooled features of a few extra channels (KataGo's global pooling bias)."""

    def __init__(self, filters: int, pooled: int) -> None:
        super().__init__()
        self.conv1 = ConvBN(filters, filters, 3)
        self.pool_conv = ConvBN(filters, pooled, 3)
        self.pool_fc = nn.Linear(3 * pooled, filters)
        self.conv2 = ConvBN(filters, filters, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = global_pool(F.relu(self.pool_conv(x)))
        y = F.relu(self.conv1(x) + self.pool_fc(pooled)[:, :, None, None])
        return F.relu(x + self.conv2(y))


class PolicyHead(nn.Module):
    """Point logits from 1x1 convolutions biased by pooled features; the pass logit from the
    pooled features alone."""

    def __init__(self, filters: int, channels: int) -> None:
        super().__init__()
        self.conv = ConvBN(filters, channels, 1)
        self.pool_conv = ConvBN(filters, channels, 1)
        self.pool_fc = nn.Linear(3 * channels, channels)
        self.out = nn.Conv2d(channels, 1, 1)
        self.pass_fc = nn.Linear(3 * channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = global_pool(F.relu(self.pool_conv(x)))
        y = F.relu(self.conv(x) + self.pool_fc(pooled)[:, :, None, None])
        points = self.out(y).reshape(x.shape[0], -1)
        return torch.cat([points, self.pass_fc(pooled)], dim=1)


class ValueHead(nn.Module):
    """Value (tanh) and score from pooled features; ownership (tanh) per point."""

    def __init__(self, filters: int, channels: int, hidden: int, score_scale: float) -> None:
        super().__init__()
        self.conv = ConvBN(filters, channels, 1)
        self.fc = nn.Linear(3 * channels, hidden)
        self.value_fc = nn.Linear(hidden, 1)
        self.score_fc = nn.Linear(hidden, 1)
        self.ownership = nn.Conv2d(channels, 1, 1)
        self.score_scale = score_scale

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y = F.relu(self.conv(x))
        h = F.relu(self.fc(global_pool(y)))
        value = torch.tanh(self.value_fc(h)).reshape(-1)
        score = (self.score_fc(h) * self.score_scale).reshape(-1)
        ownership = torch.tanh(self.ownership(y)).reshape(x.shape[0], -1)
        return value, ownership, score


class GoNet(nn.Module):
    """Residual tower + policy, value, ownership and score heads; one net for all board sizes.

    ``GoNet(NetConfig(blocks=6, filters=64, in_planes=18))``. ``config`` holds the resolved
    architecture (no None fields); ``feature_set`` and ``in_planes`` tell callers which input
    planes the net reads. Raises ValueError for an invalid config.
    """

    def __init__(self, config: NetConfig | None = None) -> None:
        super().__init__()
        config = (config or NetConfig()).resolved()
        self.config = config
        assert config.in_planes is not None and config.gpool_channels is not None
        f = config.filters
        self.stem = ConvBN(config.in_planes, f, 3)
        every = config.gpool_every
        self.tower = nn.Sequential(
            *[
                GlobalPoolBlock(f, config.gpool_channels) if every and i % every == every - 1 else ResBlock(f)
                for i in range(config.blocks)
            ]
        )
        self.policy_head = PolicyHead(f, config.head_channels)
        self.value_head = ValueHead(f, config.head_channels, config.value_hidden, config.score_scale)

    @property
    def feature_set(self) -> str:
        """Name of the input feature set the net reads."""
        return self.config.feature_set

    @property
    def in_planes(self) -> int:
        """Number of input planes."""
        assert self.config.in_planes is not None
        return self.config.in_planes

    def forward(self, x: torch.Tensor) -> NetOutput:
        """Evaluate planes ``x`` [B, in_planes, N, N]; returns float32 ``NetOutput`` (policy
        [B, N*N+1] logits, value [B], ownership [B, N*N], score [B]). Raises ValueError on a
        wrong input shape."""
        if x.dim() != 4 or x.shape[1] != self.in_planes or x.shape[2] != x.shape[3]:
            raise ValueError(f"expected input [B, {self.in_planes}, N, N], got {tuple(x.shape)}")
        h = self.tower(F.relu(self.stem(x)))
        policy = self.policy_head(h)
        value, ownership, score = self.value_head(h)
        return NetOutput(policy.float(), value.float(), ownership.float(), score.float())

    def num_parameters(self) -> int:
        """Return the number of trainable parameters."""
        return sum(p.numel() for p in self.parameters())

    def fused(self) -> GoNet:
        """Return an inference copy (eval mode) with every batch norm folded into its convolution.

        Outputs equal the eval-mode outputs up to float rounding; the copy must not be trained or
        saved as a regular weights file (its state dict has a different layout).
        """
        net = copy.deepcopy(self).eval()
        for m in net.modules():
            if isinstance(m, ConvBN):
                m.fuse()
        return net


# The name other modules may know the net by.
Network = GoNet
