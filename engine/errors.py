"""Errors that cross module boundaries and that a user must see as they are."""


class NetworkOutputError(ValueError):
    """The network produced NaN or infinite outputs (corrupt weights, a diverged training run):
    nothing it says can be searched on, so the evaluation fails with this message instead of
    feeding the search numbers that mean nothing."""


class StartupError(RuntimeError):
    """The engine cannot start playing (no network, a corrupt one, a CUDA failure): the message
    is one line that says what to do."""
