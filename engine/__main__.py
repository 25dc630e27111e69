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
import os
import random
import sys
from typing import Any, Callable, Sequence

# OpenMP threads that spin while waiting collapse throughput when the cores are shared with the
# GUI or other programs; passive waiting costs nothing when they are not.  Set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:                    # the C core: without it the engine cannot play (doctor still runs)
    from engine.play import searchopts  # noqa: E402
    from engine.core import Game, SearchParams  # noqa: E402
    from engine.gtp import GTPEngine  # noqa: E402
    from engine.nets.loading import (WEIGHTS_DIR, default_weights_path, make_evaluator_factory,  # noqa: E402
                                     net_feature_set)
    from engine.options import DEFAULTS, build_parser, default_threads, engine_config  # noqa: E402
    _CORE_ERROR: ImportError | None = None
except ImportError as _exc:
    _CORE_ERROR = _exc
from engine.cli import startup  # noqa: E402

__all__ = ["DEFAULTS", "WEIGHTS_DIR", "build_parser", "default_threads", "default_weights_path",
           "main", "make_evaluator_factory"]

SUBCOMMANDS = ("analysis", "tune", "doctor")


@dataclasses.dataclass
class Loaded:
    """What the background start-up hands the GTP engine."""

    evaluator_for: Callable[[int], Any]
    size: int                   # the board size to start on (the net's, when --size was not given)
    threads: int
    batch: int
    search: Any                 # SearchParams with the net's defaults and --search applied


def load(args: argparse.Namespace, warn: Callable[[str], None]) -> Loaded:
    """torch, the net, its precision, the search's settings for it and one forward pass (so the
    first genmove does not pay for allocation and kernel selection): everything slow at start.
    Runs in the background (:class:`engine.cli.startup.BackgroundStart`); raises on failure."""
    uses_torch = args.weights not in ("uniform", "random")
    threads, batch = args.threads, args.batch
    # On CUDA, threads and batch not given are measured with the first net (engine.nets.gpu_settings).
    gpu_pending = False
    if uses_torch and (threads is None or batch is None):
        from engine.nets.gpu_settings import on_cuda        # lazy: imports torch
        gpu_pending = on_cuda(args.device)
    if uses_torch:
        import torch        # lazy: loads after OMP_WAIT_POLICY is set, and only when a net is used
        # The parallelism is the search threads': each runs its own forward passes on one core.
        torch.set_num_threads(1)
    if not gpu_pending:
        args.threads = threads or (default_threads(args.device) if uses_torch else 1)
        args.batch = batch or DEFAULTS.batch
    size_given = args.size
    factory = make_evaluator_factory(args, warn)
    size = args.size or 19
    args.size = size_given
    if gpu_pending:
        factory(size)           # the first net settles args.threads and args.batch
        args.threads = args.threads or default_threads(args.device)
        args.batch = args.batch or DEFAULTS.batch
    search = SearchParams()
    if args.max_memory is not None:
        search = dataclasses.replace(search, max_memory=args.max_memory)
    search = searchopts.with_net_defaults(search, net_feature_set(factory, size), warn, size=size)
    for options in args.search:
        search = searchopts.with_options(search, options)
    evaluator = factory(size)
    evaluator.evaluate(Game(size).features(getattr(evaluator, "feature_set", "rich"))[None])
    return Loaded(factory, size, args.threads, args.batch, search)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m engine`` and the ``goengine`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["doctor"]:          # runs without the C core, to say that it is missing
        from engine.cli.doctor import main as doctor_main
        return doctor_main(argv[1:])
    if _CORE_ERROR is not None:
        print(startup.core_failure(_CORE_ERROR), file=sys.stderr, flush=True)
        return 2
    if argv[:1] == ["analysis"]:       # KataGo's JSON analysis protocol (KaTrain)
        from engine.analysis.engine import main as analysis_main
        return analysis_main(argv[1:])
    if argv[:1] == ["tune"]:
        from engine.cli.tune import main as tune_main
        return tune_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)

    def warn(text: str) -> None:       # one write a line: the background measurement's lines never split ours
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    if args.size is not None and not 2 <= args.size <= 19:
        warn("error: --size must be 2..19")
        return 2
    try:
        config = engine_config(args, size=args.size or 19, batch=args.batch or DEFAULTS.batch,
                               threads=args.threads or 1, search=SearchParams())
    except ValueError as exc:             # unknown rules or a bad komi
        warn(f"error: {exc}")
        return 2
    missing = startup.missing_weights(args.weights)
    if missing is not None:
        warn(missing)
        return 2
    log = None
    if args.log:
        try:
            log = open(args.log, "a", encoding="utf-8")
        except OSError as exc:
            warn(f"error: cannot open log file: {exc}")
            return 2
    size_given = args.size
    loading = startup.BackgroundStart(lambda: load(args, warn), warn,
                                      lambda exc: startup.failure_line(exc, args.weights))

    def ready(gtp: GTPEngine) -> None:
        loaded = loading.wait()             # StartupError: the engine answers it and ends
        gtp.evaluator_for = loaded.evaluator_for
        gtp.config.threads, gtp.config.batch, gtp.config.search = loaded.threads, loaded.batch, loaded.search
        if size_given is None and not gtp.board_size_set and not gtp.game.moves:
            gtp.game = Game(loaded.size, gtp.game.rules)      # a 9x9 net starts on 9x9

    gtp = GTPEngine(lambda size: None, config, log=log, ready=ready)
    try:
        status = gtp.run()
    except KeyboardInterrupt:
        status = 0
    finally:
        if log is not None:
            log.close()
        if "engine.nets.autoprecision" in sys.modules:
            sys.modules["engine.nets.autoprecision"].stop_all()
    return 1 if gtp.startup_failed else status


if __name__ == "__main__":
    # os._exit once flushed: a load or measurement thread still inside torch must not turn a
    # clean quit into a C++ abort at interpreter shutdown (engine.cli.startup.exit_now)
    startup.exit_now(main())
