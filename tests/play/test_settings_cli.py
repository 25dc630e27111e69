"""Every command-line config is built from its dataclass by engine.play.settings_cli: each
described field (composed ones included) is an option with the field's help, the parsed
defaults are the dataclass's defaults, and reading the options back gives the dataclass."""
from __future__ import annotations

import argparse
import dataclasses
import typing
from pathlib import Path

import pytest

from engine.play.settings import PlaySettings
from engine.play.settings_cli import add_dataclass_arguments, dataclass_from_args, described
from engine.rules import Rules

_MISSING = dataclasses.MISSING


def described_options(config) -> list[tuple[str, str, object]]:
    """(option dest, help, command-line default) of every option ``config``'s fields give."""
    out = []
    for f in dataclasses.fields(config):
        meta = f.metadata
        value = getattr(config, f.name) if not isinstance(config, type) else (
            f.default_factory() if f.default_factory is not _MISSING else f.default)
        if isinstance(value, Rules) or f.type == "Rules":
            if "komi_help" in meta:
                rules = value if isinstance(value, Rules) else Rules.default()
                out.append(("komi", meta["komi_help"], meta.get("komi_default", rules.komi)))
                if meta.get("help"):
                    out.append(("rules", meta["help"], rules.name))
        elif "options" in meta:
            for name, dest in meta["options"].items():
                help = meta.get("helps", {}).get(name) or next(g.metadata["help"] for g in dataclasses.fields(value)
                                                               if g.name == name)
                form = meta.get("texts", {}).get(name)
                out.append((dest, help, getattr(value, name) if form is None else form.format(getattr(value, name))))
        elif meta.get("compose"):
            cls = config if isinstance(config, type) else type(config)
            inner = value if value is not _MISSING else typing.get_type_hints(cls)[f.name]()
            out += described_options(inner)
        elif "help" in meta:
            default = meta.get("cli_default", value)
            out.append((meta.get("option", f.name), meta["help"], None if default is _MISSING else default))
    return out


def _engine():
    from engine.gtp import EngineConfig
    from engine.options import build_parser
    return build_parser(), EngineConfig, [], ()


def _analysis():
    from engine.analysis.engine import ENGINE_OPTIONS, AnalysisConfig, build_parser
    return build_parser(), AnalysisConfig, [], ENGINE_OPTIONS


def _match():
    from train.match.cli import build_parser
    from train.match.config import MatchConfig
    return build_parser(), MatchConfig, ["--black", "a", "--white", "b", "--sgf-dir", "sgf"], ()


def _ladder():
    from train.match.ladder import LadderConfig, build_parser, default_pachi
    return build_parser(), LadderConfig(pachi=default_pachi()), ["runs/x"], ()


def _ray():
    from train.cluster.options import RayOptions, add_ray_arguments
    parser = argparse.ArgumentParser()
    add_ray_arguments(parser)
    return parser, RayOptions, [], ()


def _run():
    from train.config import RunConfig
    from train.loop import build_parser
    return build_parser(), RunConfig, ["--run-dir", "r"], ()


CONFIGS = {"engine": _engine, "analysis": _analysis, "match": _match, "ladder": _ladder, "ray": _ray, "run": _run}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_described_field_is_an_option_with_its_help_and_default(name):
    parser, config, argv, exclude = CONFIGS[name]()
    actions: dict = {}
    for a in parser._actions:
        actions.setdefault(a.dest, a)          # the option itself, not an older name of it
    parsed = vars(parser.parse_args(argv))
    options = [o for o in described_options(config) if o[0] not in exclude]
    assert len(options) >= 3
    for dest, help, default in options:
        assert dest in actions, f"{name}: {dest} is not an option"
        assert actions[dest].help.startswith(help), (dest, actions[dest].help, help)
        if not actions[dest].required:
            got = parsed[dest]
            assert (tuple(got) if isinstance(got, list) else got) == default, dest


