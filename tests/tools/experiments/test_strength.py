"""python -m tools.experiments strength, end to end on a tiny scale: two designs trained to the same
FLOPs budget, rated on one scale with intervals, JSON and PNG written; a second sitting skips
finished runs, and a run below a raised budget resumes (its earlier spending counts)."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tools import REPO_ROOT as REPO
from tools.experiments.strength import CALIBRATION_SECONDS, DESIGNS, bootstrap, calibration_budget, design_args, parse_settings
from train.rundir import RunDir
from train.supervisor import Budget
from train.usage import Usage

TINY = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "8",
        "--parallel-games", "4", "--batch", "16", "--train-batch", "16", "--min-games", "2",
        "--checkpoint-every", "4", "--gate-games", "4", "--gate-parallel-games", "4",
        "--metrics-every", "1", "--threads", "1", "--inference-dtype", "fp32"]


def experiment(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "tools.experiments", "strength", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)   # a hang guard


def test_design_args_double_visits_and_keep_everything_else():
    s = parse_settings(["--visits", "10", "--board-size", "5"])
    az, az2 = design_args("az", s), design_args("az-2v", s)
    assert az[az.index("--visits") + 1] == "10" and az2[az2.index("--visits") + 1] == "20"
    assert az2[az2.index("--gate-visits") + 1] == "20"
    drop = design_args("agz-async-finish-drop", s)
    assert "--no-keep-old-games" in drop and drop[drop.index("--on-new-model") + 1] == "finish"
    assert set(DESIGNS) >= {"az", "agz-sync-discard", "agz-async-finish", "agz-async-switch"}
    with pytest.raises(ValueError):
        design_args("elf", s)
    with pytest.raises(ValueError):
        parse_settings(["--visits"])


def test_bootstrap_interval_covers_the_fit_and_separates_clear_winners():
    games = [("a1", "b1", 1.0)] * 18 + [("a1", "b1", 0.0)] * 2 + [("a2", "b1", 1.0)] * 17 + \
            [("a2", "b1", 0.0)] * 3 + [("a1", "a2", 0.5)] * 4
    est = bootstrap(games, "b1", {"A": ["a1", "a2"], "B": ["b1"]}, reps=100, seed=1)
    e, lo, hi = est["A"]
    assert lo < e < hi and lo > 100            # A is clearly above B (0 by the anchor)
    assert est["B"][0] == 0.0
    shifted = bootstrap(games, "b1", {"A": ["a1", "a2"], "B": ["b1"]}, reps=100, seed=1, zero=["a1", "a2"])
    assert shifted["A"][0] == pytest.approx(0.0, abs=1e-6) and shifted["B"][0] == pytest.approx(-e)
    diff = bootstrap(games, "b1", {"A": ["a1", "a2"], "B": ["b1"]}, reps=100, seed=1, contrasts=[("A", "B")])["A - B"]
    assert diff[0] == pytest.approx(e) and diff[1] > 100           # the difference, with its own interval


@pytest.mark.slow          # training runs, rated
def test_tiny_experiment_rates_and_resumes(tmp_path):
    exp = tmp_path / "exp"
    args = ["--exp-dir", str(exp), "--designs", "az,agz-async-finish", "--seeds", "1", "--flops", "1.5e9",
            "--fractions", "0,0.5,1", "--anchors", "none", "--pair-games", "2", "--bootstrap", "30", *TINY]
    r = experiment(*args)
    assert r.returncode == 0, r.stderr[-4000:]
    summary = json.loads((exp / "summary.json").read_text())
    assert set(summary["designs"]) == {"az", "agz-async-finish"}
    assert summary["board_size"] == 5 and summary["games"] >= 2 * 2 + 2 * 2
    for name, d in summary["designs"].items():
        assert d["runs"] == 1 and set(d["fractions"]) == {"0.0", "0.5", "1.0"}
        lo, hi = d["elo_ci95"]
        assert d["elo"] is not None and lo <= d["elo"] <= hi
        assert d["cpu_hours"] > 0
        rd = RunDir(exp / "runs" / name / "seed-1")
        assert Usage(rd.read_metrics()).flops >= 1.5e9
    assert set(summary["differences"]) == {"az - agz-async-finish"}
    initial = [p["elo"] for p in summary["players"].values() if p["fraction"] == 0]
    assert len(initial) == 2 and abs(sum(initial)) < 1.0          # the scale's 0: the initial nets
    assert (exp / "summary.png").stat().st_size > 5000

    # A later sitting with nothing left to do trains nothing and plays no game again.
    log_lines = (exp / "experiment.log").read_text().count("\n")
    r = experiment("--exp-dir", str(exp), "--fractions", "0,0.5,1", "--anchors", "none", "--bootstrap", "30")
    assert r.returncode == 0, r.stderr[-4000:]
    new = (exp / "experiment.log").read_text().splitlines()[log_lines:]
    assert not any("starting" in line or "resuming" in line for line in new), new

    # Run settings cannot change under an existing experiment.
    r = experiment("--exp-dir", str(exp), "--visits", "16")
    assert r.returncode == 1 and "holds an experiment already" in r.stderr

    # A raised budget: both runs resume where they stopped (their spending so far counts).
    before = {n: Usage(RunDir(exp / "runs" / n / "seed-1").read_metrics()).flops for n in summary["designs"]}
    raised = 2 * max(before.values())     # a run stops at the first metrics record past its budget
    meta = json.loads((exp / "experiment.json").read_text())
    meta["flops_per_run"] = raised
    (exp / "experiment.json").write_text(json.dumps(meta))
    r = experiment("--exp-dir", str(exp), "--fractions", "0,0.5,1", "--anchors", "none", "--bootstrap", "30")
    assert r.returncode == 0, r.stderr[-4000:]
    assert r.stderr.count("resuming at") == 2 and "starting" not in r.stderr
    for n, f in before.items():
        rd = RunDir(exp / "runs" / n / "seed-1")
        after = Usage(rd.read_metrics()).flops
        assert after >= raised
        starts = [x for x in rd.read_metrics("loop") if x.get("event") == "start"]
        assert len(starts) == 2                 # one session, then one resumed session
    summary2 = json.loads((exp / "summary.json").read_text())
    assert all(math.isfinite(d["elo"]) for d in summary2["designs"].values())


def test_the_calibration_runs_for_seconds_or_for_a_fixed_work():
    assert calibration_budget() == f"{CALIBRATION_SECONDS}s"
    assert calibration_budget(seconds=20) == "20s"
    assert calibration_budget(flops=3e9) == "3e+09flops"
    assert Budget.parse(calibration_budget(flops=3e9)).flops == 3e9       # train.loop reads it back
    with pytest.raises(ValueError):
        calibration_budget(seconds=20, flops=3e9)
    with pytest.raises(ValueError):
        calibration_budget(flops=0)


@pytest.mark.slow          # a calibration and a training unit
def test_cpu_hours_convert_at_a_rate_calibrated_once_and_saved(tmp_path):
    """The calibration is a fixed work (FLOPs), so a loaded machine runs it longer but measures
    the same thing: FLOPs per CPU-second."""
    exp = tmp_path / "exp"
    r = experiment("--exp-dir", str(exp), "--designs", "az", "--seeds", "1", "--cpu-hours", "0.001",
                   "--calibration-flops", "3e9", "--no-rating", *TINY)
    assert r.returncode == 0, r.stderr[-4000:]
    meta = json.loads((exp / "experiment.json").read_text())
    rate = meta["calibration"]["flops_per_cpu_second"]
    assert rate > 0 and meta["calibration"]["cpu"] and meta["calibration"]["calibration_budget"] == "3e+09flops"
    assert Usage(RunDir(exp / "calibration").read_metrics()).flops >= 3e9
    assert 0 < meta["calibration"]["calibration_flops"] <= Usage(RunDir(exp / "calibration").read_metrics()).flops
    assert meta["flops_per_run"] == pytest.approx(0.001 * 3600 * rate)
    assert Usage(RunDir(exp / "runs" / "az" / "seed-1").read_metrics()).flops >= meta["flops_per_run"]
