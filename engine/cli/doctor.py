"""``python -m engine doctor``: one screen that says whether a GUI can use the engine here.

It checks, in order, and prints one line each (``ok``, ``note`` or ``FAIL``): versions (the
engine, Python, torch and its CUDA), the CPU (AVX2, AVX-512, BF16, AMX; the cores this process
may use), the C core, the nets found for each board size (each one read), the cached precision
per net and size, the CUDA device, a 1-second search, then prints the command lines to paste
into Sabaki, GoGui, Lizzie and KaTrain.  The exit status is 1 when any check FAILed: something
that would stop a GUI from using the engine (no C core, no torch, a net missing or unreadable,
CUDA failing, a search that does not run).  Nothing here needs the C core or torch to import:
their absence is what it reports."""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

SIZES = (9, 13, 19)
SEARCH_SECONDS = 1.0
CPU_FEATURES = (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_bf16", "AVX512-BF16"), ("amx_bf16", "AMX-BF16"))


class Report:
    """The lines printed so far and whether any check failed."""

    def __init__(self, out: Callable[[str], None]) -> None:
        self.out, self.failed = out, []

    def line(self, status: str, what: str, text: str) -> None:
        self.out(f"{status:<4} {what:<10} {text}")
        if status == "FAIL":
            self.failed.append(f"{what}: {text}")


def cpu_line() -> str:
    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    model = model or platform.processor() or platform.machine()
    has = ", ".join(f"{name} {'yes' if flag in flags else 'no'}" for flag, name in CPU_FEATURES)
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    return f"{model}; {has}; {usable} of {os.cpu_count()} cores usable (the engine's default search threads)"


def gui_commands(weights: str | None) -> list[str]:
    """The lines to paste into each GUI: this Python, with this package."""
    python = shlex.quote(sys.executable)
    extra = f" --weights {shlex.quote(str(Path(weights).resolve()))}" if weights else ""
    args = f"-m engine{extra}"
    cwd = shlex.quote(str(Path(__file__).resolve().parents[1]))
    return [f"Sabaki   Engines > Manage Engines > Add: Path {python}  Arguments {args}",
            f"GoGui    Program > New Program: Command {python} {args}",
            f"Lizzie   config.txt \"engine-command\": {python} {args}",
            f"KaTrain  General and Engine settings, \"altcommand\": {python} -m engine analysis{extra}",
            f"(the engine package lives in {cwd}: run these from anywhere)"]


def check(weights: str | None = None, sizes: Sequence[int] = SIZES, device: str | None = None,
          out: Callable[[str], None] = print, weights_dir: Path | None = None,
          search_seconds: float = SEARCH_SECONDS) -> list[str]:
    """Runs every check, printing as it goes; returns the failures (empty: all is well)."""
    import engine
    r = Report(out)
    r.line("ok", "engine", f"goengine {engine.__version__}; Python {platform.python_version()} "
                           f"({sys.executable})")
    r.line("ok", "cpu", cpu_line())
    try:
        from engine import native    # noqa: F401 - the C core
        core = True
        r.line("ok", "core", f"the C core loads ({Path(native.__file__).parent})")
    except ImportError as exc:
        core = False
        from engine.cli.startup import core_failure
        r.line("FAIL", "core", core_failure(exc).removeprefix("error: "))
    try:
        import torch
    except ImportError as exc:
        r.line("FAIL", "torch", f"torch does not import ({exc}): pip install torch")
        return r.failed
    cuda_build = torch.version.cuda or "none (a CPU build)"
    r.line("ok", "torch", f"torch {torch.__version__}, CUDA {cuda_build}, {torch.get_num_threads()} threads")
    try:
        nets = _check_nets(r, weights, sizes, weights_dir)
        _check_cache(r, nets, device)
    except ImportError as exc:          # the net readers need the C core
        nets = {}
        r.line("note", "nets", f"not checked: {exc.__class__.__name__} ({'no C core' if not core else exc})")
    _check_cuda(r, device)
    if core and nets:
        _check_search(r, nets, device, search_seconds)
    else:
        r.line("note", "search", "not run: " + ("no C core" if not core else "no network"))
    out("")
    out("Command lines for the GUIs:")
    for line in gui_commands(weights):
        out("  " + line)
    out("")
    out("FAIL: " + "; ".join(r.failed) if r.failed else "All checks passed: a GUI can start the engine.")
    return r.failed


def _check_nets(r: Report, weights: str | None, sizes: Sequence[int], weights_dir: Path | None) -> dict[int, tuple[str, Any]]:
    """size -> (path, (model, meta)) of the nets that load."""
    from engine.nets import weights as weights_mod
    from engine.nets.loading import WEIGHTS_DIR, check_board_size, default_weights_path
    from engine.cli.startup import missing_weights, one_line

    directory = weights_dir if weights_dir is not None else WEIGHTS_DIR
    found: dict[int, tuple[str, Any]] = {}
    loaded: dict[str, Any] = {}
    if weights is not None and missing_weights(weights):
        r.line("FAIL", "nets", missing_weights(weights).removeprefix("error: "))
        return found
    for size in sizes:
        path = weights or default_weights_path(size, directory)
        if path is None:
            r.line("FAIL", "nets", f"{size}x{size}: no network in {directory} (the engine would play an "
                                   "UNTRAINED net); pass --weights FILE or restore weights/")
            continue
        key = str(path)
        if key not in loaded:
            try:
                loaded[key] = weights_mod.load_any(path)
            except (ValueError, OSError) as exc:
                loaded[key] = exc
        net = loaded[key]
        if isinstance(net, BaseException):
            r.line("FAIL", "nets", f"{size}x{size}: {key} does not load: {one_line(net)}")
            continue
        try:
            check_board_size(path, net[1], size)
        except ValueError as exc:
            r.line("note", "nets", f"{size}x{size}: {exc}")
            continue
        trained = net[1].get("board_sizes") or []
        note = "" if not trained or size in trained else f" (trained on {', '.join(map(str, trained))} only)"
        r.line("ok", "nets", f"{size}x{size}: {key}{note}")
        found[size] = (key, net)
    return found


def _check_cache(r: Report, nets: dict[int, tuple[str, Any]], device: str | None) -> None:
    import torch

    from engine.nets import precision as prec
    from engine.nets.evaluator import resolve_device

    threads = torch.get_num_threads()
    torch.set_num_threads(1)           # the engine's setting, which the cache key holds
    try:
        dev = resolve_device(device)
        entries, ok = prec.load_cache(prec.cache_dir() / prec.CACHE_FILE)
        if not ok:
            r.line("note", "precision", f"{prec.cache_dir() / prec.CACHE_FILE} is unreadable: it is measured again")
        for size, (path, (model, _meta)) in nets.items():
            entry = entries.get(f"{prec.machine_key(dev)}|{prec.net_key(model, size)}")
            if isinstance(entry, dict) and entry.get("choice"):
                rates = ", ".join(f"{k} {v:,.0f}/s" for k, v in sorted((entry.get("rates") or {}).items(),
                                                                      key=lambda kv: -kv[1]))
                r.line("ok", "precision", f"{Path(path).name} {size}x{size}: {entry['choice']} ({rates})")
            else:
                part = sorted((entry or {}).get("kernels", {})) if isinstance(entry, dict) else []
                have = f"; {', '.join(part)} measured so far" if part else ""
                r.line("note", "precision", f"{Path(path).name} {size}x{size}: not measured yet{have} "
                                            "(measured in the background at start; python -m engine tune does it now)")
    finally:
        torch.set_num_threads(threads)


def _check_cuda(r: Report, device: str | None) -> None:
    import torch

    from engine.cli.startup import one_line
    if device is not None and not str(device).startswith("cuda"):
        r.line("ok", "cuda", f"not used (--device {device})")
        return
    try:
        if not torch.cuda.is_available():
            status = "FAIL" if device is not None else "ok"
            r.line(status, "cuda", "no CUDA device: the engine runs on the CPU"
                   + (f", but --device {device} asks for CUDA: pass --device cpu" if device else ""))
            return
        index = torch.device(device or "cuda").index or 0
        name = torch.cuda.get_device_name(index)
        cap = ".".join(map(str, torch.cuda.get_device_capability(index)))
        x = torch.ones(64, device=f"cuda:{index}")
        total = float((x * 2).sum().item())
        mem = torch.cuda.get_device_properties(index).total_memory / 2 ** 30
        r.line("ok" if total == 128.0 else "FAIL", "cuda", f"cuda:{index} {name}, sm {cap}, {mem:.0f} GiB")
    except Exception as exc:             # noqa: BLE001 - a broken driver raises anything
        r.line("FAIL", "cuda", f"CUDA fails: {one_line(exc)}; pass --device cpu, or fix the driver")


def _check_search(r: Report, nets: dict[int, tuple[str, Any]], device: str | None, seconds: float) -> None:
    import torch

    from engine.core import Game, SearchParams
    from engine.nets.evaluator import TorchEvaluator
    from engine.nets.precision import Precision, evaluator_kwargs, Choice
    from engine.play.player import Player
    from engine.cli.startup import one_line

    size = min(nets)
    path, (model, _meta) = nets[size]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        evaluator = TorchEvaluator(model, device=device, seed=1,
                                   **evaluator_kwargs(Choice(Precision(), "forced")))
        evaluator.evaluate(Game(size).features(evaluator.feature_set)[None])   # torch's set-up: not timed
        player = Player(evaluator, SearchParams(), batch=16, seed=1, threads=1)
        t0 = time.perf_counter()
        result = player.search(Game(size), seconds=seconds)
        rate = result.visits / max(1e-9, time.perf_counter() - t0)
        r.line("ok", "search", f"{size}x{size}, {Path(path).name}, 1 thread, fp32: {result.visits} visits "
                               f"in {seconds:g} s, {rate:,.0f} visits/s")
    except Exception as exc:             # noqa: BLE001 - what fails is what the doctor reports
        r.line("FAIL", "search", f"the search does not run: {type(exc).__name__}: {one_line(exc)}")
    finally:
        torch.set_num_threads(threads)


def build_parser() -> argparse.ArgumentParser:
    from engine.cli.tune import build_parser as tune_parser      # the same --size, --weights, --device
    p = tune_parser()
    p.prog = "python -m engine doctor"
    p.description = ("Check that a GUI can use the engine on this machine: versions, CPU, C core, "
                     "networks, cached precision, CUDA, a 1-second search, and the command lines "
                     "to paste into Sabaki, GoGui, Lizzie and KaTrain.  Exit status 1 when a check fails.  "
                     "The options name what the GUI will run: --weights (default: the shipped nets), "
                     "--size (repeatable; default 9 13 19), --device.")
    return p


def main(argv: Sequence[str] | None = None, weights_dir: Path | None = None) -> int:
    args = build_parser().parse_args(argv)
    failed = check(args.weights, args.size or SIZES, args.device, weights_dir=weights_dir)
    return 1 if failed else 0


__all__ = ["SIZES", "build_parser", "check", "gui_commands", "main"]
