"""A Go engine: C board and PUCT search (engine.core), torch networks, GTP (python -m engine)."""

__version__ = "0.1.0"
