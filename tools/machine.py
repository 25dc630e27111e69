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


def cpu_label() -> str:
    """The CPU's model name with the instruction sets that decide our kernels' speed (AVX2,
    AVX512-BF16, AMX), e.g. "AMD EPYC (AVX2, AVX512-BF16)"."""
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    named = [label for flag, label in (("avx2", "AVX2"), ("avx512_bf16", "AVX512-BF16"), ("amx_bf16", "AMX"))
             if flag in flags]
    return f"{cpu_name()} ({', '.join(named)})" if named else cpu_name()


def load_average() -> float:
    """The 1-minute load average, -1 when unknown."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return -1.0
