"""Precision and memory layout of a net's forward pass, chosen by measurement and cached.

Which compute dtype is fastest depends on the machine (PERF.md: bf16 doubles throughput on CPUs
with AVX512_BF16 and runs 6-10x slower on CPUs without it; on CUDA fp16/bf16 use tensor cores),
so it is measured, never assumed.  The first time a net shape runs on a machine,
:func:`choose_precision`

1. runs every candidate (:func:`candidates`: fp32 with and without channels-last, fp32 with
   Winograd 3x3 convolutions (:mod:`engine.nets.winograd`), bf16 channels-last, and on CUDA fp16 and
   bf16) on sample positions and compares its policy
   (softmax probabilities) and value with plain fp32's; a candidate further away than
   :data:`TOLERANCE` is never taken (and not timed);
2. times the others on a batch of the engine's size, in interleaved rounds (the best round of
   each counts: other processes only ever slow a round down), and keeps the fastest (the
   default, fp32 channels-last, unless another is :data:`MARGIN` faster: noise must not flip
   the choice);
3. caches the choice in ``$XDG_CACHE_HOME/goengine/precision.json`` (``~/.cache/goengine`` by
   default), keyed by the machine (CPU model and a hash of its flags, or the CUDA device name
   and capability; torch version) and the net's shape (tensor names and shapes, board size).

Later starts read the cache (a cached choice is re-checked against the tolerance it was
recorded with, and an unreadable or malformed cache file is ignored and rewritten).  A forced
precision (``--precision fp32``) skips all of this.  torch.compile is not a candidate: it gained
9-18% on the bare forward pass but nothing measurable in a whole search, for 10-35 s of
compilation at every start (tools/bench/leelaz.py).

Tests inject ``timer`` (no timing) and ``accuracy`` (any difference they need).
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import math
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from engine.nets import flops
from engine.core import FEATURE_SETS, Game
from engine.nets.evaluator import Evaluation, TorchEvaluator, _model_io, resolve_device
from engine.fileio import atomic_write

CACHE_VERSION = 2      # 2: Winograd joined the candidates; older choices are measured again
CACHE_FILE = "precision.json"
# A candidate is accepted when, on the sample positions, no policy probability moves by more
# than TOLERANCE["policy"] and no value by more than TOLERANCE["value"] from fp32's.
TOLERANCE = {"policy": 0.02, "value": 0.05}
DTYPES = ("fp32", "bf16", "fp16")
# Another candidate replaces the default (fp32 channels-last) only when it is this much faster.
MARGIN = 1.05


@dataclass(frozen=True)
class Precision:
    """How a forward pass runs: compute dtype (autocast), memory layout, and whether 3x3
    convolutions run by Winograd's algorithm (CPU, fp32 only)."""

    dtype: str = "fp32"           # fp32 | bf16 | fp16
    channels_last: bool = True
    winograd: bool = False

    @property
    def label(self) -> str:
        if self.winograd:
            return f"{self.dtype}-wino"
        return self.dtype if self.channels_last else f"{self.dtype}-nchw"

    @classmethod
    def parse(cls, label: str) -> "Precision":
        """``fp32``, ``bf16``, ``fp16`` (channels-last), the same with ``-nchw``, or
        ``fp32-wino`` (Winograd convolutions on the CPU)."""
        text = str(label).strip().lower()
        aliases = {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16"}
        suffix = next((x for x in ("-nchw", "-wino") if text.endswith(x)), "")
        base = aliases.get(text[: len(text) - len(suffix)], text[: len(text) - len(suffix)])
        if base not in DTYPES or (suffix == "-wino" and base != "fp32"):
            raise ValueError(f"unknown precision {label!r}; use auto, fp32, bf16, fp16, fp32-nchw or fp32-wino")
        return cls(base, suffix != "-nchw", suffix == "-wino")


DEFAULT = Precision("fp32", True)


@dataclass
class Choice:
    """The precision to use and why: ``source`` is forced, cached or measured."""

    precision: Precision
    source: str
    rates: dict[str, float] = field(default_factory=dict)      # evals/s per candidate label
    diffs: dict[str, dict[str, float]] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)          # outside the tolerance
    key: str = ""
    cache_file: str | None = None
    seconds: float = 0.0                                       # spent measuring

    @property
    def dtype(self) -> str:
        return self.precision.dtype

    @property
    def channels_last(self) -> bool:
        return self.precision.channels_last

    def describe(self) -> str:
        """One line for stderr."""
        layout = "Winograd" if self.precision.winograd else "channels-last" if self.channels_last else "NCHW"
        head = f"precision: {self.dtype} {layout}"
        if self.source == "forced":
            return f"{head} (forced by --precision)"
        rates = ", ".join(f"{k} {v:,.0f}/s" for k, v in sorted(self.rates.items(), key=lambda kv: -kv[1]))
        bad = f"; outside tolerance: {', '.join(self.rejected)}" if self.rejected else ""
        where = f" in {self.cache_file}" if self.cache_file else ""
        if self.source == "cached":
            return f"{head} (measured earlier, cached{where}: {rates}{bad})"
        return f"{head} (measured in {self.seconds:.1f} s: {rates}{bad}; cached{where})"


