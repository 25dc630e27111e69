"""Search threads and batch on a GPU, chosen by measurement and cached as the precision is.

On a CPU the engine's defaults (one search thread per core, batch 16) are right.  On CUDA they
are not: each network call costs a launch whatever its size, so the GPU wants more leaves in
flight.  On an H200 ``python -m engine --size 9`` searched about 5,600 visits/s with 2 threads
and batch 16, and about 14,000 with ``--threads 8 --batch 64``.  Which setting is best depends
on the GPU, the CPU cores that feed it, the net and the board size, so it is measured, never
assumed.  The first time a net runs on a CUDA machine without ``--threads`` / ``--batch``,
:func:`choose_gpu_settings`

1. takes the precision measured at the largest candidate batch (:mod:`engine.nets.precision`, where
   launch overhead no longer hides the difference between fp32 and fp16/bf16);
2. runs the engine's own search (:class:`engine.play.player.Player`) on the empty board of the game's
   size for a short fixed number of visits (:func:`visits_for`, at most ``seconds``) for every
   candidate (:func:`candidates`: threads 2, 4, 8 and min(16, cores) x batch 16, 32, 64, 128;
   a value given on the command line is kept), after a warm-up search at that setting; the
   candidates within 0.8 of the best get a second round, the best round of each counts, and
   the whole measurement stops after ``budget`` seconds (60);
3. keeps the smallest setting (fewest leaves in flight: less virtual loss) within
   :data:`MARGIN` of the fastest, so noise does not pick a wide setting for nothing;
4. caches it in ``$XDG_CACHE_HOME/goengine/gpu_settings.json`` beside the precision choice,
   with :mod:`engine.nets.precision`'s cache helpers and keys: the machine (GPU model and
   capability, torch version) and the cores this process may use, the net's shape and the
   board size, and whichever of threads and batch were given.

Then the precision is measured at the batch the engine will use (:func:`precision_at_batch`:
on CUDA a cached precision measured at another batch is measured again).  On a CPU nothing here
runs: the engine keeps its defaults exactly.

Tests inject ``timer`` (no search run) and ``gpu=True`` (measure on the CPU).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.nets import flops
from engine.nets import precision as prec
from engine.nets.evaluator import resolve_device

CACHE_FILE = "gpu_settings.json"
THREADS = (2, 4, 8, 16)
BATCHES = (16, 32, 64, 128)
# The smallest setting whose rate is within this factor of the fastest is taken.
MARGIN = 1.05
# Visits of one measured search: at least MIN_VISITS, and LEAVES_FACTOR batches per thread.
MIN_VISITS = 1024
LEAVES_FACTOR = 8


@dataclass
class GpuSettings:
    """Search threads and batch, and why: ``source`` is measured or cached."""

    threads: int
    batch: int
    source: str
    rates: dict[str, float] = field(default_factory=dict)      # visits/s per "THREADSxBATCH"
    key: str = ""
    cache_file: str | None = None
    seconds: float = 0.0                                       # spent measuring

    @property
    def label(self) -> str:
        return label(self.threads, self.batch)

    def describe(self) -> str:
        """One line for stderr."""
        head = f"gpu settings: {self.threads} search thread{'s' * (self.threads != 1)}, batch {self.batch}"
        best = sorted(self.rates.items(), key=lambda kv: -kv[1])[:6]
        rates = ", ".join(f"{k} {v:,.0f}" for k, v in best)
        rates = f"{rates}{', ...' if len(self.rates) > len(best) else ''} visits/s"
        where = f" in {self.cache_file}" if self.cache_file else ""
        if self.source == "cached":
            return f"{head} (measured earlier, cached{where}: {rates}; --threads/--batch override)"
        return (f"{head} (measured in {self.seconds:.1f} s: {rates}; cached{where}; "
                f"--threads/--batch override)")


def label(threads: int, batch: int) -> str:
    return f"{int(threads)}x{int(batch)}"


def on_cuda(device: Any) -> bool:
    """Whether ``device`` (None: CUDA when available) is a CUDA device; False for a device
    torch does not know (the error comes later, where the net is placed)."""
    try:
        return resolve_device(device).type == "cuda"
    except (RuntimeError, ValueError, TypeError):
        return False


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def candidates(cores: int, threads: int | None = None, batch: int | None = None) -> list[tuple[int, int]]:
    """(threads, batch) pairs to measure: threads 2, 4, 8 and min(16, cores) (none above the
    cores but 2) x batch 16, 32, 64, 128; a given ``threads`` or ``batch`` is the only value
    of its kind."""
    top = max(2, min(16, int(cores)))
    ts = [int(threads)] if threads else sorted({t for t in THREADS if t <= top} | {top})
    bs = [int(batch)] if batch else list(BATCHES)
    return [(t, b) for t in ts for b in bs]


def visits_for(threads: int, batch: int) -> int:
    """Visits of one measured search: enough for every thread's batch to go round several
    times (``LEAVES_FACTOR`` x threads x batch), at least ``MIN_VISITS``."""
    return max(MIN_VISITS, LEAVES_FACTOR * int(threads) * int(batch))


def default_timer(threads: int, batch: int, search: Callable[[], tuple[int, float]]) -> float:
    """Visits per second of one measured search (``search() -> (visits, seconds)``)."""
    visits, seconds = search()
    return visits / max(seconds, 1e-9)


def settings_key(model: Any, device: Any, size: int, cores: int, threads: int | None,
                 batch: int | None) -> str:
    """The cache key: engine.nets.precision's machine and net keys, the cores, the given values."""
    given = f"threads {threads or 'auto'}|batch {batch or 'auto'}"
    return f"{prec.machine_key(device)}|cores {int(cores)}|{prec.net_key(model, size)}|{given}"


