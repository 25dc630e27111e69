"""Engine-vs-engine matches with ratings: ``python -m train.match``.

Two engines::

    python -m train.match --black "gnugo --mode gtp --level 1" \\
        --white "gnugo --mode gtp --level 2" --games 20 --size 9 --komi 7.5 \\
        --rules chinese --sgf-dir matches/gnugo --parallel 2 --sprt 0,35

Our own nets play in this process (``inproc:PATH[:visits=N,device=D,name=X]``,
see ``--help``), batched through the one game runner, ``train.games.pool.GamePool``::

    python -m train.match --black inproc:runs/9x9/models/model-0002000.pt \\
        --white inproc:runs/9x9/models/model-0001000.pt --visits 200 \\
        --games 100 --size 9 --parallel 16 --sgf-dir matches/2000-vs-1000

Colours alternate: engine A (``--black``) is Black in games 0, 2, 4, ... and
White in games 1, 3, 5, .... A round robin takes ``--engine NAME=CMD`` three or
more times and plays ``--games`` games for every pair, then fits Bradley-Terry
ratings (first engine anchored at 0).

The layers, each usable alone: :mod:`train.match.config` (what a match is),
:mod:`train.match.schedule` (``run_match``: the games of a match in one game pool),
:mod:`train.match.referee` (counting by a GTP engine), :mod:`train.match.gtp_agent` (a GTP
engine as a player), :mod:`train.match.inproc` (our nets as players),
:mod:`train.match.report` (results, Elo, SPRT, ratings); this module is the
command line.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from engine import coords
from engine.play.settings_cli import add_dataclass_arguments, dataclass_from_args
from train.games.gtp_client import EngineError, GTPClient, GTPError
from train.match.config import COUNTING, ENGINES, GAMES, LIMITS, RECORDS, EngineSpec, GameSettings, MatchConfig
from train.match.report import format_summary
from train.match.schedule import ResumeError, probe_engines, run_match, saved_seed


def _parse_engine(text: str) -> EngineSpec:
    name, sep, command = text.partition("=")
    if not sep or not name.strip() or not command.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=COMMAND, got {text!r}")
    return EngineSpec(name.strip(), command.strip())


_EPILOG = """engines:
  An engine (CMD) is a GTP command line, or our engine in this process:

    inproc:PATH[:KEY=VALUE[,KEY=VALUE...]]   KEY: visits=N, device=DEV, name=NAME, max_memory=SIZE

  e.g. inproc:runs/9x9/models/model-0002000.pt:visits=200.  PATH is one of our
  .pt weights files or a Leela Zero .gz/.txt net (19x19 only); visits defaults
  to --visits, device to CUDA when available, and the name (PB/PW in the SGFs,
  the player in train.match.ratings) to the file name without extension, so a run's
  checkpoint plays as its model id (model-0001000).  Options may also be
  separated by ':' (inproc:a.pt:visits=200:name=a200).

  All games run in one game pool (train.games.pool.GamePool), --parallel games at
  once: in-process engines batch their searches into one network forward pass
  per net per step over every game; each GTP engine runs one process per
  game in flight and is polled while the others search.  With --move-time,
  in-process engines search at most that long per move.

