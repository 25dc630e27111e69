"""What a run has spent: its FLOPs (:mod:`engine.nets.flops`) and CPU seconds, over every process and
session that wrote its metrics.

Every metrics record carries its process's running totals (``flops``, ``cpu_s``), its ``pid``
and ``proc``, a random id drawn once per process (:func:`process_id`), so a run's spending at any
moment is, per process, the last totals it logged by then, summed.  A resumed run's new processes
add to its earlier ones: the count continues across sessions and machines.  A pid alone names no
process for good: a resumed stage on another machine, or after a reboot, can get its old pid
again, so processes are told apart by ``proc``; records written before ``proc`` existed start a
new process wherever a counter of the same (source, pid) goes down.
"""
from __future__ import annotations

import math
import os
import uuid
from typing import Any, Iterable

_PROCESS: tuple[int, str] | None = None


def process_id() -> str:
    """A random id of this process, drawn at its first call (and again in a forked child)."""
    global _PROCESS
    if _PROCESS is None or _PROCESS[0] != os.getpid():
        _PROCESS = (os.getpid(), uuid.uuid4().hex[:16])
    return _PROCESS[1]


class Usage:
    """A run's FLOPs and CPU seconds so far; feed it metrics records in file order."""

    def __init__(self, records: Iterable[dict[str, Any]] = (), until: float = math.inf) -> None:
        self._last: dict[tuple[Any, Any, Any], tuple[float, float]] = {}
        self._ended = (0.0, 0.0)        # totals of legacy processes whose pid was used again
        self.add(records, until)

    def add(self, records: Iterable[dict[str, Any]], until: float = math.inf) -> "Usage":
        """Counts ``records`` (those written at or before unix time ``until``)."""
        for r in records:
            if r.get("pid") is None or r.get("time", 0.0) > until:
                continue
            key = (r.get("source"), r["pid"], r.get("proc"))
            flops, cpu = float(r.get("flops") or 0.0), float(r.get("cpu_s") or 0.0)
            last = self._last.get(key, (0.0, 0.0))
            if key[2] is None and (flops < last[0] or cpu < last[1]):
                self._ended = (self._ended[0] + last[0], self._ended[1] + last[1])   # a new process
                last = (0.0, 0.0)
            self._last[key] = (max(flops, last[0]), max(cpu, last[1]))
        return self

    @property
    def flops(self) -> float:
        return self._ended[0] + sum(f for f, _ in self._last.values())

    @property
    def cpu_seconds(self) -> float:
        return self._ended[1] + sum(c for _, c in self._last.values())

    @property
    def cpu_hours(self) -> float:
        return self.cpu_seconds / 3600.0
