"""Command lines built from settings dataclasses: one ``--option`` per field that carries its help.

A field made with :func:`described` holds its command-line help (with its unit: seconds,
visits, bytes, a winrate 0..1, games) in its metadata, and where the option needs them:

=============== ===============================================================================
``option``      the option's name with underscores (its dest and a saved config's key), when it
                is not the field's name (``seconds`` -> ``--time``)
``type``        the argparse type (a parser that validates, e.g. :func:`positive_int`), when it is
                not the int, float or str of the field's annotation
``choices``     ``metavar``, ``nargs``, ``required``: as argparse's
``cli_default`` the command line's default where it is not the dataclass's: None where the
                program decides at start (a random seed, the net's board size)
``flag``        a bool field's option: ``"switch"`` (``--x`` sets it), ``"negated"`` (``--no-x``
                clears it), else ``--x/--no-x``
``group``       the title of the argument group that lists it
=============== ===============================================================================

A help that words its own default (it says "default") gets none appended; any other gets
``(default: VALUE)`` unless the value is None or empty.

A field holding another dataclass composes it: the composed fields are options of the same
command line.  With ``{"options": {field: option}}`` in its metadata only those fields are, by
those names (a run's ``PlaySettings``, whose fields are worded for self-play: ``helps`` words
them for this command and ``kw`` gives a field's other argparse keywords, its ``group``
included); with ``{"compose": True}`` every described field of the composed dataclass is, as
its own metadata says; with neither, none is (e.g. the engine's ``SearchParams``).  A :class:`engine.rules.Rules` field is two options, ``--komi`` (``komi_help``,
``komi_default``: None for the preset's own, ``komi_metavar``) and, where the field has a
``help``, ``--rules`` (a preset).

:func:`add_dataclass_arguments` adds a dataclass's options to a parser, :func:`dataclass_from_args`
builds it back from the parsed options; :func:`add_field_arguments`, :func:`fields_from` and
:func:`field_options` are their forms for a mapped subset of fields (a saved config's keys).
"""
from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import field
from typing import Any, Callable, Collection, Mapping, NamedTuple

from engine.rules import PRESETS, Rules

_MISSING = dataclasses.MISSING


def described(default: Any = _MISSING, help: str = "", *, default_factory: Any = _MISSING, **kw: Any) -> Any:
    """A dataclass field with its command-line ``help`` and the other keys of this module's
    docstring (``option``, ``type``, ``choices``, ``metavar``, ``cli_default``, ``flag``,
    ``group``...) in its metadata; without ``default`` or ``default_factory`` it has none."""
    return field(default=default, default_factory=default_factory, metadata={"help": help, **kw})


# -- argument types: parse and check one option's text --------------------------------------------

def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def nonneg_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def nonneg_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a finite number >= 0")
    return value


def positive_float(text: str) -> float:
    value = nonneg_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def winrate(text: str) -> float:
    """A resignation winrate: 0 (never) up to below 1."""
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("must be a winrate from 0 (never resign) to below 1")
    return value


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


# -- one field, one option ------------------------------------------------------------------------

def _option_type(f: dataclasses.Field) -> Any:
    t = str(f.type)
    t = t[len("tuple["):] if t.startswith("tuple[") else t
    return int if t.startswith("int") else float if t.startswith("float") else str


