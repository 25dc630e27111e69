"""The batched evaluations of a :class:`train.games.pool.GamePool`: collect, forward pass, backup.

Per round, the searching slots are grouped by evaluator and board size, and each group (in
chunks of at most ``batch`` slots) gets ONE ``collect_many`` (one C call over all its trees),
ONE forward pass and ONE ``backup_many``.

With ``lanes`` = 1 all three happen at once, in the calling thread.  With ``lanes`` = 2 the pool
splits its slots into two lanes that take turns: a lane's forward passes run on a worker thread
while the pool backs up, plays the moves of and collects the leaves of the other lane, so the
network (an accelerator above all) does not wait for the CPU side between batches, nor the CPU
side for the network.  The forward passes run one at a time, in the order they were submitted,
so the evaluator's random symmetries and cache see the same sequence on every run: with fixed
seeds the games are the same from run to run (but not the same as with one lane, whose batches
differ).  The C search releases the GIL, and so does torch in its kernels.

With ``search_threads`` > 1 a group's trees are split into that many contiguous parts whose
``collect_many`` and ``backup_many`` calls run at once on a thread pool (the C search releases
the GIL; the trees of a part are touched by one thread only), and the parts' leaves are then
moved together; every tree gets the leaves it would get alone, so the games do not change.

Nothing may touch a lane's trees while its batch is in flight: :meth:`Batcher.drain` backs up
every batch in flight first (the pool calls it before it abandons a game or switches an agent).
"""
from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from engine.nets import flops
from engine.core import Search, backup_many, collect_many, feature_planes
from engine.searchcore import ramp_leaves



class Slot(Protocol):
    """What a round needs of a :class:`train.games.pool.Slot`."""

    spec: Any
    leaves: int
    search_leaves: int
    stalled: bool
    _evaluator: Any
    _searching: Search


@dataclass
class PoolStats:
    """Counters since the pool was made (subtract two snapshots for rates)."""

    steps: int = 0
    forward_passes: int = 0
    leaves: int = 0                     # positions sent to evaluators
    moves: int = 0
    full_moves: int = 0                 # moves with a full search (training positions)
    passes_refused: int = 0             # passes the search chose that would lose by the raw count
    games: int = 0                      # games finished (not abandoned)
    abandoned: int = 0                  # games dropped unfinished, for any reason
    abandoned_leaves: int = 0           # ... and the leaves their searches had sent to evaluators
    discarded: int = 0                  # games abandoned because a new model arrived (policy discard)
    discarded_leaves: int = 0
    switched_leaves: int = 0            # leaves of searches cut short by a switch to a new model
    search_seconds: float = 0.0         # collect_many + backup_many
    net_seconds: float = 0.0            # evaluator calls (with two lanes: on the worker thread)
    wait_seconds: float = 0.0           # with two lanes: time waiting for a forward pass
    move_seconds: float = 0.0           # choosing and playing moves, starting games

    def snapshot(self) -> "PoolStats":
        return dataclasses.replace(self)

    def minus(self, other: "PoolStats") -> "PoolStats":
        return PoolStats(**{f.name: getattr(self, f.name) - getattr(other, f.name)
                            for f in dataclasses.fields(self)})


MAX_LANES = 2
MIN_PART = 8                     # fewest trees a search thread takes on


class _Buffer:
    """Planes/keys/counts buffers of one group of a lane, grown on demand."""

    def __init__(self, planes: int, size: int):
        self.planes_n, self.size = planes, size
        self.planes = np.zeros((0, planes, size, size), np.float32)
        self.keys = np.zeros(0, np.uint64)
        self.counts = np.zeros(0, np.int32)

    def ensure(self, leaves: int, searches: int) -> None:
        if self.planes.shape[0] < leaves:
            cap = max(leaves, 2 * self.planes.shape[0])
            self.planes = np.zeros((cap, self.planes_n, self.size, self.size), np.float32)
            self.keys = np.zeros(cap, np.uint64)
        if self.counts.shape[0] < searches:
            self.counts = np.zeros(max(searches, 2 * self.counts.shape[0]), np.int32)


@dataclass
class _Flight:
    """One group's batch between its collect and its backup."""

    slots: list["Slot"]
    trees: list[Search]
    counts: np.ndarray
    before: list[int]               # root visits before the collect
    total: int
    size: int
    planes: np.ndarray              # the collected leaves' planes and keys (views of a buffer)
    keys: np.ndarray
    future: "Future[tuple[Any, float]] | None" = None


