"""Benchmarks, experiments and one-off measurements: programs that use the engine and the
training system but that neither depends on (``python -m tools.<name>``)."""
