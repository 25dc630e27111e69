"""Forward passes replayed from CUDA graphs (``torch.cuda.CUDAGraph``), for the evaluator.

A forward pass of a tower launches hundreds of kernels, each one a Python-level call that
takes the GIL: at the batches self-play uses on a GPU, launching can cost the CPU a large share
of what the GPU spends computing, and a thread running Python beside it delays every launch.
A captured graph launches the whole pass in one call.

A graph has fixed shapes, so batches are padded up to a bucket: a multiple of a quarter of the
batch's power of two, at least ``MIN_BUCKET`` (from 64 rows up, under 25% of the rows are
padding).  Rows never mix (batch norms in eval mode, pooling per position), so the padding
rows, which hold what an earlier batch left there, change nothing.  One graph per (bucket,
board size), captured on first use; beyond ``max_graphs`` the least recently used is dropped.
Replays are serialised by a lock, and the outputs are copied out of the graph's memory before
it is released.
"""
from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from typing import Callable

import torch
from torch import nn

MIN_BUCKET = 16


def bucket(b: int) -> int:
    """The padded batch of ``b`` rows: a multiple of max(MIN_BUCKET, 2**floor(log2 b) / 4)."""
    if b < 1:
        raise ValueError("a batch has at least one row")
    step = max(MIN_BUCKET, (1 << (b.bit_length() - 1)) // 4)
    return -(-b // step) * step


class _Graph:
    def __init__(self, graph: "torch.cuda.CUDAGraph", x: torch.Tensor, out: tuple):
        self.graph, self.x, self.out = graph, x, out


class GraphRunner:
    """Runs ``model`` on CUDA inputs [B, P, N, N] through captured graphs.

    ``autocast`` makes the precision context (its autocast must have ``cache_enabled=False``,
    as graph capture requires); ``channels_last`` lays the static input out that way."""

    def __init__(self, model: nn.Module, device: torch.device,
                 autocast: Callable[[], contextlib.AbstractContextManager], channels_last: bool,
                 max_graphs: int = 12):
        if device.type != "cuda":
            raise ValueError("CUDA graphs need a CUDA device")
        self.model, self.device, self.autocast = model, device, autocast
        self.channels_last, self.max_graphs = channels_last, int(max_graphs)
        self._graphs: OrderedDict[tuple[int, ...], _Graph] = OrderedDict()
        self._lock = threading.Lock()
        self.captures = 0

    def _capture(self, shape: tuple[int, ...]) -> _Graph:
        x = torch.zeros(shape, device=self.device)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side), torch.inference_mode(), self.autocast():
            for _ in range(3):               # warm-up: kernels chosen, workspaces allocated
                self.model(x)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.inference_mode(), self.autocast(), torch.cuda.graph(graph):
            out = self.model(x)
        self.captures += 1
        return _Graph(graph, x, tuple(out))

    def __call__(self, x: torch.Tensor) -> tuple:
        """The model's outputs for ``x`` (fresh tensors, ``x.shape[0]`` rows each)."""
        b = x.shape[0]
        shape = (bucket(b),) + tuple(x.shape[1:])
        with self._lock:
            g = self._graphs.get(shape)
            if g is None:
                g = self._graphs[shape] = self._capture(shape)
                while len(self._graphs) > self.max_graphs:
                    self._graphs.popitem(last=False)
            self._graphs.move_to_end(shape)
            g.x[:b].copy_(x)
            g.graph.replay()
            return tuple(None if o is None else o[:b].clone() for o in g.out)
