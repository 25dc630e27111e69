"""Data-parallel training (train/learn/ddp.py): 2 CPU processes with gloo against 1 process.

Equivalence, and how it is made exact.  Both runs start from the same weights and take
:data:`STEPS` SGD steps (momentum, weight decay, no warm-up) on the same global batches of
:data:`BATCH` positions made by ``make_batch`` from a window of random 5x5 games, some of
them resigned (ownership and score masked out).  Rank r trains on rows
``[r*BATCH/2, (r+1)*BATCH/2)`` of each global batch, so the two ranks together see exactly
the single process's batch.  DDP averages the ranks' gradients; the ranks divide the masked
ownership and score sums by the global ``aux_weight`` sum, so the average equals the gradient
of the single process's loss, but for batch norm:

Each rank's batch norm normalises over its own half (``SyncBatchNorm`` in torch 2.13 raises
"SyncBatchNorm expected input tensor to be on GPU" for CPU tensors, checked below, and the
trainer does not use it on GPUs either), so the 1-process reference runs the same net with
"ghost batches": the forward pass goes through :class:`GhostBatches`, which evaluates the two
halves separately (each with its own batch statistics) and concatenates the outputs, and
updates the running statistics from the first half only, as DDP's rank 0 does (its buffers
are broadcast to the other rank before every forward pass, and they are what rank 0 saves).
With that, every tensor of the state dict, parameters and running statistics alike, must agree
within :data:`ATOL`.  Measured: bitwise equal; each half is computed by the same kernels in
both runs, the rescalings between a rank's mean and the global one are by powers of two
(exact), and a sum of two terms does not depend on its order.  The plain 1-process trainer
(batch norm over all 16 positions) must NOT agree with the 2-process run (it differs by about
0.1): the comparison can fail, and tells batch-norm semantics apart.
"""
import gc
import json
import signal
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from engine.nets import weights
from engine.nets.network import NetConfig, NetOutput
from train.config import RunConfig
from train.replay import BatchLoader, ReplayWindow, make_batch, shard_range
from train.rundir import RunDir
from train.learn.step import Trainer, TrainSettings

from tests.helpers.training import REPO, SIZE, run_loop, tiny, write_game

BATCH = 16
STEPS = 4
WORLD = 2
ATOL = 1e-5          # measured: 0, the runs are bitwise equal (AMD EPYC, torch 2.13)


@pytest.fixture(scope="module")
def window(tmp_path_factory):
    rd = RunDir(tmp_path_factory.mktemp("ddp") / "run").create()
    for seq in range(12):
        write_game(rd, seq, length=5 + seq, seed=seq, resign=seq % 3 == 0, random_targets=True, model="m0")
    w = ReplayWindow(rd, capacity=100)
    w.refresh()
    return w


def settings() -> TrainSettings:
    return TrainSettings(lr=0.05, lr_warmup=0, amp="fp32")


class GhostBatches(torch.nn.Module):
    """The net applied to ``parts`` equal slices of the batch separately (batch norm over each
    slice), outputs concatenated; running statistics from the first slice only."""

    def __init__(self, net: torch.nn.Module, parts: int):
        super().__init__()
        self.inner, self.parts = net, parts

    def forward(self, x: torch.Tensor) -> NetOutput:
        bns = [m for m in self.inner.modules() if isinstance(m, torch.nn.BatchNorm2d)]
        outs = []
        for i, chunk in enumerate(x.chunk(self.parts)):
            saved = [(m.momentum, m.num_batches_tracked.clone()) for m in bns]
            if i > 0:
                for m in bns:
                    m.momentum = 0.0             # batch statistics used, running ones kept
            outs.append(self.inner(chunk))
            if i > 0:
                for m, (mom, tracked) in zip(bns, saved):
                    m.momentum = mom
                    m.num_batches_tracked.copy_(tracked)
        return NetOutput(*(torch.cat(parts) for parts in zip(*outs)))


def _rank(rank: int, port: int, model_path: str, batches: list, out: str) -> None:
    """One rank of the 2-process run: its half of each global batch."""
    from train.learn import ddp
    torch.set_num_threads(1)
    store = ddp.make_store(WORLD, port)
    ddp.init_group(rank, WORLD, store, torch.device("cpu"))
    model, _ = weights.load(model_path)
    trainer = ddp.DDPTrainer(model, settings(), "cpu")
    half = BATCH // WORLD
    losses = [trainer.train_step({k: v[rank * half:(rank + 1) * half] for k, v in b.items()}) for b in batches]
    ddp.leave_group(trainer)
    # the group is freed now, not at interpreter shutdown (where gloo can abort the process)
    wrappers = sum(isinstance(o, torch.nn.parallel.DistributedDataParallel) for o in gc.get_objects())
    if rank == 0:
        torch.save({"state": trainer.model.state_dict(), "losses": losses, "wrappers": wrappers,
                    "initialized": dist.is_initialized()}, out)


