"""Data-parallel training: the trainer stage on N processes with torch DistributedDataParallel.

``train.loop --train-devices N`` (or ``python -m train.trainer --run-dir DIR --train-devices N``)
runs the trainer stage as N ranks: gloo on CPUs, NCCL on GPUs, one GPU per rank counted from
the ``--train-device`` index (``cuda`` = ``cuda:0``, so ranks use ``cuda:0`` .. ``cuda:N-1``).

Processes.  Rank 0 is the trainer stage process itself (the one ``train.loop`` starts and
signals); it starts ranks 1..N-1 with ``torch.multiprocessing.start_processes`` (spawn) and
meets them through a ``torch.distributed.TCPStore`` on 127.0.0.1 (a free port).  The followers
die with rank 0 (``PR_SET_PDEATHSIG``) and ignore SIGINT/SIGUSR1: only rank 0 takes the stage's
decisions (what self-play has paid for, the sync pipeline's phases, stop signals), and before
each step it broadcasts ``[action, step, games on disk]`` (:data:`TRAIN`, :data:`WAIT` every
:data:`HEARTBEAT_S` while it waits, :data:`STOP`).  So all ranks do the same steps in the same
order, and a rank that dies makes the others' next collective fail instead of hanging.

Data.  Each rank keeps its own replay window following the run directory and samples its
``train_batch / N`` positions from its own shard, the rank-th of N equal slices of the window's
positions (:meth:`train.replay.ReplayWindow.sample`), with its own random stream; a follower
re-reads the directory when rank 0 reports more games on disk than it has seen.

The step.  DDP averages the gradients over the ranks, and the ownership and score losses divide
their masked sums by the global ``aux_weight`` sum (one all-reduce per step), so the average is
the gradient one process would compute on the N shares together (resigned games weigh the
same), except for batch norm, which normalises over each rank's share, not over the global
batch (the usual data-parallel practice: ``SyncBatchNorm`` in torch 2.13 runs on GPUs only, and
there it would add two collectives per batch-norm layer).  The running statistics are rank 0's
(DDP sends them to every rank before each forward pass), so the checkpoint is rank 0's model.
``tests/train/test_ddp.py`` shows the equivalence: 2 ranks give bitwise the weights of one process
that computes the two halves of each batch as separate batch-norm batches.

The losses reported are the mean over the ranks (one more small all-reduce), so every rank
skips the same non-finite steps.  Rank 0 writes every checkpoint and the optimiser state; each
rank restores the optimiser state from that same file at start (DDP aligns the weights, not
the momentum), and the ranks check that they agree.  Followers write ``trainer-rank`` metrics
records so that their CPU time and FLOPs count in the run's usage; rank 0's ``trainer`` records
count global samples, and their ``loader_positions_per_s`` is rank 0's loader times N.
"""
from __future__ import annotations

import datetime
import gc
import queue
import signal
import sys
import time
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessException
from torch.nn.parallel import DistributedDataParallel

from engine.nets import weights
from train.config import RunConfig
from train.stage import die_with_parent
from train.replay import BatchLoader, ReplayWindow
from train.rundir import RunDir
from train.learn.step import Trainer, TrainSettings

WAIT, TRAIN, STOP = 0, 1, 2
HEARTBEAT_S = 10.0                               # rank 0 tells the followers at least this often
TIMEOUT = datetime.timedelta(minutes=30)         # a collective not completed by then fails
SEED_STRIDE = 1_000_003                          # rank r's sampling seed: seed + r * SEED_STRIDE


def rank_device(base: str | torch.device, rank: int, world: int) -> torch.device:
    """Rank ``rank``'s device: the CPU, or the ``rank``-th GPU from ``base``'s index.
    ValueError when the machine has too few GPUs for ``world`` ranks."""
    dev = torch.device(base)
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise ValueError(f"--train-devices: data-parallel training runs on cpu or cuda, not {dev.type}")
    first = dev.index or 0
    count = torch.cuda.device_count()
    if first + world > count:
        raise ValueError(f"--train-devices {world} from cuda:{first} needs {first + world} GPUs; "
                         f"this machine has {count}")
    return torch.device("cuda", first + rank)


