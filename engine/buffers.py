"""Checks of the numpy buffers handed to the C core (engine.core): dtype, layout, shape and
capacity, so that C never writes or reads past an array; ValueError with a clear message."""
from __future__ import annotations

import numpy as np


def check_buffer(name: str, array: np.ndarray, dtype, shape: tuple, writable: bool) -> None:
    """ValueError unless ``array`` is a C-contiguous numpy array of ``dtype``, writable when
    ``writable``, whose shape is ``shape``; an entry ``(">=", n)`` accepts any length >= n."""
    if not isinstance(array, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(array).__name__}")
    if array.dtype != np.dtype(dtype):
        raise ValueError(f"{name} must be {np.dtype(dtype)}, got {array.dtype}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if writable and not array.flags.writeable:
        raise ValueError(f"{name} must be writable")
    if array.ndim != len(shape):
        raise ValueError(f"{name} must have {len(shape)} dimensions, got shape {array.shape}")
    for axis, (want, got) in enumerate(zip(shape, array.shape)):
        if isinstance(want, tuple):
            if got < want[1]:
                raise ValueError(f"{name} has room for {got} along axis {axis}, needs {want[1]}")
        elif got != want:
            raise ValueError(f"{name} must have shape {shape_text(shape)}, got {array.shape}")


def shape_text(shape: tuple) -> str:
    """A shape for messages: ``(>=12, 20, 9, 9)``."""
    return "(" + ", ".join(f">={w[1]}" if isinstance(w, tuple) else str(w) for w in shape) + ")"