def two_process_run(model_path: Path, batches: list, out: Path) -> dict:
    from train.learn import ddp
    store = ddp.make_store(WORLD)          # hosts the rendezvous on a free port
    mp.start_processes(_rank, args=(store.port, str(model_path), batches, str(out)), nprocs=WORLD,
                       start_method="spawn")
    return torch.load(out, weights_only=True)


def one_process_run(model_path: Path, batches: list, ghost: bool) -> tuple[dict, list]:
    torch.set_num_threads(1)
    model, _ = weights.load(model_path)
    trainer = Trainer(model, settings(), "cpu")
    if ghost:
        trainer.net = GhostBatches(trainer.model, WORLD)
    losses = [trainer.train_step(b) for b in batches]
    return trainer.model.state_dict(), losses


def max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a)


@pytest.mark.slow          # data-parallel training in two processes
def test_two_processes_equal_one_at_the_same_global_batch(window, tmp_path):
    model_path = tmp_path / "start.pt"
    weights.save(model_path, weights.new_model(NetConfig(blocks=2, filters=8), seed=5), {"step": 0})
    rng = np.random.default_rng(11)
    batches = [make_batch(window, BATCH, "rich", rng) for _ in range(STEPS)]
    assert any(b["aux_weight"][:BATCH // 2].sum() != b["aux_weight"][BATCH // 2:].sum() for b in batches)
    ddp_run = two_process_run(model_path, batches, tmp_path / "rank0.pt")
    ghost, ghost_losses = one_process_run(model_path, batches, ghost=True)
    plain, _ = one_process_run(model_path, batches, ghost=False)
    start, _ = weights.load(model_path)
    moved = max_diff({k: v for k, v in ghost.items() if v.is_floating_point()},
                     {k: v for k, v in start.state_dict().items() if v.is_floating_point()})
    diff = max_diff(ddp_run["state"], ghost)
    print(f"2 processes vs 1 (ghost batches): max |diff| {diff:.3g} over the state dict; "
          f"weights moved by up to {moved:.3g}; plain 1 process differs by {max_diff(ddp_run['state'], plain):.3g}")
    assert ddp_run["wrappers"] == 0 and not ddp_run["initialized"]
    assert moved > 100 * ATOL                     # the steps did change the weights
    assert diff <= ATOL
    for a, b in zip(ddp_run["losses"], ghost_losses):     # the reported losses are the global ones
        for k in ("loss", "policy", "value", "ownership", "score"):
            assert a[k] == pytest.approx(b[k], rel=1e-5, abs=1e-6)
    assert max_diff(ddp_run["state"], plain) > 10 * ATOL


def test_shards_split_the_window_and_one_shard_is_the_whole(window):
    p = window.positions
    ranges = [shard_range(p, (r, 3)) for r in range(3)]
    assert ranges[0][0] == 0 and ranges[-1][1] == p
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert shard_range(p, (0, 1)) == shard_range(p, None) == (0, p)
    assert shard_range(2, (1, 4)) == (0, 2)                  # fewer positions than ranks
    with pytest.raises(ValueError):
        shard_range(p, (2, 2))
    # rank 1 of 2 draws only from the second half of the window's positions, in window order
    starts = np.concatenate([[0], np.cumsum([len(np.flatnonzero(r.full)) for r in window._snap.records])])
    lo, hi = shard_range(p, (1, 2))
    for rec, moves in window.sample(500, np.random.default_rng(3), shard=(1, 2)):
        g = next(i for i, r in enumerate(window._snap.records) if r is rec)
        local = np.searchsorted(np.flatnonzero(rec.full), moves)
        assert ((starts[g] + local >= lo) & (starts[g] + local < hi)).all()
    a = make_batch(window, 8, "rich", np.random.default_rng(4))
    b = make_batch(window, 8, "rich", np.random.default_rng(4), shard=(0, 1))
    assert all(np.array_equal(a[k], b[k]) for k in a)       # one process samples as before


def test_loader_takes_its_shard(window):
    loader = BatchLoader(window, 8, "rich", seed=2, shard=(1, 2))
    try:
        assert loader.next(timeout=30)["planes"].shape == (8, 20, SIZE, SIZE)
    finally:
        loader.close()


def test_config_checks_the_device_count():
    RunConfig(train_batch=16, train_devices=2).check()
    with pytest.raises(ValueError, match="multiple of --train-devices"):
        RunConfig(train_batch=15, train_devices=2).check()
    with pytest.raises(ValueError, match="--train-devices must be positive"):
        RunConfig(train_devices=0).check()


TINY = tiny(threads=2)


@pytest.mark.slow          # a training run on two processes
def test_loop_trains_on_two_processes_and_resumes(tmp_path):
    """``train.loop --train-devices 2`` on 5x5: 8 games then a resume to 12 (budgets in games,
    one step per game): both ranks train, rank 0 writes every checkpoint, the follower's usage
    is in the metrics, the resumed ranks restore the optimiser state."""
    root = tmp_path / "run"
    r = run_loop(["--run-dir", str(root), "--budget", "8g", "--train-devices", "2", *TINY], timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    rd = RunDir(root)
    log = rd.log_path("trainer").read_text()
    assert "optimiser state fresh, device cpu, 2 data-parallel ranks (gloo)" in log
    assert "stopped at step 8 " in log
    assert [s for s, _ in rd.list_models()] == [0, 2, 4, 6, 8]
    model, meta = weights.load(rd.model_path(8))
    assert meta["step"] == 8 and all(torch.isfinite(p).all() for p in model.parameters())
    trainer_recs = rd.read_metrics("trainer")
    follower = rd.read_metrics("trainer-rank")
    assert trainer_recs[-1]["train_devices"] == 2 and trainer_recs[-1]["step"] == 8
    assert follower and follower[-1]["rank"] == 1 and follower[-1]["step"] == 8
    assert follower[-1]["event"] == "stop" and follower[-1]["pid"] != trainer_recs[-1]["pid"]
    assert follower[-1]["flops"] > 0 and follower[-1]["cpu_s"] > 0       # counted in the run's usage
    r = run_loop(["--run-dir", str(root), "--resume", "--budget", "12g"], timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    log = rd.log_path("trainer").read_text()
    assert "from model-0000008.pt (step 8), optimiser state restored, device cpu, 2 data-parallel ranks" in log
    assert rd.list_models()[-1][0] == 12 and rd.read_metrics("trainer-rank")[-1]["step"] == 12


@pytest.mark.slow          # the data-parallel trainer's processes
def test_trainer_rejects_a_device_count_that_does_not_divide_the_batch(tmp_path):
    root = tmp_path / "run"
    r = run_loop(["--run-dir", str(root), "--budget", "1g", "--train-devices", "3", *TINY], timeout=180)
    assert r.returncode == 2 and "multiple of --train-devices 3" in r.stderr


@pytest.mark.slow          # data-parallel training in two processes
def test_bench_reports_both_process_counts(capsys):
    from tools.bench import ddp
    assert ddp.main(["--processes", "1", "2", "--no-same-cores", "--board-size", "5", "--blocks", "1",
                           "--filters", "8", "--batch", "8", "--steps", "1", "--warmup", "1", "--rounds", "1"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    one, two = out["rows"]
    assert (one["processes"], two["processes"]) == (1, 2)
    assert one["samples_per_s"] > 0 and two["samples_per_s"] > 0 and two["allreduce_ms"] > 0
    assert one["allreduce_ms"] is None and one["speedup"] == 1.0


@pytest.mark.slow          # the data-parallel trainer's processes
def test_a_rank_that_cannot_start_is_reported_not_waited_for(tmp_path):
    from train.learn import ddp
    spec = {"run_dir": str(tmp_path), "model_path": str(tmp_path / "missing.pt"), "step": 0,
            "settings": settings(), "device": "cpu", "threads": 1, "config": RunConfig().to_dict(),
            "loader_seed": 0, "parent_pid": os.getpid()}
    with pytest.raises(RuntimeError, match=r"(?s)a data-parallel rank failed to start.*missing.pt: no such weights file"):
        ddp.Leader(2, torch.device("cpu"), spec, start_s=120.0)
    assert not dist.is_initialized()


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in (stat.parent / "cmdline").read_bytes():
            out.append(int(stat.parent.name))
    return out


@pytest.mark.slow          # a training run on two processes
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the rank through /proc")
def test_a_rank_killed_mid_run_fails_the_trainer_instead_of_hanging(tmp_path):
    """kill -9 of rank 1 while training: rank 0's next collective fails, the trainer exits
    non-zero and the loop stops with "stage failed"; the last checkpoint loads."""
    root = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "train.loop", "--run-dir", str(root), "--budget", "100000g",
                             "--train-devices", "2", *TINY], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    rd = RunDir(root)
    try:
        for _ in range(600):                          # up to 120 s for training to begin
            if rd.models.is_dir() and len(rd.list_models()) >= 3 and rd.read_metrics("trainer"):
                break
            time.sleep(0.2)
        trainer = [r["pid"] for r in rd.read_metrics("trainer")] or [None]
        followers = _children(trainer[-1]) if trainer[-1] else []
        assert len(followers) == 1, "the trainer's rank 1 was not found"
        os.kill(followers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and "stage failed: trainer (exit 1)" in err, err
    assert "a data-parallel rank failed" in rd.log_path("trainer").read_text()
    step, path = rd.list_models()[-1]
    assert weights.load(path)[1]["step"] == step


def test_sync_batch_norm_needs_a_gpu_in_this_torch():
    """Why each rank's batch norm uses its own share (module docstring): torch's SyncBatchNorm
    refuses CPU tensors.  If a torch version accepts them, this fails and the choice is open."""
    from train.learn import ddp
    store = ddp.make_store(1)
    ddp.init_group(0, 1, store, torch.device("cpu"))
    try:
        bn = torch.nn.SyncBatchNorm(4).train()
        with pytest.raises(ValueError, match="SyncBatchNorm expected input tensor to be on GPU"):
            bn(torch.randn(2, 4, 3, 3))
    finally:
        dist.destroy_process_group()
