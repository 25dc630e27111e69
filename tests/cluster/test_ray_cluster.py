"""``train.loop --ray``: a tiny agz run on a local Ray cluster (2 CPUs), end to end, with a
self-play actor and a gating actor killed mid-run (train/cluster/driver.py).

One run serves every test (Ray takes ~20 s to start on a loaded machine): 5x5, a 1x8 net, the
sync pipeline, two generations of 6 games, 4-game gating matches played by a gating actor
(``--ray-gate-actors 1``: the driver's GateCoordinator counts them in start order); the trainer
runs in a stage actor (the same StageActor runs the gate program without --ray-gate-actors).  A thread kills self-play actor
w00 (``ray.kill``) once it has games in flight; the driver must replace it, count those games as
lost, and still finish the budget exactly.  Short slices (0.05 s) and 24 visits make every game
span several actor calls, so "games in flight" is seen whether the machine is busy or idle."""
import threading
import time

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e .[cluster]); the Ray test is skipped")

from train.loop import Budget, build_parser, prepare_run  # noqa: E402
from train.config import from_namespace  # noqa: E402
from train.cluster.driver import RayOptions, RaySupervisor  # noqa: E402
from train.games.records import read_npz  # noqa: E402
from train.rundir import RunDir  # noqa: E402

pytestmark = pytest.mark.slow          # a training run on a local Ray cluster

TINY = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "24",
        "--parallel-games", "4", "--batch", "16", "--train-batch", "16", "--min-games", "2",
        "--checkpoint-every", "2", "--metrics-every", "1", "--threads", "1", "--seed", "7",
        "--no-resign-fraction", "0.5", "--resign-min-games", "2",
        "--mode", "agz", "--pipeline", "sync", "--generation-games", "6", "--selfplay-workers", "2",
        "--gate-games", "4", "--gate-workers", "1", "--gate-parallel-games", "2", "--gate-visits", "4",
        "--gate-deadline-min", "30"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray") / "run"
    args = build_parser().parse_args(["--run-dir", str(root), *TINY])
    cfg = from_namespace(args).check()
    rd = RunDir(root)
    prepare_run(rd, cfg, resume=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    sup = RaySupervisor(rd, cfg, Budget.parse("12g"), RayOptions(
        address=None, selfplay_cpus=0.5, trainer_cpus=0.5, gate_cpus=0.5, slice_s=0.05, gate_actors=1),
        progress=False)
    killed = {}

    def killer():
        deadline = time.time() + 900         # a loaded machine reaches the first gate late
        while time.time() < deadline:
            slots = sup.slots
            # as soon as w00 reports games in flight (on a loaded machine the first generation
            # may be the only window before the budget is met)
            if slots and slots[0].in_flight > 0 and slots[0].incarnation == 0:
                killed["in_flight"] = slots[0].in_flight
                ray.kill(ray.get_actor(slots[0].name))
                break
            time.sleep(0.05)
        while time.time() < deadline:          # then the first gating actor, mid-match
            gates = [n for n in ray.util.list_named_actors() if n.startswith("goengine-gate-")]
            if gates:                            # (its first games are claimed before it starts)
                try:
                    ray.kill(ray.get_actor(gates[0]))
                    killed["gate"] = gates[0]
                except ValueError:               # its match ended meanwhile
                    continue
                return
            time.sleep(0.05)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        status = sup.run()
    finally:
        ray.shutdown()
    t.join(timeout=1)
    return rd, sup, status, killed


def test_budget_games_written_by_the_driver(run):
    rd, sup, status, _ = run
    assert status == 0
    games = rd.list_games()
    assert len(games) == 12                                  # the budget, exactly
    assert {n.worker for n, _ in games} == {0, 1}
    for w in (0, 1):                                         # a replacement continues the numbering
        seqs = [n.seq for n, _ in games if n.worker == w]
        assert seqs == list(range(len(seqs)))
    assert sorted(p.stem for p in rd.sgf.glob("*.sgf")) == [n.stem for n, _ in games]
    assert all(read_npz(p).model_ids for _, p in games)
    assert not list(rd.root.rglob(".*.tmp"))


def test_checkpoint_trained_and_gated(run):
    rd, _, _, _ = run
    steps = [s for s, _ in rd.list_models()]
    assert steps[0] == 0 and max(steps) > 0                  # the trainer actor wrote checkpoints
    decisions = [r for r in rd.read_metrics("gate") if r.get("event") == "decision"]
    assert decisions, "no gating decision"
    d = decisions[0]
    assert d["verdict"] in ("promote", "reject") and d["counted"] >= 1
    assert rd.read_decision(d["candidate"]) is not None
    numbers = {int(p.stem[1:]) for p in (rd.gating / d["candidate"]).glob("g*.sgf")}
    assert set(range(d["counted"])) <= numbers               # written by the driver, one per game number
    assert d["started"] >= d["counted"] and d["started"] <= 4


def test_killed_gating_actor_replaced_and_its_games_declared_lost(run):
    rd, _, _, killed = run
    assert killed.get("gate"), "no gating actor was killed"
    lost = [r for r in rd.read_metrics("ray") if r.get("event") == "gate_actor_lost"]
    assert len(lost) == 1
    d = rd.read_decision(f"model-{lost[0]['candidate_step']:07d}")
    assert d is not None and d["verdict"] in ("promote", "reject")   # decided all the same
    assert d["lost"] >= lost[0]["lost_games"]                        # declared lost, then played again
    numbers = sorted(int(p.stem[1:]) for p in (rd.gating / d["candidate"]).glob("g*.sgf"))
    assert numbers[:d["counted"]] == list(range(d["counted"]))       # none skipped, none twice


def test_killed_actor_replaced_and_lost_games_counted(run):
    rd, sup, _, killed = run
    assert killed, "the self-play actor was never killed"
    lost = [r for r in rd.read_metrics("ray") if r.get("event") == "actor_lost"]
    assert len(lost) == 1 and lost[0]["worker"] == 0 and lost[0]["lost_games"] >= 1
    assert sup.slots[0].incarnation == 1 and sup.replaced == 1
    summary = [r for r in rd.read_metrics("loop") if r.get("event") == "summary"][-1]
    assert summary["lost_games"] == lost[0]["lost_games"] and summary["replaced_actors"] == 1
    # the replacement's metrics are reported under their own key, so the summary adds both up
    keys = {r["worker"] for r in rd.read_metrics("selfplay") if r.get("slot") == 0}
    assert 1000 in keys
    # sync pipeline: the driver counts the time self-play was held back during train/gate phases
    assert summary["selfplay_wait_s"] > 0
