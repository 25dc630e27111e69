"""Checks: programs that say whether something is right, not how fast it is.  Each exits 0 when
what it checks holds (or prints the figures it was made to measure).

- ``python -m tools.checks.solve5 WEIGHTS``: a 5x5 net against the solved game (oracle);
- ``python -m tools.checks.gtp_fuzz``: random and malformed GTP lines against ``python -m engine``;
- ``python -m tools.checks.gate_faults``: is gating unbiased when clients die (simulated gates);
- ``python -m tools.checks.ray_multinode``: a multi-node Ray run through lost and killed nodes;
- ``python -m tools.checks.gpu``: a prepared check of a fresh GPU machine (build, rates, suite);
- ``python -m tools.checks.gnugo_territory``: GNU Go's territory counts of the Pachi game ends,
  written as test data (tests/data/pachi_game_ends_territory.jsonl).
"""
