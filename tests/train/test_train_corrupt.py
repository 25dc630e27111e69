"""A run directory in a bad place or with corrupt files: ``train.loop`` answers with one clear
line and exit status 2, never a traceback; a corrupt newest checkpoint is set aside
(``*.corrupt``, logged) and the newest valid one before it is used; a corrupt optimiser state or
game record is reported by name, never skipped silently."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from engine.nets import weights
from engine.nets.network import NetConfig
from train.rundir import RunDir

REPO = Path(__file__).resolve().parents[2]
TINY = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "8",
        "--parallel-games", "2", "--batch", "16", "--train-batch", "16", "--min-games", "2",
        "--checkpoint-every", "2", "--metrics-every", "0.5", "--threads", "1", "--seed", "11", "--quiet"]


def run_module(module: str, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


# -- the run directory's place and config.json ------------------------------------------------

def _file(tmp: Path) -> str:
    (tmp / "afile").write_text("x")
    return "afile"


def _below_file(tmp: Path) -> str:
    (tmp / "afile").write_text("x")
    return "afile/run"


def _unwritable_parent(tmp: Path) -> str:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere: the read-only case is /sys below")
    (tmp / "ro").mkdir(mode=0o500)
    return "ro/run"


def _unwritable_dir(tmp: Path) -> str:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere: the read-only case is /sys below")
    (tmp / "ro").mkdir(mode=0o500)
    return "ro"


def _sysfs(tmp: Path) -> str:
    if not Path("/sys/kernel").is_dir():
        pytest.skip("no sysfs")
    return f"/sys/goengine-test-{os.getpid()}"          # sysfs: no mkdir, not even for root


def _config(text: str):
    def setup(tmp: Path) -> str:
        (tmp / "run").mkdir()
        (tmp / "run" / "config.json").write_text(text)
        return "run"
    return setup


_HELD: list = []      # holds taken by _held, open until the session ends


def _held(tmp: Path) -> str:
    from engine.fileio import try_hold

    (tmp / "run").mkdir()
    _HELD.append(try_hold(tmp / "run" / "lock"))       # another loop's flock (a separate open file)
    assert _HELD[-1] is not None
    return "run"


PLACES = [  # (name, setup -> run dir, resume, what the one line must say)
    ("a file", _file, False, "afile is a file, not a directory"),
    ("a file, resume", _file, True, "afile holds no run to resume"),
    ("below a file", _below_file, False, "cannot create the run directory afile/run: Not a directory"),
    ("below a file, resume", _below_file, True, "afile/run holds no run to resume"),
    ("unwritable parent", _unwritable_parent, False, "cannot create the run directory ro/run: Permission denied"),
    ("unwritable directory", _unwritable_dir, False, "the run directory ro is not writable"),
    ("read-only sysfs", _sysfs, False, "cannot create the run directory /sys/goengine-test-"),
    ("missing, resume", lambda tmp: "nothere", True, "nothere holds no run to resume"),
    ("config not JSON", _config("{bad"), True, "run/config.json: corrupt run config"),
    ("config empty", _config(""), True, "run/config.json: corrupt run config"),
    ("config a list", _config("[1, 2]"), True, "run/config.json: corrupt run config (not a JSON object)"),
    ("config wrong type", _config('{"board_size": "nine"}'), True, "run/config.json: corrupt run config"),
    ("held by another loop", _held, False, "another train.loop is running on run"),
]


def _one_error_line(stderr: str, message: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("train.loop: error: "), stderr
    assert message in lines[0], lines[0]


@pytest.mark.parametrize("name,setup,resume,message", PLACES, ids=[p[0] for p in PLACES])
def test_bad_run_directory_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, name, setup, resume, message):
    """train.loop's main in this process (the process itself: the test below)."""
    from train.loop import main

    monkeypatch.chdir(tmp_path)
    run_dir = setup(tmp_path)
    options = ["--resume"] if resume else TINY
    assert main(["--run-dir", run_dir, *options, "--budget", "1g"]) == 2
    _one_error_line(capsys.readouterr().err, message)
    if run_dir.startswith("/sys/"):
        assert not Path(run_dir).exists()