def _add_option(group: Any, f: dataclasses.Field, dest: str, value: Any, suppress: bool,
                help: str | None = None, **kw: Any) -> None:
    """``--DEST`` for the field ``f`` with the default ``value``; ``kw`` over its metadata."""
    meta = {**f.metadata, **kw}
    text = help if help is not None else meta["help"]
    flag = "--" + dest.replace("_", "-")
    if "default" not in text and value not in (None, "") and not isinstance(value, bool):
        text += f" (default: {' '.join(map(str, value)) if isinstance(value, tuple) else value})"
    default = argparse.SUPPRESS if suppress else list(value) if isinstance(value, tuple) else value
    if str(f.type) == "bool":
        kind = meta.get("flag")
        if kind == "negated":
            group.add_argument("--no-" + dest.replace("_", "-"), dest=dest, action="store_false",
                               default=default, help=text)
        elif kind == "switch":
            group.add_argument(flag, dest=dest, default=default, help=text, action="store_true")
        else:
            shown = "" if "default" in text or not isinstance(value, bool) else f" (default: {'on' if value else 'off'})"
            group.add_argument(flag, dest=dest, default=default, help=text + shown,
                               action=argparse.BooleanOptionalAction)
        return
    extra = {k: meta[k] for k in ("nargs", "required") if k in meta}
    if extra.get("required"):
        default = None
    group.add_argument(flag, dest=dest, type=meta.get("type") or _option_type(f), default=default,
                       choices=meta.get("choices"), metavar=meta.get("metavar"), help=text, **extra)


def add_field_arguments(group: Any, defaults: Any, options: Mapping[str, str], suppress_defaults: bool = False,
                        helps: Mapping[str, str] | None = None, kw: Mapping[str, Mapping[str, Any]] | None = None,
                        groups: Any = None, texts: Mapping[str, TextForm] | None = None) -> None:
    """Adds one ``--OPTION`` per field of the dataclass instance ``defaults`` named in
    ``options`` (field -> option name with underscores, e.g. ``{"forced_playouts_k":
    "forced_playouts"}``; the option's dest), in the dataclass's order, with the field's
    metadata, its type and ``defaults``' value as the default.  ``helps`` (field -> text) words
    a field's help for one command, ``kw`` (field -> argparse keywords) changes its other
    keywords.  With ``suppress_defaults`` an option not given stays absent from the namespace.
    ``groups`` (:class:`_Groups`) places a field whose ``kw`` names a ``group``.  A field in
    ``texts`` is given as text in its :class:`TextForm` (its value then stays text in the
    namespace, as saved)."""
    for f in dataclasses.fields(defaults):
        if f.name not in options:
            continue
        extra = dict((kw or {}).get(f.name, {}))
        where = groups.get(extra.pop("group")) if groups is not None and "group" in extra else group
        value, form = getattr(defaults, f.name), (texts or {}).get(f.name)
        if form is not None:
            value, extra["type"] = form.format(value), _text_option(form)
        _add_option(where, f, options[f.name], value, suppress_defaults, (helps or {}).get(f.name), **extra)


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


# -- a whole dataclass ---------------------------------------------------------------------------

class _Groups:
    """Argument groups by title: those given, else a new one on ``parser``."""

    def __init__(self, parser: Any, given: Mapping[str, Any] | None):
        self.parser, self.groups = parser, dict(given or {})

    def get(self, title: str | None) -> Any:
        if title is None:
            return self.parser
        if title not in self.groups:
            self.groups[title] = self.parser.add_argument_group(title)
        return self.groups[title]


def _default(config: Any, f: dataclasses.Field) -> Any:
    """``config``'s value of ``f`` (an instance's, else the class's default; _MISSING: none)."""
    if not isinstance(config, type):
        return getattr(config, f.name)
    if f.default_factory is not _MISSING:
        return f.default_factory()
    return f.default


def _composed_type(config: Any, f: dataclasses.Field) -> type | None:
    """The dataclass that ``f`` composes (None: a plain field)."""
    value = _default(config, f)
    if value is _MISSING:
        t = typing.get_type_hints(config if isinstance(config, type) else type(config)).get(f.name)
        return t if dataclasses.is_dataclass(t) and t is not Rules else None
    return type(value) if dataclasses.is_dataclass(value) and not isinstance(value, Rules) else None


def _is_rules(config: Any, f: dataclasses.Field) -> bool:
    return isinstance(_default(config, f), Rules) or f.type in (Rules, "Rules")


def _option(f: dataclasses.Field) -> str:
    return f.metadata.get("option", f.name)


