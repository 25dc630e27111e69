"""``python -m engine`` / ``goengine``: the GTP engine on stdin/stdout.

Examples::

    python -m engine --weights weights/9x9.pt --visits 800
    python -m engine --weights leelaz-net.gz --time 5 --threads 2       # Leela Zero net, 19x19
    python -m engine --weights uniform --visits 16 --seed 1 --threads 1 # tests: no network

Without ``--weights`` the engine plays with the net shipped in ``weights/`` for the board size
(a manifest ``weights/*.json`` mapping sizes to files, e.g.
``{"9": "9x9-best.pt", "19": "19x19-best.pt", "default": "best.pt"}``; else files named
``weights/NxN*.pt``, the last in name order; else any ``weights/*.pt``, since our nets play
every size).  When there is none, it plays with a small untrained net and says so on stderr.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from engine import searchopts
from engine.core import SearchParams
from engine.gtp import EngineConfig, GTPEngine
from engine.memory import format_memory, parse_memory
from engine.player import DEFAULT_VISITS
from engine.rules import PRESETS

DEFAULTS = EngineConfig()     # the engine's defaults, shown and used by the command line

# weights/ of a source checkout (or an editable install); a regular install carries the same
# files as the package data engine/shipped_weights (see setup.py).
_SOURCE_WEIGHTS = Path(__file__).resolve().parent.parent / "weights"
WEIGHTS_DIR = _SOURCE_WEIGHTS if _SOURCE_WEIGHTS.is_dir() else Path(__file__).resolve().parent / "shipped_weights"
# OpenMP threads that spin while waiting collapse throughput when the cores are shared with the
# GUI or other programs; passive waiting costs nothing when they are not.  Set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value


def _nonneg_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a finite number >= 0")
    return value


def _positive_float(text: str) -> float:
    value = _nonneg_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def _winrate(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("must be a winrate from 0 (never resign) to below 1")
    return value


def _memory(text: str) -> int:
    try:
        return parse_memory(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _search_options(text: str) -> dict[str, float]:
    try:
        return searchopts.parse_options(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m engine",
        description="A Go engine speaking GTP (Go Text Protocol) on stdin/stdout.\n"
                    "Give this command line to Sabaki, Lizzie, GoGui, gogui-twogtp or a KGS/OGS\n"
                    "bridge as the engine.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"""search limits:
  A move stops at whichever of --visits, --playouts and --time comes first, and under a
  clock (time_settings, kgs-time_settings, time_left) never later than the clock allows
  minus --lag-buffer.  With none of them and no clock: {DEFAULT_VISITS} visits per move.

GTP:
  The GTP v2 core plus undo, gg-undo, showboard, final_score, final_status_list, handicap
  (fixed_handicap, place_free_handicap, set_free_handicap), clocks, loadsgf, printsgf,
  kgs-rules and goengine-rules (chinese | tromp-taylor), kgs-genmove_cleanup, the analysis
  commands lz-analyze, kata-analyze, lz-genmove_analyze, kata-genmove_analyze (stopped by
  any input line), GoGui's gogui-analyze_commands and gogui-interrupt ('# interrupt' ends a
  genmove early), cputime.  'list_commands' prints them all.
