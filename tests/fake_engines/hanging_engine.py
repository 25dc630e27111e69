"""Fake GTP engine that never answers its 2nd genmove.

Accepts every option of ``fake_engine.py``; ``--hang-after`` defaults to 2.
"""

import sys

from fake_engine import parse_args, run  # this directory is sys.path[0]

if __name__ == "__main__":
    sys.exit(run(parse_args(hang_after=2, name="HangingEngine")))
