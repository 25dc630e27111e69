"""``python -m tools.bench vs-leelaz``: our search against Leela Zero on the same network.

For each net size a random Leela Zero network (:func:`engine.nets.lzweights.write_random`, fixed seed)
is written to a temporary directory. Then, for each thread count, the same position (the empty
19x19 board, Black to move, komi 7.5) is searched for the same number of visits by

* ``leelaz --cpu-only -w NET -t THREADS --noponder -g -v VISITS --timemanage off`` answering
  ``genmove b``; its own figure is the ``n/s`` of the line it prints on stderr after the search,
  ``"V visits, N nodes, P playouts, R n/s"`` where ``R = P / search seconds``; we also time the
  ``genmove`` round trip ourselves (weights are loaded before the clock starts);
* our engine: :class:`engine.play.player.Player` with a :class:`engine.nets.evaluator.TorchEvaluator` on
  :class:`engine.nets.lzweights.LZNet` loaded from the same file, set up as ``python -m engine``
  does by default: THREADS search threads on one tree, each with its own batch of ``batch``
  leaves in flight and one torch thread, and the engine's measured precision
  (:mod:`engine.nets.precision`); one warm-up search of another position first (and the evaluation
  cache cleared afterwards, so that both engines start with an empty cache). Our rate is
  playouts added / wall time of ``Player.search``.

The machine this runs on is usually shared, so the two engines run alternately and the whole
round is repeated (``args.repeats``, default 2); every run is reported, and the ratio is the
median of the per-round ratios (ours / leelaz's n/s within the same round). Both engines' CPU
seconds are measured too (``/proc/PID/stat`` for leelaz, ``time.process_time`` for us): visits
per CPU-second is the figure that load from other processes disturbs least.
``dtype "engine"`` (the default) uses the engine's own measured precision; ``"auto"`` measures
float32 and bfloat16 (autocast, channels-last) both and reports the faster one that is accurate
(bfloat16 is checked against float32 on positions from random games first).
With more than one thread our engine runs that many search threads (``args.parallel =
"threads"``, the engine's way); "split" instead cuts each batch into one slice per thread
(:class:`SplitEvaluator`: the slices meet once per batch, so the faster waits for the slower),
"intra" uses torch's own intra-op threading, "all" measures the three.

Result: a dict (printed as JSON by ``tools.bench``) with one row per (net, threads).

Measured results: docs/results/benchmarks.md.
"""
from __future__ import annotations

import copy
import os
import re
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.nets import lzweights
from engine.coords import to_gtp
from engine.core import Game, Rules, SearchParams
from engine.nets.evaluator import Evaluation, TorchEvaluator
from engine.play.player import Player
from engine.nets.precision import Precision, choose_precision
from tools.machine import cpu_name, load_average
from train.games.gtp_client import GTPClient

__all__ = ["run_vs_leelaz", "run_leelaz", "run_ours", "parse_leelaz_stats", "LeelazStats",
           "dtype_accuracy", "DEFAULT_SEED", "TARGET_RATIO", "TARGET_THREADS"]

DEFAULT_SEED = 1            # seed of the random nets (engine.nets.lzweights.write_random)
TARGET_RATIO = 2.0          # the goal: ours >= 2x leelaz's visits/s ...
TARGET_THREADS = 2          # ... with two threads
KOMI = 7.5                  # leelaz's default (not ours: engine.rules.DEFAULT_KOMI)
# bf16 is accepted when, on sample positions, its policy (probabilities) and value stay this
# close to float32's.
BF16_MAX_POLICY_DIFF = 0.02
BF16_MAX_VALUE_DIFF = 0.05

_STATS_RE = re.compile(r"^\s*(\d+) visits, (\d+) nodes, (\d+) playouts, ([\d.]+) n/s\s*$", re.M)


class LeelazStats(dict):
    """What one leelaz ``genmove`` reported: visits, nodes, playouts, nps (its own n/s),
    plus our own wall-clock timing of the command (seconds, wall_playouts_per_s) and move."""


