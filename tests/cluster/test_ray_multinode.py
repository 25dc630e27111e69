"""``train.loop --ray auto`` against a real multi-node Ray cluster on this machine
(tools/checks/ray_multinode.py): a head and two worker nodes, each a ``ray start`` of its own with its
own --temp-dir (raylet, object store), one logical CPU, token authentication on, and a custom
resource that pins the self-play actors to the workers.  The driver is a separate process.

- a worker node is killed (kill -9 of the node and every process below it) while it plays:
  the run goes on with the other node, counts the games lost, and the driver killed mid-run
  and resumed ends at its game budget exactly, every game written once (npz + SGF pairs);
- with no node able to host a self-play actor the run stops at its time budget, exit 0, and
  says what the actors waited for.

The longer scenario (a node lost, the last node lost, a new node joining, gating clients
killed, on an agz run) is ``python -m tools.checks.ray_multinode``: ~2.5 minutes on the 2-core CI
machine, too long for the suite; its figures are in docs/results/cluster.md.  Every wait has a deadline
and the cluster fixture kills every process it started, pass or fail."""
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is not installed (pip install -e .[cluster])")

from tools.checks.ray_multinode import (Driver, LocalCluster, _games, _metrics, _until,  # noqa: E402
                                 console_script, run_dir_check)

ARGS = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "16",
        "--parallel-games", "4", "--batch", "16", "--train-batch", "16", "--min-games", "4",
        "--checkpoint-every", "4", "--metrics-every", "2", "--threads", "1", "--seed", "5",
        "--selfplay-workers", "2", "--ray", "auto", "--ray-selfplay-cpus", "0.5",
        "--ray-selfplay-resource", "selfplay", "--ray-slice", "0.3", "--ray-trainer-cpus", "1", "--quiet"]


@pytest.fixture(scope="module")
def cluster():
    root = tempfile.mkdtemp(prefix="gmn-", dir="/tmp")    # Ray's socket paths must stay under 108 bytes
    try:
        with LocalCluster(Path(root)) as c:
            c.start_node("head", 1)
            c.start_node("worker1", 1, {"selfplay": 2})
            c.start_node("worker2", 1, {"selfplay": 2})
            yield c
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_console_scripts_are_found_beside_the_interpreter(tmp_path, monkeypatch):
    """``ray`` is the one beside sys.executable (an environment used without activating it),
    else PATH's, else the bare name."""
    beside = tmp_path / "venv" / "bin"
    beside.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(beside / "python"))
    on_path = tmp_path / "path"
    on_path.mkdir()
    monkeypatch.setenv("PATH", str(on_path))
    assert console_script("ray") == "ray"
    (on_path / "ray").write_text("#!/bin/sh\n")
    (on_path / "ray").chmod(0o755)
    assert console_script("ray") == str(on_path / "ray")
    (beside / "ray").write_text("#!/bin/sh\n")
    (beside / "ray").chmod(0o755)
    assert console_script("ray") == str(beside / "ray")


@pytest.mark.slow          # starts a 3-node Ray cluster
def test_token_authentication_is_on(cluster):
    env = cluster.env()
    assert env["RAY_AUTH_MODE"] == "token" and os.path.getsize(env["RAY_AUTH_TOKEN_PATH"]) == 64
    log = (cluster.root / "head.log").read_text()
    assert "Ray runtime started" in log


@pytest.mark.slow          # starts a 3-node Ray cluster
def test_node_lost_then_driver_killed_and_resumed(cluster, tmp_path):
    run = tmp_path / "run"
    # the first session's budget is out of reach: Ray may take long to notice the lost node on
    # a loaded machine, and the driver must still be running when it is killed; the resumed
    # session gets a budget a few games past what the first one wrote
    driver = Driver(cluster, run, [*ARGS, "--budget", "100000g"], tmp_path / "driver.log")
    try:
        workers = [n for n in cluster.nodes if n.name.startswith("worker") and not n.killed]
        _until("a self-play actor on a worker node and 4 games",
               lambda: _games(run) >= 4 and any(n.actors("ray::SelfPlayActor") for n in workers), 400)
        victim = max(workers, key=lambda n: len(n.actors("ray::SelfPlayActor")))
        victim.kill()
        # Ray notices a dead node through its health checks: slow on a loaded machine
        _until("the lost actor counted", lambda: _driver_alive(driver, tmp_path) and any(
            r.get("event") == "actor_lost" for r in _metrics(run, "ray")), 400)
        mark = _games(run)
        _until("games from the remaining node", lambda: _games(run) >= mark + 4, 300)
        assert driver.proc.poll() is None, "the run ended before its driver could be killed"
        driver.kill()                                   # kill -9: no summary, games in flight lost
    finally:
        if driver.proc.poll() is None:
            driver.kill()
    at_kill = _games(run)
    budget = at_kill + 8
    resumed = Driver(cluster, run, [*ARGS, "--budget", f"{budget}g", "--resume"], tmp_path / "driver.log")
    assert resumed.wait(400) == 0, (tmp_path / "driver.log").read_text()[-3000:]
    check = run_dir_check(run)
    assert check["games"] == budget                      # the budget, exactly, across both sessions
    assert check["unique"] and check["sgf_pairs"] and not check["corrupt"] and not check["tmp_files"]
    assert not any(check["gaps"].values())               # each slot's numbering continues
    lost = [r for r in _metrics(run, "ray") if r.get("event") == "actor_lost"]
    assert lost and all(r["lost_games"] >= 0 for r in lost)
    nodes = [r for r in _metrics(run, "ray") if r.get("event") == "nodes"]
    assert nodes and sum(nodes[-1]["games_per_node"].values()) >= 1
    starts = [r for r in _metrics(run, "loop") if r.get("event") == "start"]
    assert len(starts) == 2 and starts[0]["ray_nodes"] >= 3   # driver attached to the multi-node cluster


def _driver_alive(driver: Driver, tmp_path: Path) -> bool:
    """True while the driver runs; an AssertionError with its log's end once it has exited."""
    if driver.proc.poll() is not None:
        raise AssertionError(f"the driver exited ({driver.proc.returncode}) before the node loss was counted:\n"
                             + (tmp_path / "driver.log").read_text()[-3000:])
    return True


@pytest.mark.slow          # starts a 3-node Ray cluster
def test_no_room_for_selfplay_stops_at_time_budget(cluster, tmp_path):
    """The issue's hang: self-play actors that no node can host (here a resource no node has).
    The run stops at its budget, says why, and exits 0 with what it has."""
    run = tmp_path / "run"
    args = [a if a != "selfplay" else "nowhere" for a in ARGS] + ["--budget", "20s,100g"]
    t0 = time.time()
    status = Driver(cluster, run, args, tmp_path / "driver.log").wait(300)
    took = time.time() - t0
    log = (tmp_path / "driver.log").read_text()
    assert status == 0, log[-3000:]
    stop = [r for r in _metrics(run, "loop") if r.get("event") == "stop"][-1]
    assert stop["reason"].startswith("time budget spent") and "waiting for a node" in stop["reason"]
    assert "'nowhere': 1" in stop["reason"]
    assert stop["seconds"] < 20 + 60                    # bounded shutdown, no per-actor timeouts
    assert took < 300
    assert _games(run) == 0
