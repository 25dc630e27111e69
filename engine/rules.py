"""Rules as a value, their presets and names, the game defaults, each defined once, and the
text of a counted result (:func:`format_result`).

:class:`Rules` (ko rule, suicide, komi, scoring, tax) is passed explicitly to games and
searches.  Presets:

==============  =========  =====  ==========  =======  =====
preset          scoring    tax    ko          suicide  komi
==============  =========  =====  ==========  =======  =====
chinese         area       none   simple      no       7.5
tromp-taylor    area       none   positional  yes      7.5
japanese        territory  seki   simple      no       6.5
korean          territory  seki   simple      no       6.5
==============  =========  =====  ==========  =======  =====

(``korean`` is the same value as ``japanese``, and is named ``japanese``.)  Area scoring counts
stones plus surrounded empty points; territory scoring counts surrounded empty points plus
prisoners; tax ``seki``: no points for the eyes of a group in seki; tax ``all``: also up to 2
points off every living group (src_c/count.h).  Names are read in two ways:

- :meth:`Rules.preset` / :func:`preset_name`: our presets only (the command line, run configs);
  :meth:`Rules.from_name` also reads back the names of the other combinations (records);
- :func:`client_rules`: the names GTP controllers (``kgs-rules``) and SGF files (``RU``) use,
  mapped to the preset that plays them (``aga`` -> ``chinese``, ``new_zealand`` ->
  ``tromp-taylor``: both area scoring; their situational superko is not played).

Pure Python: the C core receives rules through :mod:`engine.core`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

DEFAULT_KOMI = 7.5
DEFAULT_RULES = "chinese"
PRESETS = ("chinese", "tromp-taylor", "japanese", "korean")
AREA_PRESETS = ("chinese", "tromp-taylor")   # the rules self-play and training know
MOVE_CAP_PER_POINT = 2        # a game stops after 2 * N * N moves, scored as if passed out
KO_RULES = ("simple", "positional")
SCORINGS = ("area", "territory")
TAXES = ("none", "seki", "all")

# Each preset's ko rule, suicide, scoring, tax and default komi.
_PRESET_VALUES = {
    "chinese": ("simple", False, "area", "none", DEFAULT_KOMI),
    "tromp-taylor": ("positional", True, "area", "none", DEFAULT_KOMI),
    "japanese": ("simple", False, "territory", "seki", 6.5),
    "korean": ("simple", False, "territory", "seki", 6.5),
}
# Spellings of our presets (normalised by _key).
_PRESET_SPELLINGS = {
    "chinese": "chinese", "cn": "chinese",
    "tromp_taylor": "tromp-taylor", "trompt_taylor": "tromp-taylor", "tt": "tromp-taylor",
    "japanese": "japanese", "jp": "japanese", "korean": "korean", "kr": "korean",
}
# Names clients send (kgs-rules, SGF RU; normalised by _key) -> our presets.
CLIENT_RULES = {
    **_PRESET_SPELLINGS,
    "aga": "chinese",
    "tromptaylor": "tromp-taylor", "new_zealand": "tromp-taylor", "nz": "tromp-taylor",
}
# Our presets as SGF RU values and as kgs-rules names.
SGF_NAMES = {"chinese": "Chinese", "tromp-taylor": "Tromp-Taylor", "japanese": "Japanese",
             "korean": "Korean"}
KGS_NAMES = {"chinese": "chinese", "tromp-taylor": "new_zealand", "japanese": "japanese",
             "korean": "japanese"}


def _key(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def preset_name(name: str) -> str:
    """The preset a name spells (``chinese``, ``cn``, ``tromp-taylor``, ``tromp_taylor``,
    ``tt``, ``japanese``, ``jp``, ``korean``, ``kr``; any case); ValueError for anything else."""
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
    ``B+3.5``, ``W+0.5``, ``B+3.0`` or ``0`` for a Black-minus-White score."""
    if score > 0:
        return f"B+{score:.1f}"
    if score < 0:
        return f"W+{-score:.1f}"
    return "0"