def parse_leelaz_stats(stderr_text: str) -> dict[str, float]:
    """The last ``"V visits, N nodes, P playouts, R n/s"`` line of leelaz's stderr.

    Returns ``{"visits", "nodes", "playouts", "nps"}``; raises ValueError if there is none."""
    found = _STATS_RE.findall(stderr_text)
    if not found:
        raise ValueError("leelaz printed no 'visits, nodes, playouts, n/s' line")
    visits, nodes, playouts, nps = found[-1]
    return {"visits": int(visits), "nodes": int(nodes), "playouts": int(playouts),
            "nps": float(nps)}


# ----------------------------------------------------------------------------------------------
# leelaz


def run_leelaz(leelaz: str, net: str | Path, threads: int, visits: int, seed: int = 1,
               timeout: float = 1800.0) -> LeelazStats:
    """Run ``leelaz`` on ``net`` and time one ``genmove b`` on the empty board.

    Leelaz is limited to ``visits`` root visits with time management off and a generous
    byo-yomi (so that time never cuts the search short). Returns :class:`LeelazStats` with its
    reported visits/nodes/playouts/n/s, our wall-clock ``seconds`` for the genmove round trip,
    ``wall_playouts_per_s`` and the ``move``.
    """
    with tempfile.TemporaryDirectory(prefix="lzbench-") as work:
        cmd = [str(leelaz), "--cpu-only", "-w", str(Path(net).resolve()), "-t", str(threads),
               "--noponder", "-g", "-v", str(visits), "--timemanage", "off", "-s", str(seed)]
        gtp = GTPClient(cmd, default_timeout=60, label="leelaz", cwd=work,
                        env=dict(os.environ, HOME=work), stderr_lines=400)
        try:
            gtp.send("name", timeout=300)             # weights are loaded before GTP starts
            gtp.send(f"komi {KOMI}")
            gtp.send("time_settings 0 36000 1")       # 10 h per move: never binds
            gtp.send("clear_board")
            cpu0 = _proc_cpu_seconds(gtp.pid)
            t0 = time.perf_counter()
            move = gtp.send("genmove b", timeout=timeout)
            seconds = time.perf_counter() - t0
            cpu = _proc_cpu_seconds(gtp.pid) - cpu0
            stats = _stats_after_genmove(gtp)
        finally:
            gtp.close()
    out = LeelazStats(stats)
    out["seconds"] = round(seconds, 3)
    out["wall_playouts_per_s"] = round(stats["playouts"] / seconds, 1)
    out["nps"] = float(stats["nps"])
    out["cpu_seconds"] = round(cpu, 2)
    out["playouts_per_cpu_s"] = round(stats["playouts"] / cpu, 1) if cpu > 0 else None
    out["move"] = move
    return out