def test_a_runs_options_read_back_into_its_config():
    from train.config import RunConfig, from_namespace
    from train.loop import build_parser

    parser = build_parser()
    assert from_namespace(parser.parse_args(["--run-dir", "r"])) == RunConfig()
    cfg = from_namespace(parser.parse_args(["--run-dir", "r", "--max-memory", "64M", "--no-allow-resign",
                                            "--blocks", "2", "--gate-temperature", "0.3", "--rules", "cn"]))
    assert (cfg.search.max_memory, cfg.allow_resign, cfg.net.blocks, cfg.gate_temperature, cfg.rules.name) == \
        (64 << 20, False, 2, 0.3, "chinese")


def test_the_engines_options_read_back_into_its_config():
    from engine.gtp import EngineConfig, engine_play
    from engine.options import build_parser, engine_config

    args = build_parser().parse_args([])
    assert engine_config(args, size=19, batch=16, threads=1, seed=0) == EngineConfig()
    args = build_parser().parse_args(["--visits", "50", "--resign", "0.1", "--time", "2", "--rules", "tromp-taylor",
                                      "--komi", "6", "--no-ponder", "--quiet", "--batch-ramp", "0"])
    got = engine_config(args, size=9)
    assert got.play == engine_play(50, 0.1) and (got.seconds, got.ponder, got.quiet, got.batch_ramp) == (2.0, False,
                                                                                                     True, 0)
    assert got.rules == Rules.preset("tromp-taylor", 6.0) and got.size == 9
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--resign", "1"])          # a winrate below 1: argparse's clear error


def test_the_analysis_engines_options_read_back_into_its_config():
    from engine.analysis.engine import AnalysisConfig, build_parser

    args = build_parser().parse_args(["--positions", "3", "--report-as", "white", "--max-visits-cap", "99"])
    got = dataclass_from_args(args, AnalysisConfig(), batch=16, threads=1, seed=0)
    assert got.positions == 3 and (got.defaults.perspective, got.defaults.visits_cap) == ("WHITE", 99)
    assert dataclasses.replace(got, positions=16, defaults=AnalysisConfig().defaults) == AnalysisConfig()


def test_a_match_is_read_from_its_options():
    from train.match.cli import build_parser, config_from_args
    from train.match.config import EngineSpec, GameSettings, MatchConfig, inproc_play

    parser = build_parser()
    got = config_from_args(parser.parse_args(["--black", "a", "--white", "b", "--sgf-dir", "sgf", "--seed", "0"]),
                           parser)
    assert got == MatchConfig((EngineSpec("A", "a"), EngineSpec("B", "b")), 10, GameSettings(), Path("sgf"),
                              Path("sgf/results.json"))
    argv = ["--engine", "x=a", "--engine", "y=b", "--sgf-dir", "s", "--max-moves", "30", "--visits", "7",
            "--size", "9", "--komi", "5", "--no-progress", "--resume", "--seed", "3", "--sprt", "0,20",
            "--move-time", "2", "--time-margin", "0.5"]
    got = config_from_args(parser.parse_args(argv), parser)
    assert got.settings == GameSettings(9, Rules.preset("chinese", 5.0), 0, inproc_play(7, max_moves=30), 2.5)
    assert (got.progress, got.resume, got.seed, got.sprt, got.move_time) == (False, True, 3, (0.0, 20.0), 2.0)
    assert got.settings.move_cap == 30 and GameSettings(size=9).move_cap == 3 * 81
    for bad, message in ((["--resign", "1"], "--resign must be a winrate"), (["--rules", "x"], "invalid choice")):
        with pytest.raises(SystemExit):
            config_from_args(parser.parse_args(argv[:6] + bad), parser)


def test_a_ladder_is_read_from_its_options():
    from train.match.ladder import REFEREE, LadderConfig, build_parser

    args = build_parser().parse_args(["runs/x", "--levels", "2", "4", "--komi", "6.5", "--visits", "30",
                                      "--pachi-playouts", "600"])
    got = dataclass_from_args(args, LadderConfig, referee=REFEREE)
    assert (got.levels, got.pachi_playouts, got.rules.komi, got.play.visits) == ((2, 4), (600,), 6.5, 30)
    assert dataclasses.replace(got, levels=(1, 5, 10), pachi_playouts=(), rules=LadderConfig().rules,
                               play=LadderConfig().play, pachi=None) == LadderConfig()


