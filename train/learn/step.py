"""The training step: SGD on a batch of replay positions, the net's losses, checkpoints.

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
gradient scaler); on a CPU the precision is measured (:func:`engine.nets.precision.choose_train_amp`).
A checkpoint is written atomically with ``engine.nets.weights.save`` (meta: step, parent); the
optimiser state goes to ``models/trainer.pt`` so that ``--resume`` keeps the momentum.  The
stage process that drives this is :mod:`train.trainer`; :mod:`train.learn.ddp` runs it on N ranks.
"""
from __future__ import annotations

import contextlib
import io
import math
import sys
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from engine.nets import weights

from engine.nets import flops
from engine.nets.evaluator import resolve_device
from engine.nets.network import GoNet
from train.config import TrainSettings
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
    ``aux_weight`` sum, at least 1; data-parallel ranks pass the global one, see :mod:`train.learn.ddp`)."""
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


class Trainer:
    """Owns a GoNet in training mode, its optimiser and the mixed-precision machinery."""

    def __init__(self, model: GoNet, settings: TrainSettings, device: str | torch.device | None = None,
                 step: int = 0):
        self.device = resolve_device(device)
        self.model = model.to(self.device).train()
        self.net: torch.nn.Module = self.model      # what the forward pass runs (train.learn.ddp wraps it)
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
        return lr_at(self.step, s.lr, s.lr_warmup, s.drops())

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
