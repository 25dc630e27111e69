"""A prepared GPU check: ``python -m tools.checks.gpu --out FILE`` (``--dry-run`` on a CPU).

Made for a fresh GPU machine that has torch preinstalled and nothing else fetched, run from the
root of a clone.  In under 6 minutes it

1. builds the C core when ``engine.core`` does not import (``pip install -e .
   --no-build-isolation``, offline first; then fetching what is missing; then without
   dependencies; then cffi directly);
2. measures self-play with ``tools.bench.selfplay.bench`` (a random 10x128 net, 9x9, 200
   visits, 256 games in flight, batch 512: the issue's baseline row) against the bare forward
   pass at the same batch (``tools.bench.raw_benchmark``, inside ``bench``); later, time
   allowing, the same with two lanes, 4 search threads and CUDA graphs (``--selfplay-lanes 2
   --selfplay-search-threads 4 --selfplay-cuda-graphs``);
3. measures the engine's visits/s at its defaults: ``python -m engine --size 9`` (the shipped
   net; on CUDA the threads and batch it measures itself, engine/nets/gpu_settings.py) answering two
   ``genmove`` commands, and on CUDA, when time allows, the same at ``--threads 8 --batch 64``;
   then the two-lane row and a 19x19 self-play row (two lanes) when time allows;
4. runs the suite, ``python -m pytest -q -x``, with the time that is left (at most
   ``--suite-timeout``), recording the passed, failed and skipped counts (counted from the
   progress line when the time runs out: on a GPU the whole suite needs more than the
   6 minutes, so expect ``timed_out`` with the counts so far unless ``--budget`` is raised);

and writes one JSON file with the keys ``suite``, ``selfplay_evals_per_s``,
``raw_evals_per_s``, ``selfplay_share_of_raw`` (the 9x9 row), ``engine_visits_per_s``,
``device`` and ``cpu``, plus the details (``selfplay_rows``, ``engine``, ``build``).  The file is
rewritten after every step, so what was measured survives a kill.  ``--dry-run`` does the same
on a CPU in under 2 minutes: a 1x8 net, a few seconds per measurement, and the suite replaced by
``tests/nets/test_cuda.py tests/core/test_board.py``.

Only the standard library is imported until the build is done: the C core may not exist yet.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from tools import REPO_ROOT as ROOT          # tools/__init__ imports the standard library alone
BUDGET_S = 345.0              # the whole check on a GPU, with margin under 6 minutes
DRY_BUDGET_S = 100.0          # --dry-run, under 2 minutes
DRY_SUITE = ["tests/nets/test_cuda.py", "tests/core/test_board.py"]

# (selfplay_bench settings, seconds) per row: the H200 baseline row; the same with two
# lanes, 4 search threads and CUDA graphs (train.games.batcher, engine.nets.cudagraphs); then 19x19 with them.
_PIPELINED = {"selfplay_lanes": 2, "selfplay_search_threads": 4, "selfplay_cuda_graphs": True}
GPU_ROWS = [
    ({"board_size": 9, "blocks": 10, "filters": 128, "visits": 200, "parallel_games": 256, "batch": 512}, 24.0),
    ({"board_size": 9, "blocks": 10, "filters": 128, "visits": 200, "parallel_games": 256, "batch": 512,
      **_PIPELINED}, 20.0),
    ({"board_size": 19, "blocks": 10, "filters": 128, "visits": 200, "parallel_games": 256, "batch": 512,
      **_PIPELINED}, 20.0),
]
# --dry-run: a tiny net at fp32 (no precision measurement), a few seconds a row.
DRY_ROWS = [
    ({"board_size": 9, "blocks": 1, "filters": 8, "visits": 16, "parallel_games": 8, "batch": 32,
      "inference_dtype": "fp32"}, 2.0),
    ({"board_size": 9, "blocks": 1, "filters": 8, "visits": 16, "parallel_games": 8, "batch": 32,
      "inference_dtype": "fp32", **_PIPELINED}, 1.5),
    ({"board_size": 19, "blocks": 1, "filters": 8, "visits": 16, "parallel_games": 4, "batch": 16,
      "inference_dtype": "fp32"}, 1.5),
]


def _log(text: str) -> None:
    print(f"gpu_check: {text}", file=sys.stderr, flush=True)


def _run(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
         stdin: str | None = None) -> tuple[int | None, str, float]:
    """(exit status or None when killed at ``timeout``, stdout+stderr, seconds).  The command
    runs in its own process group, killed whole at the timeout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(stdin, timeout=max(1.0, timeout))
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
        rc = None
    return rc, out or "", time.perf_counter() - t0


