"""``python -m train.match``: engine-vs-engine matches (the command line is :mod:`train.match.cli`)."""
import sys

from train.match.cli import main

sys.exit(main())
