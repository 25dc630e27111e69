"""The compiled C core (``engine._core``, built by cffi from src_c/), with a clear error where it
was never built: ``python -m`` runs the engine/ of the current directory before an installed one,
so a source tree without its build hides a working install."""
from __future__ import annotations

try:
    from engine._core import ffi, lib
except ImportError as exc:
    raise ImportError(f"engine._core (the C core) is not built in {__file__.rsplit('/', 1)[0]}, which "
                      "`python -m` runs before an installed engine: run `pip install -e .` there, or "
                      "run from another directory") from exc

__all__ = ["ffi", "lib"]
