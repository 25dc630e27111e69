"""Facts about the machine a benchmark ran on, named in every benchmark's output."""
from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> float:
    """The 1-minute load average, -1 when unknown."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return -1.0
