"""kill -9 of ``train.loop`` in the middle of a run, then ``--resume``: every file on disk loads,
and the counters (game numbers, training steps, checkpoint parents) continue."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.nets import weights
from train.games.records import read_npz, read_sgf_moves
from train.rundir import RunDir, iter_metrics

pytestmark = pytest.mark.slow          # a training run killed with -9 and resumed

REPO = Path(__file__).resolve().parents[2]
TINY = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "8",
        "--parallel-games", "4", "--batch", "16", "--train-batch", "16", "--min-games", "2",
        "--checkpoint-every", "2", "--metrics-every", "0.5", "--threads", "1", "--seed", "11", "--quiet"]


def processes_using(path: Path) -> list[int]:
    """Pids of processes whose command line mentions ``path``."""
    out = []
    needle = str(path).encode()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if needle in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def check_files(rd: RunDir):
    """Every game record, SGF and checkpoint on disk loads; returns (games, latest step)."""
    games = rd.list_games()
    for name, npz in games:
        rec = read_npz(npz)
        assert rec.length > 0
        sgf = rd.game_paths(name)[1]
        assert sgf.is_file(), f"{name.stem}: the SGF is written before the record"
        assert len(read_sgf_moves(sgf.read_bytes())[2]) == rec.length
    for step, path in rd.list_models():
        assert weights.load(path)[1]["step"] == step
    list(iter_metrics(rd.metrics_path))            # parses (a cut last line is skipped)
    return len(games), rd.latest_model()[0]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to watch the stage processes")
def test_kill_9_then_resume(tmp_path):
    rd = RunDir(tmp_path / "run")
    loop = subprocess.Popen([sys.executable, "-m", "train.loop", "--run-dir", str(rd.root), "--budget", "10m",
                             *TINY], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: rd.count_games() >= 8 and (rd.latest_model() or (0,))[0] >= 2, 90,
                 "games and a checkpoint")
    finally:
        loop.send_signal(signal.SIGKILL)
        loop.wait()
    # The stages die with the loop (PR_SET_PDEATHSIG): nothing keeps writing.
    wait_for(lambda: not processes_using(rd.root), 20, "the stage processes to die")

    games_before, step_before = check_files(rd)
    seqs_before = [n.seq for n, _ in rd.list_games()]
    assert seqs_before == list(range(games_before))
    models_before = {p.name for _, p in rd.list_models()}

    target = games_before + 4
    r = subprocess.run([sys.executable, "-m", "train.loop", "--run-dir", str(rd.root), "--resume",
                        "--budget", f"{target}g", "--quiet"], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    games_after, step_after = check_files(rd)
    assert games_after == target
    assert [n.seq for n, _ in rd.list_games()] == list(range(target))     # numbering continued
    assert step_after > step_before                                        # training continued
    new_models = [(s, p) for s, p in rd.list_models() if p.name not in models_before]
    assert new_models and weights.load(new_models[0][1])[1]["parent"] == f"model-{step_before:07d}.pt"
    starts = [m for m in iter_metrics(rd.metrics_path, "loop") if m.get("event") == "start"]
    assert len(starts) == 2 and starts[1]["games"] == games_before and starts[1]["step"] == step_before
    assert not list(rd.root.rglob(".*.tmp"))
    assert not processes_using(rd.root)
