"""The trainer: SGD on positions from the replay window, checkpoints into the run directory.

Optimiser: SGD with momentum 0.9 and L2 weight decay 1e-4, with a short linear
warm-up and step drops.  That is AlphaGo Zero's, Leela Zero's and KataGo's practice: with batch
norm and a target that moves as self-play improves, plain momentum SGD is robust and its
regularisation is well understood, while adaptive optimisers (Adam) tend to overfit the
recent window and have been reported by those projects to generalise worse.

Losses (per position, from the side to move's view):

- policy: cross-entropy between the search's visit distribution and the policy logits;
- value: mean squared error of the tanh value against the game result (+1/-1/0), as AGZ;
- ownership: mean squared error per point of the tanh ownership against the final area owner
  (+1 own / -1 opponent / 0 neutral), an auxiliary target (KataGo) that speeds learning;
- score: Huber loss (delta 1) of (predicted - final score) / score_scale, also auxiliary.
  Ownership and score are masked out for resigned games (no final position to learn from).

On CUDA the forward pass runs under ``torch.autocast`` (bf16 where supported, else fp16 with a
gradient scaler).  A checkpoint every ``checkpoint_every`` steps is written atomically with
``engine.weights.save`` (meta: step, parent); the optimiser state goes to ``models/trainer.pt``
so that ``--resume`` keeps the momentum.  The trainer never runs ahead of self-play: it may do
``steps_per_game`` steps per game on disk (or ``samples_per_position`` samples per position) and
waits when it is ahead.

Sync pipeline (RUN_DIR/pipeline.json): the trainer works only in the "train" phase of a
generation: it does the steps the games on disk have paid for, writes a checkpoint (the
generation's candidate) and reports ``phase_done`` in the metrics; otherwise it waits.
With ``--no-keep-old-games`` the window samples only games whose last move the current self-play
model chose (see :meth:`train.replay.ReplayWindow.set_model_filter`).

Data-parallel (``--train-devices N``): this process is rank 0 of N DistributedDataParallel
processes that share each step's batch (:mod:`train.ddp`); it alone decides and checkpoints.

Stage process: ``python -m train.trainer --run-dir DIR`` (started by ``train.loop``).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import io
import math
import os
import queue
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from engine import flops, weights
from engine.evaluator import Evaluation, resolve_device
from engine.network import GoNet
from train.config import RunConfig, StopFlag, die_with_parent, parse_lr_drops, pin_stage, stage_device, stage_threads
from train.replay import BatchLoader, ReplayWindow
from train.rundir import RunDir, atomic_write

LOSS_NAMES = ("loss", "policy", "value", "ownership", "score")


MAX_SKIPPED_IN_A_ROW = 50      # then the data or the net is broken, not one batch


def lr_at(step: int, base: float, warmup: int = 0, drops: list[tuple[int, float]] | None = None) -> float:
    """Learning rate at ``step``: linear warm-up over ``warmup`` steps, then ``base`` times the
    factor of the last drop reached."""
    factor = 1.0
    for at, f in drops or []:
        if step >= at:
            factor = f
    lr = base * factor
    if warmup > 0 and step < warmup:
        lr *= (step + 1) / warmup
    return lr


def compute_losses(out: Any, batch: dict[str, torch.Tensor], score_scale: float,
                   weights_: dict[str, float], aux_total: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """The four losses and their weighted sum ("loss") for a batch of net outputs.
    ``aux_total``: the divisor of the masked ownership and score sums (default: this batch's
    ``aux_weight`` sum, at least 1; data-parallel ranks pass the global one, see :mod:`train.ddp`)."""
    logp = F.log_softmax(out.policy.float(), dim=1)
    policy = -(batch["policy"] * logp).sum(dim=1).mean()
    value = F.mse_loss(out.value.float(), batch["value"])
    w = batch["aux_weight"]
    wsum = w.sum().clamp_min(1.0) if aux_total is None else aux_total
    own = (((out.ownership.float() - batch["ownership"]) ** 2).mean(dim=1) * w).sum() / wsum
    score = (F.huber_loss(out.score.float() / score_scale, batch["score"] / score_scale,
                          reduction="none", delta=1.0) * w).sum() / wsum
    total = (policy + weights_["value"] * value + weights_["ownership"] * own
             + weights_["score"] * score)
    return {"loss": total, "policy": policy, "value": value, "ownership": own, "score": score}


@dataclass
class TrainSettings:
    lr: float = 0.02
    lr_warmup: int = 100
    lr_drops: tuple[tuple[int, float], ...] = ()
    momentum: float = 0.9
    weight_decay: float = 1e-4
    value_weight: float = 1.0
    ownership_weight: float = 1.0
    score_weight: float = 0.5
    amp: str = "auto"            # auto | fp32 | bf16 | fp16

    @classmethod
    def from_config(cls, cfg: RunConfig) -> "TrainSettings":
        return cls(lr=cfg.lr, lr_warmup=cfg.lr_warmup, lr_drops=tuple(parse_lr_drops(cfg.lr_drops)),
                   momentum=cfg.momentum, weight_decay=cfg.weight_decay, value_weight=cfg.value_weight,
                   ownership_weight=cfg.ownership_weight, score_weight=cfg.score_weight,
                   amp=cfg.train_amp)


TRAIN_AMP_CACHE = "train_amp.json"
TRAIN_AMP_MARGIN = 1.10      # bf16 must beat fp32 by this much: noise must not flip the choice


def _train_pass(model: GoNet, x: torch.Tensor, dtype: torch.dtype | None) -> Any:
    """One forward and backward pass as training does it (``dtype``: autocast, None: fp32)."""
    ctx = torch.autocast(device_type=x.device.type, dtype=dtype) if dtype else contextlib.nullcontext()
    with ctx:
        out = model(x)
    loss = (torch.logsumexp(out.policy, 1).mean() + out.value.square().mean()
            + out.ownership.square().mean() + out.score.square().mean())
    model.zero_grad(set_to_none=True)
    loss.backward()
    return out


def measure_train_amp(model: GoNet, device: Any, size: int, batch: int, *, timer: Any = None,
                      steps: int = 3, rounds: int = 3) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Training samples per second of fp32 and of bf16 autocast on ``device`` (best of
    ``rounds`` interleaved rounds of ``steps`` forward+backward passes on a copy of ``model``),
    and bf16's largest policy/value differences from fp32 on the same batch.
    ``timer(label, run_once) -> samples/s`` replaces the timing (tests)."""
    from engine.precision import output_diff, sample_planes
    net = copy.deepcopy(model).to(device).train()
    planes = np.resize(sample_planes(net.feature_set, net.in_planes, size, min(batch, 64)),
                       (batch, net.in_planes, size, size))
    x = torch.from_numpy(np.ascontiguousarray(planes, dtype=np.float32)).to(device)
    modes = {"fp32": None, "bf16": torch.bfloat16}

    def outputs(dtype: torch.dtype | None) -> Evaluation:
        o = _train_pass(net, x, dtype)
        return Evaluation(o.policy.detach().float().cpu().numpy(), o.value.detach().float().cpu().numpy(),
                          None, None)
    ref = outputs(None)
    diffs = {"fp32": {"policy": 0.0, "value": 0.0}}
    try:
        diffs["bf16"] = output_diff(ref, outputs(torch.bfloat16))
    except (RuntimeError, TypeError):                      # bf16 unsupported on this device
        diffs["bf16"] = {"policy": math.inf, "value": math.inf}

    def once(dtype: torch.dtype | None) -> None:
        for _ in range(steps):
            _train_pass(net, x, dtype)

    def default_timer(label: str, run_once: Any) -> float:
        t0 = time.perf_counter()
        run_once()
        return steps * batch / (time.perf_counter() - t0)

    timer = timer or default_timer
    rates: dict[str, float] = {}
    labels = [k for k in modes if math.isfinite(diffs[k]["policy"])]     # bf16 only where it ran
    for _ in range(max(1, rounds)):
        for label in labels:
            r = float(timer(label, lambda d=modes[label]: once(d)))
            rates[label] = round(max(rates.get(label, 0.0), r), 1)
    return rates, diffs


