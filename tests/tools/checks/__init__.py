"""tools.checks: the correctness, fault, fuzz and oracle checks."""
