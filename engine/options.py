"""The GTP engine's command line (``python -m engine --help``), shared with the analysis engine
(``python -m engine analysis``, which adds its own options): the parser, built from
:class:`engine.gtp.EngineConfig`'s fields and read back into one (:func:`engine_config`), the
options that are not its fields (the net, its precision and device, the tree's memory, search
options, the log), the engine's defaults it shows and the search threads when ``--threads`` is
not given."""
from __future__ import annotations

import argparse
import os

from engine.play import searchopts
from engine.gtp import EngineConfig
from engine.gtp.config import GAME, LIMITS, NETWORK, OUTPUT, SEARCH
from engine.play.memory import format_memory, parse_memory
from engine.play.settings import DEFAULT_VISITS, default_visits
from engine.play.settings_cli import add_dataclass_arguments, dataclass_from_args

DEFAULTS = EngineConfig()     # the engine's defaults, shown and used by the command line


def _memory(text: str) -> int:
    try:
        return parse_memory(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m engine",
        description="Play Go over GTP (Go Text Protocol) on stdin/stdout: give this command line\n"
                    "to Sabaki, Lizzie, GoGui, gogui-twogtp or a KGS/OGS bridge as the engine.\n"
                    "It answers name, version and the other identification commands at once and\n"
                    "loads the network in the background.\n\n"
                    "Other commands:\n"
                    "  python -m engine analysis  KataGo's JSON analysis protocol (KaTrain)\n"
                    "  python -m engine tune      measure and cache the network precision ahead of time\n"
                    "  python -m engine doctor    check that a GUI can use the engine on this machine",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"""search limits:
  A move stops at whichever of --visits, --playouts and --time comes first, and under a
  clock (time_settings, kgs-time_settings, time_left) never later than the clock allows
  minus --lag-buffer.  With none of them and no clock: {DEFAULT_VISITS} visits per move on
  19x19, {default_visits(13)} on 13x13, {default_visits(9)} on 9x9 (about the same work a move).

GTP:
  The GTP v2 core plus undo, gg-undo, showboard, final_score, final_status_list, handicap
  (fixed_handicap, place_free_handicap, set_free_handicap), clocks, loadsgf, printsgf,
  kgs-rules and goengine-rules (chinese | tromp-taylor), kgs-genmove_cleanup, the analysis
  commands lz-analyze, kata-analyze, lz-genmove_analyze, kata-genmove_analyze (stopped by
  any input line), GoGui's gogui-analyze_commands and gogui-interrupt ('# interrupt' ends a
  genmove early), cputime.  'list_commands' prints them all.
""")
    net = p.add_argument_group(NETWORK, "which net plays, and how its forward passes run")
    limits = p.add_argument_group(LIMITS, "how long a move searches (see 'search limits' below)")
    search = p.add_argument_group(SEARCH, "how the search spends its visits")
    game = p.add_argument_group(GAME, "the game the engine starts with; GTP commands change it")
    out = p.add_argument_group(OUTPUT)
    net.add_argument("--weights", metavar="PATH|uniform|random",
                   help="network to play with: one of our .pt weights files, a Leela Zero weights "
                        "file (.gz or .txt; 19x19 only), 'uniform' (no network: uniform policy, "
                        "even value; for tests) or 'random' (deterministic pseudo-random outputs). "
                        "Default: the net shipped in weights/ for the board size, else a small "
                        "untrained net (with a warning)")
    net.add_argument("--precision", default="auto", type=str.lower,
                   choices=("auto", "fp32", "bf16", "fp16", "fp32-nchw", "fp32-wino"),
                   help="network precision: auto (default) compares fp32, bf16 (and fp16 on CUDA) "
                        "and memory layouts (fp32-wino: Winograd 3x3 convolutions, CPU) with fp32 "
                        "once per machine and net shape and keeps the fastest within tolerance.  "
                        "On a CPU it plays at once with a quick probe's pick, measures each in the "
                        "background while idle (cached one by one in $XDG_CACHE_HOME/goengine, "
                        "~/.cache/goengine), then switches; 'python -m engine tune' measures ahead "
                        "of time.  Or force one.  What it chose, and when, is printed on stderr")
    net.add_argument("--device", help="torch device for the network: cpu, cuda, cuda:1 "
                                    "(default: CUDA when available)")
    search.add_argument("--max-memory", type=_memory, metavar="SIZE",
                   help="cap on the search tree's memory: bytes or e.g. 512M, 2G (binary units; "
                        f"default {format_memory(DEFAULTS.search.max_memory)}).  A full tree stops "
                        "growing and further visits re-evaluate its "
                        "leaves.  Also goengine-param max_memory")
    search.add_argument("--search", type=searchopts.options_arg, action="append", default=[], metavar="OPTS",
                   help="search options NAME=VALUE[,NAME=VALUE...], by our names or KataGo's: "
                        f"{', '.join(f'{k} ({v})' for k, v in searchopts.KATAGO_NAMES.items())}, lcb_utility, "
                        "rollout_weight, rollouts, rollout_policy, rollout_ramp_start, rollout_ramp_end, terminal_judge.  "
                        "They change the net's defaults: KataGo's GTP values for KataGo nets, those of them "
                        "our nets can use for ours, with tactical playouts at the leaves (searchopts.ROLLOUTS) "
                        f"on boards up to {searchopts.ROLLOUT_MAX_SIZE}x{searchopts.ROLLOUT_MAX_SIZE} "
                        "(announced on stderr), C's for Leela Zero nets.  "
                        "Also kata-set-param NAME VALUE and goengine-param NAME VALUE")
    out.add_argument("--log", metavar="FILE", help="append every command, reply and search summary to FILE")
    add_dataclass_arguments(p, EngineConfig, {NETWORK: net, LIMITS: limits, SEARCH: search, GAME: game, OUTPUT: out})
    return p


def engine_config(args: argparse.Namespace, **given) -> EngineConfig:
    """The EngineConfig of parsed options, ``given`` fields as they are (what start-up works
    out: the board size, threads and batch not given); ValueError for unknown rules or a bad
    komi."""
    return dataclass_from_args(args, EngineConfig, **given)


def default_threads(device: str | None) -> int:
    """Search threads when --threads is not given: the cores this process may use (at most 16),
    2 on CUDA (one batch in the GPU while the other is collected)."""
    if device is not None and str(device).startswith("cuda"):
        return 2
    if device is None:
        import torch        # lazy: loads after OMP_WAIT_POLICY is set, and only when a net is used
        if torch.cuda.is_available():
            return 2
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(16, cores))
