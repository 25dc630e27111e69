"""The replay window and the data loader that keeps the trainer fed.

:class:`ReplayWindow` holds the most recent ``capacity`` games of a run directory (their compact
records, a few kB each) and samples training positions uniformly: a game is drawn with
probability proportional to its number of training positions, then one of them uniformly.

:func:`make_batch` turns samples into a training batch: each sampled game is replayed ONCE through
the C core up to its last sampled move, writing the input planes of the sampled positions (planes
are never stored, see :mod:`train.games.records`), then a random board symmetry per position
(:mod:`engine.nets.symmetry`) is applied consistently to the planes, the policy target and the
ownership target (value and score do not depend on the symmetry).

:meth:`ReplayWindow.set_model_filter` implements ``--no-keep-old-games``: only games whose last
move was chosen by the given model (the current self-play model) are sampled; the others stay
loaded but out of the sample until the filter changes.

:class:`BatchLoader` produces batches ahead of the trainer: in a background thread (the C core
releases the GIL while it replays and encodes) or, with ``workers > 0``, in torch DataLoader
worker processes, each with its own window that follows the run directory.  It measures the
positions per second it delivers.
"""
from __future__ import annotations

import queue
import sys
import threading
import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch
import torch.utils.data

from engine.nets import symmetry
from train.games.records import GameRecord, positions, read_npz
from train.rundir import GameName, RunDir


@dataclass(frozen=True)
class _Snapshot:
    """An immutable view of the window, swapped in whole so samplers need no lock."""

    records: tuple[GameRecord, ...]
    full_index: tuple[np.ndarray, ...]     # per game: move numbers of its training positions
    cumulative: np.ndarray                 # int64 cumsum of positions per game

    @property
    def positions(self) -> int:
        return int(self.cumulative[-1]) if len(self.cumulative) else 0


class ReplayWindow:
    """The most recent ``capacity`` games of ``run_dir``, sampled uniformly by position."""

    def __init__(self, run_dir: RunDir | str, capacity: int, board_size: int | None = None):
        self.run_dir = run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)
        self.capacity = int(capacity)
        self.board_size = board_size
        self._loaded: dict[GameName, GameRecord | None] = {}
        self._snap = _Snapshot((), (), np.zeros(0, np.int64))
        self.games_on_disk = 0
        self.bad_files: list[str] = []
        self.model_filter: str | None = None
        self.filtered_out = 0                  # games in the window left out by the model filter
        self._lock = threading.Lock()

    # -- following the run directory ------------------------------------------------------
    def refresh(self) -> int:
        """Loads games that appeared on disk, drops those that left the window; returns the
        number of games on disk.  Unreadable files are skipped, each with a line on stderr
        naming it and why (once per window), and listed in ``bad_files``."""
        with self._lock:
            listing = self.run_dir.list_games()
            self.games_on_disk = len(listing)
            recent = listing[-self.capacity:] if self.capacity > 0 else []
            keep: dict[GameName, GameRecord | None] = {}
            changed = False
            for name, path in recent:
                if name in self._loaded:
                    keep[name] = self._loaded[name]
                    continue
                changed = True
                try:
                    rec = read_npz(path)
                    if self.board_size is not None and rec.size != self.board_size:
                        rec = None
                except ValueError as exc:       # truncated, empty, foreign (the message names it)
                    self.bad_files.append(str(exc))
                    print(f"replay: skipping game record {exc}", file=sys.stderr, flush=True)
                    rec = None
                keep[name] = rec
            changed = changed or len(keep) != len(self._loaded)
            self._loaded = keep
            if changed:
                self._rebuild()
            return self.games_on_disk

    def set_model_filter(self, model_id: str | None) -> None:
        """Samples only games whose last move ``model_id`` chose (None: every game)."""
        with self._lock:
            if model_id != self.model_filter:
                self.model_filter = model_id
                self._rebuild()

    def _rebuild(self) -> None:
        recs = tuple(r for r in self._loaded.values() if r is not None and r.num_positions > 0)
        if self.model_filter is not None:
            kept = tuple(r for r in recs if r.length and r.model_of_move(r.length - 1) == self.model_filter)
            self.filtered_out = len(recs) - len(kept)
            recs = kept
        else:
            self.filtered_out = 0
        idx = tuple(np.flatnonzero(r.full) for r in recs)
        cum = np.cumsum([len(i) for i in idx], dtype=np.int64) if recs else np.zeros(0, np.int64)
        self._snap = _Snapshot(recs, idx, cum)

    @property
    def games(self) -> int:
        """Games in the window (with at least one training position)."""
        return len(self._snap.records)

    @property
    def positions(self) -> int:
        """Training positions in the window."""
        return self._snap.positions

    def mean_positions_per_game(self) -> float:
        s = self._snap
        return s.positions / len(s.records) if s.records else 0.0

    # -- sampling -----------------------------------------------------------------------------
    def sample(self, count: int, rng: np.random.Generator,
               shard: tuple[int, int] | None = None) -> list[tuple[GameRecord, np.ndarray]]:
        """``count`` positions drawn uniformly (with replacement) from the window, grouped by
        game: [(record, move numbers)].  ValueError if the window is empty.

        ``shard=(rank, n)``: only from the rank-th of n equal slices of the window's positions in
        window order (data-parallel training, :mod:`train.learn.ddp`): n ranks drawing the same count
        make together a stratified sample of the whole window, each position as likely as with
        one process.  A window with fewer than n positions is not sliced."""
        s = self._snap
        if s.positions == 0:
            raise ValueError("the replay window holds no training positions")
        lo, hi = shard_range(s.positions, shard)
        picks = rng.integers(lo, hi, size=count)
        games = np.searchsorted(s.cumulative, picks, side="right")
        starts = np.concatenate([[0], s.cumulative[:-1]])
        out = []
        for g in np.unique(games):
            local = picks[games == g] - starts[g]
            out.append((s.records[g], s.full_index[g][local]))
        return out