# -- 1. build ------------------------------------------------------------------------------------

def _core_imports() -> tuple[bool, str]:
    rc, out, _ = _run([sys.executable, "-c", "import engine.core"], 120)
    return rc == 0, out.strip()[-500:]


def build(timeout: float) -> dict[str, Any]:
    """Builds the C core when it does not import; returns what was done."""
    t0 = time.perf_counter()
    ok, why = _core_imports()
    if ok:
        return {"status": "already built", "seconds": round(time.perf_counter() - t0, 1)}
    _log(f"the C core does not import ({why.splitlines()[-1] if why else '?'}): building")
    pip = [sys.executable, "-m", "pip", "install", "--no-build-isolation"]
    attempts = [pip + ["--no-index", "-e", "."],                          # offline, dependencies present
                pip + ["--retries", "0", "--timeout", "10", "-e", "."],   # fetch what is missing
                pip + ["--no-index", "--no-deps", "-e", "."],             # the C core alone
                [sys.executable, "src_c/build_core.py"]]                  # cffi directly, in place
    tried = []
    for cmd in attempts:
        left = timeout - (time.perf_counter() - t0)
        if left < 10:
            break
        rc, out, dt = _run(cmd, left)
        tried.append({"command": " ".join(cmd[2:] if cmd[1] == "-m" else cmd[1:]), "returncode": rc,
                      "seconds": round(dt, 1), "tail": out.strip()[-300:]})
        if rc == 0 and _core_imports()[0]:
            return {"status": "built", "attempts": tried, "seconds": round(time.perf_counter() - t0, 1)}
    return {"status": "failed", "attempts": tried, "seconds": round(time.perf_counter() - t0, 1)}


# -- 2. self-play against the raw forward pass ------------------------------------------------------

def selfplay_row(settings: dict[str, Any], seconds: float, device: str | None) -> dict[str, Any]:
    """One ``tools.bench.selfplay.bench`` row (self-play evals/s and the raw forward rate at the
    same batch, in alternating slices) with the settings of ``python -m train.loop``."""
    from tools.bench.selfplay import bench
    from train.config import RunConfig
    from train.stage import stage_threads

    cfg = RunConfig.from_dict(settings).check()
    row = bench(cfg, seconds, device, stage_threads(cfg, "selfplay"), rounds=3)
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}


# -- 3. the engine -----------------------------------------------------------------------------

_SUMMARY = re.compile(r"^[BW] \S+: \d+ visits \((\d+) new, ([\d.]+)s\)", re.M)


def engine_rate(args: list[str], seconds: float, timeout: float) -> dict[str, Any]:
    """Visits/s of ``python -m engine ARGS`` over two ``genmove`` commands of about ``seconds``
    each (from its search summaries on stderr: new visits over search time), with the
    precision and GPU-settings lines it printed at start."""
    cmd = [sys.executable, "-m", "engine", "--size", "9", "--time", f"{seconds:g}", *args]
    rc, out, dt = _run(cmd, timeout, stdin="genmove b\ngenmove w\nquit\n")
    found = [(int(n), float(s)) for n, s in _SUMMARY.findall(out)]
    visits, secs = sum(n for n, _ in found), sum(s for _, s in found)
    info = {"command": " ".join(["python", "-m", "engine", *cmd[3:]]), "returncode": rc,
            "seconds": round(dt, 1), "moves": len(found), "visits": visits,
            "visits_per_s": round(visits / secs, 1) if secs > 0 else None}
    for line in out.splitlines():
        if line.startswith(("precision:", "gpu settings:")):
            info[line.split(":", 1)[0].replace(" ", "_")] = line
    if info["visits_per_s"] is None:
        info["tail"] = out.strip()[-1000:]
    return info


