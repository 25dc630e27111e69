"""Run settings saved by the previous release still load, and their run directories resume.

``tests/data/runconfig-previous-release.json`` is a ``RunConfig.to_dict()`` written by the
release before the settings moved to one home (a 5x5 AlphaGo Zero run with most play settings
changed from their defaults).  It stays as it was written: the test is that today's code reads
it, keeps every value, and resumes a run directory that holds it.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from engine.core import SearchParams
from engine.play.settings import PlaySettings
from engine.play.settings_cli import add_field_arguments, field_options, fields_from
from engine.rules import Rules
from train.config import OLD_KEYS, GateRule, RunConfig
from train.gating import gate_settings
from train.loop import build_parser, prepare_run, resolve_config
from train.rundir import RunDir

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "runconfig-previous-release.json"


def previous() -> dict:
    return json.loads(FIXTURE.read_text())


def test_a_previous_release_config_loads_with_every_value():
    old = previous()
    cfg = RunConfig.from_dict(old).check()
    now = cfg.to_dict()
    changed = {k: (v, now.get(k)) for k, v in old.items() if k not in OLD_KEYS and now.get(k) != v}
    assert not changed, f"values of the saved config read differently: {changed}"
    renamed = {k: (v, now.get(OLD_KEYS[k][0])) for k, v in old.items()
               if k in OLD_KEYS and now.get(OLD_KEYS[k][0]) != OLD_KEYS[k][1](v)}
    assert not renamed, f"old keys read differently under their new names: {renamed}"
    assert RunConfig.from_dict(now) == cfg                       # and today's form round-trips
    assert (cfg.board_size, cfg.rules, cfg.play.visits) == (5, Rules.preset("tromp-taylor", 5.5), 16)
    assert cfg.search == SearchParams(c_puct=1.1, noise_epsilon=0.2, noise_alpha=10.83, temperature=1.0,
                                      forced_playouts_k=2.0, max_memory=64 << 20)
    assert cfg.gate_temperature == 0.5
    assert cfg.gate == GateRule(threshold=0.55, max_games=40, elo0=0.0, elo1=35.0, alpha=0.05, beta=0.05)
    assert cfg.resign_max_winrate == 0.25 and cfg.allow_resign            # saved as resign_cap -0.5, resign
    assert cfg.gate_play.resign == gate_settings(cfg).resign == (-0.8 + 1.0) / 2.0   # saved as a root value


def test_a_previous_release_run_directory_resumes(tmp_path):
    rd = RunDir(tmp_path / "run")
    prepare_run(rd, RunConfig.from_dict(previous()), resume=False)
    shutil.copyfile(FIXTURE, rd.config_path)                     # the config as that release wrote it
    argv = ["--run-dir", str(rd.root), "--resume", "--visits", "12"]
    args = build_parser().parse_args(argv)
    explicit = build_parser(suppress_defaults=True).parse_args(argv)
    cfg = resolve_config(args, explicit, rd)
    assert cfg.play.visits == 12                                      # given again: it overrides
    assert resumed(rd, "--gate-games", "12", "--gate-elo1", "20").gate == \
        GateRule(max_games=12, elo1=20.0)                             # the saved gate_games is 40
    assert cfg.to_dict() | {"visits": 16} == RunConfig.from_dict(previous()).to_dict()
    assert prepare_run(rd, cfg, resume=True) == cfg
    assert [n for n, _ in rd.list_models()] == [0] and rd.best_path.is_file()
    assert RunConfig.from_dict(rd.read_config()) == cfg           # saved back in today's form


def resumed(rd: RunDir, *options: str):
    argv = ["--run-dir", str(rd.root), "--resume", *options]
    return resolve_config(build_parser().parse_args(argv), build_parser(suppress_defaults=True).parse_args(argv), rd)


def test_komi_and_rules_given_apart_on_resume_make_one_rules_value(tmp_path):
    rd = RunDir(tmp_path / "run")
    prepare_run(rd, RunConfig.from_dict(previous()), resume=False)
    assert resumed(rd).rules == Rules.preset("tromp-taylor", 5.5)
    assert resumed(rd, "--komi", "6.5").rules == Rules.preset("tromp-taylor", 6.5)     # the saved preset stays
    assert resumed(rd, "--rules", "cn").rules == Rules.preset("chinese", 5.5)          # the saved komi stays
    saved = resumed(rd, "--komi", "-3").to_dict()
    assert (saved["komi"], saved["rules"]) == (-3.0, "tromp-taylor")                   # config.json's keys
    for bad in (["--rules", "japanese"], ["--komi", "nan"]):
        with pytest.raises(ValueError):
            resumed(rd, *bad)


def test_a_config_with_unknown_rules_or_a_bad_komi_does_not_load():
    for change in ({"rules": "martian"}, {"komi": 2000.0}):
        with pytest.raises(ValueError):
            RunConfig.from_dict(previous() | change)
    assert RunConfig.from_dict({}).rules == RunConfig().rules
    with pytest.raises(ValueError, match="--rules"):
        RunConfig(rules=Rules("simple", True)).check()                                 # not a preset


def test_play_settings_options_are_generated_from_the_fields_and_read_back():
    ap = argparse.ArgumentParser()
    options = {"visits": "visits", "root": "root", "cheap_visits": "cheap", "max_moves": "max_moves"}
    add_field_arguments(ap, PlaySettings(visits=7), options)
    assert fields_from(ap.parse_args([]), options, PlaySettings()) == PlaySettings(visits=7)
    ns = ap.parse_args(["--cheap", "3", "--root", "gumbel", "--max-moves", "30"])
    got = fields_from(ns, options, PlaySettings(temperature_moves=5))
    assert got == PlaySettings(visits=7, root="gumbel", cheap_visits=3, max_moves=30, temperature_moves=5)
    assert field_options(got, options) == {"visits": 7, "root": "gumbel", "cheap": 3, "max_moves": 30}
    with pytest.raises(SystemExit):
        ap.parse_args(["--root", "mcts"])                                                # the field's choices
    quiet = argparse.ArgumentParser()
    add_field_arguments(quiet, PlaySettings(), options, suppress_defaults=True)
    assert vars(quiet.parse_args(["--visits", "3"])) == {"visits": 3}


def test_the_run_search_options_keep_their_names_and_reach_self_play_and_gating():
    """--temperature, --noise-epsilon, --noise-alpha, --forced-playouts, --c-puct and --max-memory
    set the run's search (RunConfig.search, config.json keys as before); gating plays it with
    --gate-temperature, without noise or forced playouts."""
    argv = ["--run-dir", "r", "--temperature", "0.8", "--noise-epsilon", "0.3", "--noise-alpha", "5",
            "--forced-playouts", "2", "--c-puct", "1.5", "--max-memory", "256M", "--gate-temperature", "0.7",
            "--search-options", "staticScoreUtilityFactor=0.1"]
    cfg = resolve_config(build_parser().parse_args(argv), build_parser(suppress_defaults=True).parse_args(argv), None)
    assert cfg.search == SearchParams(temperature=0.8, noise_epsilon=0.3, noise_alpha=5.0, forced_playouts_k=2.0,
                                      c_puct=1.5, max_memory=256 << 20)
    saved = cfg.to_dict()
    assert {k: saved[k] for k in ("temperature", "noise_epsilon", "noise_alpha", "forced_playouts", "c_puct",
                                  "max_memory", "gate_temperature")} == \
        {"temperature": 0.8, "noise_epsilon": 0.3, "noise_alpha": 5.0, "forced_playouts": 2.0, "c_puct": 1.5,
         "max_memory": "256M", "gate_temperature": 0.7}
    assert RunConfig.from_dict(saved) == cfg
    own = cfg.search_params()
    assert (own.temperature, own.noise_epsilon, own.noise_alpha, own.forced_playouts_k, own.c_puct,
            own.max_memory, own.static_score_utility, own.lcb_z) == (0.8, 0.3, 5.0, 2.0, 1.5, 256 << 20, 0.1, 0.0)
    assert cfg.gate_search_params() == dataclasses.replace(own, temperature=0.7, noise_epsilon=0.0,
                                                           forced_playouts_k=0.0)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--run-dir", "r", "--max-memory", "lots"])    # a usage error
    for given in ("cpuctExploration=0.9", "c_puct=2,staticScoreUtilityFactor=0.1"):
        with pytest.raises(ValueError, match="--search-options: c_puct is set by --c-puct"):
            RunConfig(search_options=given).check()                 # one owner: never silently lost


def test_a_config_with_old_names_loads():
    """Renamed settings: an old config.json key or option reads as the new one (the new key wins
    if both are there)."""
    assert RunConfig.from_dict({"leaf_ramp": 8}).batch_ramp == 8
    assert RunConfig.from_dict({"leaf_ramp": 8, "batch_ramp": 4}).batch_ramp == 4
    assert RunConfig.from_dict({"gate_resign_threshold": -0.9}).gate_play.resign == (-0.9 + 1.0) / 2.0
    assert not {"leaf_ramp", "gate_resign_threshold", "resign", "resign_cap"} & set(RunConfig().to_dict())
    args = build_parser().parse_args(["--run-dir", "r", "--leaf-ramp", "3", "--gate-resign-threshold", "-1"])
    assert (args.batch_ramp, args.gate_resign) == (3, 0.0)
