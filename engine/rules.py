"""Rules as a value, their presets and names, the game defaults, each defined once, and the
text of a counted result (:func:`format_result`).

:class:`Rules` (ko rule, suicide, komi; area scoring always) is passed explicitly to games and
searches.  Two presets: ``chinese`` (simple ko, no suicide) and ``tromp-taylor`` (positional
superko, suicide legal).  Names are read in two ways:

- :meth:`Rules.preset` / :func:`preset_name`: our presets only (the command line, run configs);
  :meth:`Rules.from_name` also reads back the names of the other combinations (records);
- :func:`client_rules`: the names GTP controllers (``kgs-rules``) and SGF files (``RU``) use,
  mapped to the preset that plays them with area scoring (``japanese`` -> ``chinese``).

Pure Python: the C core receives rules through :mod:`engine.core`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

DEFAULT_KOMI = 7.5
DEFAULT_RULES = "chinese"
PRESETS = ("chinese", "tromp-taylor")
MOVE_CAP_PER_POINT = 2        # a game stops after 2 * N * N moves, scored as if passed out

# Spellings of our presets (normalised by _key).
_PRESET_SPELLINGS = {
    "chinese": "chinese", "cn": "chinese",
    "tromp_taylor": "tromp-taylor", "trompt_taylor": "tromp-taylor", "tt": "tromp-taylor",
}
# Names clients send (kgs-rules, SGF RU; normalised by _key) -> our presets.
CLIENT_RULES = {
    **_PRESET_SPELLINGS,
    "aga": "chinese", "japanese": "chinese", "jp": "chinese", "korean": "chinese",
    "tromptaylor": "tromp-taylor", "new_zealand": "tromp-taylor", "nz": "tromp-taylor",
}
# Our presets as SGF RU values and as kgs-rules names.
SGF_NAMES = {"chinese": "Chinese", "tromp-taylor": "Tromp-Taylor"}
KGS_NAMES = {"chinese": "chinese", "tromp-taylor": "new_zealand"}


def _key(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def preset_name(name: str) -> str:
    """The preset a name spells (``chinese``, ``cn``, ``tromp-taylor``, ``tromp_taylor``,
    ``tt``; any case); ValueError for anything else."""
    preset = _PRESET_SPELLINGS.get(_key(name))
    if preset is None:
        raise ValueError(f"unknown rules {name!r} (known: {', '.join(PRESETS)})")
    return preset


def client_rules(name: str | None) -> str | None:
    """The preset for a rules name a GTP controller or an SGF file uses, None when unknown."""
    if not name:
        return None
    return CLIENT_RULES.get(_key(name))


def move_cap(size: int) -> int:
    """Moves after which a game on a size x size board stops and is scored as it stands."""
    return MOVE_CAP_PER_POINT * size * size


def format_result(score: float) -> str:
    """The one formatter of a counted result (GTP's ``final_score``, SGF's RE, records, logs):
    ``B+3.5``, ``W+0.5``, ``B+3.0`` or ``0`` for a Black-minus-White area score."""
    if score > 0:
        return f"B+{score:.1f}"
    if score < 0:
        return f"W+{-score:.1f}"
    return "0"


@dataclass(frozen=True)
class Rules:
    """Rules as a value: ko rule, suicide, komi.  Area scoring always."""

    ko: str = "simple"          # "simple" or "positional" (positional superko)
    suicide: bool = False        # True: suicide is legal (Tromp-Taylor)
    komi: float = DEFAULT_KOMI

    PRESETS = PRESETS

    def __post_init__(self) -> None:
        if self.ko not in ("simple", "positional"):
            raise ValueError(f"unknown ko rule {self.ko!r}")
        if not math.isfinite(self.komi) or abs(self.komi) > 1000:
            raise ValueError(f"invalid komi {self.komi!r}")

    @classmethod
    def preset(cls, name: str, komi: float = DEFAULT_KOMI) -> "Rules":
        """``chinese`` (simple ko, no suicide) or ``tromp-taylor`` (positional superko, suicide);
        the spellings :func:`preset_name` reads.  ValueError for other names or a bad komi."""
        if preset_name(name) == "chinese":
            return cls("simple", False, float(komi))
        return cls("positional", True, float(komi))

    @classmethod
    def from_name(cls, name: str, komi: float = DEFAULT_KOMI) -> "Rules":
        """The rules whose :attr:`name` is ``name``: a preset's spelling, or ``simple-ko``,
        ``positional-ko``, either with ``-suicide``.  ValueError for anything else."""
        parts = name.split("-")
        if parts[0] in ("simple", "positional") and parts[1:] in (["ko"], ["ko", "suicide"]):
            return cls(parts[0], len(parts) == 3, float(komi))
        return cls.preset(name, komi)

    @property
    def name(self) -> str:
        if self.ko == "simple" and not self.suicide:
            return "chinese"
        if self.ko == "positional" and self.suicide:
            return "tromp-taylor"
        return f"{self.ko}-ko{'-suicide' if self.suicide else ''}"

    def with_komi(self, komi: float) -> "Rules":
        return dataclasses.replace(self, komi=float(komi))
