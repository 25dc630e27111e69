"""Every setting has one owner: no two settings dataclasses define a field of the same name with
its own default.  A setting used in several places is shared by composition (a field holding
the owner's dataclass, e.g. ``RunConfig.train`` a :class:`train.config.TrainSettings`,
``RunConfig.play`` a :class:`engine.play.settings.PlaySettings`), never by a second field.

The names in :data:`NOT_YET_ONE_OWNER` are the duplicates still known; each says why it is
still there.  The list may only shrink: a name that no longer has two owners must leave it."""
from __future__ import annotations

import dataclasses
import importlib
from collections import defaultdict

import pytest

# Every settings dataclass: (module, class).
SETTINGS = (
    ("engine.searchcore", "SearchParams"),
    ("engine.play.settings", "PlaySettings"),
    ("engine.play.rootsearch", "GumbelSettings"),
    ("engine.nets.netconfig", "NetConfig"),
    ("engine.nets.gpu_settings", "GpuSettings"),
    ("engine.gtp.config", "EngineConfig"),
    ("engine.gtp.analysis", "AnalysisOptions"),
    ("engine.analysis.engine", "AnalysisConfig"),
    ("train.config", "TrainSettings"),
    ("train.config", "GateRule"),
    ("train.config", "RunConfig"),
    ("train.match.config", "GameSettings"),
    ("train.match.config", "MatchConfig"),
    ("train.match.ladder", "LadderConfig"),
    ("train.cluster.options", "RayOptions"),
)

# Names still defined with a default by more than one settings dataclass, and why.
NOT_YET_ONE_OWNER = {
    # Each program's own setting of the same name, with a meaning or default of its own.
    "seed": "each program's own random seed (engine, analysis engine, run, match, ladder)",
    "threads": "each program's own thread count",
    "seconds": "GpuSettings: seconds a measurement runs; EngineConfig: seconds per move",
    "size": "EngineConfig: the initial board; GameSettings: a match's board",
    "batch": "leaves per forward pass of the engine, the analysis engine, self-play and the GPU measurements",
    "parallel": "games at once in a match and in a ladder",
    "progress": "a match's and a ladder's progress lines",
    "referee": "a match's and a ladder's referee engine",
    "batch_ramp": "one name (--batch-ramp); the engine (8) and the analysis engine (8) ramp by default, "
                  "self-play and matches (0) do not",
}


def _composed(f: dataclasses.Field) -> bool:
    """A field that holds another dataclass (composition, not a second definition)."""
    if f.default_factory is not dataclasses.MISSING:
        return dataclasses.is_dataclass(f.default_factory())
    return dataclasses.is_dataclass(f.default)


def owners() -> dict[str, list[str]]:
    """Field name -> the settings dataclasses that define it with a default of their own."""
    out: dict[str, list[str]] = defaultdict(list)
    for module, name in SETTINGS:
        cls = getattr(importlib.import_module(module), name)
        for f in dataclasses.fields(cls):
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                continue                                   # no default: given by its user
            if not _composed(f):
                out[f.name].append(name)
    return out


def test_every_setting_is_defined_once():
    twice = {name: where for name, where in owners().items() if len(where) > 1 and name not in NOT_YET_ONE_OWNER}
    assert not twice, f"settings defined by more than one dataclass (compose the owner instead): {twice}"


@pytest.mark.parametrize("name", sorted(NOT_YET_ONE_OWNER))
def test_the_known_duplicates_are_still_duplicates(name):
    assert len(owners().get(name, ())) > 1, f"{name} has one owner now: take it off NOT_YET_ONE_OWNER"


def test_the_run_composes_its_training_and_gate_settings():
    from engine.core import SearchParams
    from engine.play.settings import PlaySettings
    from train.config import GATE_PLAY, SELFPLAY_SEARCH, GateRule, RunConfig, TrainSettings

    run = RunConfig()
    assert run.train == TrainSettings() and run.gate == GateRule() and run.gate_play == GATE_PLAY
    assert isinstance(run.gate_play, PlaySettings) and run.gate_play is not RunConfig().gate_play
    assert run.search == SELFPLAY_SEARCH and run.search is not RunConfig().search
    names = {f.name for f in dataclasses.fields(RunConfig)}
    for composed in (TrainSettings, GateRule, SearchParams):
        assert not names & {f.name for f in dataclasses.fields(composed)}, composed
