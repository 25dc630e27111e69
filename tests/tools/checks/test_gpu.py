"""tools.checks.gpu: ``--dry-run`` (the check's tiny CPU version) writes the JSON the GPU run
writes, with every key, in well under 2 minutes on one core; and the suite's counts are read
from pytest's output, also when the suite was stopped at its timeout."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tools import REPO_ROOT as ROOT
from tools.checks.gpu import parse_pytest

KEYS = ("suite", "selfplay_evals_per_s", "raw_evals_per_s", "selfplay_share_of_raw",
        "engine_visits_per_s", "device", "cpu")


def _one_core() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check") / "check.json"
    r = subprocess.run([sys.executable, "-m", "tools.checks.gpu", "--dry-run", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=170, preexec_fn=_one_core)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return json.loads(out.read_text()), r


@pytest.mark.slow          # the dry run: benchmarks and a nested pytest
def test_dry_run_writes_every_key(dry_run):
    data, r = dry_run
    for key in KEYS:
        assert key in data, key
    assert data["dry_run"] is True and data["build"]["status"] in ("already built", "built")
    assert data["selfplay_evals_per_s"] > 0 and data["raw_evals_per_s"] > 0
    assert data["selfplay_share_of_raw"] == pytest.approx(
        data["selfplay_evals_per_s"] / data["raw_evals_per_s"], rel=0.01)
    assert data["engine_visits_per_s"] > 0 and data["engine"]["defaults"]["moves"] == 2
    assert data["cpu"]["cores"] == 1 and data["cpu"]["model"]
    assert data["seconds"] < 120
    assert json.loads(r.stdout.strip().splitlines()[-1])["engine_visits_per_s"] == data["engine_visits_per_s"]


@pytest.mark.slow          # the dry run: benchmarks and a nested pytest
def test_dry_run_suite_is_the_small_subset(dry_run):
    data, _ = dry_run
    suite = data["suite"]
    assert "tests/nets/test_cuda.py" in suite["command"] and "-x" in suite["command"]
    if not suite["timed_out"]:
        assert suite["returncode"] == 0 and suite["failed"] == 0 and suite["passed"] > 0
        if data["device"]["type"] == "cpu":
            assert suite["skipped"] >= 4                 # the CUDA tests skip here, with a reason


def test_counts_from_a_finished_and_a_stopped_suite():
    done = parse_pytest("..s.\nF\n=== FAILURES ===\nFAILED tests/test_a.py::test_x - boom\n"
                        "1 failed, 3 passed, 1 skipped, 2 warnings in 12.34s\n")
    assert (done["passed"], done["failed"], done["skipped"], done["errors"]) == (3, 1, 1, 0)
    assert done["failures"] == ["FAILED tests/test_a.py::test_x - boom"]
    stopped = parse_pytest("........s.....F.. [ 10%]\n....sE\n")
    assert (stopped["passed"], stopped["failed"], stopped["skipped"], stopped["errors"]) == (19, 1, 2, 1)
    assert "stopped before the end" in stopped["summary"]
