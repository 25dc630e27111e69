"""Sabaki's own GTP client library (@sabaki/gtp 3.0.0) drives the engine: pipelined start-up,
a burst sync, the state tracker's incremental sync with undo, kata-analyze and lz-analyze stopped
by ``protocol_version`` after 3 info lines, every line checked against Sabaki's parser.

Needs Node and the library: ``npm ci --prefix tests`` (tests/package.json)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow          # node and Sabaki's GTP library drive the engine

TESTS = Path(__file__).resolve().parents[1]
SCRIPT = TESTS / "clients" / "test_gtp_client.js"
LIBRARY = TESTS / "node_modules" / "@sabaki" / "gtp"


def test_sabaki_client_library_drives_the_engine():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not LIBRARY.is_dir():
        pytest.skip("@sabaki/gtp is not installed: run `npm ci --prefix tests`")
    proc = subprocess.run([node, str(SCRIPT), sys.executable, "--weights", "uniform", "--seed", "1",
                           "--threads", "1", "--quiet", "--visits", "32"],
                          cwd=TESTS.parent, capture_output=True, text=True, timeout=55)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '"ok":true' in proc.stdout