def _cached(entry: Any, allowed: list[tuple[int, int]]) -> GpuSettings | None:
    if not isinstance(entry, dict):
        return None
    t, b = entry.get("threads"), entry.get("batch")
    if not (isinstance(t, int) and isinstance(b, int) and (t, b) in allowed):
        return None
    rates = entry.get("rates") if isinstance(entry.get("rates"), dict) else {}
    rates = {str(k): float(v) for k, v in rates.items() if isinstance(v, (int, float))}
    return GpuSettings(t, b, "cached", rates)


def measure(model: Any, device: Any, size: int, cands: list[tuple[int, int]], *,
            evaluator_kwargs: dict[str, Any] | None = None, timer: Callable | None = None,
            seconds: float = 1.0, rounds: int = 2, budget: float = 60.0,
            log: Callable[[str], None] | None = None) -> GpuSettings:
    """Measures every candidate (see the module docstring) and returns the choice (source
    "measured").  ``timer(threads, batch, search) -> visits/s`` replaces the real timing: the
    evaluator is only built, and a search only run, when ``search()`` is called."""
    # Lazy: the search and the evaluator are only needed when a search really runs.
    from engine.core import Game, SearchParams
    from engine.nets.evaluator import TorchEvaluator
    from engine.play.player import Player

    t_start = time.perf_counter()
    dev = resolve_device(device)
    timer = timer or default_timer
    holder: list[Any] = []

    def evaluator() -> Any:
        if not holder:
            holder.append(TorchEvaluator(model, device=dev, seed=1, **(evaluator_kwargs or {})))
        return holder[0]

    def search_of(threads: int, batch: int) -> Callable[[], tuple[int, float]]:
        def run() -> tuple[int, float]:
            ev = evaluator()
            player = Player(ev, SearchParams(), batch=batch, seed=1, threads=threads)
            try:
                # warm-up: threads started, buffers allocated, kernels chosen at this batch
                player.search(Game(size), visits=min(visits_for(threads, batch), 2 * threads * batch),
                              seconds=seconds)
                player.clear()
                ev.clear_cache()
                t0 = time.perf_counter()
                res = player.search(Game(size), visits=visits_for(threads, batch), seconds=seconds)
                return res.playouts, time.perf_counter() - t0
            finally:
                player.close()
                ev.clear_cache()
        return run

    rates: dict[str, float] = {}
    alive = list(cands)
    over = False
    for _ in range(max(1, rounds)):
        for t, b in alive:
            if rates and time.perf_counter() - t_start > budget:
                over = True
                break
            r = float(timer(t, b, search_of(t, b)))
            rates[label(t, b)] = max(rates.get(label(t, b), 0.0), r)
        best = max(rates.values())
        # Far slower settings need no second round.
        alive = [c for c in alive if rates.get(label(*c), 0.0) >= 0.8 * best]
        if over:
            if log:
                log(f"gpu settings: the measuring budget of {budget:.0f} s is spent; "
                    f"{len(cands) - len(rates)} of {len(cands)} settings not measured")
            break
    best = max(rates.values())
    measured = [c for c in cands if label(*c) in rates]
    # The smallest setting within the margin: fewer leaves in flight, less virtual loss.
    chosen = min((c for c in measured if rates[label(*c)] * MARGIN >= best),
                 key=lambda c: (c[0] * c[1], c[0]))
    return GpuSettings(chosen[0], chosen[1], "measured", {k: round(v, 1) for k, v in rates.items()},
                       seconds=time.perf_counter() - t_start)


