"""How a move is searched and played, with every play default defined once.

:data:`DEFAULT_VISITS` and :data:`DEFAULT_RESIGN` are the engine's (``python -m engine``, matches
and the ladder); :class:`PlaySettings` is how the game pool searches and chooses the moves of one
game, with self-play's defaults (``train.config.RunConfig`` reads them here).  How a player
searches (Dirichlet noise, move temperature, forced playouts, PUCT...) is its own
:class:`engine.core.SearchParams`; the game only says where the pool turns those off.  Komi and
rules travel as one :class:`engine.rules.Rules` value, whose defaults are :mod:`engine.rules`'s.

A command line gives a config's PlaySettings through :func:`add_play_arguments` (one option per
field, with the field's help and type, the command's defaults and wording) and reads it back
with :func:`play_settings_from`, which also reads a saved config's flat keys
(:func:`field_options` writes them).  These work for any dataclass whose fields carry their
help (made with :func:`described`) or are given it by the command (``helps``), and for fields
given and saved as text (``texts``: a memory size such as ``256M``):
:func:`add_field_arguments` and :func:`fields_from` are the general forms (a training run's
config, gate rule and search use them).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

from engine.rules import MOVE_CAP_PER_POINT, move_cap as default_move_cap

DEFAULT_VISITS = 400          # per move on 19x19 when neither visits, playouts nor time are set
DEFAULT_RESIGN = 0.05         # the engine's resignation winrate (python -m engine --resign, matches)
# Resignation is a winrate (0..1, 0: never) everywhere: the engine's --resign, matches, the ladder
# and PlaySettings.resign.  Self-play calibrates it as a root value (-1..1) and game records keep
# the threshold in force as one; resign_winrate and resign_value are the conversions.


def default_visits(size: int) -> int:
    """The engine's visits per move on a board of ``size`` when neither visits, playouts, time
    nor a clock limit it: :data:`DEFAULT_VISITS` on 19x19, and on a smaller board that times the
    power of two nearest 361 / size², at most 8 (a network call costs about its board's area,
    so a move costs about the same on every size): 800 on 13x13, 1600 on 9x9, 3200 on 7x7 and
    smaller.  Matches' in-process players and the ladder search :data:`DEFAULT_VISITS` on every
    size."""
    ratio = 361.0 / (size * size)
    return DEFAULT_VISITS * (1 << min(3, max(0, round(math.log2(ratio)))))


def resign_winrate(value: float | None) -> float:
    """The resignation winrate of a root value threshold (-1..1; -1 or None: never, 0.0)."""
    return 0.0 if value is None or value <= -1.0 else (value + 1.0) / 2.0


def resign_value(winrate: float) -> float | None:
    """The root value threshold (-1..1) of a resignation winrate (0: never, None)."""
    return None if winrate <= 0 else 2.0 * winrate - 1.0


def described(default: Any, help: str, **kw: Any) -> Any:
    """A dataclass field with its command-line ``help`` (and ``choices``, ``metavar``) in its
    metadata, as :func:`add_field_arguments` reads it."""
    return field(default=default, metadata={"help": help, **kw})


@dataclass
class PlaySettings:
    """How moves are searched and chosen in one game of the game pool (self-play, gating,
    matches, the ladder): the defaults are self-play's (a training run's ``RunConfig`` takes
    them from here).  Each player searches with its own :class:`engine.core.SearchParams`
    (Dirichlet noise, move temperature, forced playouts); the pool turns its noise and forced
    playouts off in cheap searches and under the Gumbel root, and its temperature off after
    ``temperature_moves``.  Each field's ``help`` is its command-line help
    (:func:`add_play_arguments`)."""

    visits: int = described(100, "root visits of a full search (reused subtree included)")
    cheap_visits: int = described(0, "playout cap randomisation (KataGo): visits of the cheap searches that most "
                                 "moves get; they are played, not trained on (0: off)")
    full_search_prob: float = described(0.25, "with --cheap-visits: share of moves given a full search")
    temperature_moves: int = described(0, "the first this many moves (plies) sample visits^(1/T) at the player's "
                                      "temperature T; later moves take the most visited")
    resign: float = described(0.0, "resign when the winrate falls below this (0: never)", metavar="WINRATE")
    max_moves: int | None = described(None, "move cap, scored as if passed out "
                                        f"(default {MOVE_CAP_PER_POINT}*N*N)")
    record_policy: bool = described(True, "keep visit distributions of full searches")
    root: str = described("puct", "root search of self-play: puct (visit counts as the policy target, Dirichlet "
                              "noise, temperature) or gumbel (Gumbel-top-k sampling and sequential halving, "
                              "target softmax(logits + sigma(completed Q)); --visits is then the "
                              "simulations of a move, and noise, temperature and forced playouts are not used)",
                      choices=("puct", "gumbel"))      # engine.play.rootsearch
    gumbel_considered: int = described(16, "--root gumbel: moves sampled at the root (m)")

    def move_cap(self, size: int) -> int:
        return self.max_moves if self.max_moves is not None else default_move_cap(size)


def _option_type(f: dataclasses.Field) -> type:
    t = str(f.type)
    return int if t.startswith("int") else float if t.startswith("float") else str


class TextForm(NamedTuple):
    """A field given on the command line and saved as text (a memory size: ``256M``):
    ``parse`` reads the text (ValueError if it is bad), ``format`` writes the value."""

    parse: Callable[[str], Any]
    format: Callable[[Any], str]


def _text_option(form: TextForm) -> Callable[[str], str]:
    """An argparse ``type`` that keeps the text and makes bad text a usage error."""
    def check(text: str) -> str:
        try:
            form.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text
    return check


def add_field_arguments(group: Any, defaults: Any, options: Mapping[str, str], suppress_defaults: bool = False,
                        helps: Mapping[str, str] | None = None, texts: Mapping[str, TextForm] | None = None) -> None:
    """Adds one ``--OPTION`` per field of the dataclass instance ``defaults`` named in
    ``options`` (field -> option name with underscores, e.g. ``{"forced_playouts_k":
    "forced_playouts"}``; the option's dest), in the dataclass's order, with the field's
    ``help``, ``choices`` and ``metavar`` metadata, its type and ``defaults``' value as the
    default.  ``helps`` (field -> text) words a field's help for one command; a field in
    ``texts`` is given as text in its :class:`TextForm` (its value then stays text in the
    namespace, as saved).  With ``suppress_defaults`` an option not given stays absent from
    the namespace."""
    for f in dataclasses.fields(defaults):
        if f.name not in options:
            continue
        dest, value = options[f.name], getattr(defaults, f.name)
        form = (texts or {}).get(f.name)
        if form is not None:
            value = form.format(value)
        shown = f" (default: {value})" if value not in (None, "") else ""
        text = (helps or {}).get(f.name) or f.metadata["help"]
        group.add_argument("--" + dest.replace("_", "-"), dest=dest,
                           type=_option_type(f) if form is None else _text_option(form),
                           default=argparse.SUPPRESS if suppress_defaults else value,
                           choices=f.metadata.get("choices"), metavar=f.metadata.get("metavar"), help=text + shown)


def fields_from(values: Mapping[str, Any] | argparse.Namespace, options: Mapping[str, str], base: Any,
                texts: Mapping[str, TextForm] | None = None) -> Any:
    """The dataclass instance ``base`` with the fields named in ``options`` (as in
    :func:`add_field_arguments`) taken from ``values`` (parsed options or a saved dict, keyed by
    option name) where it has them, those in ``texts`` parsed from their text; ValueError
    naming the option for bad text."""
    if isinstance(values, argparse.Namespace):
        values = vars(values)
    changes = {name: values[key] for name, key in options.items() if key in values}
    for name, form in (texts or {}).items():
        if name in changes:
            try:
                changes[name] = form.parse(changes[name])
            except ValueError as exc:
                raise ValueError(f"--{options[name].replace('_', '-')}: {exc}") from None
    return dataclasses.replace(base, **changes)


def field_options(obj: Any, options: Mapping[str, str], texts: Mapping[str, TextForm] | None = None) -> dict[str, Any]:
    """The fields named in ``options`` keyed by option name, those in ``texts`` as text:
    :func:`fields_from`'s inverse."""
    forms = texts or {}
    return {key: forms[name].format(getattr(obj, name)) if name in forms else getattr(obj, name)
            for name, key in options.items()}


def add_play_arguments(group: Any, options: Mapping[str, str], defaults: PlaySettings | None = None,
                       suppress_defaults: bool = False, helps: Mapping[str, str] | None = None) -> None:
    """:func:`add_field_arguments` for :class:`PlaySettings`: a command's options for the
    fields named in ``options``, with ``defaults`` (default: PlaySettings()) as its defaults
    and ``helps`` as its wording where it has one."""
    add_field_arguments(group, defaults or PlaySettings(), options, suppress_defaults, helps)


def play_settings_from(values: Mapping[str, Any] | argparse.Namespace, options: Mapping[str, str],
                       base: PlaySettings | None = None) -> PlaySettings:
    """:func:`fields_from` for :class:`PlaySettings` (default ``base``: PlaySettings())."""
    return fields_from(values, options, base or PlaySettings())

