"""Self-play throughput: ``python -m tools.selfplay_bench [train.loop options]``.

Self-play (train.games.pool.GamePool, as the self-play stage runs it, no files written) with a random
net of the configuration's size, against the bare forward pass at the same batch
(``tools.bench.raw_benchmark``).  Prints a table and a JSON line; figures measured on this
project's machine are in README.md (Benchmarks).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np
import torch

from engine.core import Rules, SearchParams
from engine.nets.evaluator import TorchEvaluator
from tools.bench import raw_benchmark
from engine.nets.network import GoNet, NetConfig
from engine.nets.precision import resolve
from train.config import RunConfig, add_arguments, from_namespace, stage_threads
from train.games.pool import Agent, GamePool, GameSpec, PoolStats, Slot
from train.selfplay import play_settings


def _log(text: str) -> None:
    print(f"selfplay_bench: {text}", file=sys.stderr, flush=True)


def bench(cfg: RunConfig, seconds: float, device: str | None, threads: int, rounds: int = 6) -> dict[str, Any]:
    """Self-play throughput with a random net of the config's size, no files written, compared
    with the bare forward pass at the same batch (``tools.bench.raw_benchmark``).

    The two are measured in ``rounds`` alternating slices (self-play ``seconds/rounds``, then the
    raw forward pass a third of that), so a machine whose load changes (other processes) affects
    both alike.  Games/hour = positions/s * 3600 / mean game length, the length measured on the
    games that finished (or None)."""
    torch.set_num_threads(threads)
    torch.manual_seed(cfg.seed)
    model = GoNet(NetConfig(blocks=cfg.blocks, filters=cfg.filters, feature_set=cfg.feature_set)).eval()
    precision = resolve(model, device, cfg.board_size, cfg.batch, cfg.inference_dtype, log=_log)
    dtype = precision["dtype"]
    ev = TorchEvaluator(model, device=device, symmetries="random", seed=cfg.seed, cache_size=cfg.cache_size,
                        **precision)
    agent = Agent("bench", ev, SearchParams(c_puct=cfg.c_puct, lcb_z=0.0))
    settings = play_settings(cfg)
    rules = Rules.preset(cfg.rules, cfg.komi)
    counter = [0]

    def next_game(slot: Slot) -> GameSpec:
        counter[0] += 1
        return GameSpec(cfg.board_size, rules, agent, agent, settings, seed=counter[0], allow_resign=False)

    pool = GamePool(cfg.parallel_games, next_game, batch=cfg.batch,
                    max_leaves_per_search=cfg.max_leaves_per_search)
    for _ in range(3):
        pool.step()                                 # warm up
    mean_batch = pool.stats.leaves / max(1, pool.stats.forward_passes)
    lengths: list[int] = []
    sp_wall = raw_evals = raw_wall = 0.0
    net_evals = 0
    d = PoolStats()
    for _ in range(max(1, rounds)):
        s0, e0, t0 = pool.stats.snapshot(), ev.positions_evaluated, time.perf_counter()
        while time.perf_counter() - t0 < seconds / max(1, rounds):
            for fg in pool.step():
                lengths.append(len(fg.moves))
        sp_wall += time.perf_counter() - t0
        part = pool.stats.minus(s0)
        d = PoolStats(**{k: getattr(d, k) + getattr(part, k) for k in vars(d)})
        net_evals += ev.positions_evaluated - e0
        mean_batch = d.leaves / max(1, d.forward_passes)
        slice_s = seconds / max(1, rounds) / 3
        rate = raw_benchmark(model, size=cfg.board_size, batch=int(round(mean_batch)), seconds=slice_s,
                             dtype=dtype, device=device, threads=threads,
                             channels_last=precision["channels_last"],
                             winograd=precision.get("winograd", False))
        raw_evals += rate * slice_s
        raw_wall += slice_s
    raw = raw_evals / raw_wall
    mean_len = float(np.mean(lengths)) if lengths else None
    out = {
        "board_size": cfg.board_size, "net": f"{cfg.blocks}x{cfg.filters}", "visits": cfg.visits,
        "parallel_games": cfg.parallel_games, "batch": cfg.batch, "threads": threads,
        "device": str(ev.device), "dtype": str(ev.dtype).replace("torch.", ""),
        "selfplay_seconds": round(sp_wall, 1), "games_finished": len(lengths), "mean_game_length": mean_len,
        "positions_per_s": d.moves / sp_wall, "evals_per_s": d.leaves / sp_wall,
        "net_evals_per_s": net_evals / sp_wall, "mean_batch": mean_batch,
        "raw_evals_per_s_at_batch": raw, "ratio_evals_to_raw": d.leaves / sp_wall / raw,
        "ratio_net_evals_to_raw": net_evals / sp_wall / raw,
        "net_share": d.net_seconds / sp_wall, "search_share": d.search_seconds / sp_wall,
        "move_share": d.move_seconds / sp_wall, "cache_hits": getattr(ev, "cache_hits", 0),
        # Only from enough finished games: a random net's first games include very short ones.
        "games_per_hour": d.moves / sp_wall * 3600.0 / mean_len if len(lengths) >= 20 else None,
    }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.selfplay_bench",
                                 description="Self-play throughput (games/h, positions/s, evals/s) "
                                             "with a random net, vs the bare forward pass.")
    ap.add_argument("--seconds", type=float, default=60.0, help="self-play time measured")
    ap.add_argument("--rounds", type=int, default=6, help="alternations with the raw forward pass")
    add_arguments(ap)
    a = ap.parse_args(argv)
    cfg = from_namespace(a).check()
    out = bench(cfg, a.seconds, cfg.selfplay_device or cfg.device, stage_threads(cfg, "selfplay"), a.rounds)
    for k, v in out.items():
        print(f"{k:32s} {v:.3f}" if isinstance(v, float) else f"{k:32s} {v}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