def _forward(evaluator: Any, planes: np.ndarray, keys: np.ndarray,
             clock: Callable[[], float]) -> tuple[Any, float]:
    t0 = clock()
    out = evaluator.evaluate(planes, keys=keys)
    return out, clock() - t0


class Batcher:
    """Batched evaluation of a pool's searches (see the module docstring); counts into ``stats``,
    timed by ``clock`` (seconds; ``time.thread_time`` counts each thread's CPU time)."""

    def __init__(self, stats: "PoolStats", batch: int, max_leaves: int, lanes: int = 1,
                 search_threads: int = 1, clock: Callable[[], float] = time.perf_counter,
                 batch_ramp: int = 0):
        if not 1 <= lanes <= MAX_LANES:
            raise ValueError(f"lanes must be 1..{MAX_LANES}, got {lanes}")
        if search_threads < 1:
            raise ValueError(f"search_threads must be >= 1, got {search_threads}")
        self.stats, self.batch, self.max_leaves, self.lanes = stats, batch, max_leaves, lanes
        self.search_threads = int(search_threads)
        self.batch_ramp = max(0, int(batch_ramp))
        self.clock = clock
        self._search_pool = (ThreadPoolExecutor(self.search_threads - 1, thread_name_prefix="pool-search")
                             if self.search_threads > 1 else None)
        self._buffers: dict[tuple[int, int, int, int], _Buffer] = {}
        self._flights: list[list[_Flight]] = [[] for _ in range(lanes)]
        self._executor = (ThreadPoolExecutor(1, thread_name_prefix="pool-forward")
                          if lanes > 1 else None)

    @property
    def in_flight(self) -> int:
        """Batches submitted and not yet backed up."""
        return sum(len(f) for f in self._flights)

    def round(self, searching: list["Slot"], lane: int = 0) -> bool:
        """Collects one batch per group of the ``searching`` slots (each with a search in
        progress: ``Slot._searching``), all of ``lane``; with one lane evaluates and backs them up
        at once, with two submits them (:meth:`complete` backs them up).  Whether there were any."""
        if self._flights[lane]:
            raise RuntimeError(f"lane {lane} still has batches in flight")
        groups: dict[tuple[int, int], list["Slot"]] = defaultdict(list)
        for slot in searching:
            groups[(id(slot._evaluator), slot.spec.size)].append(slot)  # type: ignore[union-attr]
        for (_, size), slots in groups.items():
            evaluator = slots[0]._evaluator
            for chunk, i in enumerate(range(0, len(slots), self.batch)):
                flight = self._collect(evaluator, size, slots[i:i + self.batch], (lane, id(evaluator), size, chunk))
                if flight.total and self._executor is not None:
                    flight.future = self._executor.submit(_forward, evaluator, flight.planes, flight.keys, self.clock)
                    self._flights[lane].append(flight)
                else:
                    self._finish(flight, _forward(evaluator, flight.planes, flight.keys, self.clock)
                                 if flight.total else None)
        return bool(groups)

    def complete(self, lane: int) -> None:
        """Waits for the forward passes of ``lane`` and backs them up, in submission order."""
        flights, self._flights[lane] = self._flights[lane], []
        for i, flight in enumerate(flights):
            t0 = self.clock()
            try:
                result = flight.future.result()  # type: ignore[union-attr]
            except BaseException:
                # the evaluator's error: the worker finishes, nothing else is backed up (as with one lane)
                for rest in flights[i + 1:]:
                    rest.future.exception()  # type: ignore[union-attr]
                raise
            self.stats.wait_seconds += self.clock() - t0
            self._finish(flight, result)

    def drain(self) -> None:
        """Backs up every batch in flight."""
        for lane in range(self.lanes):
            self.complete(lane)

    def close(self) -> None:
        """Backs up what is in flight and stops the worker thread."""
        self.drain()
        for pool in (self._executor, self._search_pool):
            if pool is not None:
                pool.shutdown(wait=True)
        self._executor = self._search_pool = None

    # -- internals -----------------------------------------------------------------------
    def _collect(self, evaluator: Any, size: int, slots: list["Slot"], key: tuple[int, int, int, int]) -> _Flight:
        per = max(1, min(self.max_leaves, self.batch // len(slots)))
        caps = [per] * len(slots)
        if self.batch_ramp:
            # each tree's leaves grow with it (one per batch_ramp root visits); trees of one cap
            # collect together, the smallest caps first, into one buffer and one forward pass
            ranked = sorted((ramp_leaves(s._searching.visits, self.batch_ramp, per), i)
                            for i, s in enumerate(slots))
            caps, slots = [c for c, _ in ranked], [slots[i] for _, i in ranked]
        trees = [s._searching for s in slots]
        buf = self._buffers.get(key)
        if buf is None:
            buf = self._buffers[key] = _Buffer(feature_planes(trees[0].feature_set), size)
        buf.ensure(sum(caps), len(trees))
        before = [t.visits for t in trees]
        t0 = self.clock()
        counts = buf.counts[:len(trees)]
        total = a = 0
        while a < len(trees):
            b = a
            while b < len(trees) and caps[b] == caps[a]:
                b += 1
            total += self._collect_parts(trees[a:b], caps[a], buf, counts[a:b], total)
            a = b
        self.stats.search_seconds += self.clock() - t0
        return _Flight(slots, trees, counts, before, total, size, buf.planes[:total], buf.keys[:total])

    def _parts(self, n: int) -> list[tuple[int, int]]:
        """Contiguous ranges of ``n`` trees, one per search thread, at least MIN_PART each."""
        t = max(1, min(self.search_threads, n // MIN_PART))
        bounds = [n * j // t for j in range(t + 1)]
        return list(zip(bounds[:-1], bounds[1:]))

    def _collect_parts(self, trees: list[Search], per: int, buf: _Buffer, counts: np.ndarray,
                       offset: int = 0) -> int:
        """collect_many over the trees, part by part on the search threads; the leaves end up
        together in the buffer from ``offset`` on, in tree order.  Returns their number."""
        planes, keys = buf.planes[offset:], buf.keys[offset:]
        parts = self._parts(len(trees))
        if len(parts) == 1 or self._search_pool is None:
            return collect_many(trees, per, planes, keys, counts)

        def one(a: int, b: int) -> int:
            return collect_many(trees[a:b], per, planes[a * per:], keys[a * per:], counts[a:b])

        futures = [self._search_pool.submit(one, a, b) for a, b in parts[1:]]
        got = [one(*parts[0])] + [f.result() for f in futures]
        at = got[0]
        for (a, _), n in zip(parts[1:], got[1:]):
            if n and at != a * per:         # overlapping moves are safe in numpy
                planes[at:at + n] = planes[a * per:a * per + n]
                keys[at:at + n] = keys[a * per:a * per + n]
            at += n
        return at

    def _backup_parts(self, trees: list[Search], counts: np.ndarray, policy: np.ndarray,
                      value: np.ndarray, score: np.ndarray | None = None,
                      uncertainty: np.ndarray | None = None, policy_opt: np.ndarray | None = None) -> None:
        parts = self._parts(len(trees))
        if len(parts) == 1 or self._search_pool is None:
            backup_many(trees, counts, policy, value, score, uncertainty, policy_opt)
            return
        policy = np.ascontiguousarray(policy, dtype=np.float32)
        value = np.ascontiguousarray(value, dtype=np.float32)
        if score is not None:
            score = np.ascontiguousarray(score, dtype=np.float32)
        if uncertainty is not None:
            uncertainty = np.ascontiguousarray(uncertainty, dtype=np.float32)
        if policy_opt is not None:
            policy_opt = np.ascontiguousarray(policy_opt, dtype=np.float32)
        start = np.concatenate([[0], np.cumsum(counts)]).tolist()

        def one(a: int, b: int) -> None:
            backup_many(trees[a:b], counts[a:b], policy[start[a]:], value[start[a]:],
                        None if score is None else score[start[a]:],
                        None if uncertainty is None else uncertainty[start[a]:],
                        None if policy_opt is None else policy_opt[start[a]:])

        futures = [self._search_pool.submit(one, a, b) for a, b in parts[1:]]
        one(*parts[0])
        for f in futures:
            f.result()

    def _finish(self, flight: _Flight, result: tuple[Any, float] | None) -> None:
        """Backs up a flight's outputs (None: nothing was collected) and does its bookkeeping."""
        stats = self.stats
        if result is not None:
            out, net_seconds = result
            t0 = self.clock()
            self._backup_parts(flight.trees, flight.counts, out.policy, out.value, out.score,
                               getattr(out, "uncertainty", None), getattr(out, "policy_opt", None))
            stats.search_seconds += self.clock() - t0
            stats.net_seconds += net_seconds
            stats.forward_passes += 1
            stats.leaves += flight.total
            flops.COUNTER.add(flops.search_flops(flight.total, flight.size))
        for slot, tree, b, c in zip(flight.slots, flight.trees, flight.before, flight.counts.tolist()):
            slot.leaves += c
            slot.search_leaves += c
            if c == 0 and tree.visits == b:
                slot.stalled = True       # nothing to expand (e.g. every line ends the game)
