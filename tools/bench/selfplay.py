"""Self-play throughput: ``python -m tools.bench.selfplay [train.loop options]``.

Self-play (train.games.pool.GamePool, as the self-play stage runs it, no files written) with a random
net of the configuration's size, against the bare forward pass at the same batch
(``tools.bench.raw_benchmark``).  ``--init-weights FILE`` plays with that net instead;
``--null-net`` with a net that costs nothing (zero outputs of the right shapes), so that the
self-play rate is the CPU side alone: ``overhead_us_per_eval`` is then the search, the moves, the
pool's bookkeeping, the evaluator's cache, symmetries and copies per evaluation -- what a fast
accelerator leaves.  For a real net, ``outside_net_us_per_eval`` estimates the same as self-play
time minus the time the bare forward pass needs for those evaluations.  Prints a table and a
JSON line; figures measured on this project's machine are in docs/results/benchmarks.md.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.core import feature_planes
from engine.nets.evaluator import TorchEvaluator, resolve_device
from tools.bench.components import raw_benchmark
from engine.nets.network import GoNet
from engine.nets.precision import resolve
from engine.nets.weights import load as load_weights
from train.config import RunConfig, add_arguments, from_namespace
from train.stage import stage_threads
from train.games.pool import Agent, GamePool, GameSpec, PoolStats, Slot
from train.selfplay import play_settings


def _log(text: str) -> None:
    print(f"selfplay_bench: {text}", file=sys.stderr, flush=True)


class NullNet(nn.Module):
    """A net that costs nothing: zero policy logits, value, ownership and score for any batch
    (a parameter so that the evaluator can place it on a device).  With ``rate`` > 0 a forward
    pass of B positions sleeps B / rate seconds, as a call waits for an accelerator that
    evaluates ``rate`` positions a second (the GIL released meanwhile, as in a CUDA sync)."""

    def __init__(self, feature_set: str, in_planes: int, rate: float = 0.0):
        super().__init__()
        self.feature_set, self.in_planes, self.rate = feature_set, in_planes, float(rate)
        self.anchor = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, n = x.shape[0], x.shape[-1]
        if self.rate > 0:
            time.sleep(b / self.rate)
        return x.new_zeros(b, n * n + 1), x.new_zeros(b), x.new_zeros(b, n * n), x.new_zeros(b)


def _model(cfg: RunConfig, null_net: bool, null_rate: float = 0.0) -> tuple[nn.Module, str]:
    """The net self-play runs: a null net, the --init-weights file, or a random net."""
    if null_net:
        return (NullNet(cfg.net.feature_set, feature_planes(cfg.net.feature_set), null_rate),
                f"null ({null_rate:g}/s)" if null_rate else "null")
    if cfg.init_weights:
        model, _ = load_weights(cfg.init_weights)
        c = model.config
        return model.eval(), f"{c.blocks}x{c.filters} ({cfg.init_weights})"
    model = GoNet(cfg.net).eval()
    return model, f"{cfg.net.blocks}x{cfg.net.filters}"


def bench(cfg: RunConfig, seconds: float, device: str | None, threads: int, rounds: int = 6,
          null_net: bool = False, null_rate: float = 0.0, cpu_clock: bool = False) -> dict[str, Any]:
    """Self-play throughput with a random net of the config's size, no files written, compared
    with the bare forward pass at the same batch (``tools.bench.raw_benchmark``).

    The two are measured in ``rounds`` alternating slices (self-play ``seconds/rounds``, then the
    raw forward pass a third of that), so a machine whose load changes (other processes) affects
    both alike.  Games/hour = positions/s * 3600 / mean game length, the length measured on the
    games that finished (or None)."""
    torch.set_num_threads(threads)
    torch.manual_seed(cfg.seed)
    model, net_name = _model(cfg, null_net, null_rate)
    if null_net:
        precision: dict[str, Any] = {"dtype": "fp32", "channels_last": False}
    else:
        precision = resolve(model, device, cfg.board_size, cfg.batch, cfg.inference_dtype, log=_log)
    dtype = precision["dtype"]
    graphs = cfg.selfplay_cuda_graphs and resolve_device(device).type == "cuda"
    ev = TorchEvaluator(model, device=device, symmetries="random", seed=cfg.seed, cache_size=cfg.cache_size,
                        cuda_graphs=graphs, **precision)
    agent = Agent("bench", ev, dataclasses.replace(cfg.search, lcb_z=0.0))
    settings = play_settings(cfg)
    rules = cfg.rules
    counter = [0]

    def next_game(slot: Slot) -> GameSpec:
        counter[0] += 1
        return GameSpec(cfg.board_size, rules, agent, agent, settings, seed=counter[0], allow_resign=False)

    pool = GamePool(cfg.parallel_games, next_game, batch=cfg.batch,
                    max_leaves_per_search=cfg.max_leaves_per_search, lanes=cfg.selfplay_lanes,
                    search_threads=cfg.selfplay_search_threads, batch_ramp=cfg.batch_ramp,
                    clock=time.thread_time if cpu_clock else time.perf_counter)
    for _ in range(3):
        pool.step()                                 # warm up
    mean_batch = pool.stats.leaves / max(1, pool.stats.forward_passes)
    lengths: list[int] = []
    sp_wall = sp_cpu = raw_evals = raw_wall = raw_cpu = raw_cpu_evals = 0.0
    net_evals = 0
    d = PoolStats()
    for _ in range(max(1, rounds)):
        s0, e0, t0, c0 = pool.stats.snapshot(), ev.positions_evaluated, time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < seconds / max(1, rounds):
            for fg in pool.step():
                lengths.append(len(fg.moves))
        sp_wall += time.perf_counter() - t0
        sp_cpu += time.process_time() - c0
        part = pool.stats.minus(s0)
        d = PoolStats(**{k: getattr(d, k) + getattr(part, k) for k in vars(d)})
        net_evals += ev.positions_evaluated - e0
        mean_batch = d.leaves / max(1, d.forward_passes)
        slice_s = seconds / max(1, rounds) / 3
        c0 = time.process_time()
        rate = raw_benchmark(model, size=cfg.board_size, batch=int(round(mean_batch)), seconds=slice_s,
                             dtype=dtype, device=device, threads=threads,
                             channels_last=precision["channels_last"],
                             winograd=precision.get("winograd", False))
        raw_evals += rate * slice_s
        raw_wall += slice_s
        raw_cpu += time.process_time() - c0
        raw_cpu_evals += rate * slice_s + 2 * int(round(mean_batch))     # with its two warm-up passes
    raw = raw_evals / raw_wall
    mean_len = float(np.mean(lengths)) if lengths else None
    out = {
        "board_size": cfg.board_size, "net": net_name, "visits": cfg.play.visits,
        "parallel_games": cfg.parallel_games, "batch": cfg.batch, "lanes": cfg.selfplay_lanes,
        "search_threads": cfg.selfplay_search_threads, "batch_ramp": cfg.batch_ramp,
        "cuda_graphs": graphs, "threads": threads,
        "device": str(ev.device), "dtype": str(ev.dtype).replace("torch.", ""),
        "selfplay_seconds": round(sp_wall, 1), "games_finished": len(lengths), "mean_game_length": mean_len,
        "positions_per_s": d.moves / sp_wall, "evals_per_s": d.leaves / sp_wall,
        "net_evals_per_s": net_evals / sp_wall, "mean_batch": mean_batch,
        "raw_evals_per_s_at_batch": raw, "ratio_evals_to_raw": d.leaves / sp_wall / raw,
        "ratio_net_evals_to_raw": net_evals / sp_wall / raw,
        "us_per_eval": sp_wall / max(1, d.leaves) * 1e6,
        # CPU time of the process (all its threads) per evaluation: less sensitive than wall
        # time to other processes on a shared machine
        "cpu_us_per_eval": sp_cpu / max(1, d.leaves) * 1e6,
        # ... and of the bare forward pass (its set-up included): their ratio is the share of
        # the raw rate self-play reaches per CPU-second, whatever else runs on the machine
        "raw_cpu_us_per_eval": raw_cpu / max(1.0, raw_cpu_evals) * 1e6,
        "cpu_share_of_raw": (raw_cpu / max(1.0, raw_cpu_evals)) / max(1e-12, sp_cpu / max(1, d.leaves)),
        # self-play time the bare forward pass would not need (the null net's: all of it)
        "outside_net_us_per_eval": max(0.0, sp_wall - (0.0 if null_net and not null_rate else net_evals / raw))
        / max(1, d.leaves) * 1e6,
        # the pool's timers per evaluation (on the thread's CPU clock with --cpu-clock); with one
        # lane and one search thread, "rest" is the pool's own bookkeeping
        "clock": "thread cpu" if cpu_clock else "wall",
        "evaluator_us_per_eval": d.net_seconds / max(1, d.leaves) * 1e6,
        "search_us_per_eval": d.search_seconds / max(1, d.leaves) * 1e6,
        "move_us_per_eval": d.move_seconds / max(1, d.leaves) * 1e6,
        "rest_us_per_eval": ((sp_cpu if cpu_clock else sp_wall) - d.net_seconds - d.search_seconds - d.move_seconds
                             - d.wait_seconds) / max(1, d.leaves) * 1e6,
        "net_share": d.net_seconds / sp_wall, "search_share": d.search_seconds / sp_wall,
        "move_share": d.move_seconds / sp_wall, "wait_share": d.wait_seconds / sp_wall,
        "cache_hits": getattr(ev, "cache_hits", 0),
        # Only from enough finished games: a random net's first games include very short ones.
        "games_per_hour": d.moves / sp_wall * 3600.0 / mean_len if len(lengths) >= 20 else None,
    }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench.selfplay",
                                 description="Self-play throughput (games/h, positions/s, evals/s) "
                                             "with a random net, vs the bare forward pass.")
    ap.add_argument("--seconds", type=float, default=60.0, help="self-play time measured")
    ap.add_argument("--rounds", type=int, default=6, help="alternations with the raw forward pass")
    ap.add_argument("--null-net", action="store_true",
                    help="a net with zero outputs and no cost: measures the CPU side of self-play alone")
    ap.add_argument("--cpu-clock", action="store_true",
                    help="time the pool's parts (evaluator, search, moves) on each thread's CPU clock: "
                         "figures per evaluation that other processes on the machine do not inflate")
    ap.add_argument("--null-net-rate", type=float, default=0.0, metavar="R",
                    help="with --null-net: each forward pass waits as for an accelerator evaluating R "
                         "positions/s (e.g. a GPU's raw rate), so the share of raw shows what the CPU "
                         "side leaves of it")
    add_arguments(ap)
    a = ap.parse_args(argv)
    cfg = from_namespace(a).check()
    out = bench(cfg, a.seconds, cfg.selfplay_device or cfg.device, stage_threads(cfg, "selfplay"), a.rounds,
                null_net=a.null_net, null_rate=a.null_net_rate, cpu_clock=a.cpu_clock)
    for k, v in out.items():
        print(f"{k:32s} {v:.3f}" if isinstance(v, float) else f"{k:32s} {v}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
