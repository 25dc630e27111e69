"""Start-up times of ``python -m engine``, cold (an empty ``XDG_CACHE_HOME``: nothing measured on
this machine yet) against warm (a cache that ``python -m engine tune`` filled), side by side:

- time to the ``name`` answer: ``name`` then ``quit`` piped in, from process start to ``= goengine``;
- ``printf 'genmove b\\nquit\\n' | python -m engine --size 9``: process start to exit.

Runs alternate cold and warm so load from other programs hits both alike; medians are printed.
Each engine runs under ``taskset -c CPU`` (``--cpu``).  Usage::

    python -m tools.bench.startup --repeats 3 --cpu 0
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(cache: str, stdin: str, until: str, cpu: str) -> tuple[float | None, float]:
    """(seconds to the first stdout line starting with ``until``, seconds to exit)."""
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    t0 = time.perf_counter()
    p = subprocess.Popen(["taskset", "-c", cpu, sys.executable, "-m", "engine", "--size", "9"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    p.stdin.write(stdin)
    p.stdin.flush()
    first = None
    for line in p.stdout:
        if line.startswith(until) and first is None:
            first = time.perf_counter() - t0
    p.wait()
    return first, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.bench.startup", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each (default 3)")
    ap.add_argument("--cpu", default="0", help="taskset CPU list for the engines (default 0)")
    args = ap.parse_args(argv)
    warm = tempfile.mkdtemp()
    subprocess.run(["taskset", "-c", args.cpu, sys.executable, "-m", "engine", "tune", "--size", "9"],
                   env={**os.environ, "XDG_CACHE_HOME": warm}, check=True, capture_output=True)
    rows: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    for _ in range(args.repeats):
        for label in ("cold", "warm"):
            name, _ = run(warm if label == "warm" else tempfile.mkdtemp(), "name\nquit\n", "= goengine", args.cpu)
            _, genmove = run(warm if label == "warm" else tempfile.mkdtemp(), "genmove b\nquit\n", "= ", args.cpu)
            rows[label].append((name or float("nan"), genmove))
            print(f"{label}: name answered {name:.2f} s; genmove b + quit {genmove:.2f} s", flush=True)
    for label, values in rows.items():
        print(f"{label} median: name {statistics.median(v[0] for v in values):.2f} s, "
              f"genmove {statistics.median(v[1] for v in values):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
