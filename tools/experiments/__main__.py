"""``python -m tools.experiments``: runs :func:`tools.experiments.cli.main`."""
import sys

from tools.experiments.cli import main

sys.exit(main())
