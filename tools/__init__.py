"""Programs that use the engine and the training system but that neither depends on, run from a
clone and never installed (tools/README.md lists the ones users run):

- ``tools.bench``: benchmarks, timing figures (``python -m tools.bench ...``);
- ``tools.checks``: correctness, fault, fuzz and oracle checks (``python -m tools.checks.<name>``);
- ``tools.experiments``: the training-design experiments, the seed experiment's registry and its
  anchors (``python -m tools.experiments ...``; ``python -m tools.experiment`` forwards there);
- ``tools.machine``: facts about the machine, which benchmarks and experiments both record.
"""
from pathlib import Path

#: The clone's root, the one place tools/ computes it (its modules sit at different depths).
REPO_ROOT = Path(__file__).resolve().parents[1]
