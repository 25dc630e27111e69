"""File helpers: atomic writes (readers, and a process killed mid-write, never see a partial
file), exclusive holds on lock files, and reading files that may be gzip-compressed (told by
gzip's magic bytes, whatever the name)."""
from __future__ import annotations

import fcntl
import gzip
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable


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


def try_hold(path: str | os.PathLike) -> IO[str] | None:
    """An exclusive ``flock`` on ``path`` (created if absent), with this process's pid written in
    it for a person reading the file; None if another open file holds it.  The hold lasts while
    the returned file is open in this process or in any child it was passed to, and the kernel
    drops it however they end (no stale locks, no check-then-write race)."""
    f = open(path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


GZIP_MAGIC = b"\x1f\x8b"


class CorruptGzip(ValueError):
    """A file starts like gzip data but does not decompress (the message says why)."""


def read_maybe_gzipped(path: str | os.PathLike) -> bytes:
    """The bytes of ``path``, decompressed when they start with gzip's magic bytes.
    CorruptGzip for corrupt gzip data; OSError if unreadable."""
    raw = Path(path).read_bytes()
    if raw[:2] == GZIP_MAGIC:
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise CorruptGzip(str(exc)) from None
    return raw


def head_maybe_gzipped(path: str | os.PathLike, n: int) -> bytes | None:
    """The first ``n`` bytes of ``path``'s content, decompressed when it is gzip data; None when
    that data is corrupt.  OSError if unreadable."""
    with open(path, "rb") as f:
        head = f.read(n)
        if head[:2] != GZIP_MAGIC:
            return head
        f.seek(0)
        try:
            return gzip.GzipFile(fileobj=f).read(n)
        except (OSError, EOFError):
            return None