def shard_range(positions: int, shard: tuple[int, int] | None) -> tuple[int, int]:
    """The slice [lo, hi) of ``positions`` that ``shard=(rank, n)`` samples from (all of them
    for None, for n == 1 and while there are fewer positions than ranks)."""
    if shard is None:
        return 0, positions
    rank, n = int(shard[0]), int(shard[1])
    if not 0 <= rank < n:
        raise ValueError(f"shard {shard!r}: want (rank, n) with 0 <= rank < n")
    if positions < n:
        return 0, positions
    return positions * rank // n, positions * (rank + 1) // n


def augment(planes: np.ndarray, policy: np.ndarray, ownership: np.ndarray,
            ks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Applies symmetry ``ks[i]`` to example i: planes [B, P, N, N], policy [B, N*N+1] (pass
    stays), ownership [B, N*N]; one symmetry per example, the same for its three arrays."""
    return (symmetry.apply_symmetries(planes, ks), symmetry.apply_policy_symmetries(policy, ks),
            symmetry.apply_policy_symmetries(ownership, ks))


def make_batch(window: ReplayWindow, batch: int, feature_set: str, rng: np.random.Generator,
               augment_symmetries: bool = True, shard: tuple[int, int] | None = None) -> dict[str, np.ndarray]:
    """A training batch of ``batch`` positions: planes, policy, value, ownership, score,
    aux_weight (float32 numpy arrays, see :class:`train.games.records.Positions`), sampled from
    ``shard`` of the window (see :meth:`ReplayWindow.sample`)."""
    groups = window.sample(batch, rng, shard)
    parts = [positions(rec, idx, feature_set) for rec, idx in groups]
    out = {k: np.concatenate([getattr(p, k) for p in parts])
           for k in ("planes", "policy", "value", "ownership", "score", "aux_weight")}
    perm = rng.permutation(batch)              # games were grouped: mix them again
    out = {k: v[perm] for k, v in out.items()}
    if augment_symmetries:
        ks = rng.integers(0, symmetry.NUM_SYMMETRIES, size=batch)
        out["planes"], out["policy"], out["ownership"] = augment(out["planes"], out["policy"], out["ownership"], ks)
    return out


class BatchLoader:
    """Batches made ahead of time (``prefetch`` of them) by a thread or worker processes.

    ``next()`` returns the next batch (waiting for one); ``positions_per_s`` is the production
    rate of the producers (positions made per second of their own work, so it says how fast
    they could feed a trainer, whether or not the trainer keeps up)."""

    def __init__(self, window: ReplayWindow, batch: int, feature_set: str, seed: int = 0,
                 prefetch: int = 4, workers: int = 0, refresh_s: float = 5.0, follow_mode: str | None = None,
                 shard: tuple[int, int] | None = None):
        self.window = window
        self.shard = shard                   # (rank, n): this data-parallel rank's slice of the window
        self.batch = int(batch)
        self.feature_set = feature_set
        self.workers = int(workers)
        self.produced = 0
        self.busy_seconds = 0.0
        self._stop = threading.Event()
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, prefetch))
        self._args = (seed, prefetch, refresh_s)
        self.follow_mode = follow_mode       # worker processes: filter on this mode's self-play model
        self._iter: Iterator | None = None
        self._thread: threading.Thread | None = None
        self._rng = np.random.default_rng(seed)

    def _start(self) -> None:
        """Starts the producers at the first request, so no batch is made from the small window
        of a run that is still gathering its first games."""
        seed, prefetch, refresh_s = self._args
        if self.workers > 0:
            w = self.window
            self._iter = iter(_torch_loader(w.run_dir.root, w.capacity, w.board_size, self.batch,
                                            self.feature_set, seed, self.workers, prefetch, refresh_s,
                                            self.follow_mode, self.shard))
        else:
            self._thread = threading.Thread(target=self._produce, name="batch-loader", daemon=True)
            self._thread.start()

    def _produce(self) -> None:
        while not self._stop.is_set():
            if self.window.positions == 0:
                time.sleep(0.05)
                continue
            t0 = time.perf_counter()
            b = make_batch(self.window, self.batch, self.feature_set, self._rng, shard=self.shard)
            self.busy_seconds += time.perf_counter() - t0
            self.produced += self.batch
            while not self._stop.is_set():
                try:
                    self._queue.put(b, timeout=0.1)
                    break
                except queue.Full:
                    continue

    def next(self, timeout: float | None = None) -> dict[str, np.ndarray]:
        """The next batch; ``queue.Empty`` after ``timeout`` seconds without one (thread mode)."""
        if self._thread is None and self._iter is None:
            self._start()
        if self._iter is not None:
            t0 = time.perf_counter()
            b = next(self._iter)
            b = {k: v.numpy() if hasattr(v, "numpy") else v for k, v in b.items()}
            self.busy_seconds += float(b.pop("_seconds", time.perf_counter() - t0))
            self.produced += self.batch
            return b
        return self._queue.get(timeout=timeout)

    @property
    def positions_per_s(self) -> float:
        if self.busy_seconds <= 0:
            return 0.0
        return self.produced / self.busy_seconds * max(1, self.workers)   # workers run in parallel

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)


class _Stream(torch.utils.data.IterableDataset):
    """Endless batches for torch DataLoader workers; each worker follows the run directory with
    its own window and random stream."""

    def __init__(self, root, capacity, board_size, batch, feature_set, seed, refresh_s, follow_mode=None,
                 shard=None):
        self.args = (root, capacity, board_size, batch, feature_set, seed, refresh_s, follow_mode, shard)

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        root, capacity, board_size, batch, feature_set, seed, refresh_s, follow_mode, shard = self.args
        info = torch.utils.data.get_worker_info()
        rng = np.random.default_rng([seed, info.id if info is not None else 0])
        window = ReplayWindow(root, capacity, board_size)
        last = 0.0
        while True:
            if time.monotonic() - last > refresh_s or window.positions == 0:
                window.refresh()
                if follow_mode is not None:
                    current = window.run_dir.selfplay_model(follow_mode)
                    window.set_model_filter(RunDir.model_id(current[1]) if current else None)
                last = time.monotonic()
                if window.positions == 0:
                    time.sleep(0.2)
                    continue
            t0 = time.perf_counter()
            b = make_batch(window, batch, feature_set, rng, shard=shard)
            b["_seconds"] = np.float64(time.perf_counter() - t0)
            yield b


def _torch_loader(root, capacity, board_size, batch, feature_set, seed, workers, prefetch, refresh_s,
                  follow_mode=None, shard=None):
    return torch.utils.data.DataLoader(
        _Stream(root, capacity, board_size, batch, feature_set, seed, refresh_s, follow_mode, shard), batch_size=None,
        num_workers=workers, prefetch_factor=prefetch, persistent_workers=True,
        multiprocessing_context="spawn")
