"""Benchmarks: ``python -m engine.bench board|search|net|vs-leelaz``.

Each prints a human-readable table and, last, one JSON line with the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


def _pin_one_core() -> None:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    except (AttributeError, OSError):
        pass


def bench_board(args) -> dict:
    """Random playouts (legal, non-eye-filling moves to two passes) on one core."""
    from engine.core import playout_benchmark
    _pin_one_core()
    out = {"bench": "board"}
    for size in args.sizes:
        playout_benchmark(size, 200)                      # warm up
        games = 0
        moves = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            g, m = playout_benchmark(size, 2000 if size <= 9 else 500, seed=games + 1)
            games += g
            moves += m
        dt = time.perf_counter() - t0
        out[f"{size}x{size}"] = {"playouts_per_s": round(games / dt), "moves_per_s": round(moves / dt),
                                 "moves_per_game": round(moves / games, 1)}
        print(f"{size}x{size}: {games / dt:10,.0f} playouts/s {moves / dt:12,.0f} moves/s "
              f"({moves / games:.1f} moves/game)")
    return out


def _uniform_search_rate(size: int, batch: int, seconds: float, feature_set: str,
                         visits_per_tree: int = 10000) -> tuple[float, int]:
    """Visits/s over fresh trees of ``visits_per_tree`` visits each (well under the memory cap,
    so every visit expands a node as in real play)."""
    from engine.core import Game, Search, SearchParams
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


def bench_net(args) -> dict:
    """Raw forward evals/s of a net at several batches vs the engine's visits/s with it."""
    import torch
    from engine.core import Game, SearchParams
    from engine.evaluator import TorchEvaluator
    from engine.network import NetConfig, Network
    from engine.player import Player

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    out = {"bench": "net", "threads": args.threads, "dtype": args.dtype, "results": []}
    for spec in args.nets:
        blocks, filters = (int(x) for x in spec.lower().split("x"))
        model = Network(NetConfig(blocks=blocks, filters=filters))
        model.eval()
        for size in args.sizes:
            ev = TorchEvaluator(model, dtype=args.dtype, symmetries="random", cache_size=0,
                                device=args.device)
            planes_n = model.config.in_planes
            raw = {}
            for b in args.batches:
                x = np.random.default_rng(0).random((b, planes_n, size, size), dtype=np.float32).round()
                ev.evaluate(x)                              # warm up
                n = 0
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < args.seconds or n < 2 * b:
                    ev.evaluate(x)
                    n += b
                raw[b] = n / (time.perf_counter() - t0)
            player = Player(ev, SearchParams(), batch=args.batch, seed=1)
            game = Game(size)
            player.search(game, visits=args.batch * 4)      # warm up
            player.clear()
            t0 = time.perf_counter()
            res = player.search(game, seconds=args.seconds)
            dt = time.perf_counter() - t0
            engine_rate = res.playouts / dt
            raw_at_batch = raw.get(args.batch)
            if raw_at_batch is None:
                x = np.zeros((args.batch, planes_n, size, size), np.float32)
                n = 0
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < args.seconds:
                    ev.evaluate(x)
                    n += args.batch
                raw_at_batch = n / (time.perf_counter() - t0)
            ratio = engine_rate / raw_at_batch
            row = {"net": spec, "size": size, "raw_evals_per_s": {str(k): round(v, 1) for k, v in raw.items()},
                   "engine_visits_per_s": round(engine_rate, 1), "batch": args.batch,
                   "ratio": round(ratio, 3)}
            out["results"].append(row)
            raws = "  ".join(f"b{k}: {v:7.1f}" for k, v in raw.items())
            print(f"{spec:>7} {size}x{size}: raw {raws} | engine {engine_rate:7.1f} visits/s at batch "
                  f"{args.batch} | ratio {ratio:.2f}")
    return out


def bench_vs_leelaz(args) -> dict:
    from engine.lz_bench import run_vs_leelaz
    return run_vs_leelaz(args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m engine.bench", description=__doc__)
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
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 128])
    p.add_argument("--batch", type=int, default=16, help="engine search batch")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--dtype", default="auto", help="auto|float32|bfloat16|float16")
    p.add_argument("--device", default=None)
    p = sub.add_parser("vs-leelaz", help="visits/s against leelaz on the same random LZ net")
    p.add_argument("--nets", nargs="+", default=["6x64", "10x128"])
    p.add_argument("--visits", type=int, default=1600)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--dtype", default="auto")
    p.add_argument("--leelaz", default="/usr/games/leelaz")
    p.add_argument("--repeats", type=int, default=2, help="rounds per setting (order alternates)")
    p.add_argument("--parallel", choices=["split", "intra", "both"], default="split",
                   help="how our engine uses >1 thread: split batches over single-threaded torch "
                        "workers, torch's own intra-op threads, or measure both")
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