def test_the_process_exits_2_with_the_one_line(tmp_path):
    name, setup, resume, message = PLACES[0][0], PLACES[0][1], PLACES[0][2], PLACES[0][3]
    run_dir = setup(tmp_path)
    options = ["--resume"] if resume else TINY
    r = run_module("train.loop", "--run-dir", run_dir, *options, "--budget", "1g", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    _one_error_line(r.stderr, message)


# -- corrupt checkpoints, optimiser state, game records ---------------------------------------

def corrupt(path: Path, kind: str) -> None:
    data = path.read_bytes()
    path.write_bytes({"truncated": data[: len(data) // 2], "empty": b"",
                      "random": random.Random(7).randbytes(len(data))}[kind])


def make_run(tmp_path: Path) -> RunDir:
    """A run directory made by hand: config (TINY), checkpoints 0, 2 and 4 of a tiny net."""
    from train.config import from_namespace
    from train.loop import build_parser

    rd = RunDir(tmp_path / "run").create()
    cfg = from_namespace(build_parser().parse_args(["--run-dir", str(rd.root), *TINY])).check()
    rd.write_config(cfg.to_dict())
    net = weights.new_model(NetConfig(blocks=1, filters=8), seed=1)
    for step in (0, 2, 4):
        weights.save(rd.model_path(step), net, {"step": step, "parent": None, "board_sizes": [5]})
    return rd


@pytest.mark.parametrize("kind", ["truncated", "empty", "random"])
def test_corrupt_newest_checkpoint_is_set_aside(tmp_path, kind):
    rd = make_run(tmp_path)
    corrupt(rd.model_path(4), kind)
    logged: list[str] = []
    step, path, (model, meta) = rd.latest_valid_model(weights.load, logged.append)
    assert (step, path.name, meta["step"]) == (2, "model-0000002.pt", 2)
    assert not rd.model_path(4).exists() and (rd.models / "model-0000004.pt.corrupt").is_file()
    assert len(logged) == 1 and "model-0000004.pt" in logged[0] and "corrupt" in logged[0]
    assert [s for s, _ in rd.list_models()] == [0, 2]
    # Again: nothing more to set aside; a second corrupt file of the same name does not clobber.
    assert rd.latest_valid_model(weights.load, logged.append)[0] == 2 and len(logged) == 1
    weights.save(rd.model_path(4), model, {"step": 4, "parent": None, "board_sizes": [5]})
    corrupt(rd.model_path(4), kind)
    assert rd.latest_valid_model(weights.load, logged.append)[0] == 2
    assert (rd.models / "model-0000004.pt.corrupt.1").is_file()


def test_no_valid_checkpoint_at_all(tmp_path, monkeypatch, capsys):
    """train.loop's main in this process, twice."""
    from train.loop import main

    monkeypatch.chdir(tmp_path)
    rd = make_run(tmp_path)
    for step in (0, 2, 4):
        corrupt(rd.model_path(step), "empty")
    assert main(["--run-dir", str(rd.root), "--resume", "--budget", "1g"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = err.strip().split("\n")
    assert len(lines) == 4 and all("skipping corrupt checkpoint" in line for line in lines[:3]), lines
    assert lines[3].startswith("train.loop: error: ") and "no checkpoint loads" in lines[3]
    assert sorted(p.name for p in rd.models.iterdir()) == [f"model-000000{s}.pt.corrupt" for s in (0, 2, 4)]
    assert main(["--run-dir", str(rd.root), "--resume", "--budget", "1g"]) == 2
    assert "no checkpoint loads" in capsys.readouterr().err                              # not a new net
    assert not rd.list_models()


@pytest.mark.slow          # a training run resumed
def test_resume_past_a_corrupt_checkpoint_and_game_record(tmp_path):
    """The reported failure: --resume with a truncated newest checkpoint stopped with
    "stage failed: trainer (exit 1)".  Self-play alone (--selfplay-only) keeps it quick: the
    loop sets the file aside before any stage starts, self-play plays the model before it."""
    rd = make_run(tmp_path)
    corrupt(rd.model_path(4), "truncated")
    bad_game = rd.games / "g00000000-w00.npz"
    bad_game.write_bytes(b"PK\x03\x04 cut short")
    r = run_module("train.loop", "--run-dir", str(rd.root), "--resume", "--selfplay-only",
                   "--budget", "2g", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "skipping corrupt checkpoint" in r.stderr and "model-0000004.pt" in r.stderr, r.stderr
    assert (rd.models / "model-0000004.pt.corrupt").is_file() and rd.latest_model()[0] == 2
    log = rd.log_path("selfplay-w00").read_text()
    assert "Traceback" not in log and "Traceback" not in r.stderr, log
    assert "model model-0000002" in log, log
    assert "skips game record" in log and bad_game.name in log, log
    assert rd.count_games() == 2
    records = [m for m in rd.read_metrics("loop") if m.get("event") == "corrupt_file"]
    assert len(records) == 1 and "model-0000004.pt" in records[0]["message"]


@pytest.mark.slow          # the trainer's process trains two steps
def test_trainer_falls_back_and_names_corrupt_state_and_games(tmp_path):
    rd = make_run(tmp_path)
    corrupt(rd.model_path(4), "empty")
    rd.trainer_state_path.write_bytes(random.Random(3).randbytes(300))
    bad_game = rd.games / "g00000000-w00.npz"
    bad_game.write_bytes(b"")
    r = run_module("train.trainer", "--run-dir", str(rd.root), "--max-steps", "2", cwd=tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "Traceback" not in out, out
    assert "trainer: skipping corrupt checkpoint" in out and "model-0000004.pt" in out, out
    assert "from model-0000002.pt (step 2)" in out, out
    assert f"not using the optimiser state {rd.trainer_state_path}: unreadable" in out, out
    assert "replay: skipping game record" in out and bad_game.name in out, out
    assert (rd.models / "model-0000004.pt.corrupt").is_file()
