"""Our own nets as match engines, evaluated in this process: the ``inproc:PATH[:OPTIONS]`` engine
spec of ``python -m train.match`` and the networks behind it, each loaded once and shared by every
game of the match (in a :class:`train.games.pool.GamePool`, one forward pass per net per step).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.nets import weights

from engine.play import searchopts
from engine.core import SearchParams
from engine.nets.evaluator import UniformEvaluator
from engine.nets.loading import check_board_size, load_evaluator
from engine.play.memory import parse_memory
from engine.play.settings import DEFAULT_VISITS

#: Engine specs starting with this are our engine in this process, not a GTP command.
INPROC_PREFIX = "inproc:"
#: Options of an in-process spec (``inproc:PATH:visits=400,device=cpu,name=NAME,max_memory=512M``),
#: besides the search options of :mod:`engine.play.searchopts` (``static_score_utility=0.1`` or
#: KataGo's ``staticScoreUtilityFactor=0.1``...).
INPROC_OPTIONS = ("visits", "device", "name", "max_memory")
#: The weights "file" of an in-process player that searches with the uniform evaluator (a flat
#: policy, value 0: with ``rollout_weight=1`` a pure Monte Carlo search on its playouts), as
#: ``python -m engine --weights uniform``: ``inproc:uniform:visits=64,rollout_weight=1``.
UNIFORM = "uniform"
#: Root visits per move of in-process players when neither the spec nor ``--visits`` says.
DEFAULT_INPROC_VISITS = DEFAULT_VISITS  # every size, as ``python -m engine`` on 19x19: ratings stay comparable


@dataclass(frozen=True)
class InProcessSpec:
    """Our engine played in this process: the part of an engine spec after ``inproc:``.

    ``weights`` is one of our ``.pt`` files, a Leela Zero ``.gz``/``.txt``
    net (19x19 only) or :data:`UNIFORM` (no net: the uniform evaluator);
    ``visits`` the root visits per move, counting those kept from the previous
    move's tree (None: the match's ``--visits``); ``device`` the torch device
    (None: CUDA when available); ``name`` the display name
    (None: the file name without its extension, so a run's checkpoint plays
    under its model id, e.g. ``model-0000200``, as in gating SGFs);
    ``max_memory`` the search tree's memory cap in bytes (None: the engine's);
    ``search`` the search options (SearchParams field, value) given in the spec: they override
    the defaults of the net's kind, as in ``python -m engine``
    (:func:`engine.play.searchopts.net_defaults`).
    """

    weights: str
    visits: int | None = None
    device: str | None = None
    name: str | None = None
    max_memory: int | None = None
    search: tuple[tuple[str, float], ...] = ()

    def search_params(self, feature_set: str | None = None, size: int | None = None) -> SearchParams:
        """The player's search parameters: the defaults of a net with ``feature_set`` (its
        evaluator's; None: C's defaults) on a board of ``size``, with ``max_memory`` and ``search``.
        The uniform evaluator starts from C's defaults, as in ``python -m engine --weights uniform``."""
        if self.weights == UNIFORM:
            feature_set = None
        params = SearchParams(max_memory=self.max_memory) if self.max_memory else SearchParams()
        return searchopts.with_options(params, {**searchopts.net_defaults(feature_set, size), **dict(self.search)})

    @property
    def display_name(self) -> str:
        if self.name:
            return self.name
        base = Path(self.weights).name
        for suffix in (".pt", ".gz", ".txt"):
            if base.endswith(suffix) and len(base) > len(suffix):
                base = base[: -len(suffix)]
        return base


def parse_inproc(command: str) -> InProcessSpec | None:
    """The in-process spec of an engine command, or None for a GTP command line.

    Syntax: ``inproc:PATH`` optionally followed by ``:KEY=VALUE`` options
    (several separated by ``,`` or ``:``), KEY one of ``INPROC_OPTIONS``:
    ``inproc:runs/9x9/models/model-0001000.pt:visits=200,device=cpu``.
    Raises ValueError for an empty path, an unknown or repeated option, or a
    bad value.
    """
    text = command.strip()
    if not text.startswith(INPROC_PREFIX):
        return None
    parts = text[len(INPROC_PREFIX):].split(":")
    options: dict[str, str] = {}
    while len(parts) > 1 and "=" in parts[-1]:
        for item in parts.pop().split(","):
            key, sep, value = (x.strip() for x in item.partition("="))
            if sep and searchopts.is_option(key):
                key = searchopts.option_field(key)
            if not sep or (key not in INPROC_OPTIONS and key not in searchopts.OPTIONS):
                raise ValueError(
                    f"{command!r}: unknown in-process option {item!r} "
                    f"(known: {', '.join(INPROC_OPTIONS)})")
            if key in options:
                raise ValueError(f"{command!r}: option {key} given twice")
            options[key] = value
    weights = ":".join(parts).strip()
    if not weights:
        raise ValueError(f"{command!r}: no weights file after {INPROC_PREFIX!r}")
    visits = None
    if "visits" in options:
        try:
            visits = int(options["visits"])
        except ValueError:
            visits = 0
        if visits < 1:
            raise ValueError(f"{command!r}: visits must be an integer >= 1")
    max_memory = None
    if "max_memory" in options:
        try:
            max_memory = parse_memory(options["max_memory"])
        except ValueError as exc:
            raise ValueError(f"{command!r}: max_memory: {exc}") from None
    try:
        search = tuple(searchopts.option_value(k, v) for k, v in options.items()
                       if k in searchopts.OPTIONS)
    except ValueError as exc:
        raise ValueError(f"{command!r}: {exc}") from None
    return InProcessSpec(weights, visits, options.get("device") or None,
                         options.get("name") or None, max_memory, search)


class InProcessNets:
    """The networks of a match's in-process players, each loaded once.

    ``evaluator(spec)`` returns one ``TorchEvaluator`` per (weights, device),
    shared by every pool agent that uses it: one evaluation cache, and both
    colours of a self-match share its forward passes. ``seed`` seeds the random
    board symmetries.
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._evaluators: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    @staticmethod
    def check(spec: InProcessSpec, size: int) -> dict[str, Any]:
        """Load ``spec``'s weights; return their metadata. Raises ValueError
        (``engine.nets.weights.WeightsError``) for an unreadable file or a board size
        the net cannot play (Leela Zero nets: 19x19 only); no metadata for :data:`UNIFORM`."""
        if spec.weights == UNIFORM:
            return {}
        _, meta = weights.load_any(spec.weights)
        check_board_size(spec.weights, meta, size)
        return meta

    def evaluator(self, spec: InProcessSpec) -> Any:
        key = (spec.weights if spec.weights == UNIFORM else str(Path(spec.weights).resolve()), spec.device)
        with self._lock:
            if key not in self._evaluators and spec.weights == UNIFORM:
                self._evaluators[key] = UniformEvaluator()
            elif key not in self._evaluators:
                self._evaluators[key] = load_evaluator(
                    spec.weights, spec.device, precision=None, symmetries="random",
                    seed=self.seed * 1_000_003 + len(self._evaluators))
            return self._evaluators[key]
