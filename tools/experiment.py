"""``python -m tools.experiment``: the experiments' command under its first name; it runs
:func:`tools.experiments.cli.main` (``python -m tools.experiments``), the same command.

Kept because that name is used where it cannot change: the seed experiment's standing job runs
``python -m tools.experiment unit`` inside worktrees of the experiment's registered commit,
including commits from before tools/ was split into bench/, checks/ and experiments/ (so every
commit must answer to it), and scripts and committed records name it.
"""
import sys

from tools.experiments.cli import main

if __name__ == "__main__":
    sys.exit(main())
