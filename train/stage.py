"""A run's stage processes (self-play, trainer, gating): what each does at start and its command line.

Every stage is its own program (``python -m train.selfplay``, ``train.trainer``, ``train.gating``)
that only reads and writes the run directory.  :func:`stage_start` is their common start-up: die
with the parent (``train.loop``), take the stop signals (:class:`StopFlag`), read the run's
config.json, pin to the stage's cores (``--pin-cpus``) and set its torch threads.  :func:`main`
is their common command line (``--run-dir``, ``--parent-pid`` and the stage's own options).
"""
from __future__ import annotations

import argparse
import ctypes
import dataclasses
import os
import signal
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from train.config import RunConfig
from train.rundir import RunDir

#: The stages, by the names their thread, device and core options use.
STAGES = ("selfplay", "train", "gate")

# Async pipeline: each stage's share of the cores when no thread count is given.
ASYNC_SHARES = {"az": {"selfplay": 0.5, "train": 0.5},
                "agz": {"selfplay": 0.5, "train": 0.25, "gate": 0.25}}


def _cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return list(range(os.cpu_count() or 1))


def stage_cpus(cfg: RunConfig, stage: str, cores: list[int] | None = None) -> list[int] | None:
    """With --pin-cpus in the async pipeline: the cores ``stage`` is pinned to, its
    :data:`ASYNC_SHARES` share of ``cores`` (default: this process's), handed out in the order
    self-play, trainer, gate (a stage that finds no core left shares the last ones); else None."""
    if not cfg.pin_cpus or cfg.pipeline == "sync":
        return None
    cores = list(cores if cores is not None else _cores())
    n, at = len(cores), 0
    for name, share in ASYNC_SHARES[cfg.mode].items():
        k = max(1, min(n, round(n * share)))
        if at + k > n:
            at = n - k
        if name == stage:
            return cores[at:at + k]
        at += k
    return cores


def pin_stage(cfg: RunConfig, stage: str) -> list[int] | None:
    """Pins this process to ``stage_cpus`` (if any); returns them."""
    cpus = stage_cpus(cfg, stage)
    if cpus is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)
    return cpus


def stage_threads(cfg: RunConfig, stage: str) -> int:
    """Torch threads for ``stage`` ("selfplay", "train" or "gate"): its own option, else
    --threads, else its share of the cores: all of them in the sync pipeline (one stage runs at a
    time), :data:`ASYNC_SHARES` in the async one (the stages share the machine; with
    --pin-cpus, the cores it is pinned to)."""
    own = {"selfplay": cfg.selfplay_threads, "train": cfg.train_threads, "gate": cfg.gate_threads}[stage]
    if own:
        return int(own)
    if cfg.threads:
        return int(cfg.threads)
    pinned = stage_cpus(cfg, stage)
    if pinned is not None:
        return len(pinned)
    cores = len(_cores())
    if cfg.pipeline == "sync":
        return cores
    return max(1, int(cores * ASYNC_SHARES[cfg.mode].get(stage, 0.5)))


def stage_device(cfg: RunConfig, stage: str) -> str | None:
    own = {"selfplay": cfg.selfplay_device, "train": cfg.train_device, "gate": cfg.gate_device}[stage]
    return own or cfg.device


def die_with_parent(parent_pid: int | None) -> None:
    """Makes the kernel kill this process when its parent dies (Linux ``PR_SET_PDEATHSIG``), so
    a kill -9 of ``train.loop`` takes its stages with it; exits at once if the parent is
    already gone.  Elsewhere stages notice through :class:`StopFlag` polling ``getppid``."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)     # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(3)


class StopFlag:
    """Set by SIGTERM/SIGINT ("stop now") or SIGUSR1 ("finish what you owe, then stop"); also
    reports a dead parent.  Stages poll it between units of work."""

    def __init__(self, parent_pid: int | None = None):
        self.now = False
        self.drain = False
        self.parent_pid = parent_pid
        self._os = os

        def _stop(signum, frame):
            self.now = True

        def _drain(signum, frame):
            self.drain = True

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        if hasattr(signal, "SIGUSR1"):
            signal.signal(signal.SIGUSR1, _drain)

    @property
    def orphaned(self) -> bool:
        return self.parent_pid is not None and self._os.getppid() != self.parent_pid

    def __bool__(self) -> bool:
        return self.now or self.orphaned


@dataclass
class StageStart:
    """What :func:`stage_start` hands a stage: its run directory, the run's settings, its stop
    flag and its device option (None: the stage's default)."""

    rd: RunDir
    cfg: RunConfig
    stop: StopFlag
    device: str | None


def stage_start(stage: str, run_dir: str, parent_pid: int | None = None, **changes: Any) -> StageStart:
    """The start of every stage process, in this order: die with the parent, take the stop
    signals, read RUN_DIR/config.json (with the ``changes`` not None over it, checked:
    ValueError), pin to the stage's cores and set torch's threads to the stage's share (the
    trainer's divided among its ``--train-devices`` ranks, at least one each)."""
    import torch

    die_with_parent(parent_pid)
    stop = StopFlag(parent_pid)
    rd = RunDir(run_dir)
    cfg = RunConfig.from_dict(rd.read_config())
    changes = {k: v for k, v in changes.items() if v is not None}
    if changes:
        cfg = dataclasses.replace(cfg, **changes).check()
    pin_stage(cfg, stage)
    ranks = cfg.train_devices if stage == "train" else 1
    torch.set_num_threads(max(1, stage_threads(cfg, stage) // ranks))
    return StageStart(rd, cfg, stop, stage_device(cfg, stage))


#: A stage's own command-line option: (flag, add_argument's keywords); its dest is a keyword of
#: the stage's ``run``.
Option = tuple[str, dict[str, Any]]


def main(prog: str, description: str, run: Callable[..., int], argv: Sequence[str] | None = None,
         options: Sequence[Option] = ()) -> int:
    """The command line of every stage: ``--run-dir``, ``--parent-pid`` and the stage's own
    ``options``; calls ``run(run_dir, parent_pid=..., **options)`` and returns its exit status."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--parent-pid", type=int, default=None, help="exit when this process dies")
    for flag, kwargs in options:
        ap.add_argument(flag, **kwargs)
    a = vars(ap.parse_args(list(argv) if argv is not None else None))
    return run(a.pop("run_dir"), **a)