def _stats_after_genmove(gtp: GTPClient, wait: float = 5.0) -> dict[str, float]:
    """leelaz's statistics line: its stderr is read by the client's thread, which may be a
    moment behind the genmove reply on stdout."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return parse_leelaz_stats(gtp.stderr_tail())
        except ValueError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by process ``pid`` (all its threads); 0 if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


# ----------------------------------------------------------------------------------------------
# our engine


def _load_model(net: str | Path):
    model, _meta = lzweights.load(net)
    return model


def _sample_positions(count: int, seed: int) -> np.ndarray:
    """"lz18" planes of ``count`` positions from random legal games of 0..150 moves."""
    rng = np.random.default_rng(seed)
    planes = []
    for i in range(count):
        game = Game(19, Rules.default(komi=KOMI))
        for _ in range(int(rng.integers(0, 151)) if i else 0):
            legal = np.flatnonzero(game.legal_mask()[:-1])
            if legal.size == 0:
                break
            game.play(int(rng.choice(legal)))
        planes.append(game.features("lz18"))
    return np.stack(planes).astype(np.float32)


def dtype_accuracy(model, dtype: str, positions: int = 32, seed: int = 0) -> dict[str, float]:
    """Largest differences between ``dtype`` and float32 outputs on sample positions.

    The positions come from random legal games (the empty board first);
    returns ``{"policy_prob": max |p - p32|, "value": max |v - v32|}``."""
    x = _sample_positions(positions, seed)
    ref = TorchEvaluator(model, dtype="fp32", symmetries="none", cache_size=0).evaluate(x)
    got = TorchEvaluator(model, dtype=dtype, symmetries="none", cache_size=0).evaluate(x)
    p_ref = torch.softmax(torch.from_numpy(ref.policy).double(), 1)
    p_got = torch.softmax(torch.from_numpy(got.policy).double(), 1)
    return {"policy_prob": float((p_ref - p_got).abs().max()),
            "value": float(np.abs(ref.value - got.value).max())}


class SplitEvaluator:
    """Evaluates each batch as ``parts`` slices on ``parts`` threads, torch using one thread each.

    With ``torch.set_num_threads(1)`` every slice runs on its own OS thread without OpenMP
    barriers between the threads (like leelaz's independent search threads), instead of one
    forward pass split op by op over an OpenMP team. On a machine whose cores are shared with
    other processes libgomp's spin-waiting at each of the ~40 barriers per forward pass makes
    the intra-op mode many times slower (see the module docstring); this mode degrades
    gracefully. The GIL is released inside the convolutions. The slices still meet once per
    batch: when one thread is descheduled the other waits for it.
    """

    def __init__(self, evaluator, parts: int, min_rows: int = 2) -> None:
        self.evaluator = evaluator
        self.parts = max(1, int(parts))
        self.min_rows = max(1, int(min_rows))
        self.feature_set = evaluator.feature_set
        self.planes = evaluator.planes
        self._pool = ThreadPoolExecutor(self.parts - 1) if self.parts > 1 else None

    def evaluate(self, planes: np.ndarray, keys=None):
        b = planes.shape[0]
        parts = min(self.parts, b // self.min_rows)
        if parts <= 1 or self._pool is None:
            return self.evaluator.evaluate(planes, keys)
        cuts = np.linspace(0, b, parts + 1).round().astype(int)
        sl = [(int(cuts[i]), int(cuts[i + 1])) for i in range(parts)]

        def part(i: int):
            lo, hi = sl[i]
            return self.evaluator.evaluate(planes[lo:hi], None if keys is None else keys[lo:hi])

        futures = [self._pool.submit(part, i) for i in range(1, parts)]
        results = [part(0)] + [f.result() for f in futures]

        def cat(name: str):
            vals = [getattr(r, name) for r in results]
            return None if any(v is None for v in vals) else np.concatenate(vals)

        return Evaluation(cat("policy"), cat("value"), cat("ownership"), cat("score"))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


PARALLEL_MODES = ("threads", "split", "intra")

_COMPILED: dict[tuple[int, int], Any] = {}


def compiled_model(model, rows: int):
    """``model`` compiled by ``torch.compile`` (inductor, weights frozen), for CPU float32.

    Returns ``(module, compile_seconds)``. The module has the model's ``feature_set`` and
    ``planes``, pads every batch to ``rows`` (one static shape: no recompilation when the
    number of cache misses varies) and returns ``(policy, value)``; it survives the evaluator's
    ``copy.deepcopy`` (the compiled function is shared, not copied). Compiled once per
    (model, rows) and process; ``compile_seconds`` is 0 when it was already compiled. All
    models share one code object, so dynamo's recompile limit (8) bounds the number of
    (model, rows) pairs per process; the benchmark needs at most two per net.
    """
    key = (id(model), int(rows))
    if key in _COMPILED:
        return _COMPILED[key][1], 0.0
    inner = copy.deepcopy(model).eval().requires_grad_(False).to(memory_format=torch.channels_last)

    def forward(x):
        out = inner(x)
        return out[0], out[1]

    fn = torch.compile(forward, dynamic=False, options={"freezing": True})

    class PaddedCompiled(nn.Module):
        feature_set = model.feature_set
        planes = model.planes

        def forward(self, x):
            b = x.shape[0]
            if b > rows:
                parts = [self(x[i:i + rows]) for i in range(0, b, rows)]
                return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
            # Always a fresh tensor of one kind (layout, inference mode): anything else
            # would make dynamo's guards fail and recompile.
            with torch.inference_mode():
                buf = x.new_zeros((rows, *x.shape[1:])).contiguous(
                    memory_format=torch.channels_last)
                buf[:b].copy_(x)
                policy, value = fn(buf)
            return policy[:b], value[:b]

    module = PaddedCompiled()
    t0 = time.perf_counter()
    with torch.inference_mode():
        module(torch.zeros(rows, model.planes, 19, 19))
    seconds = time.perf_counter() - t0
    _COMPILED[key] = (model, module)          # keeps ``model`` alive, so its id stays unique
    return module, seconds


def run_ours(model, threads: int, visits: int, batch: int, dtype: str,
             symmetries: str = "random", seed: int = 1, parallel: str = "threads",
             compiled: bool = False) -> dict[str, Any]:
    """Search the empty 19x19 board (Black, komi 7.5) for ``visits`` with our engine.

    ``dtype``: a precision label (fp32, bf16, fp16, fp32-nchw, fp32-wino;
    :class:`engine.nets.precision.Precision`).
    ``parallel`` says how ``threads`` > 1 are used: "threads" (the engine's: ``threads`` search
    threads on one tree, each with its own batch in flight, torch at one thread each), "split"
    (:class:`SplitEvaluator`, each batch cut into ``threads`` slices evaluated concurrently,
    torch at one thread each) or "intra" (``torch.set_num_threads(threads)``: one forward pass
    per batch, parallel inside the ops).
    ``compiled``: run the net through :func:`compiled_model` (float32 only).
    A fresh evaluator is built (empty cache); one warm-up search of another position first
    creates the oneDNN kernels, then the cache and tree are cleared. Returns the playouts, wall
    seconds, ``visits_per_s`` (playouts / seconds), CPU seconds, evaluations and the move.
    """
    if parallel not in PARALLEL_MODES:
        raise ValueError(f"parallel must be one of {PARALLEL_MODES}")

    precision = Precision.parse(dtype)
    old_threads = torch.get_num_threads()
    split = parallel == "split" and threads > 1
    searchers = threads if parallel == "threads" else 1
    torch.set_num_threads(threads if parallel == "intra" else 1)
    splitter = None
    player = None
    compile_seconds = None
    try:
        net = model
        if compiled:
            if precision.dtype != "fp32":
                raise ValueError("compiled runs use float32")
            rows = -(-batch // threads) if split else batch
            net, compile_seconds = compiled_model(model, rows)
        ev = TorchEvaluator(net, dtype=precision.dtype, channels_last=precision.channels_last,
                            winograd=precision.winograd, symmetries=symmetries, cache_size=400_000, device="cpu", seed=seed)
        splitter = SplitEvaluator(ev, threads) if split else None
        player = Player(splitter or ev, SearchParams(), batch=batch, seed=seed, threads=searchers)
        rules = Rules.default(komi=KOMI)
        warm = Game(19, rules)
        warm.play(3 * 19 + 3)                   # another position, so nothing carries over
        player.search(warm, visits=4 * batch)
        player.clear()
        ev.clear_cache()
        calls_before = ev.positions_evaluated
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        result = player.search(Game(19, rules), visits=visits)
        seconds = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        forwarded = ev.positions_evaluated - calls_before
    finally:
        if splitter is not None:
            splitter.close()
        if player is not None:
            player.close()
        torch.set_num_threads(old_threads)
    return {"playouts": result.playouts, "visits": result.visits, "seconds": round(seconds, 3),
            "visits_per_s": round(result.playouts / seconds, 1), "cpu_seconds": round(cpu, 2),
            "visits_per_cpu_s": round(result.playouts / cpu, 1) if cpu > 0 else None,
            "evals": result.evals,
            "net_positions": forwarded, "nodes": result.nodes, "move": to_gtp(result.move, 19),
            **({"compile_seconds": round(compile_seconds, 1)} if compile_seconds else {})}


# ----------------------------------------------------------------------------------------------
# the benchmark


def _dtypes(requested: str, model=None, batch: int = 16) -> list[str]:
    """Precision labels to measure: "auto" = fp32 and bf16; "engine" = the engine's measured
    choice for ``model`` at 19x19 (engine.nets.precision, cached); or one given precision."""
    r = (requested or "auto").lower()
    if r == "auto":
        return ["fp32", "bf16"]
    if r == "engine":
        if model is None:
            raise ValueError("the engine's precision needs the model")
        old = torch.get_num_threads()
        torch.set_num_threads(1)            # as the engine runs it: one torch thread per search thread
        try:
            return [choose_precision(model, "cpu", 19, batch).precision.label]
        finally:
            torch.set_num_threads(old)
    names = {"float32": "fp32", "fp32": "fp32", "float": "fp32", "bfloat16": "bf16",
             "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16",
             "fp32-nchw": "fp32-nchw", "fp32-wino": "fp32-wino"}
    if r not in names:
        raise ValueError(f"unknown dtype {requested!r}; use engine, auto, fp32, fp32-nchw, fp32-wino or bf16")
    return [names[r]]


def _variants(dtypes: list[str], threads: int, parallel: str,
              compiled: bool = False) -> list[tuple[str, str, str, bool]]:
    """(label, dtype, parallel mode, compiled) of our configurations to measure at ``threads``
    (with one thread the modes are the same: only the first is measured)."""
    modes = list(PARALLEL_MODES) if parallel == "all" else [parallel]
    if threads <= 1:
        modes = modes[:1]
    out = []
    for d in dtypes:
        for m in modes:
            out.append((d if m == modes[0] else f"{d}-{m}", d, m, False))
    if compiled and "fp32" in dtypes:
        out += [("fp32-compiled" if m == modes[0] else f"fp32-{m}-compiled", "fp32", m, True)
                for m in modes]
    return out


def _median(xs: list[float]) -> float:
    return round(float(statistics.median(xs)), 2) if xs else float("nan")


def run_vs_leelaz(args) -> dict[str, Any]:
    """Run the comparison described in the module docstring; print a table; return a dict.

    ``args`` needs ``nets`` (["6x64", ...]), ``visits``, ``threads`` (list), ``batch``,
    ``dtype`` ("engine" = the engine's measured precision, "auto" = fp32 and bf16), ``leelaz``
    (path); optional ``repeats`` (2), ``seed`` (random-net seed, 1), ``symmetries``
    ("random"), ``parallel`` ("threads", "split", "intra" or "all": how our engine uses more
    than one thread, see :func:`run_ours`) and
    ``compile`` (False: also measure float32 through ``torch.compile``, :func:`compiled_model`).
    Raises FileNotFoundError when the leelaz binary is missing.
    """
    leelaz = str(args.leelaz)
    if not (Path(leelaz).is_file() and os.access(leelaz, os.X_OK)):
        raise FileNotFoundError(f"leelaz not found at {leelaz}")
    repeats = max(1, int(getattr(args, "repeats", 2) or 2))
    net_seed = int(getattr(args, "seed", DEFAULT_SEED) or DEFAULT_SEED)
    symmetries = getattr(args, "symmetries", None) or "random"
    parallel = getattr(args, "parallel", None) or "threads"
    if parallel not in (*PARALLEL_MODES, "all"):
        raise ValueError(f"parallel must be threads, split, intra or all, not {parallel!r}")
    if (args.dtype or "auto").lower() != "engine":
        _dtypes(args.dtype)                   # fail early on a bad name
    compiled = bool(getattr(args, "compile", False))
    out: dict[str, Any] = {
        "bench": "vs-leelaz", "visits": int(args.visits), "batch": int(args.batch),
        "dtype": args.dtype, "symmetries": symmetries, "parallel": parallel, "compile": compiled,
        "repeats": repeats,
        "net_seed": net_seed, "cpu": cpu_name(), "cpus": os.cpu_count(),
        "torch": torch.__version__, "gpu": torch.cuda.is_available(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "results": [],
    }
    print(f"vs leelaz: empty 19x19 board, genmove b, {args.visits} visits; ours: batch "
          f"{args.batch}, symmetries {symmetries}, parallel {parallel}; {repeats} alternating "
          f"rounds; CPU {out['cpu']} ({out['cpus']} cpus), load {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="lzbench-nets-") as tmp:
        for spec in args.nets:
            blocks, filters = (int(v) for v in spec.lower().split("x"))
            net_path = Path(tmp) / f"random-{blocks}x{filters}-seed{net_seed}.txt"
            lzweights.write_random(net_path, blocks, filters, net_seed)
            model = _load_model(net_path)
            dtypes = _dtypes(args.dtype, model, int(args.batch))
            accuracy = {d: dtype_accuracy(model, d) for d in dtypes if not d.startswith("fp32")}
            for threads in args.threads:
                variants = _variants(dtypes, int(threads), parallel, compiled)
                row = _measure(leelaz, net_path, model, spec, int(threads), int(args.visits),
                               int(args.batch), variants, accuracy, repeats, symmetries)
                out["results"].append(row)
    target = [r for r in out["results"] if r["threads"] == TARGET_THREADS]
    if target:
        worst = min(r["ratio"] for r in target)
        out["target"] = {"threads": TARGET_THREADS, "ratio": TARGET_RATIO,
                         "worst_ratio": worst, "met": bool(worst >= TARGET_RATIO)}
    _print_table(out)
    return out


def _accurate(dtype: str, accuracy: dict) -> bool:
    if dtype.startswith("fp32"):
        return True
    acc = accuracy.get(dtype)
    return bool(acc and acc["policy_prob"] <= BF16_MAX_POLICY_DIFF
                and acc["value"] <= BF16_MAX_VALUE_DIFF)


def _measure(leelaz: str, net_path: Path, model, spec: str, threads: int, visits: int,
             batch: int, variants: list[tuple[str, str, str, bool]], accuracy: dict,
             repeats: int, symmetries: str) -> dict[str, Any]:
    lz_runs: list[dict] = []
    ours_runs: dict[str, list[dict]] = {v[0]: [] for v in variants}
    labels = [v[0] for v in variants]
    spec_of = {label: (d, m, c) for label, d, m, c in variants}
    for rnd in range(repeats):
        # Alternate the order between rounds, so that neither engine always runs first.
        order = ["leelaz", *labels] if rnd % 2 == 0 else [*labels[::-1], "leelaz"]
        for who in order:
            load = load_average()
            if who == "leelaz":
                r = dict(run_leelaz(leelaz, net_path, threads, visits, seed=1 + rnd))
                r["load"] = load
                lz_runs.append(r)
                print(f"  {spec:>7} t{threads} round {rnd + 1}: leelaz      {r['nps']:8.1f} n/s "
                      f"({r['playouts']} playouts, {r['seconds']:.2f} s wall = "
                      f"{r['wall_playouts_per_s']:.1f}/s, {r['playouts_per_cpu_s']}/cpu-s; "
                      f"load {load})", flush=True)
            else:
                dtype, mode, comp = spec_of[who]
                r = run_ours(model, threads, visits, batch, dtype, symmetries=symmetries,
                             seed=1 + rnd, parallel=mode, compiled=comp)
                r["load"] = load
                r["parallel"] = mode if threads > 1 else None
                ours_runs[who].append(r)
                print(f"  {spec:>7} t{threads} round {rnd + 1}: ours {who:10s} "
                      f"{r['visits_per_s']:8.1f} visits/s ({r['playouts']} playouts, "
                      f"{r['seconds']:.2f} s, {r['visits_per_cpu_s']}/cpu-s; load {load})",
                      flush=True)
    lz_nps = [r["nps"] for r in lz_runs]
    lz_cpu = [r["playouts_per_cpu_s"] or 0.0 for r in lz_runs]
    ours: dict[str, Any] = {}
    for label in labels:
        dtype, mode, comp = spec_of[label]
        rates = [r["visits_per_s"] for r in ours_runs[label]]
        per_round = [o / lz for o, lz in zip(rates, lz_nps) if lz > 0]
        cpu_rates = [r["visits_per_cpu_s"] or 0.0 for r in ours_runs[label]]
        ours[label] = {
            "dtype": dtype, "parallel": mode if threads > 1 else None, "compiled": comp,
            "visits_per_s": _median(rates), "ratio": _median(per_round),
            "ratios": [round(x, 2) for x in per_round],
            "visits_per_cpu_s": _median(cpu_rates),
            "cpu_ratio": _median([o / lz for o, lz in zip(cpu_rates, lz_cpu) if lz > 0]),
            "runs": ours_runs[label],
        }
        if dtype in accuracy:
            ours[label]["max_diff_vs_fp32"] = {k: round(v, 5) for k, v in accuracy[dtype].items()}
    eligible = [label for label in labels if _accurate(spec_of[label][0], accuracy)] or labels
    best = max(eligible, key=lambda label: ours[label]["visits_per_s"])
    lz_wall = [r["wall_playouts_per_s"] for r in lz_runs]
    return {
        "net": spec, "threads": threads,
        "leelaz": {"nps": _median(lz_nps), "wall_playouts_per_s": _median(lz_wall),
                   "playouts_per_cpu_s": _median(lz_cpu), "runs": lz_runs},
        "ours": ours, "best": best,
        "ours_visits_per_s": ours[best]["visits_per_s"],
        "ratio": ours[best]["ratio"],
        "ratio_vs_leelaz_wall": _median([o["visits_per_s"] / w for o, w in
                                         zip(ours_runs[best], lz_wall) if w > 0]),
        "cpu_ratio": ours[best]["cpu_ratio"],
    }


def _print_table(out: dict[str, Any]) -> None:
    print()
    print("visits/s (median over rounds); ratio = median of per-round ours / leelaz n/s; "
          "cpu = visits per CPU-second (ours / leelaz)")
    for r in out["results"]:
        cells = "  ".join(f"{label} {o['visits_per_s']:.1f} ({o['ratio']:.2f}x, cpu "
                          f"{o['cpu_ratio']:.2f}x)" for label, o in r["ours"].items())
        print(f"{r['net']:>7} t{r['threads']}: leelaz {r['leelaz']['nps']:.1f} n/s "
              f"(wall {r['leelaz']['wall_playouts_per_s']:.1f}) | ours {cells} | best "
              f"{r['best']} {r['ratio']:.2f}x")
    if "target" in out:
        t = out["target"]
        print(f"target: ours >= {t['ratio']}x leelaz with {t['threads']} threads: "
              f"{'met' if t['met'] else 'NOT met'} (worst net {t['worst_ratio']:.2f}x)")
    seen = set()
    for r in out["results"]:
        for o in r["ours"].values():
            key = (r["net"], o["dtype"])
            if "max_diff_vs_fp32" in o and key not in seen:
                seen.add(key)
                m = o["max_diff_vs_fp32"]
                print(f"{r['net']} {o['dtype']} vs fp32 on 32 positions: max |policy prob diff| "
                      f"{m['policy_prob']:.4f}, max |value diff| {m['value']:.4f}")
