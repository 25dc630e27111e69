"""A tiny end-to-end training run: ``python -m train.loop`` on 5x5 with a 1x8 net.

It must leave SGFs that sgfmill parses and that replay legally through the C core to the
recorded result, training records that regenerate positions, checkpoints that load with their
step/parent chain, metrics, and a report with plots."""
import json
import subprocess
import sys

import numpy as np
import pytest

from engine.nets import weights
from engine.core import Game, IllegalMoveError, Rules
from train.games.records import positions, read_npz, read_sgf_moves
from train.rundir import RunDir

from tests.helpers.training import REPO, TINY, run_loop

pytestmark = pytest.mark.slow          # training runs: python -m train.loop


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("loop") / "run"
    r = run_loop(["--run-dir", str(root), "--budget", "12g", *TINY])
    assert r.returncode == 0, r.stdout + r.stderr
    return RunDir(root)


def test_layout_and_counts(run):
    games = run.list_games()
    assert len(games) == 12                        # the budget, exactly
    assert [n.seq for n, _ in games] == list(range(12))
    assert sorted(p.stem for p in run.sgf.glob("*.sgf")) == [n.stem for n, _ in games]
    assert run.config_path.is_file() and run.state_path.is_file()
    state = json.loads(run.state_path.read_text())
    assert state["games"] == 12 and state["last_exit"] == "game budget reached"
    assert not list(run.root.rglob(".*.tmp"))      # no temporary file left behind


def test_sgfs_replay_to_the_recorded_result(run):
    cfg = run.read_config()
    for name, npz in run.list_games():
        size, komi, moves, props = read_sgf_moves(run.game_paths(name)[1].read_bytes())
        assert (size, komi) == (5, 2.5) and props["RU"] == "Chinese"
        assert props["PB"].startswith("model-") and props["PW"].startswith("model-")
        assert "models:" in props["C"]
        game = Game(size, Rules.preset(cfg["rules"], komi))
        for color, point in moves:
            try:
                game.play(point, color)
            except IllegalMoveError as exc:                      # pragma: no cover
                pytest.fail(f"{name.stem}: illegal move {point} ({exc.reason})")
        rec = read_npz(npz)
        assert [(int(c), int(p)) for c, p in zip(rec.colors, rec.moves)] == moves
        if props["RE"].endswith("+R"):
            assert rec.reason == "resign" and props["RE"][0] == "BW"[rec.winner - 1]
        else:
            assert game.result_string() == props["RE"] == rec.result_string()
            assert rec.reason == "passes" and game.is_over or rec.reason == "move cap"
            assert (game.area() == rec.ownership).all()


def test_training_records_regenerate_positions(run):
    for _, npz in run.list_games()[:4]:
        rec = read_npz(npz)
        assert rec.model_ids and all(m.startswith("model-") for m in rec.model_ids)
        ts = np.flatnonzero(rec.full)
        ex = positions(rec, ts)
        assert ex.planes.shape == (len(ts), 20, 5, 5)
        np.testing.assert_allclose(ex.policy.sum(axis=1), 1.0, atol=1e-3)
        assert set(np.unique(ex.value)) <= {-1.0, 0.0, 1.0}


def test_checkpoints_chain(run):
    models = run.list_models()
    assert models[0][0] == 0 and len(models) >= 3
    parent = None
    for step, path in models:
        net, meta = weights.load(path)
        assert meta["step"] == step and meta["parent"] == parent and meta["board_sizes"] == [5]
        assert (net.config.blocks, net.config.filters) == (1, 8)
        parent = path.name
    assert run.trainer_state_path.is_file()


def test_metrics_and_report(run):
    recs = run.read_metrics()
    sp = [r for r in recs if r["source"] == "selfplay"]
    tr = [r for r in recs if r["source"] == "trainer" and "loss" in r]
    assert sp and tr
    for key in ("games_per_hour", "positions_per_s", "evals_per_s", "resign_winrate", "resign_fp_rate"):
        assert key in sp[-1]
    for key in ("loss", "policy", "value", "ownership", "score", "lr", "step", "loader_positions_per_s"):
        assert key in tr[-1]
    assert sp[-1]["games"] == 12 and tr[-1]["step"] == run.latest_model()[0]
    assert np.isfinite(tr[-1]["loss"])
    r = subprocess.run([sys.executable, "-m", "train.report", str(run.root)], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "games/h" in r.stdout and "loss" in r.stdout
    assert (run.plots / "losses.png").stat().st_size > 1000
    assert (run.plots / "throughput.png").stat().st_size > 1000


def test_existing_run_needs_resume(run):
    r = run_loop(["--run-dir", str(run.root), "--budget", "1g", *TINY])
    assert r.returncode == 2 and "--resume" in r.stderr
    r = run_loop(["--run-dir", str(run.root), "--resume", "--budget", "1g", "--blocks", "2", "--quiet"])
    assert r.returncode == 2 and "cannot change" in r.stderr


def test_a_run_with_two_lanes_and_search_threads(tmp_path):
    """The self-play settings for a GPU, on a CPU: two lanes, two search threads (32 games in
    flight, so each lane's 16 trees split in two parts)."""
    root = tmp_path / "run"
    args = [a for a in TINY]
    args[args.index("--parallel-games") + 1] = "32"
    r = run_loop(["--run-dir", str(root), "--budget", "6g", *args, "--selfplay-lanes", "2",
                  "--selfplay-search-threads", "2"])
    assert r.returncode == 0, r.stdout + r.stderr
    rd = RunDir(root)
    cfg = rd.read_config()
    assert (cfg["selfplay_lanes"], cfg["selfplay_search_threads"]) == (2, 2)
    games = rd.list_games()
    assert len(games) >= 6
    for _, npz in games:
        rec = read_npz(npz)
        game = Game(5, Rules.preset("chinese", 2.5))
        for color, point in zip(rec.colors, rec.moves):
            game.play(int(point), int(color))
        if rec.reason == "passes":
            assert game.is_over and game.result_string() == rec.result_string()


def test_batch_ramp_reaches_self_play(run, tmp_path):
    """``--batch-ramp`` (formerly ``--leaf-ramp``, still read): self-play's trees take one leaf
    per BATCH_RAMP root visits.  With a ramp longer than the search (8 visits) every tree adds
    one leaf per step, so a forward pass holds at most one leaf per game in flight (4); the run
    without it fills larger passes."""
    def batches(rd):
        return [r["mean_batch"] for r in rd.read_metrics() if r["source"] == "selfplay" and r.get("mean_batch")]

    root = tmp_path / "run"
    r = run_loop(["--run-dir", str(root), "--budget", "4g", *TINY, "--leaf-ramp", "100"])   # its old name
    assert r.returncode == 0, r.stdout + r.stderr
    rd = RunDir(root)
    assert rd.read_config()["batch_ramp"] == 100
    assert batches(rd) and max(batches(rd)) <= 4.0
    assert max(batches(run)) > 4.0
    bad = run_loop(["--run-dir", str(tmp_path / "bad"), "--budget", "1g", *TINY, "--batch-ramp", "-1"])
    assert bad.returncode == 2 and "--batch-ramp" in bad.stderr
