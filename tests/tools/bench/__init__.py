"""tools.bench: the benchmarks, run briefly through the engine's normal API."""