def choose_train_amp(model: GoNet, device: Any, size: int, batch: int, option: str = "auto", *,
                     cache: Any = None, timer: Any = None, refresh: bool = False,
                     log: Any = None) -> str:
    """The training precision: ``option`` when it is not "auto"; "auto" on CUDA (the Trainer
    takes bf16 or fp16 there); on a CPU measured once per machine, torch thread count, net
    shape and batch, then cached next to the inference choices (``train_amp.json`` in
    :func:`engine.precision.cache_dir`): bf16 autocast when it is :data:`TRAIN_AMP_MARGIN`
    faster than fp32 and its outputs stay within the inference tolerance, else fp32.
    Measured: 2.1x on an Intel Xeon with AMX; on CPUs without native bf16 it is far slower."""
    from pathlib import Path

    from engine.precision import (TOLERANCE, cache_dir, load_cache, machine_key, net_key, save_cache,
                                  within_tolerance)
    if option != "auto":
        return option
    dev = torch.device(device)
    if dev.type != "cpu":
        return "auto"
    path = Path(cache) if cache is not None else cache_dir() / TRAIN_AMP_CACHE
    key = f"train|{machine_key(dev)}|{net_key(model, size)}|batch {int(batch)}"
    entries, _ok = load_cache(path)
    entry = entries.get(key)
    if not refresh and isinstance(entry, dict) and (entry.get("choice") == "fp32" or (
            entry.get("choice") == "bf16" and isinstance(entry.get("diffs"), dict)
            and within_tolerance(entry["diffs"].get("bf16"), TOLERANCE))):
        return entry["choice"]          # a cached bf16 is re-checked against today's tolerance
    rates, diffs = measure_train_amp(model, dev, size, batch, timer=timer)
    d = diffs["bf16"]
    faster = rates.get("bf16", 0.0) >= TRAIN_AMP_MARGIN * rates["fp32"]
    choice = "bf16" if within_tolerance(d, TOLERANCE) and faster else "fp32"
    if log:
        log(f"trainer: training precision {choice} (measured samples/s: "
            + ", ".join(f"{k} {v:.0f}" for k, v in rates.items())
            + f"; bf16 differs from fp32 by {d.get('policy')} in policy, {d.get('value')} in value)")
    entries, _ok = load_cache(path)
    entries[key] = {"choice": choice, "rates": rates, "diffs": diffs,
                    "measured": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        save_cache(path, entries)
    except OSError as exc:
        if log:
            log(f"trainer: cannot write {path}: {exc}")
    return choice


class Trainer:
    """Owns a GoNet in training mode, its optimiser and the mixed-precision machinery."""

    def __init__(self, model: GoNet, settings: TrainSettings, device: str | torch.device | None = None,
                 step: int = 0):
        self.device = resolve_device(device)
        self.model = model.to(self.device).train()
        self.net: torch.nn.Module = self.model      # what the forward pass runs (train.ddp wraps it)
        self.settings = settings
        self.step = int(step)
        self.skipped_steps = 0          # batches not applied: non-finite loss or gradients
        # Weight decay on convolution/linear weights only: decaying batch-norm scales and biases
        # only fights the normalisation (common practice since ResNet training recipes).
        decay, no_decay = [], []
        for name, p in self.model.named_parameters():
            (decay if p.dim() > 1 else no_decay).append(p)
        self.optimizer = torch.optim.SGD(
            [{"params": decay, "weight_decay": settings.weight_decay},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=settings.lr, momentum=settings.momentum)
        self.amp_dtype = self._amp_dtype(settings.amp)
        self.scaler = torch.amp.GradScaler("cuda") if self.amp_dtype == torch.float16 and self.device.type == "cuda" else None
        self.score_scale = float(model.config.score_scale)

    def _amp_dtype(self, amp: str) -> torch.dtype | None:
        if amp == "auto":
            if self.device.type != "cuda":
                return None
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[amp]

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.amp_dtype)

    @property
    def lr(self) -> float:
        s = self.settings
        return lr_at(self.step, s.lr, s.lr_warmup, list(s.lr_drops))

    def train_step(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """One SGD step on a batch (numpy arrays from :func:`train.replay.make_batch`); returns the
        losses as floats."""
        dev = self.device
        t = {k: torch.from_numpy(np.ascontiguousarray(v)).to(dev, non_blocking=True) for k, v in batch.items()}
        lr = self.lr
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        aux_total = self._aux_total(t["aux_weight"])
        with self._autocast():
            out = self.net(t["planes"])
        planes = t["planes"]          # the step's computation counts, applied or skipped
        flops.COUNTER.add(planes.shape[0] * (flops.train_flops(self.model, planes.shape[-1]) or 0.0))
        losses = compute_losses(out, t, self.score_scale,
                                {"value": self.settings.value_weight, "ownership": self.settings.ownership_weight,
                                 "score": self.settings.score_weight}, aux_total)
        self.optimizer.zero_grad(set_to_none=True)
        result = self._reduce(losses)
        if not math.isfinite(result["loss"]):
            # A batch with a non-finite loss (a corrupt record, an overflow) is not applied: the
            # weights stay as they were, and the caller reports the skipped step.
            self.skipped_steps += 1
            return {**result, "skipped": 1.0}
        if self.scaler is not None:
            self.scaler.scale(losses["loss"]).backward()
            self.scaler.step(self.optimizer)           # skips non-finite gradients itself
            self.scaler.update()
        else:
            losses["loss"].backward()
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), float("inf"))
            if not math.isfinite(float(norm)):
                self.optimizer.zero_grad(set_to_none=True)
                self.skipped_steps += 1
                return {**result, "skipped": 1.0}
            self.optimizer.step()
        self.step += 1
        return result

    def _aux_total(self, aux_weight: torch.Tensor) -> torch.Tensor | None:
        """The divisor of the ownership and score sums (None: this batch's own)."""
        return None

    def _reduce(self, losses: dict[str, torch.Tensor]) -> dict[str, float]:
        """The step's losses as floats (data-parallel ranks: the mean over the ranks, so every
        rank sees the same values and skips the same steps)."""
        return {k: float(v.detach()) for k, v in losses.items()}

    # -- checkpoints ------------------------------------------------------------------------
    def save(self, run_dir: RunDir, parent: str | None, board_sizes: list[int]) -> str:
        """Writes the optimiser state, then the checkpoint of the current step (both atomic);
        returns the checkpoint's file name."""
        buf = io.BytesIO()
        torch.save({"step": self.step, "optimizer": self.optimizer.state_dict(),
                    "scaler": self.scaler.state_dict() if self.scaler is not None else {}}, buf)
        data = buf.getvalue()
        atomic_write(run_dir.trainer_state_path, lambda f: f.write(data))
        path = run_dir.model_path(self.step)
        weights.save(path, self.model, {"step": self.step, "parent": parent, "board_sizes": board_sizes})
        return path.name

    def load_state(self, run_dir: RunDir) -> bool:
        """Restores the optimiser state if it belongs to the current step; returns whether.
        A state file that cannot be used is reported on stderr (naming it and why), never
        skipped silently; the next checkpoint overwrites it."""
        path = run_dir.trainer_state_path
        if not path.is_file():
            return False

        def unusable(why: str) -> bool:
            print(f"trainer: not using the optimiser state {path}: {why}; starting a fresh one",
                  file=sys.stderr, flush=True)
            return False

        try:
            state = torch.load(path, weights_only=True, map_location=self.device)
        except Exception as exc:            # truncated, empty, random bytes: torch raises many types
            return unusable(f"unreadable ({type(exc).__name__}: {exc})")
        if not isinstance(state, dict):
            return unusable("not an optimiser state")
        if state.get("step") != self.step:
            return unusable(f"it belongs to step {state.get('step')!r}, the model is at step {self.step}")
        try:
            self.optimizer.load_state_dict(state["optimizer"])
            if self.scaler is not None and state.get("scaler"):
                self.scaler.load_state_dict(state["scaler"])
        except (ValueError, KeyError, RuntimeError, TypeError) as exc:
            return unusable(f"does not fit this network ({type(exc).__name__}: {exc})")
        return True


