"""Benchmarks: how fast the engine's parts, self-play, training and start-up run, alone or
against Leela Zero and KataGo.  Each prints a table and, last, one JSON line; measured figures go
to docs/results/, never into the code.

- ``python -m tools.bench board|search|net|vs-leelaz`` (:mod:`tools.bench.components`; ``vs-leelaz``
  in :mod:`tools.bench.leelaz`): playouts, search visits/s, net evals/s, our search against leelaz;
- ``python -m tools.bench.selfplay``: self-play evals/s against the bare forward pass;
- ``python -m tools.bench.ray_selfplay``: self-play games/h with 1, 2, 4 Ray actors;
- ``python -m tools.bench.ddp``: the data-parallel trainer's samples/s;
- ``python -m tools.bench.analysis``: whole-game analysis against ``katago analysis`` (games in
  tools/bench/games/);
- ``python -m tools.bench.katago speed|strength``: KataGo nets against KataGo;
- ``python -m tools.bench.startup``: ``python -m engine``'s start-up, cold and warm.
"""
