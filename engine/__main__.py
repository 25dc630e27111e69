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

import dataclasses
import os
import random
import sys
from typing import Sequence

# OpenMP threads that spin while waiting collapse throughput when the cores are shared with the
# GUI or other programs; passive waiting costs nothing when they are not.  Set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from engine.play import searchopts  # noqa: E402
from engine.core import Rules, SearchParams  # noqa: E402
from engine.gtp import EngineConfig, GTPEngine  # noqa: E402
from engine.nets.loading import (WEIGHTS_DIR, default_weights_path, make_evaluator_factory,  # noqa: E402
                                 net_feature_set)
from engine.options import DEFAULTS, build_parser, default_threads  # noqa: E402

__all__ = ["DEFAULTS", "WEIGHTS_DIR", "build_parser", "default_threads", "default_weights_path",
           "main", "make_evaluator_factory"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m engine`` and the ``goengine`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["analysis"]:       # KataGo's JSON analysis protocol (KaTrain)
        from engine.analysis.engine import main as analysis_main
        return analysis_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)

    def warn(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    uses_torch = args.weights not in ("uniform", "random")
    # On CUDA, threads and batch not given are measured with the first net (engine.nets.gpu_settings).
    gpu_pending = False
    if uses_torch and (args.threads is None or args.batch is None):
        from engine.nets.gpu_settings import on_cuda        # lazy: imports torch
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
    try:
        rules = Rules.preset(args.rules, args.komi)
    except ValueError as exc:
        warn(f"error: {exc}")
        return 2
    config = EngineConfig(size=args.size, rules=rules, visits=args.visits,
                          playouts=args.playouts, seconds=args.time, batch=args.batch,
                          batch_ramp=args.batch_ramp,
                          resign=args.resign, resign_turns=args.resign_turns, ponder=args.ponder, lag_buffer=args.lag_buffer,
                          seed=args.seed, quiet=args.quiet, search=SearchParams(),
                          threads=args.threads)
    if args.max_memory is not None:
        config.search = dataclasses.replace(config.search, max_memory=args.max_memory)
    try:
        feature_set = net_feature_set(factory, args.size)
    except (ValueError, OSError) as exc:
        warn(f"error: {exc}")
        return 2
    config.search = searchopts.with_net_defaults(config.search, feature_set, warn, size=args.size)
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
