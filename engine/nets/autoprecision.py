"""``--precision auto`` without a wait at start: play at once, measure in the background.

:mod:`engine.nets.precision` measures every candidate precision ("kernel": fp32, fp32-nchw,
fp32-wino, bf16, ...) before the first move, several seconds on a CPU.  The engines (GTP and
analysis) do this instead:

1. **At start** (:func:`start_choice`): a complete choice in the cache is used as it is.
   Otherwise a quick probe (:func:`probe`: two forward passes of each candidate, its outputs
   compared with fp32's on the same sample positions) picks the precision the engine plays
   with at once.
2. **In the background** (:class:`BackgroundMeasurement`): each kernel the cache does not hold
   yet is measured in full (best of :data:`ROUNDS` timings) while the engine is idle (no
   forward pass of the playing evaluator for :data:`IDLE_SECONDS`); a timing that overlapped
   the engine's own work is thrown away and taken again.  Each measured kernel is written to
   the cache at once (temp file + rename), so a process killed mid-measurement loses only the
   kernel it was timing; the next start measures only what is missing.  When every kernel is
   in, the choice is made as :func:`engine.nets.precision.measure` makes it, cached in the same
   format, and the playing evaluator switches to it (:meth:`TorchEvaluator.use_precision`).
   The measurement gives up after :data:`BUDGET_SECONDS` of measuring.
3. **Ahead of time** (:func:`measure_missing`, ``python -m engine tune``): the same per-kernel
   measurement, in the foreground.

The cache entry (``precision.json``, key machine|net shape) holds the kernels measured so far
under ``"kernels"``, and the choice fields of :func:`engine.nets.precision.choose_precision`
once all are in.  Tests inject ``timer`` (no timing)."""
from __future__ import annotations

import atexit
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from engine.nets import flops
from engine.nets import precision as prec
from engine.nets.evaluator import _model_io, resolve_device

SCREEN_ROWS = 2           # positions of the probe's first, screening call
SECONDS = 0.25            # one timing round of a kernel in the full measurement
ROUNDS = 3                # rounds of a kernel; the best counts (others only ever slow one down)
IDLE_SECONDS = 0.3        # the engine is idle when its evaluator ran nothing for this long
BUDGET_SECONDS = 60.0     # the background measurement stops after this much measuring
SAMPLE_ROWS = 16

Log = Callable[[str], None]


def cache_path(cache: Any = None) -> Path:
    return Path(cache) if cache is not None else prec.cache_dir() / prec.CACHE_FILE


def entry_key(model: Any, device: Any, size: int) -> str:
    """The cache key of ``model`` at ``size`` on ``device`` (as :func:`choose_precision`'s)."""
    return f"{prec.machine_key(resolve_device(device))}|{prec.net_key(model, size)}"


