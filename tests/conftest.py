"""Test-wide settings: tests never read or write the user's cache directory (the engine's
measured network precision lives there, see engine.nets.precision); a session gets its own, which
engine subprocesses inherit."""
import atexit
import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="goengine-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)
