"""A/B test of search options: ``python -m tools.experiments.search_ab``.

Our engine with new search options (:mod:`engine.play.searchopts`) plays the same engine with C's
default options (``SearchParams()``, not the net's profile of ``searchopts.net_defaults``; ``--base``
changes them), with the same net, in this process (``train.match``'s game
pool, ``inproc:`` engines): colours alternate, each pair of games shares a random opening, both
sides search the same visits (or, with ``--move-time``, the same time).  Every ``--variant``
plays its own match against the base; the table gives each one's score and Elo over the base
with a 95% interval::

    python -m tools.experiments.search_ab --weights weights/9x9.pt --visits 64 --games 100 \\
        --variant score=static_score_utility=0.1,dynamic_score_utility=0.3 \\
        --variant stdev=cpuct_stdev_scale=0.85

The games are counted by the core's area count (no referee): both sides are the same engine,
so neither's dead stones are a matter of dispute beyond what the count settles.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from engine.core import SearchParams
from engine.play import searchopts
from engine.play.settings import DEFAULT_RESIGN
from engine.rules import Rules
from train.match.config import EngineSpec, GameSettings, MatchConfig, inproc_play
from train.match.schedule import probe_engines, run_match
from train.match.stats import elo_difference


def _variant(text: str) -> tuple[str, dict[str, float]]:
    name, sep, opts = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=OPTIONS, got {text!r}")
    try:
        return name.strip(), searchopts.parse_options(opts)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.experiments.search_ab", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", default="weights/9x9.pt", help="the net both sides use")
    p.add_argument("--variant", type=_variant, action="append", required=True, metavar="NAME=OPTS",
                   help="options under test, NAME=opt=v[,opt=v...] (our names or KataGo's); repeatable")
    p.add_argument("--base", type=searchopts.options_arg, default={}, metavar="OPTS",
                   help="the base's options (default: C's defaults, without the net's profile)")
    p.add_argument("--games", type=int, default=100, help="games per variant (default 100)")
    p.add_argument("--visits", type=int, default=64, help="root visits a move (default 64)")
    p.add_argument("--move-time", type=float, help="seconds a move instead of equal visits")
    p.add_argument("--size", type=int, default=9)
    p.add_argument("--komi", type=float, default=7.0)
    p.add_argument("--rules", default="chinese")
    p.add_argument("--random-moves", type=int, default=4,
                   help="random opening moves of each pair of games (default 4)")
    p.add_argument("--resign", type=float, default=DEFAULT_RESIGN,
                   help=f"resignation winrate of both sides (default {DEFAULT_RESIGN:g}; 0 never resigns)")
    p.add_argument("--parallel", type=int, default=8, help="games at once (default 8)")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batch-ramp", "--leaf-ramp", dest="batch_ramp", type=int, default=0, metavar="VISITS",
                   help="each search's leaves per network call grow with its tree, one per VISITS "
                        "root visits (as the engine's --batch-ramp); 0 (default): up to 8 from the "
                        "first visit")
    p.add_argument("--out", type=Path, default=Path("matches/search_ab"),
                   help="directory for each variant's SGFs and results.json")
    return p


def _spec(label: str, weights: str, visits: int, device: str, options: dict[str, float]) -> EngineSpec:
    opts = "".join(f",{k}={v:g}" for k, v in options.items())
    return EngineSpec(label, f"inproc:{weights}:visits={visits},device={device},name={label}{opts}")


def base_options(given: dict[str, float]) -> dict[str, float]:
    """Every option at C's default, then ``given``: spelled out, they override the net's profile
    that in-process players start from, so the base is C's search whatever the net."""
    c = SearchParams()
    return {**{k: getattr(c, k) for k in searchopts.OPTIONS}, **given}


def run_variant(args: argparse.Namespace, name: str, options: dict[str, float]) -> dict:
    """Plays one variant against the base; returns its row of the table."""
    visits = 100_000 if args.move_time else args.visits
    base = base_options(args.base)
    engines = (_spec(name, args.weights, visits, args.device, {**base, **options}),
               _spec("base", args.weights, visits, args.device, base))
    config = MatchConfig(
        engines=engines, games=args.games,
        settings=GameSettings(size=args.size, rules=Rules.preset(args.rules, args.komi),
                              move_time_limit=None if args.move_time is None else args.move_time + 5.0,
                              play=inproc_play(visits, args.resign)),
        sgf_dir=args.out / name, results_path=args.out / name / "results.json",
        parallel=args.parallel, move_time=args.move_time, random_moves=args.random_moves,
        seed=args.seed, progress=False, batch_ramp=args.batch_ramp)
    t0 = time.perf_counter()
    results = run_match(config, probe_engines(config))
    games = results["games"]
    wins = sum(1 for g in games if g["winner"] == name)
    losses = sum(1 for g in games if g["winner"] == "base")
    draws = len(games) - wins - losses
    elo = elo_difference(wins, losses, draws)
    return {"variant": name, "options": searchopts.describe(engines[0].inproc.search_params()),
            "games": len(games), "wins": wins, "losses": losses, "draws": draws,
            "distinct": len({g["fingerprint"] for g in games}), "elo": elo,
            "seconds": time.perf_counter() - t0,
            "time_per_move": {lab: sum(g[f"{c}_seconds"] for g in games for c in ("black", "white")
                                       if g[c] == lab) /
                              max(1, sum(g[f"{c}_moves"] for g in games for c in ("black", "white")
                                         if g[c] == lab)) for lab in (name, "base")}}


def format_table(rows: list[dict], limit: str) -> str:
    lines = [f"| variant | options | {limit} | games (distinct) | W-L-D | Elo (95%) | s/move new, base |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        e = r["elo"]
        tpm = r["time_per_move"]
        lines.append(f"| {r['variant']} | {r['options']} | {limit} | {r['games']} ({r['distinct']}) | "
                     f"{r['wins']}-{r['losses']}-{r['draws']} | {e} | "
                     f"{tpm[r['variant']]:.3f}, {tpm['base']:.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.games < 1 or args.visits < 1 or args.parallel < 1:
        print("search_ab: --games, --visits and --parallel must be at least 1", file=sys.stderr)
        return 2
    if len({n for n, _ in args.variant} | {"base"}) != len(args.variant) + 1:
        print("search_ab: variant names must be distinct and not 'base'", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    limit = f"{args.move_time:g} s/move" if args.move_time else f"{args.visits} visits"
    rows = []
    for name, options in args.variant:
        rows.append(run_variant(args, name, options))
        r = rows[-1]
        print(f"{name}: {r['wins']}-{r['losses']}-{r['draws']} of {r['games']}, {r['elo']} "
              f"({r['seconds']:.0f} s)", flush=True)
    print(f"\nbase: {searchopts.describe(_spec('base', args.weights, 1, 'cpu', base_options(args.base)).inproc.search_params())}"
          f", {args.size}x{args.size} komi {args.komi:g}, {limit}, net {args.weights}")
    print(format_table(rows, limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