# -- keys ---------------------------------------------------------------------------------------

def _cpu_info() -> tuple[str, str]:
    """(CPU model name, its flags sorted) from /proc/cpuinfo (first CPU)."""
    model, flags = "", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return model or platform.processor() or platform.machine() or "unknown", flags


def machine_key(device: Any) -> str:
    """What the measurement depends on besides the net: device model (on a CPU, with the torch
    thread count) and torch version."""
    dev = torch.device(device)
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        name = torch.cuda.get_device_name(index)
        cap = ".".join(str(x) for x in torch.cuda.get_device_capability(index))
        what = f"cuda:{name}:sm{cap}"
    else:
        model, flags = _cpu_info()
        # The torch thread count too: one choice can be best on one core and not on several.
        what = (f"{dev.type}:{model}:{hashlib.sha1(flags.encode()).hexdigest()[:12]}"
                f":threads {torch.get_num_threads()}")
    return f"{what}|torch {torch.__version__}"


def net_key(model: Any, size: int) -> str:
    """The net's shape (class, tensor names and shapes) at a board size."""
    h = hashlib.sha1(type(model).__name__.encode())
    for name, t in sorted(model.state_dict().items()):
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype};".encode())
    return f"{type(model).__name__}:{h.hexdigest()[:16]}:{size}x{size}"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "goengine"


# -- the cache file -----------------------------------------------------------------------------

