"""A Go engine: C board and PUCT search (engine.core), torch networks, GTP (python -m engine)."""

# The project's own version (setup.py carries the same string; GTP `version` answers it).
# Its second field must stay >= 15, on every release: Lizzie 0.7.4 takes an engine not named
# "KataGo*" for Leela Zero, reads `version` as "X.Y..." and refuses analysis with a modal dialog
# unless int(Y) >= 15 (Leela Zero 0.15 added lz-analyze); a version without a dot stops its
# reader thread.  So minors count up from 15 within a major: 1.15.0, 1.16.0, ... then 2.15.0.
# tests/clients/test_gui_clients.py checks the rule as Lizzie applies it, and drives a real Lizzie.
__version__ = "1.15.0"
