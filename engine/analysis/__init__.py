"""KataGo's JSON analysis protocol (``python -m engine analysis``): its queries, the engine that serves them, its responses.
May import engine's base modules, engine.options, engine.nets.loading and engine.gtp.analysis (kata-analyze's helpers)."""
