"""``python -m train.ladder RUN_DIR``: the strength ladder; the code is :mod:`train.match.ladder`
(this name stays runnable because the README documents it)."""
import sys

from train.match.ladder import main

if __name__ == "__main__":
    sys.exit(main())