# -- 4. the suite ------------------------------------------------------------------------------

_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")
_PROGRESS = re.compile(r"^([.FEsxX]+)\s*(\[\s*\d+%\])?$")


def parse_pytest(output: str) -> dict[str, Any]:
    """Counts from ``pytest -q`` output: its final summary line, else (killed) the progress
    characters printed so far."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    lines = output.splitlines()
    summary = next((ln for ln in reversed(lines) if re.search(r"\bin [\d.]+s\b", ln) and _COUNT.search(ln)), None)
    if summary is not None:
        for n, what in _COUNT.findall(summary):
            key = "errors" if what.startswith("error") else what
            counts[key] = counts.get(key, 0) + int(n)
        counts["summary"] = summary.strip("= ")
    else:
        chars = "".join(m.group(1) for m in map(_PROGRESS.match, lines) if m)
        counts.update(passed=chars.count("."), failed=chars.count("F"), skipped=chars.count("s"),
                      errors=chars.count("E"))
        counts["summary"] = "no summary line (stopped before the end): counted from the progress line"
    failures = [ln.strip() for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
    if failures:
        counts["failures"] = failures[:20]
    return counts


def run_suite(paths: list[str], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *paths]
    rc, out, dt = _run(cmd, timeout)
    result = {"command": " ".join(["python", "-m", "pytest", *cmd[3:]]), "returncode": rc,
              "timed_out": rc is None, "timeout_s": round(timeout), "seconds": round(dt, 1)}
    result.update(parse_pytest(out))
    if rc not in (0, 1, None) and "failures" not in result:
        result["tail"] = out.strip()[-1500:]
    return result


# -- the whole check ---------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    """``device`` and ``cpu`` (importing torch, not the C core)."""
    import torch
    from tools.machine import cpu_label

    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        device = {"type": "cuda", "name": torch.cuda.get_device_name(0), "count": torch.cuda.device_count(),
                  "memory_gib": round(props.total_memory / 2 ** 30, 1),
                  "capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
                  "cuda": torch.version.cuda}
    else:
        device = {"type": "cpu", "name": "no CUDA device (torch.cuda.is_available() is False)"}
    return {"device": device, "cpu": {"model": cpu_label(), "cores": cores},
            "torch": torch.__version__, "python": sys.version.split()[0]}


def check(out: Path, dry_run: bool, budget: float, suite_timeout: float | None,
          suite: list[str] | None, log: Callable[[str], None] = _log) -> dict[str, Any]:
    t0 = time.perf_counter()

    def left() -> float:
        return budget - (time.perf_counter() - t0)

    result: dict[str, Any] = {"dry_run": dry_run, "suite": None, "selfplay_evals_per_s": None,
                              "raw_evals_per_s": None, "selfplay_share_of_raw": None,
                              "engine_visits_per_s": None}

    def save() -> None:
        result["seconds"] = round(time.perf_counter() - t0, 1)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(result, indent=1) + "\n")
        tmp.replace(out)

    result.update(machine())
    result["started"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    gpu = result["device"]["type"] == "cuda"
    if not gpu and not dry_run:
        log("no CUDA device here: measuring on the CPU (use --dry-run for the short version)")
    log(f"device: {result['device']['name']}; CPU: {result['cpu']['model']}, {result['cpu']['cores']} cores")
    save()

    log("build")
    result["build"] = build(min(150.0, max(30.0, left() - 60)))
    save()
    if result["build"]["status"] == "failed":
        log("the C core could not be built: nothing else can run")
        return result
    sys.path.insert(0, str(ROOT))

    rows = DRY_ROWS if dry_run else GPU_ROWS
    result["selfplay_rows"] = []

    def selfplay(i: int) -> None:
        settings, seconds = rows[i]
        try:
            row = selfplay_row(settings, seconds, None)
        except Exception as exc:                      # noqa: BLE001 - recorded, the check goes on
            row = {"board_size": settings["board_size"], "error": f"{type(exc).__name__}: {exc}"}
        result["selfplay_rows"].append(row)
        if i == 0 and "error" not in row:
            result["selfplay_evals_per_s"] = round(row["evals_per_s"], 1)
            result["raw_evals_per_s"] = round(row["raw_evals_per_s_at_batch"], 1)
            result["selfplay_share_of_raw"] = round(row["ratio_evals_to_raw"], 3)
        log(f"  {row.get('board_size')}x{row.get('board_size')}, {settings.get('selfplay_lanes', 1)} lane(s): "
            + (row["error"] if "error" in row else
               f"self-play {row['evals_per_s']:,.0f} evals/s, raw {row['raw_evals_per_s_at_batch']:,.0f} "
               f"at batch {row['mean_batch']:.0f}, share {row['ratio_evals_to_raw']:.2f}"))
        save()

    log("self-play against the raw forward pass")
    selfplay(0)

    log("the engine at its defaults")
    move_s = 1.0 if dry_run else 4.0
    result["engine"] = {"defaults": engine_rate([], move_s, max(30.0, min(150.0, left() - 30)))}
    result["engine_visits_per_s"] = result["engine"]["defaults"]["visits_per_s"]
    log(f"  {result['engine_visits_per_s']} visits/s; {result['engine']['defaults'].get('gpu_settings', '')}")
    save()
    if gpu and not dry_run and left() > 150:
        result["engine"]["threads_8_batch_64"] = engine_rate(["--threads", "8", "--batch", "64"], move_s, 60.0)
        log(f"  --threads 8 --batch 64: {result['engine']['threads_8_batch_64']['visits_per_s']} visits/s")
        save()

    # Further self-play rows (two lanes, 19x19) when the suite keeps some time.
    for i in range(1, len(rows)):
        if left() < (30.0 if dry_run else 120.0) + 2 * rows[i][1]:
            log(f"no time for the {rows[i][0]['board_size']}x{rows[i][0]['board_size']} self-play row")
            break
        pipelined = rows[i][0].get("selfplay_lanes") == 2
        log("self-play, another row" + (" (two lanes, search threads, CUDA graphs)" if pipelined else ""))
        selfplay(i)

    paths = suite if suite is not None else (DRY_SUITE if dry_run else [])
    timeout = max(20.0, left() - 5)
    if suite_timeout is not None:
        timeout = min(timeout, suite_timeout)
    log(f"the suite: python -m pytest -q -x {' '.join(paths)} (at most {timeout:.0f} s)")
    result["suite"] = run_suite(paths, timeout)
    s = result["suite"]
    log(f"  {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped"
        + (" (timed out)" if s["timed_out"] else "") + f" in {s['seconds']:.0f} s")
    save()
    log(f"done in {time.perf_counter() - t0:.0f} s: {out}")
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.checks.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("gpu_check.json"), help="the JSON file written")
    ap.add_argument("--dry-run", action="store_true",
                    help="tiny settings for a CPU, under 2 minutes (a 1x8 net, a few seconds per "
                         f"measurement, the suite replaced by {' '.join(DRY_SUITE)})")
    ap.add_argument("--budget", type=float, default=None,
                    help=f"seconds for the whole check (default {BUDGET_S:g}, --dry-run {DRY_BUDGET_S:g})")
    ap.add_argument("--suite-timeout", type=float, default=None, help="at most this many seconds for the suite")
    ap.add_argument("--suite", nargs="*", default=None, metavar="PATH",
                    help="test files or directories instead of the whole suite (default: all; "
                         "--dry-run: the small subset)")
    a = ap.parse_args(argv)
    budget = a.budget if a.budget is not None else (DRY_BUDGET_S if a.dry_run else BUDGET_S)
    result = check(a.out, a.dry_run, budget, a.suite_timeout, a.suite)
    ok = result.get("build", {}).get("status") != "failed"
    print(json.dumps({k: result.get(k) for k in ("device", "selfplay_evals_per_s", "raw_evals_per_s",
                                                 "selfplay_share_of_raw", "engine_visits_per_s")}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
