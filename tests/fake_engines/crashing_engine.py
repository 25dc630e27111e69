"""Fake GTP engine that exits (status 3) instead of answering its 2nd genmove.

Accepts every option of ``fake_engine.py``; ``--crash-after`` defaults to 2.
"""

import sys

from fake_engine import parse_args, run  # this directory is sys.path[0]

if __name__ == "__main__":
    sys.exit(run(parse_args(crash_after=2, name="CrashingEngine")))
