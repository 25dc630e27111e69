"""tools/: benchmarks, checks and the experiment pipeline."""
