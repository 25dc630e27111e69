"""A real multi-node Ray cluster on one machine, and a ``train.loop --ray auto`` run through a
lost node, a new node, killed gating clients and a killed driver:
``python -m tools.checks.ray_multinode --root /tmp/multinode``.

:class:`LocalCluster` starts every node with ``ray start --block`` in its own process group:
its own ``--temp-dir`` (so its own raylet, object store and logs), its own ports, one logical
CPU, and on worker nodes a custom resource (``selfplay``) that pins the self-play and gating
actors to them; the head holds the driver's stages (trainer).  Token authentication stays on
(``RAY_AUTH_MODE=token``, the token in a file named by ``RAY_AUTH_TOKEN_PATH`` that every node
and the driver read).  Killing a node is ``kill -9`` of its process group and every process
below it (raylet, object store, agents, actor workers): a machine lost without warning.

The scenario (:func:`scenario`): head + two worker nodes; the driver (a separate process, the
only one that sees the run directory) runs an agz run on 5x5 with a gating actor; each gating
actor is ``kill -9``\\ ed once it plays (``--gate-kills`` times); worker node 1 is killed, then
node 2, leaving no room for self-play (the driver says what its actors wait for); node 3 joins
and the actors come back on it; the driver is killed and the run resumed to its game budget.
At the end every game in the run directory is checked: npz and SGF in pairs, each readable,
names unique, numbering per slot without gaps other than the games lost.  The figures of one
run on this project's machine are in docs/results/cluster.md.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tools import REPO_ROOT


def console_script(name: str) -> str:
    """The console script ``name`` installed beside this interpreter (a virtual environment's
    bin/, found even when the environment is not activated), else ``name`` as PATH finds it."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name) or name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    return kids


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    kids, out, todo = _children(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return ""


class Node:
    """One ``ray start --block`` process group."""

    def __init__(self, name: str, proc: subprocess.Popen, temp_dir: Path, resources: dict[str, float]):
        self.name, self.proc, self.temp_dir, self.resources = name, proc, temp_dir, resources
        self.killed = False

    def actors(self, prefix: str) -> list[int]:
        """pids of this node's Ray workers whose process title starts with ``prefix``
        (``ray::SelfPlayActor``, ``ray::GateActor``)."""
        if self.proc.poll() is not None:
            return []
        return [p for p in descendants(self.proc.pid) if _title(p).startswith(prefix)]

    def kill(self) -> int:
        """kill -9 of the node and everything below it; returns how many processes."""
        pids = descendants(self.proc.pid)
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.killed = True
        return len(pids)


class LocalCluster:
    """A head and worker nodes on this machine (see the module docstring); a context manager
    that kills every process it started, whatever happens."""

    def __init__(self, root: Path, object_store_mb: int = 80):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.token_path = self.root / "auth_token"
        self.token_path.write_text(secrets.token_hex(32))
        self.token_path.chmod(0o600)
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.object_store = object_store_mb * 1024 * 1024
        self.nodes: list[Node] = []

    def env(self) -> dict[str, str]:
        """The environment of a node or a driver: token authentication, this cluster."""
        env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(self.token_path),
                   RAY_ADDRESS=self.address, RAY_USAGE_STATS_ENABLED="0")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        env.pop("RAY_AUTH_TOKEN", None)
        return env

    def start_node(self, name: str, cpus: int = 1, resources: dict[str, float] | None = None,
                   timeout: float = 120.0) -> Node:
        """Starts a node (the first one is the head) and waits until the cluster lists it."""
        temp = self.root / name
        args = [console_script("ray"), "start", "--block", "--num-cpus", str(cpus), "--temp-dir", str(temp),
                "--object-store-memory", str(self.object_store), "--disable-usage-stats",
                "--dashboard-agent-listen-port", str(_free_port()), "--node-name", name]
        if resources:
            args += ["--resources", json.dumps(resources)]
        if not self.nodes:
            args += ["--head", "--port", str(self.port), "--include-dashboard", "false",
                     "--dashboard-port", str(_free_port())]
        else:
            args += ["--address", self.address]
        log = open(self.root / f"{name}.log", "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self.env(), start_new_session=True)
        log.close()
        node = Node(name, proc, temp, dict(resources or {}))
        self.nodes.append(node)
        self.wait_nodes(len([n for n in self.nodes if not n.killed]), timeout)
        return node

    def wait_nodes(self, n: int, timeout: float) -> None:
        """Waits until ``n`` live nodes have said "Ray runtime started"."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            live = [nd for nd in self.nodes if not nd.killed]
            dead = [nd for nd in live if nd.proc.poll() is not None]
            if dead:
                raise RuntimeError(f"node {dead[0].name} exited: see {self.root / (dead[0].name + '.log')}")
            up = sum(1 for nd in live if "Ray runtime started" in (self.root / f"{nd.name}.log").read_text())
            if up >= n:
                return
            time.sleep(0.5)
        raise TimeoutError(f"{n} nodes did not come up within {timeout:g} s (see {self.root}/*.log)")

    def close(self) -> None:
        for node in reversed(self.nodes):
            if not node.killed:
                node.kill()

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def run_dir_check(run_dir: Path) -> dict[str, Any]:
    """Every game of a run directory: npz and SGF in pairs, each readable, names unique."""
    from train.games.records import read_npz
    from train.rundir import RunDir
    rd = RunDir(run_dir)
    games = rd.list_games()
    stems = [n.stem for n, _ in games]
    sgfs = sorted(p.stem for p in rd.sgf.glob("*.sgf"))
    bad = []
    for _, p in games:
        try:
            if not read_npz(p).model_ids:
                bad.append(p.name)
        except Exception as exc:            # a corrupt file is a finding, not a crash
            bad.append(f"{p.name}: {exc}")
    per_slot: dict[int, list[int]] = {}
    for n, _ in games:
        per_slot.setdefault(n.worker, []).append(n.seq)
    return {"games": len(games), "unique": len(set(stems)) == len(stems), "sgf_pairs": sgfs == sorted(stems),
            "corrupt": bad, "tmp_files": [str(p) for p in rd.root.rglob(".*.tmp")],
            "per_slot": {w: len(s) for w, s in sorted(per_slot.items())},
            "gaps": {w: sorted(set(range(max(s) + 1)) - set(s)) for w, s in per_slot.items() if s}}


LOOP_ARGS = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "16",
             "--parallel-games", "4", "--batch", "16", "--train-batch", "16", "--min-games", "4",
             "--checkpoint-every", "4", "--metrics-every", "2", "--threads", "1", "--seed", "11",
             "--selfplay-workers", "2", "--mode", "agz", "--gate-games", "8", "--gate-parallel-games", "4",
             "--gate-visits", "4", "--gate-deadline-min", "60", "--ray", "auto", "--ray-selfplay-cpus", "0.3",
             "--ray-selfplay-resource", "selfplay", "--ray-gate-actors", "1", "--ray-gate-cpus", "0.3",
             "--ray-gate-resource", "selfplay", "--ray-slice", "0.5", "--ray-trainer-cpus", "1", "--quiet"]


def _metrics(run_dir: Path, source: str | None = None) -> list[dict[str, Any]]:
    from train.rundir import RunDir
    return RunDir(run_dir).read_metrics(source) if (run_dir / "metrics.jsonl").exists() else []


def _games(run_dir: Path) -> int:
    return len(list((run_dir / "games").glob("*.npz"))) if (run_dir / "games").is_dir() else 0


class Driver:
    """``python -m train.loop`` as a separate process against the cluster."""

    def __init__(self, cluster: LocalCluster, run_dir: Path, args: list[str], log: Path):
        self.log = open(log, "a")
        self.proc = subprocess.Popen([sys.executable, "-m", "train.loop", "--run-dir", str(run_dir), *args],
                                     cwd=str(REPO_ROOT), env=cluster.env(), stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self) -> None:
        for p in descendants(self.proc.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.log.close()

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        finally:
            self.log.close()


def _until(what: str, cond, timeout: float, tick=None) -> None:
    deadline = time.time() + timeout
    while not cond():
        if tick is not None:
            tick()
        if time.time() > deadline:
            raise TimeoutError(f"timed out waiting for: {what}")
        time.sleep(0.25)


def scenario(root: Path, games: int = 60, gate_kills: int = 2, timeout: float = 1500.0,
             loop_args: list[str] | None = None) -> dict[str, Any]:
    """The run of the module docstring; returns its figures.  Every wait has a deadline
    (``timeout`` in all) and the cluster is torn down whatever happens."""
    root = Path(root)
    shutil.rmtree(root, ignore_errors=True)
    run_dir, t_end = root / "run", time.time() + timeout
    args = [*(loop_args or LOOP_ARGS), "--budget", f"{games}g"]
    fig: dict[str, Any] = {"budget_games": games, "events": []}
    t0 = time.time()

    def event(what: str, **kw: Any) -> None:
        rec = {"t": round(time.time() - t0, 1), "event": what, "games": _games(run_dir), **kw}
        fig["events"].append(rec)
        print(json.dumps(rec), flush=True)

    with LocalCluster(root / "cluster") as cluster:
        cluster.start_node("head", 1)
        workers = [cluster.start_node(f"worker{i}", 1, {"selfplay": 3}) for i in (1, 2)]
        event("nodes up", nodes=[n.name for n in cluster.nodes])
        driver = Driver(cluster, run_dir, args, root / "driver.log")
        kills: list[str] = []

        def kill_gates() -> None:           # a gating client killed mid-match, gate_kills times
            if len(kills) >= gate_kills or (kills and time.time() - float(kills[-1].split("@")[1]) < 3):
                return
            for n in cluster.nodes:
                if not n.killed and n.name != "head":
                    for pid in n.actors("ray::GateActor"):
                        os.kill(pid, signal.SIGKILL)
                        kills.append(f"{n.name}@{time.time()}")
                        event("gating actor killed", node=n.name, pid=pid)
                        return

        def per_node() -> dict[str, int]:
            return {n.name: len(n.actors("ray::SelfPlayActor")) for n in cluster.nodes if not n.killed}

        _until("self-play actors on both worker nodes and 8 games",
               lambda: _games(run_dir) >= 8 and sum(per_node().values()) >= 2, t_end - time.time(), kill_gates)
        fig["actors_per_node_before"] = per_node()
        victim = max(workers, key=lambda n: len(n.actors("ray::SelfPlayActor")))
        event("worker node killed", node=victim.name, actors=len(victim.actors("ray::SelfPlayActor")),
              processes=victim.kill())
        _until("an actor_lost record", lambda: any(r.get("event") == "actor_lost" for r in _metrics(run_dir, "ray")),
               t_end - time.time(), kill_gates)
        mark = _games(run_dir)
        _until("self-play going on with the remaining node", lambda: _games(run_dir) >= mark + 4,
               t_end - time.time(), kill_gates)
        fig["actors_per_node_after_loss"] = per_node()
        other = next(n for n in workers if n is not victim)
        event("last worker node killed: no room for self-play", node=other.name, processes=other.kill())
        _until("the driver saying what its actors wait for",
               lambda: any(r.get("event") == "actor_waiting" for r in _metrics(run_dir, "ray")), t_end - time.time())
        stalled_at = _games(run_dir)
        event("actors waiting", waiting=sum(1 for r in _metrics(run_dir, "ray") if r.get("event") == "actor_waiting"))
        new = cluster.start_node("worker3", 1, {"selfplay": 3})
        event("new worker node started", node=new.name)
        _until("games again on the new node", lambda: _games(run_dir) >= stalled_at + 4, t_end - time.time(), kill_gates)
        fig["actors_per_node_new"] = per_node()
        kill_at = max(_games(run_dir) + 4, int(games * 0.6))
        _until(f"{kill_at} games", lambda: _games(run_dir) >= kill_at or driver.proc.poll() is not None,
               t_end - time.time(), kill_gates)
        if driver.proc.poll() is None:
            driver.kill()
            event("driver killed (kill -9)")
        fig["games_at_driver_kill"] = _games(run_dir)
        fig["first_session"] = fig["events"][-1]
        resumed = Driver(cluster, run_dir, [*args, "--resume"], root / "driver.log")
        status = resumed.wait(max(60.0, t_end - time.time()))
        event("resumed run ended", exit_status=status)
        fig["exit_status"] = status
    summaries = [r for r in _metrics(run_dir, "loop") if r.get("event") == "summary"]
    ray_recs = _metrics(run_dir, "ray")
    fig.update(
        check=run_dir_check(run_dir),
        lost_games=sum(r.get("lost_games", 0) for r in ray_recs if r.get("event") == "actor_lost"),
        actors_lost=sum(1 for r in ray_recs if r.get("event") == "actor_lost"),
        gate_actors_lost=[r.get("lost_games") for r in ray_recs if r.get("event") == "gate_actor_lost"],
        games_per_node_resumed=summaries[-1].get("games_per_node") if summaries else None,
        decisions=[{k: r.get(k) for k in ("candidate", "verdict", "counted", "lost", "started")}
                   for r in _metrics(run_dir, "gate") if r.get("event") == "decision"],
        stop_reasons=[r.get("reason") for r in _metrics(run_dir, "loop") if r.get("event") == "stop"],
        seconds=round(time.time() - t0, 1))
    return fig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.checks.ray_multinode",
                                 description="A train.loop --ray auto run on a head and worker nodes started "
                                             "with ray start on this machine: a node lost, a node added, gating "
                                             "clients and the driver killed, the run resumed and checked.")
    ap.add_argument("--root", default="/tmp/goengine-multinode", help="cluster temp dirs, logs and the run dir")
    ap.add_argument("--games", type=int, default=60, help="the run's game budget")
    ap.add_argument("--gate-kills", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1500.0, help="seconds for the whole scenario")
    a = ap.parse_args(argv)
    fig = scenario(Path(a.root), a.games, a.gate_kills, a.timeout)
    print(json.dumps({k: v for k, v in fig.items() if k != "events"}, indent=1))
    c = fig["check"]
    ok = (fig["exit_status"] == 0 and c["games"] == a.games and c["unique"] and c["sgf_pairs"]
          and not c["corrupt"] and not c["tmp_files"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
