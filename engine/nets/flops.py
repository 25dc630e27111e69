"""Computation counted in a unit that does not depend on the machine: floating-point operations.

A CPU-hour buys different work on an AMD EPYC with AVX2, an Intel Xeon with AMX or a GPU, so
comparisons of training designs "at equal computation" count the work itself:

- **network forward passes**: the multiply-adds of the net's convolutions and linear layers
  (2 FLOPs each), counted by torch's ``FlopCounterMode`` on a copy of the architecture built on the
  ``meta`` device (no memory, no arithmetic), per position and board size.  What is counted is
  the direct convolution the architecture defines, whatever kernel runs it (Winograd, bf16,
  cuDNN): the same work on every machine;
- **training**: 3x the forward FLOPs per sample (the backward pass costs twice the forward: the
  usual accounting);
- **the search's share**: each leaf the tree search collects and backs up is charged
  :data:`SEARCH_FLOPS_PER_LEAF_POINT` x the board's points.  The tree walk, the input planes C
  writes and the backup are integer and pointer work, not FLOPs; the constant converts them at
  the ratio measured on one machine (see there), so small nets, whose search costs as much as
  their net, are not counted as nearly free.

Every process keeps one running total (:data:`COUNTER`); :class:`engine.nets.evaluator.TorchEvaluator`
adds its forward passes, the game pool its leaves, the trainer its steps, and
``train.rundir.RunDir.append_metrics`` writes the total into every metrics record beside the
process's CPU seconds, so a run's computation is the sum over its processes and sessions.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Iterator

# Equivalent FLOPs per collected leaf and board point, for the search's share.  Measured with
# ``python -m tools.bench.selfplay --board-size 7 --blocks 4 --filters 32 --visits 32
# --parallel-games 32 --batch 128 --threads 1 --inference-dtype fp32`` on an AMD EPYC with
# AVX512-BF16: the search (collect_many + backup_many) took 5.0 us a leaf, 0.10 us per board point,
# while the same core ran the net's direct convolutions at 46 GFLOP/s: 0.10e-6 s x 46e9 FLOP/s
# ~ 4.8e3 FLOPs.
SEARCH_FLOPS_PER_LEAF_POINT = 5.0e3


class FlopCounter:
    """A process-wide running total of FLOPs (thread-safe).  Work done inside :meth:`paused`
    (in that thread) is not counted: the precision measurement times forward passes to choose
    a kernel for this machine, which is not the run's work and happens on some machines only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self.total = 0.0

    def add(self, flops: float) -> None:
        if flops and not getattr(self._local, "paused", False):
            with self._lock:
                self.total += float(flops)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        before = getattr(self._local, "paused", False)
        self._local.paused = True
        try:
            yield
        finally:
            self._local.paused = before


COUNTER = FlopCounter()


def search_flops(leaves: int, board_size: int) -> float:
    """The search's share for ``leaves`` leaves on an N x N board."""
    return float(leaves) * SEARCH_FLOPS_PER_LEAF_POINT * board_size * board_size


@functools.lru_cache(maxsize=64)
def _gonet_forward_flops(config, board_size: int) -> float:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from engine.nets.network import GoNet

    with torch.device("meta"):
        net = GoNet(config).eval()
        x = torch.empty(1, config.in_planes, board_size, board_size)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        net(x)
    return float(counter.get_total_flops())


def forward_flops(model, board_size: int) -> float | None:
    """FLOPs of one position's forward pass through ``model`` (a ``GoNet``, or its ``NetConfig``)
    on an N x N board; None for nets whose computation is not counted (imported Leela Zero and
    KataGo nets, which the training system does not train)."""
    from engine.nets.network import GoNet, NetConfig

    config = model.config if isinstance(model, GoNet) else model
    if not isinstance(config, NetConfig):
        return None
    return _gonet_forward_flops(config.resolved(), int(board_size))   # NetConfig is frozen: a cache key


def train_flops(model, board_size: int) -> float | None:
    """FLOPs of one training sample (forward and backward): 3x the forward pass."""
    f = forward_flops(model, board_size)
    return None if f is None else 3.0 * f
