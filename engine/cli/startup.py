"""The engine's start-up: the network loads in the background while GTP answers at once.

GUIs identify an engine first (``protocol_version``, ``name``, ``version``, ``list_commands``,
then ``boardsize`` and ``komi``) and some give up on one that is silent for 15 s (GoGui).
Importing torch, reading the net and its first forward pass take seconds, so
``python -m engine`` starts :class:`BackgroundStart` and answers those commands at once
(:data:`engine.gtp.commands.NEEDS_NO_NET`); the first command that needs the net waits for it.

A start-up that fails says so in one line on stderr that says what to do
(:func:`failure_line`), never a traceback: at once when it is found before GTP starts (a
``--weights`` file that does not exist: exit status 2), else as soon as the background load
fails (a corrupt net, a CUDA error), and then the first command that needs the net is answered
``? <that line>`` and the engine exits with status 1."""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from engine.errors import StartupError

T = TypeVar("T")

DOCTOR = "python -m engine doctor"


def one_line(text: Any) -> str:
    return " ".join(str(text).split())


def missing_weights(spec: str | None) -> str | None:
    """The failure line for a ``--weights`` file that is not there, else None."""
    if spec is None or spec in ("uniform", "random"):
        return None
    path = Path(spec)
    if path.is_file() or (path.exists() and not path.is_dir()):     # a FIFO counts: it may open later
        return None
    what = "is a folder, not a weights file" if path.is_dir() else "not found"
    return (f"error: network file {spec} {what}: pass --weights with an existing file, or leave "
            f"--weights out to play with the net shipped in weights/ ({DOCTOR} lists the nets found)")


def core_failure(exc: BaseException) -> str:
    """The failure line for a C core that does not load."""
    root = Path(__file__).resolve().parents[1]
    text = one_line(exc)
    if "pip install" in text:
        return f"error: {text}"
    return (f"error: the engine's C core does not load ({text}): rebuild it with "
            f"`pip install -e {root}` (or `python setup.py build_ext --inplace` there)")


def failure_line(exc: BaseException, weights: str | None = None) -> str:
    """One stderr line for a start-up that failed with ``exc``, saying what to do."""
    from engine.nets.weights import WeightsError      # imports torch, which has loaded by now

    text = one_line(exc)
    if isinstance(exc, WeightsError):
        return (f"error: cannot load the network: {text}; pass --weights with a good file "
                f"(our .pt, Leela Zero's .gz, KataGo's .bin.gz) or leave it out ({DOCTOR} checks the nets)")
    if "cuda" in text.lower() or "gpu" in text.lower():
        return f"error: CUDA failed at start ({text}); pass --device cpu to play on the CPU, or run {DOCTOR}"
    if isinstance(exc, StartupError):
        return text
    if isinstance(exc, OSError):
        return f"error: {text}" + (f" (reading {weights})" if weights else "")
    if isinstance(exc, ValueError):
        return f"error: {text}"
    return f"error: start-up failed ({type(exc).__name__}: {text}); run {DOCTOR}"


class BackgroundStart(Generic[T]):
    """Runs ``load()`` in a daemon thread.  :meth:`wait` returns its result, or raises
    StartupError with the failure line, which ``warn`` has printed the moment it failed."""

    def __init__(self, load: Callable[[], T], warn: Callable[[str], None],
                 describe: Callable[[BaseException], str] = failure_line) -> None:
        self._load, self._warn, self._describe = load, warn, describe
        self._done = threading.Event()
        self._result: T | None = None
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="engine-start", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._load()
        except BaseException as exc:        # noqa: BLE001 - said in one line, never a traceback
            try:
                self.error = self._describe(exc)
            except Exception:               # noqa: BLE001
                self.error = f"error: start-up failed ({type(exc).__name__}: {one_line(exc)})"
            self._warn(self.error)
        finally:
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> T:
        self._done.wait()
        if self.error is not None:
            raise StartupError(self.error)
        return self._result          # type: ignore[return-value]


def exit_now(status: int) -> None:
    """Ends the process with ``status`` once stdout and stderr are flushed, without waiting for
    threads still inside torch (a background measurement, a load) that the interpreter's
    shutdown would abort with a C++ 'terminate called'.  What they measured is on disk."""
    import sys
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


__all__ = ["BackgroundStart", "core_failure", "exit_now", "failure_line", "missing_weights", "one_line"]
