"""A network's architecture, :class:`NetConfig`, and the plane counts of the feature sets: plain
values without torch, so that settings (a training run's ``--blocks``, ``--filters``,
``--feature-set``) can hold one without importing the network.  :mod:`engine.nets.network`
builds the net from it and re-exports both."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# Plane counts fixed by an external format, known without asking the C core.
KNOWN_FEATURE_PLANES: dict[str, int] = {"lz18": 18}


def feature_planes_for(feature_set: str) -> int:
    """Return the number of input planes of ``feature_set``.

    "lz18" is known here; any other set is looked up in ``engine.core.feature_planes`` (imported
    lazily, so this module works without the compiled core). Raises ValueError if the set is
    unknown or the core is not available to tell.
    """
    if feature_set in KNOWN_FEATURE_PLANES:
        return KNOWN_FEATURE_PLANES[feature_set]
    try:
        from engine import core  # lazy: the network must not depend on the C core
    except ImportError as exc:
        raise ValueError(
            f"cannot tell how many input planes feature set {feature_set!r} has: engine.core is "
            f"not available ({exc}); pass in_planes explicitly"
        ) from exc
    return int(core.feature_planes(feature_set))


@dataclass(frozen=True)
class NetConfig:
    """Architecture of a ``GoNet``. Plain values only, so it round-trips through a weights file."""

    blocks: int = 6  # residual blocks in the tower
    filters: int = 64  # channels of the tower
    in_planes: int | None = None  # input planes; None = the plane count of feature_set
    feature_set: str = "rich"  # name of the C feature encoder the net reads ("rich", "lz18")
    gpool_every: int = 3  # block i is a global-pooling block when i % gpool_every == gpool_every-1 (0: none)
    gpool_channels: int | None = None  # channels pooled in those blocks; None = max(4, filters // 4)
    head_channels: int = 32  # channels of the policy and value heads' 1x1 convolutions
    value_hidden: int = 64  # width of the value/score fully connected layer
    score_scale: float = 20.0  # score output = raw linear output * score_scale (points)

    def __post_init__(self) -> None:
        def positive_int(name: str, minimum: int) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise ValueError(f"NetConfig.{name} must be an int >= {minimum}, got {v!r}")

        positive_int("blocks", 0)
        positive_int("filters", 1)
        positive_int("gpool_every", 0)
        positive_int("head_channels", 1)
        positive_int("value_hidden", 1)
        if self.in_planes is not None:
            positive_int("in_planes", 1)
        if self.gpool_channels is not None:
            positive_int("gpool_channels", 1)
        if not isinstance(self.feature_set, str) or not self.feature_set:
            raise ValueError(f"NetConfig.feature_set must be a non-empty str, got {self.feature_set!r}")
        if isinstance(self.score_scale, bool) or not isinstance(self.score_scale, (int, float)):
            raise ValueError(f"NetConfig.score_scale must be a number, got {self.score_scale!r}")
        object.__setattr__(self, "score_scale", float(self.score_scale))

    def resolved(self) -> NetConfig:
        """Return a copy with every ``None`` replaced by its concrete value.

        Raises ValueError if ``in_planes`` is None and the feature set's plane count is unknown.
        """
        in_planes = self.in_planes if self.in_planes is not None else feature_planes_for(self.feature_set)
        gpool = self.gpool_channels if self.gpool_channels is not None else max(4, self.filters // 4)
        return dataclasses.replace(self, in_planes=in_planes, gpool_channels=gpool)

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a dict of plain Python values."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NetConfig:
        """Build a config from ``to_dict`` output. Raises ValueError on unknown keys or bad values."""
        if not isinstance(d, dict):
            raise ValueError(f"network config must be a dict, got {type(d).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown network config keys: {sorted(map(str, unknown))}")
        return cls(**d)