def load_cache(path: Path) -> tuple[dict[str, Any], bool]:
    """(entries, ok): the cached choices, and False when the file was unreadable or malformed
    (then the entries are empty and the file is rewritten with the next choice)."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}, True
    except (OSError, ValueError, UnicodeDecodeError):
        return {}, False
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION \
            or not isinstance(data.get("entries"), dict):
        return {}, False
    return data["entries"], True


def save_cache(path: Path, entries: dict[str, Any]) -> None:

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"version": CACHE_VERSION, "entries": entries}, indent=1, sort_keys=True)
    atomic_write(path, lambda f: f.write(text.encode()))


def within_tolerance(diff: Any, tolerance: dict[str, float]) -> bool:
    return (isinstance(diff, dict) and isinstance(diff.get("policy"), (int, float))
            and isinstance(diff.get("value"), (int, float))
            and 0 <= diff["policy"] <= tolerance["policy"] and 0 <= diff["value"] <= tolerance["value"])


def _cached_choice(entry: Any, allowed: list[Precision], tolerance: dict[str, float]) -> Choice | None:
    """The Choice an entry records, or None when it is malformed, not a candidate here, or its
    recorded difference from fp32 is outside ``tolerance``."""
    if not isinstance(entry, dict):
        return None
    try:
        precision = Precision.parse(entry["choice"])
    except (KeyError, ValueError, TypeError):
        return None
    if precision not in allowed:
        return None
    diffs = entry.get("diffs")
    if not isinstance(diffs, dict) or not within_tolerance(diffs.get(precision.label), tolerance):
        return None
    rates = entry.get("rates") if isinstance(entry.get("rates"), dict) else {}
    rates = {str(k): float(v) for k, v in rates.items() if isinstance(v, (int, float))}
    rejected = [str(x) for x in entry.get("rejected", []) if isinstance(x, str)]
    return Choice(precision, "cached", rates, diffs, rejected)


# -- measuring ----------------------------------------------------------------------------------

def candidates(device: Any) -> list[Precision]:
    """What is tried on ``device``: fp32 (NCHW, channels-last and Winograd) and bf16
    channels-last on a CPU; fp32, fp16 and (where supported) bf16, channels-last, on CUDA."""
    dev = torch.device(device)
    if dev.type == "cuda":
        out = [Precision("fp32"), Precision("fp16")]
        if torch.cuda.is_bf16_supported():
            out.append(Precision("bf16"))
        return out
    if dev.type == "cpu":
        return [Precision("fp32", False), Precision("fp32"), Precision("fp32", True, True), Precision("bf16")]
    return [Precision("fp32")]


def sample_planes(feature_set: str, planes: int, size: int, rows: int, seed: int = 0) -> np.ndarray:
    """Input planes of ``rows`` positions from random legal games (the empty board first), or
    random binary planes for a feature set the C core does not know."""

    rng = np.random.default_rng(seed)
    if feature_set not in FEATURE_SETS or (feature_set == "lz18" and size != 19):
        return (rng.random((rows, planes, size, size)) < 0.3).astype(np.float32)
    out = []
    for i in range(rows):
        game = Game(size)
        for _ in range(int(rng.integers(0, size * size * 2 // 5 + 1)) if i else 0):
            legal = np.flatnonzero(game.legal_mask()[:-1])
            if legal.size == 0:
                break
            game.play(int(rng.choice(legal)))
        out.append(game.features(feature_set))
    return np.stack(out).astype(np.float32)


def output_diff(ref: Any, got: Any) -> dict[str, float]:
    """Largest |probability| and |value| differences between two Evaluations."""
    def softmax(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    policy = float(np.abs(softmax(ref.policy) - softmax(got.policy)).max())
    value = float(np.abs(ref.value.astype(np.float64) - got.value.astype(np.float64)).max())
    if not np.isfinite(policy) or not np.isfinite(value):
        return {"policy": float("inf"), "value": float("inf")}
    return {"policy": round(policy, 6), "value": round(value, 6)}


def default_timer(precision: Precision, forward: Callable[[], None], rows: int, seconds: float) -> float:
    """Evaluations per second of ``forward`` (``rows`` positions a call) over about
    ``seconds`` (at least one call after the caller's warm-up)."""
    calls = 0
    t0 = time.perf_counter()
    while True:
        forward()
        calls += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return calls * rows / elapsed


def _evaluator(model: Any, device: Any, precision: Precision):

    return TorchEvaluator(model, device=device, symmetries="none", cache_size=0,
                          **evaluator_kwargs(Choice(precision, "forced")))


def measure(model: Any, device: Any, size: int, batch: int, *, timer: Callable | None = None,
            accuracy: Callable[[Precision], dict[str, float]] | None = None,
            tolerance: dict[str, float] | None = None, seconds: float = 0.25, rounds: int = 3,
            sample_rows: int = 16, log: Callable[[str], None] | None = None) -> Choice:
    """Measures the candidates (see the module docstring) and returns the fastest accurate one
    (source "measured").  ``timer(precision, forward, rows, seconds) -> evals/s`` and
    ``accuracy(precision) -> {"policy", "value"}`` replace the real timing and comparison."""

    tol = dict(tolerance or TOLERANCE)
    dev = resolve_device(device)
    t_start = time.perf_counter()
    feature_set, planes = _model_io(model)
    cands = candidates(dev)
    reference = Precision("fp32", False)
    diffs: dict[str, dict[str, float]] = {}
    if accuracy is None:
        x = sample_planes(feature_set, planes, size, sample_rows)
        ref = _evaluator(model, dev, reference).evaluate(x)
    ok: list[Precision] = []
    rejected: list[str] = []
    for p in cands:
        if accuracy is not None:
            d = dict(accuracy(p))
        elif p == reference:
            d = {"policy": 0.0, "value": 0.0}
        else:
            try:
                d = output_diff(ref, _evaluator(model, dev, p).evaluate(x))
            except (RuntimeError, TypeError, ValueError) as exc:   # dtype unsupported here
                if log:
                    log(f"precision: {p.label} failed: {exc}")
                d = {"policy": float("inf"), "value": float("inf")}
        diffs[p.label] = d
        (ok if within_tolerance(d, tol) else rejected).append(p)
    rejected_labels = [p.label for p in rejected]
    if reference not in ok:         # fp32 is the yardstick: never outside (unless injected so)
        ok.insert(0, reference)
    timer = timer or default_timer
    rates: dict[str, float] = {}
    forwards: dict[Precision, Callable[[], None]] = {}
    xb = torch.from_numpy(np.ascontiguousarray(
        np.resize(sample_planes(feature_set, planes, size, min(batch, sample_rows), seed=1),
                  (batch, planes, size, size)))).to(dev)

    def make_forward(p: Precision) -> Callable[[], None]:
        ev = _evaluator(model, dev, p)

        def forward() -> None:
            ev._infer(xb)
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
        return forward

    alive = list(ok)
    for rnd in range(max(1, rounds)):
        for p in alive:
            if p not in forwards:
                forwards[p] = make_forward(p)
                if timer is default_timer:
                    forwards[p]()            # warm-up: kernel selection, allocation
            r = float(timer(p, forwards[p], batch, seconds))
            rates[p.label] = max(rates.get(p.label, 0.0), r)
        best = max(rates[p.label] for p in alive)
        # Far slower candidates need no more rounds (bf16 on CPUs without native bf16).
        alive = [p for p in alive if rates[p.label] >= 0.5 * best]
    chosen = max(ok, key=lambda p: (rates.get(p.label, 0.0), p == DEFAULT))
    # Noise must not flip the choice: the default needs beating by a margin.
    if DEFAULT in ok and rates.get(chosen.label, 0.0) < MARGIN * rates.get(DEFAULT.label, 0.0):
        chosen = DEFAULT
    return Choice(chosen, "measured", {k: round(v, 1) for k, v in rates.items()}, diffs,
                  rejected_labels, seconds=time.perf_counter() - t_start)


def choose_precision(model: Any, device: Any = None, size: int = 19, batch: int = 16,
                     precision: str | None = "auto", *, cache: str | os.PathLike | None = None,
                     timer: Callable | None = None,
                     accuracy: Callable[[Precision], dict[str, float]] | None = None,
                     tolerance: dict[str, float] | None = None, refresh: bool = False,
                     seconds: float = 0.25, rounds: int = 3,
                     log: Callable[[str], None] | None = None) -> Choice:
    """The precision to run ``model`` with on ``device`` at ``size`` x ``size``.

    ``precision``: "auto" (or None) measures or reads the cache; "fp32", "bf16", "fp16" or
    "fp32-nchw" is taken as given (source "forced").  ``cache``: the cache file (default
    ``cache_dir()/precision.json``).  ``refresh`` measures again even when a choice is cached.
    The other arguments go to :func:`measure`.  Never raises for cache trouble: an unwritable
    cache only costs a measurement at the next start.
    """

    if precision is not None and str(precision).lower() != "auto":
        return Choice(Precision.parse(str(precision)), "forced")
    tol = dict(tolerance or TOLERANCE)
    dev = resolve_device(device)
    path = Path(cache) if cache is not None else cache_dir() / CACHE_FILE
    key = f"{machine_key(dev)}|{net_key(model, size)}"
    entries, _ok = load_cache(path)
    if not refresh:
        found = _cached_choice(entries.get(key), candidates(dev), tol)
        if found is not None:
            found.key, found.cache_file = key, str(path)
            return found
    with flops.COUNTER.paused():           # choosing a kernel is not the caller's work
        choice = measure(model, dev, size, batch, timer=timer, accuracy=accuracy, tolerance=tol,
                         seconds=seconds, rounds=rounds, log=log)
    choice.key, choice.cache_file = key, str(path)
    entries, _ok = load_cache(path)        # again: another process may have added entries
    entries[key] = {"choice": choice.precision.label, "rates": choice.rates, "diffs": choice.diffs,
                    "rejected": choice.rejected, "tolerance": tol, "batch": int(batch),
                    "measured": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        save_cache(path, entries)
    except OSError as exc:
        choice.cache_file = None
        if log:
            log(f"precision: cannot write the cache {path}: {exc}")
    return choice


def resolve(model: Any, device: Any, size: int, batch: int, option: str | None,
            log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """TorchEvaluator ``dtype``/``channels_last`` for a dtype option ("auto" or None: the
    measured choice, see :func:`choose_precision`; otherwise as given), logging the choice once
    per process and key."""
    choice = choose_precision(model, device, size, min(int(batch), 128), option or "auto", log=log)
    if log is not None and (choice.key or choice.precision.label) not in _LOGGED:
        _LOGGED.add(choice.key or choice.precision.label)
        log(choice.describe())
    return evaluator_kwargs(choice)


_LOGGED: set[str] = set()


def evaluator_kwargs(choice: Choice) -> dict[str, Any]:
    """TorchEvaluator arguments for a choice."""
    return {"dtype": choice.dtype, "channels_last": choice.channels_last,
            "winograd": choice.precision.winograd}


__all__ = ["Precision", "Choice", "TOLERANCE", "candidates", "choose_precision", "measure", "machine_key",
           "net_key", "cache_dir", "load_cache", "save_cache", "sample_planes", "output_diff",
           "default_timer", "evaluator_kwargs", "resolve"]


# -- the training precision ------------------------------------------------------------------
# The trainer's choice (train.trainer), measured like the inference choice above: a forward
# and backward pass per precision, the outputs compared with fp32's, cached per machine.

TRAIN_AMP_CACHE = "train_amp.json"
TRAIN_AMP_MARGIN = 1.10      # bf16 must beat fp32 by this much: noise must not flip the choice


def _train_pass(model: Any, x: torch.Tensor, dtype: torch.dtype | None) -> Any:
    """One forward and backward pass as training does it (``dtype``: autocast, None: fp32)."""
    ctx = torch.autocast(device_type=x.device.type, dtype=dtype) if dtype else contextlib.nullcontext()
    with ctx:
        out = model(x)
    loss = (torch.logsumexp(out.policy, 1).mean() + out.value.square().mean()
            + out.ownership.square().mean() + out.score.square().mean())
    model.zero_grad(set_to_none=True)
    loss.backward()
    return out


def measure_train_amp(model: Any, device: Any, size: int, batch: int, *, timer: Any = None,
                      steps: int = 3, rounds: int = 3) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Training samples per second of fp32 and of bf16 autocast on ``device`` (best of
    ``rounds`` interleaved rounds of ``steps`` forward+backward passes on a copy of ``model``),
    and bf16's largest policy/value differences from fp32 on the same batch.
    ``timer(label, run_once) -> samples/s`` replaces the timing (tests)."""
    net = copy.deepcopy(model).to(device).train()
    planes = np.resize(sample_planes(net.feature_set, net.in_planes, size, min(batch, 64)),
                       (batch, net.in_planes, size, size))
    x = torch.from_numpy(np.ascontiguousarray(planes, dtype=np.float32)).to(device)
    modes = {"fp32": None, "bf16": torch.bfloat16}

    def outputs(dtype: torch.dtype | None) -> Any:
        o = _train_pass(net, x, dtype)
        return Evaluation(o.policy.detach().float().cpu().numpy(), o.value.detach().float().cpu().numpy(),
                          None, None)
    ref = outputs(None)
    diffs = {"fp32": {"policy": 0.0, "value": 0.0}}
    try:
        diffs["bf16"] = output_diff(ref, outputs(torch.bfloat16))
    except (RuntimeError, TypeError):                      # bf16 unsupported on this device
        diffs["bf16"] = {"policy": math.inf, "value": math.inf}

    def once(dtype: torch.dtype | None) -> None:
        for _ in range(steps):
            _train_pass(net, x, dtype)

    def default_timer(label: str, run_once: Any) -> float:
        t0 = time.perf_counter()
        run_once()
        return steps * batch / (time.perf_counter() - t0)

    timer = timer or default_timer
    rates: dict[str, float] = {}
    labels = [k for k in modes if math.isfinite(diffs[k]["policy"])]     # bf16 only where it ran
    for _ in range(max(1, rounds)):
        for label in labels:
            r = float(timer(label, lambda d=modes[label]: once(d)))
            rates[label] = round(max(rates.get(label, 0.0), r), 1)
    return rates, diffs


def choose_train_amp(model: Any, device: Any, size: int, batch: int, option: str = "auto", *,
                     cache: Any = None, timer: Any = None, refresh: bool = False,
                     log: Any = None) -> str:
    """The training precision: ``option`` when it is not "auto"; "auto" on CUDA (the Trainer
    takes bf16 or fp16 there); on a CPU measured once per machine, torch thread count, net
    shape and batch, then cached next to the inference choices (``train_amp.json`` in
    :func:`engine.nets.precision.cache_dir`): bf16 autocast when it is :data:`TRAIN_AMP_MARGIN`
    faster than fp32 and its outputs stay within the inference tolerance, else fp32.
    Measured: 2.1x on an Intel Xeon with AMX; on CPUs without native bf16 it is far slower."""
    if option != "auto":
        return option
    dev = torch.device(device)
    if dev.type != "cpu":
        return "auto"
    path = Path(cache) if cache is not None else cache_dir() / TRAIN_AMP_CACHE
    key = f"train|{machine_key(dev)}|{net_key(model, size)}|batch {int(batch)}"
    entries, _ok = load_cache(path)
    entry = entries.get(key)
    if not refresh and isinstance(entry, dict) and (entry.get("choice") == "fp32" or (
            entry.get("choice") == "bf16" and isinstance(entry.get("diffs"), dict)
            and within_tolerance(entry["diffs"].get("bf16"), TOLERANCE))):
        return entry["choice"]          # a cached bf16 is re-checked against today's tolerance
    rates, diffs = measure_train_amp(model, dev, size, batch, timer=timer)
    d = diffs["bf16"]
    faster = rates.get("bf16", 0.0) >= TRAIN_AMP_MARGIN * rates["fp32"]
    choice = "bf16" if within_tolerance(d, TOLERANCE) and faster else "fp32"
    if log:
        log(f"trainer: training precision {choice} (measured samples/s: "
            + ", ".join(f"{k} {v:.0f}" for k, v in rates.items())
            + f"; bf16 differs from fp32 by {d.get('policy')} in policy, {d.get('value')} in value)")
    entries, _ok = load_cache(path)
    entries[key] = {"choice": choice, "rates": rates, "diffs": diffs,
                    "measured": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        save_cache(path, entries)
    except OSError as exc:
        if log:
            log(f"trainer: cannot write {path}: {exc}")
    return choice