def backend_for(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def rank_seed(seed: int, rank: int) -> int:
    """Rank ``rank``'s sampling seed (rank 0 keeps the single-process seed)."""
    return int(seed) + int(rank) * SEED_STRIDE


def rank_threads(total: int, world: int) -> int:
    """Torch threads of each rank: the stage's threads shared out, at least one."""
    return max(1, int(total) // int(world))


def init_group(rank: int, world: int, store: Any, device: torch.device) -> None:
    """Joins the default process group (gloo or NCCL for ``device``) through ``store``."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend_for(device), store=store, rank=rank, world_size=world, timeout=TIMEOUT)


def make_store(world: int, port: int | None = None) -> dist.TCPStore:
    """The rendezvous store on 127.0.0.1: ``port`` None hosts it on a free port (see
    ``store.port``; rank 0 does), else connects to the one on ``port``."""
    return dist.TCPStore("127.0.0.1", port or 0, world, port is None, timeout=TIMEOUT, wait_for_workers=False)


class DDPTrainer(Trainer):
    """A :class:`train.learn.step.Trainer` whose forward and backward pass go through
    DistributedDataParallel (the process group must be initialised)."""

    def __init__(self, model: torch.nn.Module, settings: TrainSettings, device: str | torch.device,
                 step: int = 0):
        if not dist.is_initialized():
            raise RuntimeError("DDPTrainer needs an initialised torch.distributed process group")
        super().__init__(model, settings, device, step)
        self.world = dist.get_world_size()
        ids = [self.device.index] if self.device.type == "cuda" else None
        # DDP's default: rank 0's buffers (batch-norm running statistics) go to every rank before
        # each forward pass.
        self.net = DistributedDataParallel(self.model, device_ids=ids)

    def _aux_total(self, aux_weight: torch.Tensor) -> torch.Tensor:
        total = aux_weight.detach().float().sum().reshape(1)
        dist.all_reduce(total)
        # The global sum over the ranks' mean: DDP's average of the ranks' gradients is then the
        # gradient of the global masked mean.
        return (total.clamp_min(1.0) / self.world).reshape(())

    def _reduce(self, losses: dict[str, torch.Tensor]) -> dict[str, float]:
        names = list(losses)
        vec = torch.stack([losses[k].detach().float() for k in names])
        dist.all_reduce(vec)
        return dict(zip(names, (vec / self.world).tolist()))

    def unwrap(self) -> None:
        """Drops the DistributedDataParallel wrapper, whose reducer holds the process group, so
        that :func:`leave_group` frees the group while the interpreter is whole.  A gloo group
        first freed at interpreter shutdown can abort the process ("terminate called without an
        active exception", SIGABRT); its threads then outlive what they use.  The trainer keeps
        working, alone: its model is the one it saves."""
        self.net = self.model

    def load_state(self, run_dir: RunDir) -> bool:
        ok = super().load_state(run_dir)
        flags = torch.tensor([int(ok), -int(ok)], dtype=torch.int64, device=self.device)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        if flags[0].item() != -flags[1].item():
            raise RuntimeError(f"{run_dir.trainer_state_path}: the ranks disagree on whether the optimiser "
                               f"state loads; their momentum would differ")
        return ok


def leave_group(trainer: DDPTrainer | None = None) -> None:
    """Leaves the default process group and frees it now: ``trainer`` (the rank's
    :class:`DDPTrainer`, if any) drops its DDP wrapper first (see :meth:`DDPTrainer.unwrap`)."""
    if trainer is not None:
        trainer.unwrap()
    if dist.is_initialized():
        dist.destroy_process_group()
    gc.collect()


def next_batch(loader: BatchLoader, on_empty: Callable[[], None]) -> dict[str, Any]:
    """The loader's next batch, however long it takes (a rank told to train must train);
    ``on_empty`` runs each second without one (it refreshes the window)."""
    while True:
        try:
            return loader.next(timeout=1.0)
        except queue.Empty:
            on_empty()


class Leader:
    """Rank 0's side of the group: starts the followers, joins the process group, tells the
    followers what to do.  ``spec`` is what a follower needs (see :func:`_follower`)."""

    def __init__(self, world: int, device: torch.device, spec: dict[str, Any], start_s: float = 600.0):
        self.world = int(world)
        self.device = device
        self.store = make_store(self.world)
        self.ctx = mp.start_processes(_follower, args=({**spec, "port": self.store.port, "world": self.world},),
                                      nprocs=self.world - 1, join=False, start_method="spawn")
        self.closed = False
        try:
            self._await_followers(start_s)
            init_group(0, self.world, self.store, device)
        except BaseException:
            self._end_followers()
            raise
        self._msg = torch.zeros(3, dtype=torch.int64, device=device)
        self.last_told = time.monotonic()

    def _await_followers(self, start_s: float) -> None:
        """Waits until every follower has loaded its model (it sets ``ready<rank>``), noticing
        a follower that failed instead of waiting for the group's timeout."""
        keys = [f"ready{r}" for r in range(1, self.world)]
        deadline = time.monotonic() + start_s
        while not self.store.check(keys):
            try:
                if self.ctx.join(timeout=0.2):
                    raise RuntimeError("the data-parallel ranks exited before training began")
            except ProcessException as exc:          # it carries the follower's traceback
                raise RuntimeError(f"a data-parallel rank failed to start: {exc}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"the data-parallel ranks did not start within {start_s:.0f} s")

    def tell(self, action: int, step: int, games: int = 0) -> None:
        self._msg.copy_(torch.tensor([action, step, games], dtype=torch.int64))
        dist.broadcast(self._msg, src=0)
        self.last_told = time.monotonic()

    def idle(self, step: int, games: int = 0) -> None:
        """Called while rank 0 waits: a :data:`WAIT` every :data:`HEARTBEAT_S`."""
        if time.monotonic() - self.last_told >= HEARTBEAT_S:
            self.tell(WAIT, step, games)

    def close(self, step: int, timeout_s: float = 60.0, trainer: DDPTrainer | None = None) -> None:
        """Tells the followers to stop and waits for them (terminating them after ``timeout_s``);
        a follower that failed is reported on stderr.  Rank 0's ``trainer`` then leaves the
        group (:func:`leave_group`)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.tell(STOP, step)
        except (RuntimeError, ValueError) as exc:     # a rank is gone: the group is broken
            print(f"trainer: cannot tell the data-parallel ranks to stop ({exc})", file=sys.stderr, flush=True)
        self._end_followers(timeout_s)
        leave_group(trainer)

    def _end_followers(self, timeout_s: float = 0.0) -> None:
        deadline = time.monotonic() + timeout_s
        try:
            while not self.ctx.join(timeout=0.2):
                if time.monotonic() > deadline:
                    for p in self.ctx.processes:
                        if p.is_alive():
                            p.terminate()
                    self.ctx.join(timeout=10.0)
                    break
        except Exception as exc:        # torch.multiprocessing raises a follower's failure
            print(f"trainer: a data-parallel rank failed: {exc}", file=sys.stderr, flush=True)


def _follower(index: int, spec: dict[str, Any]) -> None:
    """Rank ``index + 1``: loads the model rank 0 started from, joins the group, then trains
    whenever rank 0 says so, each time on a batch from its own shard of the window."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    die_with_parent(spec["parent_pid"])
    rank, world = index + 1, int(spec["world"])
    torch.set_num_threads(int(spec["threads"]))
    cfg = RunConfig.from_dict(spec["config"])
    rd = RunDir(spec["run_dir"])
    device = rank_device(spec["device"], rank, world)
    model, _meta = weights.load(spec["model_path"])
    store = make_store(world, int(spec["port"]))
    store.set(f"ready{rank}", "1")
    init_group(rank, world, store, device)
    trainer = DDPTrainer(model, spec["settings"], device, step=int(spec["step"]))
    trainer.load_state(rd)
    window = ReplayWindow(rd, cfg.window, cfg.board_size)
    follow = None if cfg.keep_old_games else cfg.mode

    def refresh() -> None:
        window.refresh()
        if follow is not None:
            current = rd.selfplay_model(cfg.mode)
            window.set_model_filter(rd.model_id(current[1]) if current else None)

    refresh()
    loader = BatchLoader(window, cfg.train_batch // world, model.feature_set,
                         seed=rank_seed(int(spec["loader_seed"]), rank), workers=cfg.loader_workers,
                         follow_mode=follow, shard=(rank, world))
    msg = torch.zeros(3, dtype=torch.int64, device=device)
    last_refresh = last_metrics = time.monotonic()
    try:
        while True:
            dist.broadcast(msg, src=0)
            action, step, games = (int(v) for v in msg.tolist())
            now = time.monotonic()
            if action == STOP:
                break
            if games > window.games_on_disk or now - last_refresh > 5.0:
                refresh()
                last_refresh = now
            if action == TRAIN:
                if step != trainer.step:
                    raise RuntimeError(f"rank {rank} is at step {trainer.step}, rank 0 at {step}")
                trainer.train_step(next_batch(loader, refresh))
            if now - last_metrics >= cfg.metrics_every:
                rd.append_metrics({"source": "trainer-rank", "rank": rank, "step": trainer.step})
                last_metrics = now
    finally:
        loader.close()
        rd.append_metrics({"source": "trainer-rank", "rank": rank, "step": trainer.step, "event": "stop"})
    leave_group(trainer)
    sys.stdout.flush()