def cached_kernels(path: Path, key: str, tolerance: dict[str, float]) -> dict[str, dict[str, Any]]:
    """The well-formed kernel records of the entry ``key``: label -> {"rate", "diff"}; a
    record measured under another tolerance is kept (its diff is re-checked when choosing)."""
    entry = prec.load_cache(path)[0].get(key)
    kernels = entry.get("kernels") if isinstance(entry, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for label, rec in (kernels or {}).items():
        if (isinstance(rec, dict) and isinstance(rec.get("rate"), (int, float))
                and isinstance(rec.get("diff"), dict)):
            out[str(label)] = rec
    return out


def save_kernel(path: Path, key: str, label: str, record: dict[str, Any]) -> None:
    """Adds one kernel's record to the entry ``key``, re-reading the file first (another
    process may have written to it), atomically."""
    entries, _ok = prec.load_cache(path)
    entry = entries.get(key) if isinstance(entries.get(key), dict) else {}
    kernels = entry.get("kernels") if isinstance(entry.get("kernels"), dict) else {}
    kernels[label] = record
    entry["kernels"] = kernels
    entries[key] = entry
    prec.save_cache(path, entries)


def complete_choice(kernels: dict[str, dict[str, Any]], cands: list[prec.Precision],
                    tolerance: dict[str, float]) -> prec.Choice | None:
    """The choice once every candidate has a record (None before): the fastest within
    ``tolerance``, the default (fp32 channels-last) unless another beats it by
    :data:`engine.nets.precision.MARGIN`."""
    if any(p.label not in kernels for p in cands):
        return None
    rates = {p.label: float(kernels[p.label]["rate"]) for p in cands}
    diffs = {p.label: kernels[p.label]["diff"] for p in cands}
    ok = [p for p in cands if prec.within_tolerance(diffs[p.label], tolerance)] or cands[:1]
    chosen = max(ok, key=lambda p: (rates[p.label], p == prec.DEFAULT))
    if prec.DEFAULT in ok and rates[chosen.label] < prec.MARGIN * rates[prec.DEFAULT.label]:
        chosen = prec.DEFAULT
    rejected = [p.label for p in cands if p not in ok]
    return prec.Choice(chosen, "measured", rates, diffs, rejected)


def save_choice(path: Path, key: str, choice: prec.Choice, tolerance: dict[str, float], batch: int) -> None:
    """Writes the choice fields that :func:`engine.nets.precision.choose_precision` reads."""
    entries, _ok = prec.load_cache(path)
    entry = entries.get(key) if isinstance(entries.get(key), dict) else {}
    entry.update({"choice": choice.precision.label, "rates": choice.rates, "diffs": choice.diffs,
                  "rejected": choice.rejected, "tolerance": tolerance, "batch": int(batch),
                  "measured": time.strftime("%Y-%m-%dT%H:%M:%S")})
    entries[key] = entry
    prec.save_cache(path, entries)


class _Bench:
    """The sample positions, fp32's outputs on them and a timing batch, made once per net."""

    def __init__(self, model: Any, device: Any, size: int, batch: int) -> None:
        self.model, self.dev, self.batch = model, resolve_device(device), int(batch)
        feature_set, planes = _model_io(model)
        self.x = prec.sample_planes(feature_set, planes, size, SAMPLE_ROWS)
        self.reference = prec.Precision("fp32", False)
        self.ref = prec._evaluator(model, self.dev, self.reference).evaluate(self.x)
        xb = np.resize(prec.sample_planes(feature_set, planes, size, min(batch, SAMPLE_ROWS), seed=1),
                       (batch, planes, size, size))
        self.xb = torch.from_numpy(np.ascontiguousarray(xb)).to(self.dev)

    def diff(self, p: prec.Precision) -> dict[str, float]:
        if p == self.reference:
            return {"policy": 0.0, "value": 0.0}
        try:
            return prec.output_diff(self.ref, prec._evaluator(self.model, self.dev, p).evaluate(self.x))
        except (RuntimeError, TypeError, ValueError):       # this dtype does not run here
            return {"policy": float("inf"), "value": float("inf")}

    def forward(self, p: prec.Precision) -> Callable[[], None]:
        ev = prec._evaluator(self.model, self.dev, p)

        def run() -> None:
            ev._infer(self.xb)
            if self.dev.type == "cuda":
                torch.cuda.synchronize(self.dev)
        run()                      # warm-up: kernel selection, allocation
        return run


def probe(model: Any, device: Any, size: int, batch: int, known: dict[str, dict[str, Any]] | None = None,
          *, tolerance: dict[str, float] | None = None, timer: Callable | None = None) -> prec.Choice:
    """The precision to play with until the full measurement is done (source "probed").

    Each candidate runs two calls of :data:`SCREEN_ROWS` positions (a warm-up, then one timed);
    one under half the best screened rate goes no further.  The others are compared with fp32
    on the sample positions, in one timed call; the fastest within tolerance is taken.  A kernel
    in ``known`` (measured in full earlier) keeps its measured rate and difference.  About as
    long as two forward passes of each candidate."""
    tol = dict(tolerance or prec.TOLERANCE)
    dev = resolve_device(device)
    cands = prec.candidates(dev)
    known = known or {}
    timer = timer or prec.default_timer
    t0 = time.perf_counter()
    kernels = {label: rec for label, rec in known.items() if label in {p.label for p in cands}}
    with flops.COUNTER.paused():
        feature_set, planes = _model_io(model)
        x = prec.sample_planes(feature_set, planes, size, SAMPLE_ROWS)
        ref = None
        best = 0.0
        for p in cands:
            if p.label in kernels:
                continue
            ev = prec._evaluator(model, dev, p)
            try:
                ev.evaluate(x[:SCREEN_ROWS])
                if p == cands[0]:            # the process's first forward pass sets torch up:
                    t0 = time.perf_counter()     # start-up's cost, not the probe's
                screen = float(timer(p, lambda: ev.evaluate(x[:SCREEN_ROWS]), SCREEN_ROWS, 0.0))
            except (RuntimeError, TypeError, ValueError):       # this dtype does not run here
                kernels[p.label] = {"rate": 0.0, "diff": {"policy": float("inf"), "value": float("inf")}}
                continue
            best = max(best, screen)
            if screen < 0.5 * best:
                kernels[p.label] = {"rate": screen, "diff": {"policy": float("inf"), "value": float("inf")}}
                continue
            out: list[Any] = []
            rate = float(timer(p, lambda: out.append(ev.evaluate(x)), SAMPLE_ROWS, 0.0))
            if not out:                                          # an injected timer ran nothing
                out.append(ev.evaluate(x))
            if p == cands[0]:                                    # fp32: the yardstick
                ref = out[0]
            elif ref is None:
                ref = prec._evaluator(model, dev, cands[0]).evaluate(x)
            kernels[p.label] = {"rate": rate, "diff": prec.output_diff(ref, out[0])}
    choice = complete_choice(kernels, cands, tol)
    assert choice is not None
    choice.source, choice.seconds = "probed", time.perf_counter() - t0
    return choice


def measure_kernel(bench: _Bench, p: prec.Precision, tolerance: dict[str, float], *,
                   timer: Callable | None = None, seconds: float = SECONDS, rounds: int = ROUNDS,
                   best_so_far: float = 0.0, busy: Callable[[], int] | None = None,
                   wait_idle: Callable[[], None] | None = None,
                   stop: threading.Event | None = None) -> dict[str, Any] | None:
    """One kernel's record: its difference from fp32 and its rate (evals/s, the best of
    ``rounds`` timings; one round when it is under half ``best_so_far``).  ``busy()`` returns a
    counter of the engine's own work: a round during which it moved is taken again after
    ``wait_idle()``.  None when ``stop`` was set before it was done."""
    timer = timer or prec.default_timer
    diff = bench.diff(p)
    record: dict[str, Any] = {"diff": diff, "rate": 0.0, "batch": bench.batch}
    if not prec.within_tolerance(diff, tolerance) and p != bench.reference:
        return record                                 # never taken: not timed
    forward = bench.forward(p)
    done = 0
    while done < max(1, rounds):
        if wait_idle is not None:
            wait_idle()
        if stop is not None and stop.is_set():
            return None
        before = busy() if busy is not None else 0
        rate = float(timer(p, forward, bench.batch, seconds))
        if busy is not None and busy() != before:
            continue                                  # the engine ran meanwhile: not a fair round
        record["rate"] = round(max(record["rate"], rate), 1)
        done += 1
        if record["rate"] < 0.5 * best_so_far:
            break                                     # far slower (bf16 without native bf16)
    record["measured"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    return record


def measure_missing(model: Any, device: Any, size: int, batch: int, *, cache: Any = None,
                    tolerance: dict[str, float] | None = None, timer: Callable | None = None,
                    seconds: float = SECONDS, rounds: int = ROUNDS, log: Log | None = None,
                    busy: Callable[[], int] | None = None, wait_idle: Callable[[], None] | None = None,
                    budget: float | None = None, stop: threading.Event | None = None
                    ) -> tuple[prec.Choice | None, list[str]]:
    """Measures the kernels the cache lacks for ``model`` at ``size``, saving each as soon as
    it is measured, then the choice.  Returns (the choice, or None when ``budget`` seconds or
    ``stop`` ended it first; the labels measured now)."""
    tol = dict(tolerance or prec.TOLERANCE)
    dev = resolve_device(device)
    path, key = cache_path(cache), entry_key(model, dev, size)
    cands = prec.candidates(dev)
    kernels = cached_kernels(path, key, tol)
    missing = [p for p in cands if p.label not in kernels]
    measured: list[str] = []
    t0 = time.perf_counter()
    if missing:
        if log:
            have = [p.label for p in cands if p.label in kernels]
            log(f"precision: measuring {', '.join(p.label for p in missing)} at {size}x{size}"
                + (f" ({', '.join(have)} cached)" if have else ""))
        with flops.COUNTER.paused():
            bench = _Bench(model, dev, size, batch)
            for p in missing:
                if (stop is not None and stop.is_set()) or (budget is not None and time.perf_counter() - t0 > budget):
                    return None, measured
                best = max([float(r["rate"]) for r in kernels.values()] or [0.0])
                record = measure_kernel(bench, p, tol, timer=timer, seconds=seconds, rounds=rounds,
                                        best_so_far=best, busy=busy, wait_idle=wait_idle, stop=stop)
                if record is None:
                    return None, measured
                kernels[p.label] = record
                measured.append(p.label)
                try:
                    save_kernel(path, key, p.label, kernels[p.label])
                except OSError as exc:
                    if log:
                        log(f"precision: cannot write the cache {path}: {exc}")
    choice = complete_choice(kernels, cands, tol)
    assert choice is not None
    choice.key, choice.cache_file = key, str(path)
    choice.seconds = time.perf_counter() - t0
    if not measured:
        choice.source = "cached"
    try:
        entry = prec.load_cache(path)[0].get(key)
        if measured or not (isinstance(entry, dict) and entry.get("choice")):
            save_choice(path, key, choice, tol, batch)
    except OSError:
        choice.cache_file = None
    return choice, measured


def start_choice(model: Any, device: Any, size: int, batch: int, *, cache: Any = None,
                 tolerance: dict[str, float] | None = None, timer: Callable | None = None) -> prec.Choice:
    """The precision to start with: the cached choice when there is one (source "cached"),
    else the quick probe's (source "probed", the background measurement to follow)."""
    tol = dict(tolerance or prec.TOLERANCE)
    dev = resolve_device(device)
    path, key = cache_path(cache), entry_key(model, dev, size)
    found = prec._cached_choice(prec.load_cache(path)[0].get(key), prec.candidates(dev), tol)
    if found is None:
        found = probe(model, dev, size, batch, cached_kernels(path, key, tol), tolerance=tol, timer=timer)
    found.key, found.cache_file = key, str(path)
    return found


def describe_probe(choice: prec.Choice) -> str:
    """The stderr line for a precision the engine starts with before the full measurement."""
    rates = ", ".join(f"{k} {v:,.0f}/s" for k, v in sorted(choice.rates.items(), key=lambda kv: -kv[1]))
    return (f"precision: {choice.precision.label} for now (a {choice.seconds:.1f} s probe: {rates}); "
            "measuring every precision in the background while idle, then switching to the fastest "
            "(python -m engine tune measures ahead of time)")


class BackgroundMeasurement(threading.Thread):
    """Measures the kernels missing from the cache while ``evaluator`` is idle, then switches
    ``evaluator`` to the choice (see the module docstring).  A daemon: it never holds the
    process up, and what it measured is already on disk."""

    def __init__(self, model: Any, device: Any, size: int, batch: int, evaluator: Any, *,
                 cache: Any = None, log: Log | None = None, timer: Callable | None = None,
                 budget: float = BUDGET_SECONDS, seconds: float = SECONDS, rounds: int = ROUNDS) -> None:
        super().__init__(name="precision-measurement", daemon=True)
        self.model, self.device, self.size, self.batch = model, device, size, batch
        self.evaluator, self.cache, self.log, self.timer = evaluator, cache, log, timer
        self.budget, self.seconds, self.rounds = budget, seconds, rounds
        self.stop_event = threading.Event()
        self.choice: prec.Choice | None = None
        self.error: BaseException | None = None
        _RUNNING.add(self)

    def _busy(self) -> int:
        return int(getattr(self.evaluator, "positions_evaluated", 0))

    def _wait_idle(self) -> None:
        while not self.stop_event.is_set():
            before = self._busy()
            if self.stop_event.wait(IDLE_SECONDS):
                return
            if self._busy() == before:
                return

    def run(self) -> None:
        try:
            self.choice, _measured = measure_missing(
                self.model, self.device, self.size, self.batch, cache=self.cache, timer=self.timer,
                seconds=self.seconds, rounds=self.rounds, log=self.log, busy=self._busy,
                wait_idle=self._wait_idle, budget=self.budget, stop=self.stop_event)
        except Exception as exc:        # noqa: BLE001 - the engine plays on with what it has
            self.error = exc
            if self.log:
                self.log(f"precision: the background measurement failed ({type(exc).__name__}: {exc}); "
                         "playing on with the precision chosen at start")
            return
        if self.choice is None:
            if self.log and not self.stop_event.is_set():
                self.log(f"precision: background measurement stopped after {self.budget:.0f} s; "
                         "what it measured is cached and the next start goes on from there")
            return
        if hasattr(self.evaluator, "use_precision"):
            self.evaluator.use_precision(**prec.evaluator_kwargs(self.choice))
        if self.log:
            self.log(self.choice.describe().replace("precision: ", "precision: from now on ", 1))


_RUNNING: "weakref.WeakSet[BackgroundMeasurement]" = weakref.WeakSet()


def stop_all(timeout: float = 5.0) -> None:
    """Stops the background measurements of this process and waits up to ``timeout`` seconds
    for each to leave torch (the engines call it before they exit)."""
    for m in list(_RUNNING):
        m.stop_event.set()
    for m in list(_RUNNING):
        if m.is_alive():
            m.join(timeout)


# A measurement thread still inside torch when the interpreter finalizes aborts the process
# ("terminate called without an active exception"): stop them first.
atexit.register(stop_all)


__all__ = ["SCREEN_ROWS", "stop_all", "SECONDS", "ROUNDS", "IDLE_SECONDS", "BUDGET_SECONDS", "BackgroundMeasurement",
           "cached_kernels", "complete_choice", "describe_probe", "entry_key", "measure_kernel",
           "measure_missing", "probe", "save_choice", "save_kernel", "start_choice"]
