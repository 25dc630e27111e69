"""Benchmarks of the engine's parts: ``python -m tools.bench board|search|net|vs-leelaz``.

Each prints a human-readable table and, last, one JSON line with the figures.  Measured figures
go to docs/results/benchmarks.md.  ``net`` and ``vs-leelaz`` import
torch (and tools.bench.leelaz) when they run, so that ``board`` and ``search`` start without it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time

import numpy as np

from engine.core import Game, Search, SearchParams
from engine.play.player import Player
from tools.machine import cpu_name, load_average


def _pin_one_core() -> None:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        pass


def bench_board(args) -> dict:
    """Playouts from an empty board to two passes on one core, through the engine's own API
    (``Game.playout_ownership``: each playout also counts the final area): random ones (legal,
    non-eye-filling moves), tactical ones (the search's ``rollout_policy=1``) and tactical ones
    with MoGo's 3x3 patterns (``rollout_policy=2``)."""
    _pin_one_core()
    out = {"bench": "board"}
    for size in args.sizes:
        game = Game(size)
        rates = {}
        for kind, tactical in (("playouts_per_s", 0), ("tactical_playouts_per_s", 1),
                               ("pattern_playouts_per_s", 2)):
            game.playout_ownership(200, tactical=tactical)      # warm up
            chunk = 2000 if size <= 9 else 500
            games = 0
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < args.seconds:
                game.playout_ownership(chunk, seed=games + 1, tactical=tactical)
                games += chunk
            rates[kind] = round(games / (time.perf_counter() - t0))
        out[f"{size}x{size}"] = rates
        print(f"{size}x{size}: {rates['playouts_per_s']:10,} random playouts/s, "
              f"{rates['tactical_playouts_per_s']:10,} tactical, "
              f"{rates['pattern_playouts_per_s']:10,} with patterns")
    return out


def _uniform_search_rate(size: int, batch: int, seconds: float, feature_set: str,
                         visits_per_tree: int = 10000) -> tuple[float, int]:
    """Visits/s over fresh trees of ``visits_per_tree`` visits each (well under the memory cap,
    so every visit expands a node as in real play)."""
    policy = np.zeros((batch, size * size + 1), np.float32)
    values = np.zeros(batch, np.float32)
    visits = 0
    nodes = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        tree = Search(Game(size), SearchParams(), feature_set, max_batch=batch, seed=visits + 1)
        while tree.visits < visits_per_tree:
            n = tree.collect()
            tree.backup(policy[:n], values[:n])
        visits += tree.visits
        nodes = max(nodes, tree.memory_bytes)
        assert tree.full_events == 0
    dt = time.perf_counter() - t0
    return visits / dt, nodes   # nodes: the largest tree's bytes


def bench_search(args) -> dict:
    """Search visits/s with the uniform evaluator: tree, planes and the Python loop, one core."""
    _pin_one_core()
    out = {"bench": "search", "batch": args.batch}
    for size in args.sizes:
        rate, nodes = _uniform_search_rate(size, args.batch, args.seconds, args.features)
        out[f"{size}x{size}"] = {"visits_per_s": round(rate), "tree_bytes_per_visit": round(nodes / 10000)}
        print(f"{size}x{size}: {rate:10,.0f} visits/s (batch {args.batch}, {args.features} planes, "
              f"{nodes / 10000:,.0f} tree bytes per visit)")
    return out


def raw_rate(forward, rows: int, threads: int, seconds: float) -> tuple[float, float]:
    """(evals/s, CPU seconds per eval) of ``threads`` threads each calling ``forward()`` (``rows``
    positions a call) as fast as they can for about ``seconds``: the most the network gives
    the engine's search threads."""
    stop = threading.Event()
    counts = [0] * threads
    start = threading.Barrier(threads + 1)

    def loop(i: int) -> None:
        start.wait()
        while not stop.is_set():
            forward()
            counts[i] += 1

    workers = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    c0, t0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for w in workers:
        w.join()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    evals = sum(counts) * rows
    return evals / dt, cpu / max(1, evals)


def bench_net(args) -> dict:
    """Raw forward evals/s of a net vs the engine's visits/s with it, same batch and threads.

    The engine is what ``python -m engine`` runs: ``threads`` search threads on one tree, each
    with its own batch of ``batch`` leaves in flight, one torch thread each, the measured
    precision (engine.nets.precision), random symmetries and the evaluation cache.  "Raw" is the bare
    forward pass (input already a tensor, no symmetry, no cache) of ``threads`` threads each
    running batches of the same size.  Both run in ``rounds`` alternating slices (the machine's
    load changes); the ratio is the median of the per-round ratios.  Raw rates at other batches
    (``batches``) are printed for reference."""
    import torch                                    # heavy: only the network benches need it
    from engine.nets.evaluator import TorchEvaluator
    from engine.nets.network import NetConfig, Network
    from engine.nets.precision import Precision, choose_precision, evaluator_kwargs

    torch.set_num_threads(1)
    torch.manual_seed(0)
    threads = max(1, int(args.threads))
    out = {"bench": "net", "threads": threads, "batch": args.batch, "precision": args.dtype,
           "cpu": cpu_name(), "load": load_average(), "results": []}
    print(f"engine visits/s vs raw forward evals/s: {threads} thread(s), batch {args.batch}; CPU "
          f"{out['cpu']}; load {out['load']}", flush=True)
    for spec in args.nets:
        blocks, filters = (int(x) for x in spec.lower().split("x"))
        model = Network(NetConfig(blocks=blocks, filters=filters))
        model.eval()
        for size in args.sizes:
            option = "auto" if args.dtype in ("auto", "engine") else args.dtype
            choice = choose_precision(model, args.device, size, args.batch, option)
            prec: Precision = choice.precision
            ev = TorchEvaluator(model, device=args.device, seed=1, **evaluator_kwargs(choice))
            bare = TorchEvaluator(model, symmetries="none", cache_size=0, device=args.device,
                                  **evaluator_kwargs(choice))
            planes_n = model.config.in_planes

            def forward_of(b: int):
                x = torch.from_numpy(np.random.default_rng(0).random((b, planes_n, size, size),
                                                                     dtype=np.float32).round()).to(bare.device)
                bare._infer(x)                                   # warm up
                return lambda: bare._infer(x)

            raw_other = {b: raw_rate(forward_of(b), b, threads, min(1.0, args.seconds))[0]
                         for b in args.batches if b != args.batch}
            forward = forward_of(args.batch)
            player = Player(ev, SearchParams(), batch=args.batch, seed=1, threads=threads)
            player.search(Game(size), visits=args.batch * 4 * threads)      # warm up
            raws, engines, ratios, raw_cpu, eng_cpu = [], [], [], [], []
            for _ in range(max(1, args.rounds)):
                r, c = raw_rate(forward, args.batch, threads, args.seconds)
                raws.append(r)
                raw_cpu.append(c)
                player.clear()
                ev.clear_cache()
                c0, t0 = time.process_time(), time.perf_counter()
                res = player.search(Game(size), seconds=args.seconds)
                dt, cpu = time.perf_counter() - t0, time.process_time() - c0
                engines.append(res.playouts / dt)
                eng_cpu.append(cpu / max(1, res.playouts))
                ratios.append(engines[-1] / raws[-1])
            player.close()
            ratio = statistics.median(ratios)
            cpu_ratio = statistics.median(raw_cpu) / statistics.median(eng_cpu)
            row = {"net": spec, "size": size, "precision": prec.label, "precision_source": choice.source,
                   "raw_evals_per_s": round(statistics.median(raws), 1),
                   "engine_visits_per_s": round(statistics.median(engines), 1),
                   "ratio": round(ratio, 3), "ratios": [round(x, 3) for x in ratios],
                   "cpu_ratio": round(cpu_ratio, 3),
                   "raw_other_batches": {str(k): round(v, 1) for k, v in raw_other.items()}}
            out["results"].append(row)
            others = "  ".join(f"b{k}: {v:,.0f}" for k, v in raw_other.items())
            print(f"{spec:>7} {size}x{size} {prec.label:9s}: raw {row['raw_evals_per_s']:8,.1f}/s | engine "
                  f"{row['engine_visits_per_s']:8,.1f} visits/s | ratio {ratio:.2f} (rounds "
                  f"{', '.join(f'{x:.2f}' for x in ratios)}; per CPU-second {cpu_ratio:.2f}) | raw at {others}",
                  flush=True)
    out["load_end"] = load_average()
    worst = min((r["ratio"] for r in out["results"]), default=None)
    if worst is not None:
        out["target"] = {"ratio": 0.9, "worst": worst, "met": worst >= 0.9}
        print(f"target: engine >= 0.90 x raw: {'met' if worst >= 0.9 else 'NOT met'} (worst {worst:.2f}); "
              f"load {out['load']} -> {out['load_end']}")
    return out


def bench_vs_leelaz(args) -> dict:
    from tools.bench.leelaz import run_vs_leelaz        # imports torch: only this bench needs it
    return run_vs_leelaz(args)


def raw_benchmark(model, size: int = 19, batch: int = 16, seconds: float = 3.0, dtype=None,
                  device=None, threads: int | None = None, channels_last: bool = True,
                  winograd: bool = False) -> float:
    """Network evaluations per second of the bare forward pass (no symmetry, no cache, input
    already on the device, outputs synchronised) for ``batch`` random positions of ``size`` x
    ``size``, measured for about ``seconds`` after two warm-up passes."""
    import torch                                    # heavy: only the network benches need it
    from engine.nets.evaluator import TorchEvaluator

    ev = TorchEvaluator(model, device=device, dtype=dtype, symmetries="none", cache_size=0,
                        threads=threads, channels_last=channels_last, winograd=winograd)
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(batch, ev.planes, size, size, generator=gen) < 0.3).float().to(ev.device)

    def sync() -> None:
        if ev.device.type == "cuda":
            torch.cuda.synchronize(ev.device)

    for _ in range(2):
        ev._infer(x)
    sync()
    start = time.perf_counter()
    passes = 0
    while True:
        ev._infer(x)
        passes += 1
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return passes * batch / elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__)
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("board", help="random playouts per second (one core)")
    p.add_argument("--sizes", type=int, nargs="+", default=[9, 19])
    p.add_argument("--seconds", type=float, default=5.0)
    p = sub.add_parser("search", help="search visits/s with the uniform evaluator (one core)")
    p.add_argument("--sizes", type=int, nargs="+", default=[9, 19])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--features", default="rich", choices=["rich", "lz18"])
    p = sub.add_parser("net", help="raw network evals/s vs engine visits/s with that net")
    p.add_argument("--nets", nargs="+", default=["6x64", "10x128"], help="BLOCKSxFILTERS")
    p.add_argument("--sizes", type=int, nargs="+", default=[9, 19])
    p.add_argument("--batches", type=int, nargs="+", default=[8, 32],
                   help="other batches whose raw rate is printed for reference")
    p.add_argument("--batch", type=int, default=16, help="engine search batch (per thread)")
    p.add_argument("--threads", type=int, default=2, help="search threads = raw forward threads")
    p.add_argument("--seconds", type=float, default=4.0, help="per round and side")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--dtype", default="auto",
                   help="auto (the engine's measured precision) | fp32 | fp32-nchw | fp32-wino | bf16 | fp16")
    p.add_argument("--device", default=None)
    p = sub.add_parser("vs-leelaz", help="visits/s against leelaz on the same random LZ net")
    p.add_argument("--nets", nargs="+", default=["6x64", "10x128"])
    p.add_argument("--visits", type=int, default=1600)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--dtype", default="engine",
                   help="engine (default: the engine's measured precision, engine.nets.precision) | auto "
                        "(measure fp32 and bf16 both) | fp32 | fp32-wino | bf16")
    p.add_argument("--leelaz", default="/usr/games/leelaz")
    p.add_argument("--repeats", type=int, default=2, help="rounds per setting (order alternates)")
    p.add_argument("--parallel", choices=["threads", "split", "intra", "all"], default="threads",
                   help="how our engine uses >1 thread: threads (default, the engine's: search "
                        "threads each with its own batch in flight), split (each batch cut over "
                        "single-threaded torch workers), intra (torch's own intra-op threads), "
                        "or measure all three")
    p.add_argument("--compile", action="store_true", help="also try torch.compile on our net")
    p.add_argument("--symmetries", choices=["random", "none"], default="random")
    p.add_argument("--seed", type=int, default=1, help="seed of the random LZ nets")
    args = ap.parse_args(argv)
    fn = {"board": bench_board, "search": bench_search, "net": bench_net, "vs-leelaz": bench_vs_leelaz}[args.what]
    result = fn(args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