examples:
  python -m train.match --black inproc:runs/9x9/models/model-0002000.pt \\
      --white "gnugo --mode gtp --level 1" --size 9 --games 20 --visits 100 \\
      --parallel 2 --sgf-dir runs/match-gnugo1
  python -m train.match --engine new=inproc:runs/9x9/models/model-0002000.pt \\
      --engine old=inproc:runs/9x9/models/model-0001000.pt --size 9 --games 100 \\
      --parallel 16 --sprt 0,35 --sgf-dir runs/9x9/matches/2000-vs-1000
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m train.match",
        description="Plays Go engines against each other and rates them.\n"
        "GTP programs or our nets in-process; Elo, SPRT and Bradley-Terry ratings (docs/matches.md).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    groups = {title: parser.add_argument_group(title) for title in (ENGINES, GAMES, LIMITS, COUNTING, RECORDS)}
    engines = groups[ENGINES]
    engines.add_argument("--black", metavar="CMD", help="engine A (Black in game 0; colours alternate)")
    engines.add_argument("--white", metavar="CMD", help="engine B (White in game 0)")
    engines.add_argument("--engine", metavar="NAME=CMD", type=_parse_engine, action="append",
                         default=[], help="round robin: an engine (repeat, 2 or more)")
    engines.add_argument("--threads", type=int, default=None,
                         help="torch threads for in-process nets (default: torch's choice)")
    add_dataclass_arguments(parser, MatchConfig, groups)
    return parser


def config_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> MatchConfig:
    """Validate parsed arguments and build the MatchConfig from them (parser.error on misuse): the
    engines, the random seed when none is given and the hard move time limit are worked out
    here, every other field is read by :func:`dataclass_from_args`."""
    if args.engine and (args.black or args.white):
        parser.error("use either --black/--white or --engine, not both")
    if args.engine:
        engines = tuple(args.engine)
        if len(engines) < 2:
            parser.error("a round robin needs at least two --engine")
        labels = [e.label for e in engines]
        if len(set(labels)) != len(labels):
            parser.error("engine names must be distinct")
    elif args.black and args.white:
        engines = (EngineSpec("A", args.black), EngineSpec("B", args.white))
    else:
        parser.error("give --black and --white, or --engine NAME=CMD two or more times")
    if args.games < 1:
        parser.error("--games must be at least 1")
    if not 2 <= args.size <= 19:
        parser.error("--size must be in 2..19")
    if args.parallel < 1:
        parser.error("--parallel must be at least 1")
    if args.visits < 1:
        parser.error("--visits must be at least 1")
    if not 0 <= args.resign < 1:
        parser.error("--resign must be a winrate from 0 (never) to below 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    for spec in engines:
        try:
            spec.inproc  # noqa: B018 - validates the in-process syntax
        except ValueError as exc:
            parser.error(str(exc))
    if args.sprt is not None and len(engines) != 2:
        parser.error("--sprt needs exactly two engines")
    try:
        coords.fixed_handicap(args.size, args.handicap)
    except ValueError as exc:
        parser.error(str(exc))
    results_path = args.results or args.sgf_dir / "results.json"
    seed = args.seed
    if seed is None and args.resume:
        try:
            seed = saved_seed(results_path)
        except ValueError as exc:
            parser.error(str(exc))
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    limit = None if args.move_time is None else args.move_time + args.time_margin
    try:
        settings = dataclass_from_args(args, GameSettings, move_time_limit=limit)
    except ValueError as exc:            # unknown rules or a bad komi
        parser.error(str(exc))
    return dataclass_from_args(args, MatchConfig, engines=engines, settings=settings, results_path=results_path,
                               seed=seed)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0 ok, 1 interrupted, 2 bad setup)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    config = config_from_args(args, parser)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    try:
        engines = probe_engines(config)
    except (EngineError, GTPError, ValueError, OSError) as exc:
        print(f"train.match: engine failed to start: {exc}", file=sys.stderr)
        return 2
    if config.referee:
        try:
            with GTPClient(config.referee, label="referee") as client:
                if not client.knows("final_score"):
                    print("train.match: the referee does not list final_score", file=sys.stderr)
                    return 2
        except (EngineError, GTPError) as exc:
            print(f"train.match: referee failed to start: {exc}", file=sys.stderr)
            return 2
    try:
        results = run_match(config, engines)
    except ResumeError as exc:
        print(f"train.match: cannot resume: {exc}", file=sys.stderr)
        return 2
    print(format_summary(results))
    print(f"Results: {config.results_path}   SGFs: {config.sgf_dir}")
    return 1 if results.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
