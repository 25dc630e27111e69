"""Compute budgets: FLOPs counted per process (engine.nets.flops), a run's spending summed over its
stage processes and sessions (train.usage), and train.loop stopping on it (--budget Fflops /
Hcpuh), resumed runs continuing the count."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from engine.nets import flops
from engine.nets.evaluator import TorchEvaluator
from engine.nets.network import GoNet, NetConfig
from train.rundir import RunDir
from train.supervisor import Budget
from train.usage import Usage

REPO = Path(__file__).resolve().parents[2]
TINY = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "8",
        "--parallel-games", "4", "--batch", "16", "--train-batch", "16", "--min-games", "2",
        "--checkpoint-every", "4", "--metrics-every", "1", "--threads", "1", "--seed", "3",
        "--mode", "az", "--inference-dtype", "fp32", "--quiet"]


def test_forward_flops_of_a_known_net():
    """A 1-block, 8-filter net's FLOPs by hand: the 3x3 convolutions dominate; the count grows
    with the board's points and equals what FlopCounterMode sees on a real forward pass."""
    net = GoNet(NetConfig(blocks=1, filters=8))
    f5, f9 = flops.forward_flops(net, 5), flops.forward_flops(net, 9)
    c = net.config
    tower = 2 * 9 * (c.in_planes * 8 + 2 * 8 * 8)          # stem + two 3x3 convs, per point
    assert f5 >= tower * 25 and f9 >= tower * 81
    assert 2.5 < f9 / f5 < 81 / 25 + 0.1                    # mostly per point, a little fixed
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        net.eval()(torch.zeros(1, c.in_planes, 9, 9))
    assert counter.get_total_flops() == f9
    assert flops.forward_flops(torch.nn.Linear(2, 2), 9) is None     # not one of ours: not counted
    assert flops.train_flops(net, 5) == 3 * f5


def test_evaluator_counts_its_forward_passes_and_not_when_paused():
    net = GoNet(NetConfig(blocks=1, filters=8))
    ev = TorchEvaluator(net, device="cpu", symmetries="none", cache_size=0)
    planes = torch.zeros(3, net.config.in_planes, 5, 5).numpy()
    before = flops.COUNTER.total
    ev.evaluate(planes)
    assert flops.COUNTER.total - before == pytest.approx(3 * flops.forward_flops(net, 5))
    before = flops.COUNTER.total
    with flops.COUNTER.paused():
        ev.evaluate(planes)
    assert flops.COUNTER.total == before


def test_usage_sums_the_last_totals_of_every_process():
    recs = [
        {"source": "selfplay", "pid": 1, "time": 1.0, "cpu_s": 2.0, "flops": 100},
        {"source": "trainer", "pid": 2, "time": 2.0, "cpu_s": 1.0, "flops": 10},
        {"source": "selfplay", "pid": 1, "time": 3.0, "cpu_s": 5.0, "flops": 300},
        {"source": "gate", "pid": 3, "time": 4.0, "cpu_s": 4.0, "flops": 50},
        {"source": "selfplay", "pid": 9, "time": 9.0, "cpu_s": 1.0, "flops": 7},     # a resumed session
        {"source": "selfplay", "time": 9.5, "games": 3},                             # no pid: not a total
    ]
    u = Usage(recs)
    assert u.flops == 300 + 10 + 50 + 7 and u.cpu_seconds == 5 + 1 + 4 + 1
    early = Usage(recs, until=3.5)
    assert early.flops == 310 and early.cpu_hours == pytest.approx(6 / 3600)


def test_usage_does_not_merge_two_processes_that_share_a_pid():
    """A resumed stage on another machine (or after a reboot) can get its old pid again: its
    counters add to the earlier process's, not merge with them by max."""
    recs = [
        {"source": "selfplay", "pid": 7, "proc": "a", "time": 1.0, "cpu_s": 50.0, "flops": 500},
        {"source": "selfplay", "pid": 7, "proc": "b", "time": 2.0, "cpu_s": 20.0, "flops": 200},   # new machine
        {"source": "selfplay", "pid": 7, "proc": "b", "time": 3.0, "cpu_s": 30.0, "flops": 300},
    ]
    u = Usage(recs)
    assert u.flops == 500 + 300 and u.cpu_seconds == 50 + 30
    # records written before the process id: a counter that goes down starts a new process
    legacy = [{k: v for k, v in r.items() if k != "proc"} for r in recs]
    u = Usage(legacy)
    assert u.flops == 500 + 300 and u.cpu_seconds == 50 + 30


def test_every_metrics_record_names_its_process(tmp_path):
    from train.usage import process_id
    rd = RunDir(tmp_path / "run")
    rd.make_root()
    rd.append_metrics({"source": "selfplay"})
    rd.append_metrics({"source": "trainer"})
    procs = {r["proc"] for r in rd.read_metrics()}
    assert procs == {process_id()} and len(process_id()) == 16


def test_budget_parses_compute_units_and_says_when_spent():
    b = Budget.parse("2.5e9flops,0.5cpuh,10m")
    assert b.flops == 2.5e9 and b.cpu_hours == 0.5 and b.seconds == 600
    u = Usage([{"source": "s", "pid": 1, "time": 0, "cpu_s": 10, "flops": 3e9}])
    assert "compute budget spent" in b.spent(u)
    assert Budget.parse("1cpuh").spent(u) is None
    assert "CPU budget spent" in Budget.parse("0.001cpuh").spent(u)
    with pytest.raises(ValueError):
        Budget.parse("3 gigaflops")


def run_loop(args, timeout=300):
    return subprocess.run([sys.executable, "-m", "train.loop", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)   # a hang guard, not a budget


@pytest.mark.slow          # training runs: python -m train.loop
def test_run_stops_at_its_cpu_budget_counting_every_stage_and_resume_continues(tmp_path):
    root = tmp_path / "run"
    r = run_loop(["--run-dir", str(root), "--budget", "0.004cpuh", *TINY])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "CPU budget spent" in r.stderr
    rd = RunDir(root)
    first = Usage(rd.read_metrics())
    sources = {rec["source"] for rec in rd.read_metrics() if rec.get("cpu_s")}
    assert {"selfplay", "trainer"} <= sources                 # every stage's CPU counts
    assert 0.004 <= first.cpu_hours < 0.004 + 0.004           # stopped once spent, not long after
    assert first.flops > 0
    r = run_loop(["--run-dir", str(root), "--resume", "--budget", "0.008cpuh", "--quiet"])
    assert r.returncode == 0, r.stderr[-3000:]
    second = Usage(rd.read_metrics())
    assert second.cpu_hours >= 0.008 and second.flops > first.flops
    pids = {rec["pid"] for rec in rd.read_metrics() if rec.get("cpu_s")}
    assert len(pids) >= 2 * 3                                 # two sessions' loop + stages
    # a budget already spent ends a resumed run at once
    r = run_loop(["--run-dir", str(root), "--resume", "--budget", "0.004cpuh", "--quiet"])
    assert r.returncode == 0 and "CPU budget spent" in r.stderr


@pytest.mark.slow          # training runs: python -m train.loop
def test_run_stops_at_its_flops_budget(tmp_path):
    root = tmp_path / "run"
    r = run_loop(["--run-dir", str(root), "--budget", "2e9flops", *TINY])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "compute budget spent" in r.stderr
    u = Usage(RunDir(root).read_metrics())
    assert u.flops >= 2e9