def test_ray_options_are_read_from_their_options():
    from train.cluster.options import RayOptions, add_ray_arguments, options_from_namespace

    parser = argparse.ArgumentParser()
    add_ray_arguments(parser)
    assert options_from_namespace(parser.parse_args([])) == RayOptions(address=None)
    got = options_from_namespace(parser.parse_args(["--ray", "auto", "--ray-shared-run-dir", "--ray-gate-gpus",
                                                    "0.5", "--ray-stall-timeout", "9"]))
    assert got == RayOptions(address="auto", shared_run_dir=True, gate_gpus=0.5, stall_s=9.0)
    with pytest.raises(ValueError, match="--ray-stall-timeout"):
        options_from_namespace(parser.parse_args(["--ray-slice", "0"]))


# -- the helper on a small dataclass ----------------------------------------------------------------

@dataclasses.dataclass
class _Inner:
    depth: int = described(3, "depth in plies", group="inner")


@dataclasses.dataclass
class _Outer:
    name: str = described("x", "a name")
    seconds: float = described(1.5, "seconds per move", option="time", metavar="SECONDS")
    seed: int = described(0, "seed (default: random)", cli_default=None)
    sizes: tuple[int, ...] = described((9, 19), "board sizes", nargs="*")
    quiet: bool = described(False, "say less", flag="switch")
    progress: bool = described(True, "no progress lines", flag="negated")
    ponder: bool = described(False, "think on the opponent's time")
    rules: Rules = described(Rules.default(), "rules preset", komi_help="komi in points")
    inner: _Inner = dataclasses.field(default_factory=_Inner, metadata={"compose": True})
    play: PlaySettings = dataclasses.field(default_factory=PlaySettings, metadata={
        "options": {"visits": "play_visits"}, "helps": {"visits": "visits of a move"}})
    hidden: int = 5                      # not an option
    other: PlaySettings = dataclasses.field(default_factory=PlaySettings)    # composed, not options


def test_the_helper_builds_a_command_line_and_reads_it_back():
    parser = argparse.ArgumentParser()
    add_dataclass_arguments(parser, _Outer)
    flags = {s for a in parser._actions for s in a.option_strings}
    assert flags == {"-h", "--help", "--name", "--time", "--seed", "--sizes", "--quiet", "--no-progress", "--ponder",
                     "--no-ponder", "--komi", "--rules", "--depth", "--play-visits"}
    assert [g.title for g in parser._action_groups][-1] == "inner"
    helps = {a.dest: a.help for a in parser._actions}
    assert helps["time"] == "seconds per move (default: 1.5)" and helps["seed"] == "seed (default: random)"
    assert helps["sizes"] == "board sizes (default: 9 19)" and helps["play_visits"] == "visits of a move (default: 100)"
    assert dataclass_from_args(parser.parse_args([]), _Outer, seed=0) == _Outer()
    args = parser.parse_args(["--time", "3", "--sizes", "5", "--quiet", "--no-progress", "--ponder", "--rules",
                              "tromp-taylor", "--komi", "0.5", "--depth", "7", "--play-visits", "9"])
    got = dataclass_from_args(args, _Outer(hidden=6))
    assert got == _Outer(seconds=3.0, seed=None, sizes=(5,), quiet=True, progress=False, ponder=True,
                         rules=Rules.preset("tromp-taylor", 0.5), inner=_Inner(7), play=PlaySettings(visits=9),
                         hidden=6)
    with pytest.raises(ValueError):
        dataclass_from_args({"rules": "go", "komi": 7.5}, _Outer)
    excluded = argparse.ArgumentParser()
    add_dataclass_arguments(excluded, _Outer(), exclude=("rules", "inner", "seed"))
    assert not {a.dest for a in excluded._actions} & {"komi", "rules", "depth", "seed"}
