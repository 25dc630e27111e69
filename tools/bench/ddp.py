"""Training samples/s of the data-parallel trainer (train/learn/ddp.py) with 1, 2, ... processes:
``python -m tools.bench.ddp --processes 1 2 --threads 1``.

Every row trains the same net at the same global batch: N processes (spawned, ``--threads``
torch threads each), rank r taking its ``batch / N`` rows of each global batch, through the
trainer's own step (:class:`train.learn.step.Trainer` for one process, :class:`train.learn.ddp.DDPTrainer`
with gloo or NCCL for more).  Batches are random legal positions with random targets, made
before the clock starts: the figure is the training step alone, as the trainer's
``train_samples_per_s``, not the replay loader.  For N > 1 it also times an all-reduce of a
tensor the size of the gradients (what DDP sends each step), and a row "1 x N*T" runs one
process with all the threads, the same cores as the N processes.  Rows are repeated
``--rounds`` times, interleaved, and the best of each is kept.  A table, then a JSON line.
Figures measured on this project's machine are in docs/results/ddp.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tools.machine import cpu_label


def make_batches(feature_set: str, planes: int, size: int, batch: int, count: int, seed: int) -> list[dict]:
    """``count`` training batches of random legal positions with random targets."""
    from engine.nets.precision import sample_planes
    rng = np.random.default_rng(seed)
    x = sample_planes(feature_set, planes, size, min(batch, 64), seed=seed)
    out = []
    for _ in range(count):
        rows = rng.integers(0, len(x), size=batch)
        out.append({"planes": np.ascontiguousarray(x[rows], dtype=np.float32),
                    "policy": rng.dirichlet(np.ones(size * size + 1), size=batch).astype(np.float32),
                    "value": rng.choice([-1.0, 1.0], size=batch).astype(np.float32),
                    "ownership": rng.choice([-1.0, 1.0], size=(batch, size * size)).astype(np.float32),
                    "score": rng.normal(0, 5, size=batch).astype(np.float32),
                    "aux_weight": np.ones(batch, np.float32)})
    return out


def _rank(rank: int, spec: dict[str, Any], port: int | None, results: Any) -> None:
    from engine.nets import weights
    from engine.nets.network import NetConfig
    from train.learn import ddp
    from train.learn.step import Trainer, TrainSettings
    world, batch = spec["world"], spec["batch"]
    torch.set_num_threads(spec["threads"])
    device = ddp.rank_device(spec["device"], rank, world)
    model = weights.new_model(NetConfig(blocks=spec["blocks"], filters=spec["filters"]), seed=1)
    settings = TrainSettings(lr=0.01, lr_warmup=0, amp=spec["amp"])
    store = ddp.make_store(world, port) if world > 1 else None    # held until the group is gone
    if store is not None:
        ddp.init_group(rank, world, store, device)
        trainer: Trainer = ddp.DDPTrainer(model, settings, device)
    else:
        trainer = Trainer(model, settings, device)
    share = batch // world
    batches = [{k: v[rank * share:(rank + 1) * share] for k, v in b.items()}
               for b in make_batches(model.feature_set, model.in_planes, spec["size"], batch,
                                     spec["warmup"] + spec["steps"], seed=2)]

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if world > 1:
            dist.barrier()

    for b in batches[:spec["warmup"]]:
        trainer.train_step(b)
    sync()
    t0 = time.perf_counter()
    for b in batches[spec["warmup"]:]:
        trainer.train_step(b)
    sync()
    seconds = time.perf_counter() - t0
    allreduce_ms = None
    if world > 1:
        grads = torch.zeros(sum(p.numel() for p in model.parameters()), device=device)
        dist.all_reduce(grads)
        sync()
        t1 = time.perf_counter()
        for _ in range(10):
            dist.all_reduce(grads)
        sync()
        allreduce_ms = (time.perf_counter() - t1) / 10 * 1e3
        times = torch.tensor([seconds], dtype=torch.float64, device=device)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)      # the slowest rank sets the pace
        seconds = float(times.item())
    if rank == 0:
        results.put({"processes": world, "threads": spec["threads"], "seconds": seconds,
                     "samples_per_s": spec["steps"] * batch / seconds, "allreduce_ms": allreduce_ms,
                     "params": sum(p.numel() for p in model.parameters())})
    if world > 1:
        dist.barrier()      # no rank leaves while another still talks to it (gloo aborts then)
        dist.destroy_process_group()
        # The result is in the pipe (SimpleQueue writes at once).  Leave without the interpreter's
        # teardown: under load a store or gloo thread still joinable then makes C++ call
        # std::terminate (SIGABRT), which fails a finished measurement.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    del store


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """One row: ``spec["world"]`` processes training ``spec["steps"]`` timed steps."""
    from train.learn import ddp
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    store = ddp.make_store(spec["world"]) if spec["world"] > 1 else None
    mp.start_processes(_rank, args=(spec, store.port if store else None, results), nprocs=spec["world"],
                       start_method="spawn")
    return results.get()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench.ddp",
                                 description="Training samples/s of the data-parallel trainer with 1, 2, ... "
                                             "processes at the same net and global batch.")
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--threads", type=int, default=1, help="torch threads of each process")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (one GPU per process)")
    ap.add_argument("--board-size", type=int, default=9)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--filters", type=int, default=64)
    ap.add_argument("--batch", type=int, default=256, help="global batch (positions per step, all ranks)")
    ap.add_argument("--amp", default="fp32", choices=("auto", "fp32", "bf16", "fp16"))
    ap.add_argument("--steps", type=int, default=10, help="timed steps per row")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    ap.add_argument("--rounds", type=int, default=2, help="times each row runs (best kept)")
    ap.add_argument("--no-same-cores", dest="same_cores", action="store_false",
                    help="leave out the 1-process rows with N x --threads threads")
    a = ap.parse_args(argv)
    if any(n < 1 or a.batch % n for n in a.processes):
        ap.error("--batch must be a multiple of every --processes count")
    base = {"device": a.device, "size": a.board_size, "blocks": a.blocks, "filters": a.filters, "batch": a.batch,
            "amp": a.amp, "steps": a.steps, "warmup": a.warmup}
    rows = [(n, a.threads) for n in a.processes]
    if a.same_cores:
        rows += [(1, n * a.threads) for n in a.processes if n > 1 and (1, n * a.threads) not in rows]
    best: dict[tuple[int, int], dict[str, Any]] = {}
    for _ in range(max(1, a.rounds)):
        for n, t in rows:
            r = measure({**base, "world": n, "threads": t})
            if (n, t) not in best or r["samples_per_s"] > best[(n, t)]["samples_per_s"]:
                best[(n, t)] = r
            print(f"{n} x {t} threads: {r['samples_per_s']:.0f} samples/s", file=sys.stderr, flush=True)
    one = best.get((1, a.threads))
    print(f"{cpu_label()}, device {a.device}, {a.board_size}x{a.board_size}, net {a.blocks}x{a.filters} "
          f"({next(iter(best.values()))['params']:,} parameters), global batch {a.batch}, {a.amp}, "
          f"{a.steps} steps, best of {a.rounds}")
    print("| processes x threads | samples/s | vs 1 process | gradient all-reduce ms |\n|---|---|---|---|")
    for n, t in rows:
        r = best[(n, t)]
        r["speedup"] = round(r["samples_per_s"] / one["samples_per_s"], 3) if one else None
        ar = f"{r['allreduce_ms']:.2f}" if r["allreduce_ms"] is not None else "-"
        print(f"| {n} x {t} | {r['samples_per_s']:.0f} | {r['speedup'] if one else '-'} | {ar} |")
    print(json.dumps({"cpu": cpu_label(), **{k: v for k, v in base.items()}, "rounds": a.rounds,
                      "rows": [best[k] for k in rows]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
