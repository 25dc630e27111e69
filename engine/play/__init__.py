"""How a move is searched and played: the search loop (Player), its settings (and their command lines) and search options, root search, resign/pass policy, clocks, memory.
May import engine.core, engine.rules and engine.scoring only (no nets: the Player takes any evaluator)."""
