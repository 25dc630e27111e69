"""Self-play games/hour with 1, 2, 4 self-play actors on a local Ray cluster:
``python -m tools.bench.ray_selfplay --workers 1 2 4 --seconds 60``.

Each row is one ``train.loop --selfplay-only --ray local`` run (one torch thread per actor; by
default 5x5, komi 2.5, a random 1x8 net, 16 visits, 8 games in flight per actor, batch 32);
its wall time includes starting the actors.  Extra arguments go to ``train.loop``.  Figures
measured on this project's machine are in docs/results/benchmarks.md.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from train.loop import main as loop_main
from train.rundir import RunDir

DEFAULT_LOOP_ARGS = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "16",
                     "--parallel-games", "8", "--batch", "32", "--threads", "1", "--metrics-every", "5"]


def bench(workers: list[int], seconds: float, extra: list[str], ray_cpus: int | None, root: str) -> list[dict[str, Any]]:
    """One self-play-only loop per number of actors on a local Ray cluster; their summaries."""
    out = []
    for n in workers:
        run_dir = Path(root) / f"ray-bench-{n}"
        shutil.rmtree(run_dir, ignore_errors=True)
        args = ["--run-dir", str(run_dir), "--selfplay-only", "--budget", f"{seconds:g}s", "--quiet",
                "--selfplay-workers", str(n), "--ray", "local", *extra]
        if ray_cpus:
            args += ["--ray-cpus", str(ray_cpus)]
        loop_main(args)
        s = [r for r in RunDir(run_dir).read_metrics("loop") if r.get("event") == "summary"][-1]
        out.append({"actors": n, "games": s["games"], "seconds": s["seconds"],
                    "games_per_hour": s["games_per_hour"], "positions_per_hour": s["positions_per_hour"]})
        print(f"{n} actors: {s['games']} games in {s['seconds']:.0f} s = {s['games_per_hour']:.0f} games/h", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench.ray_selfplay",
                                 description="Self-play games/hour with 1, 2, 4 Ray actors on a local Ray "
                                             "cluster (train.loop --selfplay-only --ray local).")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--ray-cpus", type=int, default=4, help="logical CPUs of the local cluster")
    ap.add_argument("--root", default=tempfile.gettempdir())
    a, extra = ap.parse_known_args(argv)
    rows = bench(a.workers, a.seconds, extra or DEFAULT_LOOP_ARGS, a.ray_cpus, a.root)
    print("| self-play actors | games | seconds | games/hour |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['actors']} | {r['games']} | {r['seconds']:.0f} | {r['games_per_hour']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