def add_dataclass_arguments(parser: Any, config: Any, groups: Mapping[str, Any] | None = None,
                            exclude: Collection[str] = (), suppress_defaults: bool = False,
                            sections: Mapping[str, str] | None = None) -> None:
    """Adds the options of the dataclass ``config`` (a class, or an instance whose values are the
    defaults) to ``parser``: one per described field, composed dataclasses' included (this
    module's docstring), in field order, each in the group its metadata names (``groups``:
    title -> an argument group already made; others are made on ``parser``).  Fields named in
    ``exclude`` are left out (options another config on the same command line already gives).
    ``sections`` (field -> group title) opens a group at a field for it and the fields after it
    that name no group of their own (a long config's sections in ``--help``)."""
    where = groups if isinstance(groups, _Groups) else _Groups(parser, groups)
    section = None
    for f in dataclasses.fields(config):
        section = (sections or {}).get(f.name, section)
        if f.name in exclude:
            continue
        meta, value = f.metadata, _default(config, f)
        group = where.get(meta.get("group", section))
        if _is_rules(config, f):
            if "komi_help" not in meta:
                continue
            rules = value if value is not _MISSING else Rules.default()
            komi = meta.get("komi_default", rules.komi)
            shown = "" if komi is None else f" (default {komi:g})"
            group.add_argument("--komi", dest="komi", type=float, default=argparse.SUPPRESS if suppress_defaults else komi,
                               metavar=meta.get("komi_metavar"), help=meta["komi_help"] + shown)
            if meta.get("help"):
                group.add_argument("--rules", dest="rules", choices=meta.get("choices", PRESETS),
                                   default=argparse.SUPPRESS if suppress_defaults else rules.name,
                                   help=meta["help"] + f" (default {rules.name})")
            continue
        inner = _composed_type(config, f)
        if inner is not None:
            inner_value = value if value is not _MISSING else inner()
            if "options" in meta:
                add_field_arguments(group, inner_value, meta["options"], suppress_defaults, meta.get("helps"),
                                    meta.get("kw"), where, meta.get("texts"))
            elif meta.get("compose"):
                add_dataclass_arguments(parser, inner_value, where, (), suppress_defaults)
            continue
        if "help" not in meta:
            continue                                  # not an option of the command line
        value = meta.get("cli_default", value)
        _add_option(group, f, _option(f), None if value is _MISSING else value, suppress_defaults)


def dataclass_from_args(values: Mapping[str, Any] | argparse.Namespace, config: Any, **given: Any) -> Any:
    """The dataclass ``config`` (a class, or an instance whose values stand where ``values``
    has none) built from parsed options or a saved dict keyed as :func:`add_dataclass_arguments`
    names them, composed dataclasses and rules included; ``given`` fields are taken as they are
    (what the program works out from the options).  ValueError for unknown rules or a bad komi."""
    if isinstance(values, argparse.Namespace):
        values = vars(values)
    cls = config if isinstance(config, type) else type(config)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name in given:
            continue
        meta, value = f.metadata, _default(config, f)
        if _is_rules(config, f):
            rules = value if value is not _MISSING else Rules.default()
            if "rules" in values and meta.get("help"):
                out[f.name] = Rules.preset(values["rules"], values.get("komi", rules.komi))
            elif values.get("komi") is not None and "komi_help" in meta:
                out[f.name] = rules.with_komi(values["komi"])
            continue
        inner = _composed_type(config, f)
        if inner is not None:
            base = value if value is not _MISSING else inner()
            if "options" in meta:
                out[f.name] = fields_from(values, meta["options"], base, meta.get("texts"))
            elif meta.get("compose"):
                out[f.name] = dataclass_from_args(values, base)
        elif "help" in meta and _option(f) in values:
            got = values[_option(f)]
            out[f.name] = tuple(got) if isinstance(got, list) else got
    if not isinstance(config, type):
        return dataclasses.replace(config, **out, **given)
    return cls(**out, **given)