@dataclass(frozen=True)
class Rules:
    """Rules as a value: ko rule, suicide, komi, scoring and tax (see the module's table)."""

    ko: str = "simple"          # "simple" or "positional" (positional superko)
    suicide: bool = False        # True: suicide is legal (Tromp-Taylor)
    komi: float = DEFAULT_KOMI
    scoring: str = "area"        # "area" (stones + territory) or "territory" (territory + prisoners)
    tax: str = "none"            # "none", "seki" (no points in seki) or "all" (2 points a group too)

    PRESETS = PRESETS

    def __post_init__(self) -> None:
        if self.ko not in KO_RULES:
            raise ValueError(f"unknown ko rule {self.ko!r} (known: {', '.join(KO_RULES)})")
        if self.scoring not in SCORINGS:
            raise ValueError(f"unknown scoring {self.scoring!r} (known: {', '.join(SCORINGS)})")
        if self.tax not in TAXES:
            raise ValueError(f"unknown tax {self.tax!r} (known: {', '.join(TAXES)})")
        if self.scoring == "area" and self.tax != "none":
            raise ValueError("a tax under area scoring is not supported")
        if not math.isfinite(self.komi) or abs(self.komi) > 1000:
            raise ValueError(f"invalid komi {self.komi!r}")

    @classmethod
    def preset(cls, name: str, komi: float | None = None) -> "Rules":
        """A preset by any spelling :func:`preset_name` reads, with ``komi`` (None: the
        preset's own, 7.5 for area scoring, 6.5 for territory).  ValueError for other names or
        a bad komi."""
        ko, suicide, scoring, tax, default_komi = _PRESET_VALUES[preset_name(name)]
        return cls(ko, suicide, float(default_komi if komi is None else komi), scoring, tax)

    @classmethod
    def default(cls, komi: float | None = None) -> "Rules":
        """The default rules (:data:`DEFAULT_RULES`) with ``komi`` (None: :data:`DEFAULT_KOMI`):
        what the engine, a run and a match play unless told otherwise."""
        return cls.preset(DEFAULT_RULES, DEFAULT_KOMI if komi is None else komi)

    @classmethod
    def from_name(cls, name: str, komi: float | None = None) -> "Rules":
        """The rules whose :attr:`name` is ``name``: a preset's spelling, or ``simple-ko``,
        ``positional-ko``, either with ``-suicide``, and those after ``territory-tax-none-``
        (or another scoring and tax).  ValueError for anything else."""
        parts = name.split("-")
        scoring, tax = "area", "none"
        if len(parts) > 3 and parts[0] in SCORINGS and parts[1] == "tax":
            scoring, tax, parts = parts[0], parts[2], parts[3:]
        if parts[0] in KO_RULES and parts[1:] in (["ko"], ["ko", "suicide"]):
            return cls(parts[0], len(parts) == 3, float(DEFAULT_KOMI if komi is None else komi),
                       scoring, tax)
        return cls.preset(name, komi)

    @property
    def name(self) -> str:
        for preset in ("chinese", "tromp-taylor", "japanese"):
            ko, suicide, scoring, tax, _ = _PRESET_VALUES[preset]
            if (self.ko, self.suicide, self.scoring, self.tax) == (ko, suicide, scoring, tax):
                return preset
        base = f"{self.ko}-ko{'-suicide' if self.suicide else ''}"
        if (self.scoring, self.tax) != ("area", "none"):
            base = f"{self.scoring}-tax-{self.tax}-{base}"
        return base

    @property
    def is_area(self) -> bool:
        """Area scoring without tax: the count our own nets learnt and self-play plays."""
        return self.scoring == "area" and self.tax == "none"

    def with_komi(self, komi: float) -> "Rules":
        return dataclasses.replace(self, komi=float(komi))

    def kata_json(self) -> dict:
        """The rules as KataGo's ``kata-get-rules`` writes them (komi apart): ko, scoring,
        tax, suicide, hasButton, whiteHandicapBonus, friendlyPassOk."""
        return {"friendlyPassOk": False, "hasButton": False, "ko": self.ko.upper(),
                "scoring": self.scoring.upper(), "suicide": self.suicide,
                "tax": self.tax.upper(), "whiteHandicapBonus": "0"}


def net_rules_note(rules: Rules, feature_set: str) -> str | None:
    """What to tell the user when a net that knows area scoring only (every feature set but
    KataGo's) plays ``rules`` and the komi cannot be converted soundly: None under area
    scoring, for KataGo's nets (they take the rules as inputs) and under territory scoring
    without tax all (the net is shown the area komi the territory komi is worth, see
    count_area_komi in src_c/count.h); under tax all, a sentence saying the net plays area
    scoring."""
    if rules.is_area or str(feature_set).startswith("kata") or rules.tax != "all":
        return None
    return (f"this net knows area scoring only: under {rules.name} rules it plays area scoring "
            f"with komi {rules.komi:g} (the tax all cannot be turned into a komi); games that end "
            "in the search are still counted by the rules")


# -- KataGo's rules (the analysis protocol's ``rules``, GTP ``kata-set-rules``) ---------------

@dataclass(frozen=True)
class KataRules:
    """A KataGo rule set as KataGo names its parts (komi is the default for its name)."""

    ko: str = "POSITIONAL"          # SIMPLE, POSITIONAL, SITUATIONAL
    scoring: str = "AREA"           # AREA, TERRITORY
    tax: str = "NONE"               # NONE, SEKI, ALL
    suicide: bool = True
    button: bool = False
    white_handicap_bonus: str = "0"  # 0, N, N-1
    komi: float = 7.5


