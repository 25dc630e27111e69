"""``python -m engine tune``: measures ahead of time what a later start would measure, as
KataGo's tuner does, and prints what was chosen.

For each board size (``--size``, repeatable; default 9, 13 and 19) and the net the engine plays
it with (``--weights``, else the shipped net for that size): the precision of the forward pass
(every candidate kernel, :func:`engine.nets.autoprecision.measure_missing`, cached one kernel
at a time in ``$XDG_CACHE_HOME/goengine/precision.json``), and on CUDA the search threads and
batch (:mod:`engine.nets.gpu_settings`).  What is cached already is not measured again: a second
run measures nothing.  Measured with one torch thread, as the engine runs its nets, so the
engine finds these entries."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

DEFAULT_SIZES = (9, 13, 19)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m engine tune",
        description="Measure and cache, once per machine, what the engine would otherwise measure "
                    "at its first starts (the network precision; on CUDA also search threads and "
                    "batch), then print a table of the choices.  A second run measures nothing.")
    p.add_argument("--size", type=int, action="append", metavar="N",
                   help="board size to tune for, 2..19; repeat for several (default: "
                        f"{' '.join(map(str, DEFAULT_SIZES))})")
    p.add_argument("--weights", metavar="PATH",
                   help="the network to tune for (default: the net shipped in weights/ for each size)")
    p.add_argument("--device", help="torch device: cpu, cuda, cuda:1 (default: CUDA when available)")
    p.add_argument("--batch", type=int, default=None, metavar="POSITIONS",
                   help="positions per network call the engine will use (default: the engine's, 16)")
    return p


def tune(sizes: Sequence[int], weights: str | None, device: Any = None, batch: int | None = None, *,
         log: Callable[[str], None] | None = None, timer: Callable | None = None) -> list[dict[str, Any]]:
    """One row per size: net, size, precision, whether it was measured now, rates, seconds.
    ValueError (or WeightsError) for a net that cannot be loaded or cannot play a size."""
    import torch

    from engine.nets import autoprecision, gpu_settings, weights as weights_mod
    from engine.nets.loading import check_board_size, default_weights_path
    from engine.options import DEFAULTS

    torch.set_num_threads(1)            # as the engine runs its nets: the cache key says so
    batch = batch or DEFAULTS.batch
    nets: dict[str, Any] = {}
    rows = []
    for size in sizes:
        path = weights or default_weights_path(size)
        if path is None:
            raise ValueError(f"no network for {size}x{size}: none shipped in weights/; pass --weights")
        key = str(path)
        if key not in nets:
            nets[key] = weights_mod.load_any(path)
        model, meta = nets[key]
        check_board_size(path, meta, size)
        t0 = time.perf_counter()
        row: dict[str, Any] = {"net": Path(key).name, "size": size}
        if gpu_settings.on_cuda(device):
            settings = gpu_settings.choose_gpu_settings(model, device, size, log=log, timer=timer)
            row["gpu"] = f"{settings.threads} threads x batch {settings.batch} ({settings.source})"
            choice = gpu_settings.precision_at_batch(model, device, size, settings.batch, log=log)
            measured = [] if choice.source == "cached" else list(choice.rates)
        else:
            choice, measured = autoprecision.measure_missing(model, device or "cpu", size, batch, log=log,
                                                             timer=timer)
        row.update(precision=choice.precision.label, measured=measured, rates=dict(choice.rates),
                   rejected=list(choice.rejected), seconds=time.perf_counter() - t0,
                   cache=choice.cache_file)
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a text table, then a line that says what was measured."""
    lines = [f"{'net':<16} {'size':>5}  {'precision':<10} {'source':<16} evals/s per kernel"]
    for r in rows:
        rates = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(r["rates"].items(), key=lambda kv: -kv[1]))
        source = f"measured {len(r['measured'])}" if r["measured"] else "cached"
        lines.append(f"{r['net']:<16} {r['size']:>3}x{r['size']:<2} {r['precision']:<10} {source:<16} {rates}"
                     + (f"; outside tolerance: {', '.join(r['rejected'])}" if r["rejected"] else "")
                     + (f"; {r['gpu']}" if r.get("gpu") else ""))
    count = sum(len(r["measured"]) for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    caches = sorted({r["cache"] for r in rows if r.get("cache")})
    lines.append(f"measured {count} kernel{'s' * (count != 1)} in {seconds:.1f} s" if count
                 else "measured nothing: every choice was cached already")
    if caches:
        lines.append("cache: " + ", ".join(caches))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sizes = args.size or list(DEFAULT_SIZES)
    bad = [s for s in sizes if not 2 <= s <= 19]
    if bad:
        print(f"error: --size must be 2..19, not {bad[0]}", file=sys.stderr)
        return 2
    from engine.cli.startup import failure_line, missing_weights
    missing = missing_weights(args.weights)
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    try:
        rows = tune(sizes, args.weights, args.device, args.batch,
                    log=lambda text: print(text, file=sys.stderr, flush=True))
    except Exception as exc:            # noqa: BLE001 - one line, never a traceback
        print(failure_line(exc, args.weights), file=sys.stderr)
        return 1
    print(table(rows))
    return 0


__all__ = ["DEFAULT_SIZES", "build_parser", "main", "table", "tune"]