def allowed_steps(cfg: RunConfig, games: int, mean_positions: float) -> int:
    """Training steps self-play has paid for: ``steps_per_game`` per game beyond ``min_games``,
    or ``samples_per_position`` samples per position (positions estimated from the window's
    mean game)."""
    if games < cfg.min_games:
        return 0
    if cfg.samples_per_position:
        return int(cfg.samples_per_position * games * mean_positions / cfg.train_batch)
    return int(cfg.steps_per_game * games)


def run(run_dir: str, parent_pid: int | None = None, max_steps: int | None = None,
        train_devices: int | None = None) -> int:
    """The trainer stage: follows the run directory until stopped.  Returns an exit status.

    SIGTERM/SIGINT: checkpoint and exit.  SIGUSR1: do the steps self-play has paid for, then
    checkpoint and exit (the loop sends it when self-play has finished its game budget).
    ``train_devices`` (default: the run's ``--train-devices``) > 1: this process is rank 0 of a
    data-parallel group (:mod:`train.ddp`) and starts the other ranks."""
    die_with_parent(parent_pid)
    stop = StopFlag(parent_pid)
    rd = RunDir(run_dir)
    cfg = RunConfig.from_dict(rd.read_config())
    if train_devices is not None:
        try:
            cfg = dataclasses.replace(cfg, train_devices=train_devices).check()
        except ValueError as exc:
            print(f"trainer: {exc}", file=sys.stderr)
            return 2
    world = cfg.train_devices
    pin_stage(cfg, "train")
    torch.set_num_threads(max(1, stage_threads(cfg, "train") // world))   # shared by the ranks
    torch.manual_seed(cfg.seed * 7919 + 17)
    # The newest checkpoint that loads: a corrupt one is renamed *.corrupt, with a line saying so.
    latest = rd.latest_valid_model(weights.load, lambda text: print(f"trainer: {text}", file=sys.stderr,
                                                                    flush=True))
    if latest is None:
        print("trainer: no model in the run directory", file=sys.stderr)
        return 2
    step, path, (model, meta) = latest
    settings = TrainSettings.from_config(cfg)
    device = resolve_device(stage_device(cfg, "train"))
    settings.amp = choose_train_amp(model, device, cfg.board_size, cfg.train_batch // world, settings.amp,
                                    log=lambda text: print(text, flush=True))
    group = None
    if world > 1:
        from train import ddp
        try:
            device = ddp.rank_device(device, 0, world)
            group = ddp.Leader(world, device, {
                "run_dir": str(rd.root), "model_path": str(path), "step": step, "settings": settings,
                "device": str(device), "threads": torch.get_num_threads(), "config": cfg.to_dict(),
                "loader_seed": cfg.seed * 1000 + step, "parent_pid": os.getpid()})
        except (ValueError, RuntimeError) as exc:
            print(f"trainer: {exc}", file=sys.stderr, flush=True)
            return 2
        trainer: Trainer = ddp.DDPTrainer(model, settings, device, step=step)
    else:
        trainer = Trainer(model, settings, device, step=step)
    resumed = trainer.load_state(rd)
    print(f"trainer: from {path.name} (step {step}), optimiser state {'restored' if resumed else 'fresh'}, "
          f"device {trainer.device}" + (f", {world} data-parallel ranks ({ddp.backend_for(device)})"
                                        if group is not None else ""), flush=True)
    parent = path.name
    window = ReplayWindow(rd, cfg.window, cfg.board_size)
    follow = None if cfg.keep_old_games else cfg.mode
    loader = BatchLoader(window, cfg.train_batch // world, model.feature_set, seed=cfg.seed * 1000 + step,
                         workers=cfg.loader_workers, follow_mode=follow,
                         shard=(0, world) if world > 1 else None)
    saved_step = step
    skipped_in_a_row = 0
    sums = {k: 0.0 for k in LOSS_NAMES}
    count = 0
    waited = 0.0
    last_metrics = time.time()
    last_refresh = 0.0
    t_train = 0.0
    start_step = step
    t_start = time.time()

    def log(final: bool = False) -> None:
        nonlocal sums, count, waited, t_train, last_metrics
        wall = max(1e-9, time.time() - last_metrics)
        rec: dict[str, Any] = {"source": "trainer", "step": trainer.step, "lr": trainer.lr,
                               "window_games": window.games, "window_positions": window.positions,
                               "games": window.games_on_disk,
                               "samples_per_s": count * cfg.train_batch / wall,
                               "train_samples_per_s": count * cfg.train_batch / t_train if t_train > 0 else 0.0,
                               "loader_positions_per_s": loader.positions_per_s * world,   # rank 0's x N
                               "waiting_share": waited / wall, "window_filtered_out": window.filtered_out,
                               "skipped_steps": trainer.skipped_steps}
        if world > 1:
            rec["train_devices"] = world
        if count:
            rec.update({k: sums[k] / count for k in LOSS_NAMES})
        if final:
            rec["event"] = "stop"
        rd.append_metrics(rec)
        sums = {k: 0.0 for k in LOSS_NAMES}
        count, waited, t_train = 0, 0.0, 0.0
        last_metrics = time.time()

    board_sizes = [cfg.board_size]
    phase: dict[str, Any] | None = rd.read_pipeline()
    last_phase = time.time()
    done_generations: set[Any] = set()
    entered: Any = None
    drain_counted = False
    try:
        while not stop:
            now = time.time()
            if now - last_phase >= 0.1:
                phase, last_phase = rd.read_pipeline(), now
            sync_train = phase is not None and not stop.drain
            if sync_train:
                assert phase is not None
                gen = phase.get("generation")
                if phase.get("phase") != "train" or gen in done_generations:
                    time.sleep(0.05)            # sync pipeline: not our phase
                    if group is not None:
                        group.idle(trainer.step, window.games_on_disk)
                    waited += time.time() - now
                    if time.time() - last_metrics >= cfg.metrics_every:
                        log()
                    continue
                if gen != entered:
                    entered, last_refresh = gen, 0.0     # see every game of the generation
            if now - last_refresh > 1.0:
                window.refresh()
                if follow is not None:
                    current = rd.selfplay_model(cfg.mode)
                    window.set_model_filter(rd.model_id(current[1]) if current else None)
                last_refresh = now
            owed = allowed_steps(cfg, window.games_on_disk, window.mean_positions_per_game())
            if max_steps is not None:
                owed = min(owed, max_steps)
            if sync_train and (trainer.step >= owed or window.positions == 0):
                # The generation's training is done: its checkpoint is the candidate.
                new = trainer.step != saved_step
                if new:
                    parent = trainer.save(rd, parent, board_sizes)
                    saved_step = trainer.step
                done_generations.add(gen)
                rd.append_metrics({"source": "trainer", "event": "phase_done", "generation": gen,
                                   "step": trainer.step, "checkpoint": trainer.step if new else None})
                continue
            if trainer.step >= owed or window.positions == 0:
                if stop.drain and not drain_counted:
                    # Count every game on disk once more before the last steps: the window may
                    # predate self-play's last games (SIGUSR1 comes after self-play exited).
                    drain_counted, last_refresh = True, 0.0
                    continue
                if stop.drain or (max_steps is not None and trainer.step >= max_steps):
                    break
                time.sleep(0.2)
                if group is not None:
                    group.idle(trainer.step, window.games_on_disk)
                waited += time.time() - now
                last_refresh = 0.0
            else:
                try:
                    batch = loader.next(timeout=1.0)
                except queue.Empty:     # the loader is still making its first batch
                    continue
                if group is not None:       # the other ranks take this step with rank 0
                    group.tell(ddp.TRAIN, trainer.step, window.games_on_disk)
                t0 = time.perf_counter()
                losses = trainer.train_step(batch)
                t_train += time.perf_counter() - t0
                if losses.get("skipped"):
                    skipped_in_a_row += 1
                    print(f"trainer: step {trainer.step + 1} skipped: non-finite loss or gradients "
                          f"({trainer.skipped_steps} skipped in all)", file=sys.stderr, flush=True)
                    if skipped_in_a_row >= MAX_SKIPPED_IN_A_ROW:
                        print(f"trainer: {skipped_in_a_row} steps in a row had non-finite losses: "
                              f"stopping (the last checkpoint, step {saved_step}, is intact)",
                              file=sys.stderr, flush=True)
                        return 4
                    continue
                skipped_in_a_row = 0
                for k in LOSS_NAMES:
                    sums[k] += losses[k]
                count += 1
                if trainer.step % cfg.checkpoint_every == 0 and not sync_train:
                    parent = trainer.save(rd, parent, board_sizes)
                    saved_step = trainer.step
            if time.time() - last_metrics >= cfg.metrics_every:
                log()
    finally:
        loader.close()
        if group is not None:
            group.close(trainer.step)
    if trainer.step != saved_step:
        trainer.save(rd, parent, board_sizes)
    log(final=True)
    rate = (trainer.step - start_step) / max(1e-9, time.time() - t_start)
    print(f"trainer: stopped at step {trainer.step} ({rate:.2f} steps/s)", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.trainer",
                                 description="The training stage of a run (normally started by train.loop).")
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--parent-pid", type=int, default=None, help="exit when this process dies")
    ap.add_argument("--max-steps", type=int, default=None, help="stop at this training step")
    ap.add_argument("--train-devices", type=int, default=None,
                    help="data-parallel processes (default: the run's --train-devices; see train/ddp.py)")
    a = ap.parse_args(argv)
    return run(a.run_dir, a.parent_pid, a.max_steps, a.train_devices)


if __name__ == "__main__":
    sys.exit(main())
