"""What a run has spent: its FLOPs (:mod:`engine.nets.flops`) and CPU seconds, over every process and
session that wrote its metrics.

Every metrics record carries its process's running totals (``flops``, ``cpu_s``) and ``pid``, so
a run's spending at any moment is, per process, the last totals it logged by then, summed.  A
resumed run's new processes add to its earlier ones: the count continues across sessions.
"""
from __future__ import annotations

import math
from typing import Any, Iterable


class Usage:
    """A run's FLOPs and CPU seconds so far; feed it metrics records in file order."""

    def __init__(self, records: Iterable[dict[str, Any]] = (), until: float = math.inf) -> None:
        self._last: dict[tuple[Any, Any], tuple[float, float]] = {}
        self.add(records, until)

    def add(self, records: Iterable[dict[str, Any]], until: float = math.inf) -> "Usage":
        """Counts ``records`` (those written at or before unix time ``until``)."""
        for r in records:
            if r.get("pid") is None or r.get("time", 0.0) > until:
                continue
            key = (r.get("source"), r["pid"])
            flops, cpu = self._last.get(key, (0.0, 0.0))
            self._last[key] = (max(flops, float(r.get("flops") or 0.0)), max(cpu, float(r.get("cpu_s") or 0.0)))
        return self

    @property
    def flops(self) -> float:
        return sum(f for f, _ in self._last.values())

    @property
    def cpu_seconds(self) -> float:
        return sum(c for _, c in self._last.values())

    @property
    def cpu_hours(self) -> float:
        return self.cpu_seconds / 3600.0
