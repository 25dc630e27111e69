"""``python -m engine doctor``: a broken environment (no net, no C core) exits non-zero and
names the cause; a working one passes and prints the GUI command lines.  No GPU."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import doctor
from engine.nets import weights as weights_mod
from engine.nets.network import NetConfig

ROOT = Path(__file__).resolve().parents[2]


def run_doctor(argv, weights_dir=None):
    lines: list[str] = []
    failed = doctor.check(*argv, out=lines.append, weights_dir=weights_dir, search_seconds=0.2)
    return failed, "\n".join(lines)


def test_a_missing_net_fails_and_names_the_file(tmp_path):
    failed, text = run_doctor([str(tmp_path / "gone.pt"), (9,)])
    assert failed and "gone.pt not found" in failed[0]
    assert "FAIL nets" in text and text.splitlines()[-1].startswith("FAIL: nets")


def test_no_shipped_net_fails(tmp_path):
    failed, text = run_doctor([None, (9,)], weights_dir=tmp_path)
    assert failed and "no network" in failed[0] and "9x9" in failed[0]


@pytest.mark.slow          # engine doctor's process, starting the engine as the GUIs do
def test_a_working_setup_passes_with_the_gui_command_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    net = tmp_path / "tiny.pt"
    weights_mod.save(net, weights_mod.new_model(NetConfig(blocks=1, filters=8), seed=1),
                     {"board_sizes": [5], "step": 0, "parent": None})
    failed, text = run_doctor([str(net), (5,)])
    assert failed == [], text
    for what in ("engine", "cpu", "core", "torch", "nets", "precision", "cuda", "search"):
        assert any(line.split()[1:2] == [what] for line in text.splitlines()), what
    assert "visits/s" in text and "AVX2" in text
    for gui in ("Sabaki", "GoGui", "Lizzie", "KaTrain"):
        assert any(line.strip().startswith(gui) and sys.executable in line for line in text.splitlines())
    assert text.splitlines()[-1].startswith("All checks passed")


@pytest.mark.slow          # engine doctor's process, starting the engine as the GUIs do
def test_without_the_c_core_it_exits_non_zero_naming_it(tmp_path):
    hide = ("import sys; sys.modules['engine._core'] = None; from engine.__main__ import main; "
            "sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", hide, "doctor", "--size", "9"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL core" in r.stdout and "C core" in r.stdout.splitlines()[-1]
    assert "Traceback" not in r.stderr
