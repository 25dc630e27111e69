"""``python -m engine.weights``: create, inspect and stamp our weights files; the code is
:mod:`engine.nets.weights` (this name stays runnable because the README documents it)."""
import sys

from engine.nets.weights import main

if __name__ == "__main__":
    sys.exit(main())
