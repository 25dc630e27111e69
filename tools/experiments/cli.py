"""``python -m tools.experiments``: the training-design experiments.

- ``pipelines``, ``summary`` (:mod:`tools.experiments.pipelines`): what gating and the pipeline
  design cost self-play;
- ``strength`` (:mod:`tools.experiments.strength`): a quick strength-per-computation comparison
  in one folder (the smoke test of the machinery);
- ``register``, ``work``, ``unit`` (:mod:`tools.experiments.registry`) and ``report``
  (:mod:`tools.experiments.report`): the seed experiment as committed results under
  ``experiments/<name>/``, pre-registered, run unit by unit from a fixed commit on any number of
  machines, its write-up regenerated from the committed files;
- ``anchors`` (:mod:`tools.experiments.anchors`): the fixed reference players that rate every net;
- ``white`` (:mod:`tools.experiments.white`): a secondary analysis, each final net's score as White.

Each takes ``--help``.  ``python -m tools.experiment`` (tools/experiment.py) is the same command.
"""
from __future__ import annotations

import sys
from typing import Callable

COMMANDS = ("pipelines", "summary", "strength", "register", "work", "unit", "report", "anchors", "white")


def command(name: str) -> Callable[[list[str]], int]:
    """The function that runs experiment ``name`` on its arguments (imported only when it runs:
    each pulls in torch, the training system or matplotlib)."""
    if name in ("pipelines", "summary"):
        from tools.experiments import pipelines
        return getattr(pipelines, name)
    if name == "strength":
        from tools.experiments.strength import strength
        return strength
    if name in ("register", "work", "unit"):
        from tools.experiments import registry
        return getattr(registry, name)
    if name == "report":
        from tools.experiments.report import report
        return report
    if name == "white":
        from tools.experiments.white import main as white_main
        return white_main
    from tools.experiments.anchors import main
    return main


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"python -m tools.experiments: unknown experiment {argv[0]!r} (known: {', '.join(COMMANDS)})",
              file=sys.stderr)
        return 2
    try:
        return command(argv[0])(argv[1:])
    except (RuntimeError, ValueError, FileNotFoundError) as exc:
        print(f"tools.experiments: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
