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
    ("Tromp_Taylor", "tromp-taylor"), ("tt", "tromp-taylor"), ("Japanese", "japanese"),
    ("jp", "japanese"), ("korean", "korean"),
])
def test_preset_names(name, preset):
    assert preset_name(name) == preset
    assert Rules.preset(name).name == ("japanese" if preset == "korean" else preset)


@pytest.mark.parametrize("name", ["aga", "nz", "go-rules", ""])
def test_only_presets_make_rules(name):
    with pytest.raises(ValueError, match="unknown rules"):
        Rules.preset(name)


@pytest.mark.parametrize("name,preset", [
    ("Japanese", "japanese"), ("aga", "chinese"), ("korean", "korean"), ("chinese", "chinese"),
    ("new_zealand", "tromp-taylor"), ("New Zealand", "tromp-taylor"), ("NZ", "tromp-taylor"),
    ("Tromp-Taylor", "tromp-taylor"), ("tromptaylor", "tromp-taylor"),
    ("go-rules", None), ("ing", None), ("", None), (None, None),
])
def test_client_rules_names(name, preset):
    assert client_rules(name) == preset


def test_move_cap():
    assert move_cap(9) == 162 and move_cap(19) == 722


@pytest.mark.parametrize("rules", [Rules("simple", False, 7.5), Rules("positional", True, 0.5),
                                   Rules("simple", True, -3.0), Rules("positional", False, 6.0),
                                   Rules("simple", False, 6.5, "territory", "seki"),
                                   Rules("positional", True, 0.5, "territory", "none"),
                                   Rules("simple", False, 6.5, "territory", "all")])
def test_every_rules_name_reads_back(rules):
    assert Rules.from_name(rules.name, rules.komi) == rules


@pytest.mark.parametrize("name", ["simple", "positional-ko-suicide-x", "ko", "aga",
                                  "territory-tax-seki", "area-tax-seki-simple-ko"])
def test_unknown_rules_names_are_refused(name):
    with pytest.raises(ValueError):
        Rules.from_name(name)


def test_play_defaults_have_one_home():
    """Every play default is read from engine.play.settings, engine.rules or C, never repeated."""
    from engine.gtp import EngineConfig
    from engine.play.settings import DEFAULT_RESIGN, DEFAULT_VISITS, PlaySettings
    from engine.rules import DEFAULT_KOMI, DEFAULT_RULES
    from train.config import GATE_OPTIONS, SELFPLAY_SEARCH, RunConfig
    from train.gating import GateRule
    from train.match.inproc import DEFAULT_INPROC_VISITS
    from train.match.ladder import LadderConfig
    from train.match.cli import build_parser as match_parser, config_from_args
    from train.match.config import GameSettings, MatchConfig, inproc_play

    c, play, run = SearchParams(), PlaySettings(), RunConfig()
    assert run.play == dataclasses.replace(play, temperature_moves=None)       # None: N*N//8
    assert run.temperature_plies() == 81 // 8 and RunConfig(board_size=5).temperature_plies() == 3
    assert run.search == SELFPLAY_SEARCH == dataclasses.replace(c, noise_epsilon=0.25, temperature=1.0)   # C's but two
    assert run.gate_search_params() == run.search_params(temperature=0.5, noise_epsilon=0.0)
    assert run.gate == GateRule()
    assert not {f.name for f in dataclasses.fields(RunConfig)} & set(GATE_OPTIONS.values())   # GateRule's only
    match = MatchConfig((), 2, GameSettings(), "sgf", "r.json")
    assert DEFAULT_INPROC_VISITS == LadderConfig().play.visits == match.play.visits == DEFAULT_VISITS
    assert match.play == LadderConfig().play == inproc_play()
    assert match.play.resign == EngineConfig().play.resign == DEFAULT_RESIGN
    assert not {"visits", "resign"} & {f.name for f in dataclasses.fields(MatchConfig)}     # its PlaySettings'
    assert not {"visits", "resign"} & {f.name for f in dataclasses.fields(LadderConfig)}
    assert GameSettings().rules == run.rules == EngineConfig().rules == Rules.preset(DEFAULT_RULES, DEFAULT_KOMI)
    argv = ["--black", "a", "--white", "b", "--sgf-dir", "sgf"]
    args = match_parser().parse_args(argv)
    assert (args.komi, args.resign, args.rules, args.visits) == (DEFAULT_KOMI, DEFAULT_RESIGN, DEFAULT_RULES,
                                                                 DEFAULT_VISITS)
    assert config_from_args(args, match_parser()).play == match.play