def choose_gpu_settings(model: Any, device: Any = None, size: int = 19, threads: int | None = None,
                        batch: int | None = None, precision: str | None = "auto", *,
                        cache: str | os.PathLike | None = None, timer: Callable | None = None,
                        cores: int | None = None, refresh: bool = False, seconds: float = 1.0,
                        rounds: int = 2, budget: float = 60.0,
                        log: Callable[[str], None] | None = None) -> GpuSettings:
    """Search threads and batch for ``model`` on ``device`` at ``size`` x ``size``: read from
    the cache or measured (see the module docstring).  ``threads``/``batch``: values given by
    the user, kept as they are (the other is measured).  ``precision``: the precision option
    the measurement's evaluator uses (auto: measured at the largest candidate batch).
    ``cache``: the cache file (default ``engine.nets.precision.cache_dir()/gpu_settings.json``).
    Never raises for cache trouble: an unwritable cache only costs a measurement next time."""
    dev = resolve_device(device)
    cores = int(cores) if cores else usable_cores()
    cands = candidates(cores, threads, batch)
    path = Path(cache) if cache is not None else prec.cache_dir() / CACHE_FILE
    key = settings_key(model, dev, size, cores, threads, batch)
    entries, _ok = prec.load_cache(path)
    if not refresh:
        found = _cached(entries.get(key), cands)
        if found is not None:
            found.key, found.cache_file = key, str(path)
            return found
    with flops.COUNTER.paused():           # choosing settings is not the caller's work
        choice = precision_at_batch(model, dev, size, max(b for _, b in cands), precision, log=log)
        settings = measure(model, dev, size, cands, evaluator_kwargs=prec.evaluator_kwargs(choice),
                           timer=timer, seconds=seconds, rounds=rounds, budget=budget, log=log)
    settings.key, settings.cache_file = key, str(path)
    entries, _ok = prec.load_cache(path)   # again: another process may have added entries
    entries[key] = {"threads": settings.threads, "batch": settings.batch, "rates": settings.rates,
                    "precision": choice.precision.label,
                    "measured": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        prec.save_cache(path, entries)
    except OSError as exc:
        settings.cache_file = None
        if log:
            log(f"gpu settings: cannot write the cache {path}: {exc}")
    return settings


def precision_at_batch(model: Any, device: Any, size: int, batch: int, option: str | None = "auto",
                       *, log: Callable[[str], None] | None = None, **kwargs: Any) -> prec.Choice:
    """:func:`engine.nets.precision.choose_precision` at ``batch``.  On CUDA a cached choice measured
    at another batch is measured again (launch overhead at a small batch hides what fp16/bf16
    gain at a large one); on a CPU exactly ``choose_precision``."""
    refresh = False
    if on_cuda(device) and (option is None or str(option).lower() == "auto"):
        path = Path(kwargs["cache"]) if kwargs.get("cache") is not None else prec.cache_dir() / prec.CACHE_FILE
        dev = resolve_device(device)
        entry = prec.load_cache(path)[0].get(f"{prec.machine_key(dev)}|{prec.net_key(model, size)}")
        refresh = isinstance(entry, dict) and entry.get("batch") != int(batch)
    return prec.choose_precision(model, device, size, int(batch), option, refresh=refresh, log=log,
                                 **kwargs)


def settle(args: Any, model: Any, size: int, log: Callable[[str], None] | None = None,
           **kwargs: Any) -> GpuSettings | None:
    """For ``python -m engine``: on CUDA, fills ``args.threads`` / ``args.batch`` that the
    command line left None with the measured (or cached) choice and logs it; elsewhere, or when
    both were given, does nothing and returns None."""
    threads, batch = getattr(args, "threads", None), getattr(args, "batch", None)
    if (threads is not None and batch is not None) or not on_cuda(getattr(args, "device", None)):
        return None
    settings = choose_gpu_settings(model, args.device, size, threads, batch,
                                   getattr(args, "precision", "auto"), log=log, **kwargs)
    args.threads, args.batch = settings.threads, settings.batch
    if log is not None:
        log(settings.describe())
    return settings


__all__ = ["GpuSettings", "CACHE_FILE", "THREADS", "BATCHES", "MARGIN", "candidates", "visits_for",
           "default_timer", "measure", "choose_gpu_settings", "precision_at_batch", "settle",
           "on_cuda", "usable_cores", "settings_key"]
