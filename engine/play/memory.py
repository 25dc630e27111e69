"""Memory sizes as users write them (``512M``, ``2G``): the search tree's cap, one parser for
the engine's ``--max-memory`` and ``goengine-param max_memory``, ``train.loop --max-memory`` and
in-process match players."""
from __future__ import annotations

import re

_MEMORY = re.compile(r"([0-9]+)\s*([kmgt]?)(?:i?b)?", re.I)
MEMORY_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_MEMORY_LIMIT = 1 << 60    # the C core keeps the cap in an int64


def parse_memory(text: str) -> int:
    """Bytes of a memory size: ``512M``, ``2G``, ``65536`` (bytes).  K, M, G, T are binary
    multiples (KiB, MiB...) and may be followed by ``B`` or ``iB``; whole numbers only.
    ValueError for anything else, 0, or more than ``MAX_MEMORY_LIMIT``."""
    text = text.strip()
    m = _MEMORY.fullmatch(text) if len(text) <= 30 else None
    if not m:
        raise ValueError(f"bad memory size {text!r}: use bytes or e.g. 512M, 2G")
    value = int(m.group(1)) * MEMORY_UNITS[m.group(2).lower()]
    if not 1 <= value <= MAX_MEMORY_LIMIT:
        raise ValueError(f"memory size {text!r} out of range")
    return value


def format_memory(value: int) -> str:
    """``parse_memory``'s inverse: the largest unit that divides ``value`` exactly."""
    for unit in ("T", "G", "M", "K"):
        if value % MEMORY_UNITS[unit.lower()] == 0:
            return f"{value // MEMORY_UNITS[unit.lower()]}{unit}"
    return str(value)