def test_resignation_is_a_winrate_everywhere():
    """PlaySettings.resign is a winrate, as the engine's --resign; self-play calibrates a winrate
    and game records keep one.  Root values of older files and options become winrates through
    one conversion, and the calibration decides exactly as it did on root values."""
    import numpy as np

    from engine.core import winrate_of
    from engine.play import settings
    from engine.play.settings import PlaySettings, resign_winrate
    from train.config import RunConfig
    from train.gating import gate_settings
    from train.selfplay import ResignCalibrator, play_settings

    assert not hasattr(settings, "resign_value")                # nothing converts a winrate back
    assert PlaySettings().resign == 0.0 and resign_winrate(None) == 0.0 and resign_winrate(-1.0) == 0.0
    assert resign_winrate(-0.9) == winrate_of(-0.9) == (-0.9 + 1.0) / 2.0
    assert winrate_of(3.0) == 1.0 and winrate_of(-3.0) == 0.0   # clipped
    # The calibration's grid: winrates 0.005 apart up to the cap, the old root-value grid
    # (-0.99, -0.98, ... 0.01 apart) converted.  On every float16 root value a record can hold,
    # "below the winrate" is "below the old root value": the same thresholds, the same resignations.
    cal, run = ResignCalibrator(), RunConfig()
    assert (cal.fp_target, cal.min_games, cal.cap) == (run.resign_fp_target, run.resign_min_games, 0.25)
    old_grid = np.round(np.arange(-0.99, -0.5 + 1e-9, 0.01), 2)
    assert len(cal.grid) == len(old_grid) and cal.grid[0] == 0.005 and cal.grid[-1] == 0.25
    values = np.arange(-1.0, 1.0, 2.0 ** -11, dtype=np.float32).astype(np.float16)
    winrates = winrate_of(values)
    for t, w in zip(old_grid, cal.grid):
        assert abs(winrate_of(float(t)) - w) < 1e-12
        assert np.array_equal(values.astype(np.float32) < t, winrates < w), t
    assert ResignCalibrator(cap=0.3).grid[-1] == 0.3
    assert play_settings(RunConfig()).resign == 0.0             # until calibrated
    assert gate_settings(RunConfig()).resign == RunConfig().gate_play.resign == 0.05
    assert gate_settings(RunConfig.from_dict({"gate_resign_threshold": -1.0})).resign == 0.0  # an old config
    old = RunConfig.from_dict({"resign": False, "resign_cap": -0.6})                          # an old config
    assert not old.allow_resign and abs(old.resign_max_winrate - 0.2) < 1e-12


@pytest.mark.parametrize("winrate", [0.05, 0.02, 0.1, 0.15, 0.3, 0.01])
def test_a_match_resigns_where_it_did_when_the_pool_took_a_root_value(winrate):
    """The match hands the pool its winrate; before, the pool got 2w - 1 and compared against
    its (v + 1) / 2.  Root values are float32 (C's), so every decision is the same."""
    import numpy as np

    from engine.play.movepolicy import should_resign
    from train.match.cli import build_parser, config_from_args
    from train.match.report import settings_entry
    from train.match.schedule import match_play

    parser = build_parser()
    argv = ["--black", "a", "--white", "b", "--sgf-dir", "sgf", "--size", "9", "--seed", "1", "--visits", "32"]
    config = config_from_args(parser.parse_args([*argv, "--resign", str(winrate)]), parser)
    play = match_play(config)
    assert (play.visits, play.resign, play.max_moves, play.record_policy) == (32, winrate, 3 * 81, False)
    entry = settings_entry(config)                                   # the results file: a winrate, as before
    assert (entry["visits"], entry["resign"]) == (32, winrate) and list(entry)[-2:] == ["visits", "resign"]
    before = (2.0 * winrate - 1.0 + 1.0) / 2.0
    v = np.float32(2.0 * winrate - 1.0)
    values = [v]
    for direction in (-1.0, 1.0):
        x = v
        for _ in range(64):
            x = np.nextafter(x, np.float32(direction))
            values.append(x)
    for value in values:
        wr = (float(value) + 1.0) / 2.0
        for handicap, white in ((0, False), (2, True)):
            assert should_resign(wr, 60, 9, play.resign, 10, handicap, white) == \
                should_resign(wr, 60, 9, before, 10, handicap, white), float(value)


def test_the_sprt_defaults_have_one_home():
    """Gating's rule, train.match's --sprt-alpha/--sprt-beta and the test itself read one set."""
    from train.config import GateRule
    from train.match.cli import build_parser
    from train.match.stats import SPRT_ALPHA, SPRT_BETA, SPRT_ELO0, SPRT_ELO1, sprt

    rule = GateRule()
    assert (rule.elo0, rule.elo1, rule.alpha, rule.beta) == (SPRT_ELO0, SPRT_ELO1, SPRT_ALPHA, SPRT_BETA)
    args = build_parser().parse_args(["--black", "a", "--white", "b", "--sgf-dir", "x"])
    assert (args.sprt_alpha, args.sprt_beta) == (SPRT_ALPHA, SPRT_BETA)
    result = sprt(10, 5)
    assert (result.elo0, result.elo1, result.alpha, result.beta) == (SPRT_ELO0, SPRT_ELO1, SPRT_ALPHA, SPRT_BETA)


def test_default_visits_follow_the_board_size():
    """Without visits, playouts, time or a clock, a move searches about the same network work on
    every size (400 visits on 19x19, a power-of-two multiple on smaller boards), and the engine
    searches that many after boardsize, where its in-process match players keep 400."""
    import io

    from engine.gtp import EngineConfig, GTPEngine
    from engine.nets.evaluator import RandomEvaluator
    from engine.play.settings import DEFAULT_VISITS, default_visits
    from train.match.inproc import DEFAULT_INPROC_VISITS

    assert default_visits(19) == DEFAULT_VISITS == DEFAULT_INPROC_VISITS == 400
    assert [default_visits(n) for n in (17, 13, 11, 9, 7, 5, 2)] == [400, 800, 1600, 1600, 3200, 3200, 3200]
    eng = GTPEngine(lambda n: RandomEvaluator(seed=1), EngineConfig(size=19, seed=1, quiet=True),
                    stdout=io.StringIO(), stderr=io.StringIO())

    def searched() -> tuple:
        """(visits, seconds) of the search a move of Black would run (it is not run)."""
        seen: dict = {}
        eng.player.search = lambda game, **kw: seen.update(kw)
        try:
            eng.run_search(eng.game, *eng._limits(1))
        finally:
            del eng.player.search
        return seen["visits"], seen["seconds"]

    assert searched() == (400, None)
    eng.command("boardsize 9")
    assert searched() == (1600, None)
    eng.command("time_settings 0 5 1")                    # a clock: its time limits the move
    visits, seconds = searched()
    assert visits is None and 0 < seconds <= 5
