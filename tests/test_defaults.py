"""Every default has one home: the search's in C, the rules' names and game defaults in
engine.rules."""
from __future__ import annotations

import dataclasses

import pytest

from engine._core import ffi, lib
from engine.core import Rules, SearchParams
from engine.rules import client_rules, move_cap, preset_name


def test_search_params_are_cs_defaults():
    p = ffi.new("search_params_t *")
    lib.search_default_params(p)
    names = [name for name, _ in ffi.typeof("search_params_t").fields]
    params = SearchParams()
    assert [f.name for f in dataclasses.fields(SearchParams)] == names
    for name in names:
        assert getattr(params, name) == pytest.approx(getattr(p, name), rel=1e-7), name
    assert params.c_puct == 1.1 and params.max_memory == 2 << 30   # shortest float32 decimals


@pytest.mark.parametrize("name,preset", [
    ("chinese", "chinese"), ("CN", "chinese"), ("tromp-taylor", "tromp-taylor"),
    ("Tromp_Taylor", "tromp-taylor"), ("tt", "tromp-taylor"),
])
def test_preset_names(name, preset):
    assert preset_name(name) == preset
    assert Rules.preset(name).name == preset


@pytest.mark.parametrize("name", ["japanese", "aga", "nz", "go-rules", ""])
def test_only_presets_make_rules(name):
    with pytest.raises(ValueError, match="unknown rules"):
        Rules.preset(name)


@pytest.mark.parametrize("name,preset", [
    ("Japanese", "chinese"), ("aga", "chinese"), ("korean", "chinese"), ("chinese", "chinese"),
    ("new_zealand", "tromp-taylor"), ("New Zealand", "tromp-taylor"), ("NZ", "tromp-taylor"),
    ("Tromp-Taylor", "tromp-taylor"), ("tromptaylor", "tromp-taylor"),
    ("go-rules", None), ("ing", None), ("", None), (None, None),
])
def test_client_rules_names(name, preset):
    assert client_rules(name) == preset


def test_move_cap():
    assert move_cap(9) == 162 and move_cap(19) == 722


@pytest.mark.parametrize("rules", [Rules("simple", False, 7.5), Rules("positional", True, 0.5),
                                   Rules("simple", True, -3.0), Rules("positional", False, 6.0)])
def test_every_rules_name_reads_back(rules):
    assert Rules.from_name(rules.name, rules.komi) == rules


@pytest.mark.parametrize("name", ["simple", "positional-ko-suicide-x", "ko", "japanese"])
def test_unknown_rules_names_are_refused(name):
    with pytest.raises(ValueError):
        Rules.from_name(name)


def test_play_defaults_have_one_home():
    """Every play default is read from engine.play.settings, engine.rules or C, never repeated."""
    from engine.gtp import EngineConfig
    from engine.play.settings import DEFAULT_RESIGN, DEFAULT_VISITS, PlaySettings
    from engine.rules import DEFAULT_KOMI, DEFAULT_RULES
    from train.config import RunConfig
    from train.gating import GateRule
    from train.match.inproc import DEFAULT_INPROC_VISITS
    from train.match.ladder import LadderConfig
    from train.match.cli import build_parser as match_parser
    from train.match.config import GameSettings, MatchConfig

    c, play, run = SearchParams(), PlaySettings(), RunConfig()
    assert (play.noise_alpha, play.forced_playouts_k) == (c.noise_alpha, c.forced_playouts_k)
    assert (run.play, run.c_puct) == (play, c.c_puct)
    assert GateRule() == GateRule.from_config(run)
    assert DEFAULT_INPROC_VISITS == LadderConfig().visits == DEFAULT_VISITS
    assert MatchConfig.resign == EngineConfig().resign == DEFAULT_RESIGN
    assert GameSettings().rules == run.rules == EngineConfig().rules == Rules.preset(DEFAULT_RULES, DEFAULT_KOMI)
    args = match_parser().parse_args(["--black", "a", "--white", "b", "--sgf-dir", "sgf"])
    assert (args.komi, args.resign, args.rules, args.visits) == (DEFAULT_KOMI, DEFAULT_RESIGN, DEFAULT_RULES,
                                                                 DEFAULT_VISITS)
