"""``python -m tools.bench board|search|net|vs-leelaz``: runs :func:`tools.bench.components.main`."""
import sys

from tools.bench.components import main

sys.exit(main())
