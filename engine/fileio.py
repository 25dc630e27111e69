"""Atomic file writes: readers (and a process killed mid-write) never see a partial file."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None], mode: str = "wb") -> None:
    """Calls ``write(file)`` on a temporary file beside ``path``, fsyncs it and renames it onto
    ``path`` (mode 0644).  The temporary file is removed on error, which is re-raised."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)   # mkstemp creates 0600; these files are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