KATA_NAMED_RULES = {
    "japanese": KataRules("SIMPLE", "TERRITORY", "SEKI", False, False, "0", 6.5),
    "korean": KataRules("SIMPLE", "TERRITORY", "SEKI", False, False, "0", 6.5),
    "chinese": KataRules("SIMPLE", "AREA", "NONE", False, False, "N", 7.5),
    "chineseogs": KataRules("POSITIONAL", "AREA", "NONE", False, False, "N", 7.5),
    "chinesekgs": KataRules("POSITIONAL", "AREA", "NONE", False, False, "N", 7.5),
    "stonescoring": KataRules("SIMPLE", "AREA", "ALL", False, False, "0", 7.5),
    "ancientarea": KataRules("SIMPLE", "AREA", "ALL", False, False, "0", 7.5),
    "ancientterritory": KataRules("SIMPLE", "TERRITORY", "ALL", False, False, "0", 6.5),
    "agabutton": KataRules("SITUATIONAL", "AREA", "NONE", False, True, "N-1", 7.0),
    "aga": KataRules("SITUATIONAL", "AREA", "NONE", False, False, "N-1", 7.5),
    "bga": KataRules("SITUATIONAL", "AREA", "NONE", False, False, "N-1", 7.5),
    "french": KataRules("SITUATIONAL", "AREA", "NONE", False, False, "N-1", 7.5),
    "nz": KataRules("SITUATIONAL", "AREA", "NONE", True, False, "0", 7.0),
    "newzealand": KataRules("SITUATIONAL", "AREA", "NONE", True, False, "0", 7.0),
    "tromptaylor": KataRules("POSITIONAL", "AREA", "NONE", True, False, "0", 7.5),
    "goe": KataRules("POSITIONAL", "AREA", "NONE", True, False, "0", 7.5),
    "ing": KataRules("POSITIONAL", "AREA", "NONE", True, False, "0", 7.5),
}
KATA_CHOICES = {"ko": ("SIMPLE", "POSITIONAL", "SITUATIONAL"), "scoring": ("AREA", "TERRITORY"),
                "tax": ("NONE", "SEKI", "ALL"), "whiteHandicapBonus": ("0", "N", "N-1")}


def kata_rules(value) -> KataRules:
    """KataGo's rules from a name (``chinese``, ``japanese``, ``tromp-taylor``, ``aga``, ...)
    or a JSON object (``ko``, ``scoring``, ``tax``, ``suicide``, ``hasButton``,
    ``whiteHandicapBonus``, ``friendlyPassOk``, ``komi``; unspecified parts as Tromp-Taylor).
    ValueError for anything else."""
    if isinstance(value, str):
        key = "".join(ch for ch in value.strip().lower() if ch not in " -_")
        if key not in KATA_NAMED_RULES:
            raise ValueError(value)
        return KATA_NAMED_RULES[key]
    if not isinstance(value, dict):
        raise ValueError(value)
    parts = dataclasses.asdict(KATA_NAMED_RULES["tromptaylor"])
    for key, v in value.items():
        name = "scoring" if key == "score" else key
        if name in KATA_CHOICES:
            if not isinstance(v, str) or v.upper() not in KATA_CHOICES[name]:
                raise ValueError(f"{key}: {v}")
            parts["white_handicap_bonus" if name == "whiteHandicapBonus" else name] = v.upper()
        elif name in ("suicide", "hasButton", "friendlyPassOk"):
            if not isinstance(v, bool):
                raise ValueError(f"{key}: {v}")
            if name != "friendlyPassOk":
                parts["button" if name == "hasButton" else "suicide"] = v
        elif (name == "komi" and isinstance(v, (int, float)) and not isinstance(v, bool)
              and math.isfinite(float(v))):
            parts["komi"] = float(v)
        else:
            raise ValueError(f"Unknown rules option: {key}")
    return KataRules(**parts)


def rules_from_kata(kata: KataRules, komi: float, handicap: bool) -> tuple[Rules, list[str]]:
    """The rules this engine plays for ``kata`` at ``komi``, and what differs from KataGo's
    (empty when nothing does): situational superko is played as positional superko, a tax
    under area scoring, the button and a white handicap bonus in a handicap game are not
    applied."""
    notes = []
    if kata.ko == "SITUATIONAL":
        notes.append("situational superko is played as positional superko")
    tax = kata.tax.lower()
    if kata.scoring == "AREA" and tax != "none":
        notes.append(f"tax {kata.tax} under area scoring is not applied")
        tax = "none"
    if kata.button:
        notes.append("the button is not applied")
    if handicap and kata.white_handicap_bonus != "0":
        notes.append(f"white handicap bonus {kata.white_handicap_bonus} is not applied "
                     "(add it to the komi)")
    ko = "simple" if kata.ko == "SIMPLE" else "positional"
    return Rules(ko, bool(kata.suicide), float(komi), kata.scoring.lower(), tax), notes