""")
    p.add_argument("--weights", metavar="PATH|uniform|random",
                   help="network to play with: one of our .pt weights files, a Leela Zero weights "
                        "file (.gz or .txt; 19x19 only), 'uniform' (no network: uniform policy, "
                        "even value; for tests) or 'random' (deterministic pseudo-random outputs). "
                        "Default: the net shipped in weights/ for the board size, else a small "
                        "untrained net (with a warning)")
    p.add_argument("--size", type=int, default=None,
                   help="initial board size, 2..19 (default: the size the --weights net was trained "
                        "for when it was trained for one size only, else 19)")
    p.add_argument("--komi", type=float, default=DEFAULTS.komi,
                   help=f"initial komi (default {DEFAULTS.komi:g})")
    p.add_argument("--rules", default=DEFAULTS.rules, choices=PRESETS,
                   help="rules preset: chinese (simple ko, no suicide) or tromp-taylor (positional "
                        f"superko, suicide allowed); both score by area (default {DEFAULTS.rules})")
    p.add_argument("--visits", type=_positive_int,
                   help="root visits per move, counting visits kept from the previous move's tree")
    p.add_argument("--playouts", type=_positive_int, help="new visits per move (tree reuse not counted)")
    p.add_argument("--time", type=_positive_float, metavar="SECONDS",
                   help="seconds per move (a clock set by the controller may allow less)")
    p.add_argument("--threads", type=_positive_int,
                   help="search threads, each with its own batch of positions in the network at "
                        "once (on a CPU each runs the network on one core); default: the cores "
                        "this process may use; on CUDA measured with the batch once per machine, "
                        "net and size, and cached (engine/gpu_settings.py).  With 1 thread and "
                        "--visits the engine is deterministic")
    p.add_argument("--precision", default="auto", type=str.lower,
                   choices=("auto", "fp32", "bf16", "fp16", "fp32-nchw", "fp32-wino"),
                   help="network precision: auto (default) measures fp32, bf16 (and fp16 on CUDA) "
                        "and memory layouts (fp32-wino: Winograd 3x3 convolutions, CPU) once per machine and net shape, keeps the fastest whose "
                        "outputs stay within tolerance of fp32, and caches the choice in "
                        "$XDG_CACHE_HOME/goengine (~/.cache/goengine); or force one.  The choice "
                        "is printed on stderr at start")
    p.add_argument("--batch", type=_positive_int,
                   help=f"most positions per network call (default {DEFAULTS.batch}; on CUDA "
                        "measured with --threads)")
    p.add_argument("--device", help="torch device for the network: cpu, cuda, cuda:1 "
                                    "(default: CUDA when available)")
    p.add_argument("--resign", type=_winrate, default=DEFAULTS.resign, metavar="WINRATE",
                   help=f"resign when the winrate falls below this (default {DEFAULTS.resign:g}; "
                        "0 never resigns). "
                        "Not in the first quarter of the game; later in handicap games as White")
    p.add_argument("--ponder", action=argparse.BooleanOptionalAction, default=False,
                   help="after genmove, keep searching on the opponent's time until the next "
                        "command arrives (default off)")
    p.add_argument("--max-memory", type=_memory, metavar="SIZE",
                   help="cap on the search tree's memory: bytes or e.g. 512M, 2G (binary units; "
                        f"default {format_memory(DEFAULTS.search.max_memory)}).  A full tree stops "
                        "growing and further visits re-evaluate its "
                        "leaves.  Also goengine-param max_memory")
    p.add_argument("--search", type=_search_options, action="append", default=[], metavar="OPTS",
                   help="search options NAME=VALUE[,NAME=VALUE...], by our names or KataGo's: "
                        f"{', '.join(f'{k} ({v})' for k, v in searchopts.KATAGO_NAMES.items())}.  "
                        "Also kata-set-param NAME VALUE and goengine-param NAME VALUE")
    p.add_argument("--lag-buffer", type=_nonneg_float, default=DEFAULTS.lag_buffer, metavar="SECONDS",
                   help="seconds kept in reserve on every move under a clock "
                        f"(default {DEFAULTS.lag_buffer:g})")
    p.add_argument("--log", metavar="FILE", help="append every command, reply and search summary to FILE")
    p.add_argument("--seed", type=int, help="random seed (default: a random one); with --threads 1 "
                                            "and fixed visits the engine is deterministic")
    p.add_argument("--quiet", action="store_true", help="no search summaries on stderr")
    return p


# -- evaluators ---------------------------------------------------------------------------------

def default_weights_path(size: int, directory: Path | None = None) -> Path | None:
    """The shipped weights file for ``size``, or None (see the module docstring).  With
    ``directory`` (tests), only that folder is searched."""
    if directory is None:
        directory = WEIGHTS_DIR
    if not directory.is_dir():
        return None
    for manifest in sorted(directory.glob("*.json")):
        try:
            data = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            table = data.get("sizes", data) if isinstance(data.get("sizes", data), dict) else data
            name = table.get(str(size)) or table.get(f"{size}x{size}") or data.get("default")
            if isinstance(name, str) and (directory / name).is_file():
                return directory / name
    sized = sorted(directory.glob(f"{size}x{size}*.pt"))
    if sized:
        return sized[-1]
    anything = sorted(directory.glob("*.pt"))
    return anything[-1] if anything else None


def untrained_size_warning(net: Any, size: int, sizes: Sequence[int]) -> str:
    """The stderr line for a board size that the loaded net was not trained on."""
    sizes = sorted(sizes)
    if sizes == list(range(sizes[0], sizes[-1] + 1)) and len(sizes) > 2:
        trained = f"{sizes[0]}x{sizes[0]} to {sizes[-1]}x{sizes[-1]}"
    else:
        trained = ", ".join(f"{s}x{s}" for s in sizes)
    return (f"warning: {net} was trained on {trained}; it was not trained for {size}x{size} "
            f"and may play it badly (see README: which net for which size)")


def make_evaluator_factory(args: argparse.Namespace, warn: Callable[[str], None]) -> Callable[[int], Any]:
    """``evaluator_for(size)`` for the engine: ValueError when a size cannot be played."""
    # Lazy: these import torch, which must load after OMP_WAIT_POLICY is set (and --help and
    # argument errors answer without it).
    from engine import evaluator as ev_mod, gpu_settings, weights as weights_mod
    from engine.network import NetConfig
    from engine.precision import evaluator_kwargs

    seed = args.seed
    spec = args.weights
    if spec == "uniform":
        uniform = ev_mod.UniformEvaluator()
        return lambda size: uniform
    if spec == "random":
        rnd = ev_mod.RandomEvaluator(seed=seed)
        return lambda size: rnd

    def torch_evaluator(model, size: int) -> Any:
        gpu_settings.settle(args, model, size, log=warn)      # CUDA: threads and batch measured
        choice = gpu_settings.precision_at_batch(model, args.device, size,
                                                 getattr(args, "batch", None) or DEFAULTS.batch,
                                                 getattr(args, "precision", "auto"), log=warn)
        warn(choice.describe())
        return ev_mod.TorchEvaluator(model, device=args.device, seed=seed, **evaluator_kwargs(choice))

    if spec is not None:
        model, meta = weights_mod.load_any(spec)      # WeightsError (ValueError) names the file
        sizes = meta.get("board_sizes") or []
        fixed = meta.get("feature_set") == "lz18"     # Leela Zero nets have 19x19 FC heads
        if args.size is None:                         # a 9x9 net starts on 9x9, not with a warning
            args.size = sizes[0] if len(sizes) == 1 else 19
        if fixed and args.size not in (sizes or [19]):
            raise ValueError(f"{spec} is a Leela Zero net: it plays 19x19 only")
        evaluator = torch_evaluator(model, args.size)
        warned: set[int] = set()

        def for_size(size: int) -> Any:
            if fixed and size not in (sizes or [19]):
                raise ValueError(f"{spec} is a Leela Zero net: it plays 19x19 only")
            if sizes and size not in sizes and size not in warned:
                warned.add(size)
                warn(untrained_size_warning(spec, size, sizes))
            return evaluator
        return for_size

    cache: dict[Any, Any] = {}

    def default_for(size: int) -> Any:
        path = default_weights_path(size)
        key = str(path) if path is not None else None
        if key not in cache:
            if path is None:
                warn("warning: no network shipped in weights/ for this board size: playing with a "
                     "small UNTRAINED network (pass --weights to choose one)")
                model = weights_mod.new_model(NetConfig(blocks=2, filters=32), seed=seed)
            else:
                model, meta = weights_mod.load_any(path)
                if meta.get("feature_set") == "lz18" and size != 19:
                    raise ValueError(f"{path} plays 19x19 only")
                trained = meta.get("board_sizes") or []
                if trained and size not in trained:
                    warn(untrained_size_warning(path, size, trained))
            cache[key] = torch_evaluator(model, size)
        return cache[key]
    return default_for


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m engine`` and the ``goengine`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["analysis"]:       # KataGo's JSON analysis protocol (KaTrain)
        from engine.analysis_engine import main as analysis_main
        return analysis_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)

    def warn(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    uses_torch = args.weights not in ("uniform", "random")
    # On CUDA, threads and batch not given are measured with the first net (engine.gpu_settings).
    gpu_pending = False
    if uses_torch and (args.threads is None or args.batch is None):
        from engine.gpu_settings import on_cuda        # lazy: imports torch
        gpu_pending = on_cuda(args.device)
    if args.threads is None and not gpu_pending:
        args.threads = default_threads(args.device) if uses_torch else 1
    if args.batch is None and not gpu_pending:
        args.batch = DEFAULTS.batch
    if uses_torch:
        import torch        # lazy: loads after OMP_WAIT_POLICY is set, and only when a net is used
        # The parallelism is the search threads': each runs its own forward passes on one core.
        torch.set_num_threads(1)
    log = None
    if args.log:
        try:
            log = open(args.log, "a", encoding="utf-8")
        except OSError as exc:
            warn(f"error: cannot open log file: {exc}")
            return 2
    if args.size is not None and not 2 <= args.size <= 19:
        warn("error: --size must be 2..19")
        return 2
    try:
        factory = make_evaluator_factory(args, warn)
    except (ValueError, OSError) as exc:
        warn(f"error: {exc}")
        return 2
    if args.size is None:
        args.size = 19
    if gpu_pending:
        try:
            factory(args.size)           # the first net settles args.threads and args.batch
        except (ValueError, OSError) as exc:
            warn(f"error: {exc}")
            return 2
        args.threads = args.threads or default_threads(args.device)
        args.batch = args.batch or DEFAULTS.batch
    config = EngineConfig(size=args.size, komi=args.komi, rules=args.rules, visits=args.visits,
                          playouts=args.playouts, seconds=args.time, batch=args.batch,
                          resign=args.resign, ponder=args.ponder, lag_buffer=args.lag_buffer,
                          seed=args.seed, quiet=args.quiet, search=SearchParams(),
                          threads=args.threads)
    if args.max_memory is not None:
        config.search = dataclasses.replace(config.search, max_memory=args.max_memory)
    for options in args.search:
        config.search = searchopts.with_options(config.search, options)
    try:
        gtp = GTPEngine(factory, config, log=log)
        gtp.warm_up()
    except (ValueError, OSError) as exc:
        warn(f"error: {exc}")
        return 2
    try:
        return gtp.run()
    except KeyboardInterrupt:
        return 0
    finally:
        if log is not None:
            log.close()


if __name__ == "__main__":
    sys.exit(main())
