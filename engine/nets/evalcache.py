"""The evaluator's LRU cache of network outputs, kept in arrays.

Entries are keyed by (position key, board size), packed in one int: ``key << 6 | size``.  The
outputs of each board size live in preallocated numpy arrays (grown by doubling up to the
capacity), and an OrderedDict maps each key to its row, least recently used first.  So a batch
is served with one gather per output rather than one small array per position, and a new entry
is one row written, not five arrays made: the cost per position is a dictionary look-up.  The
outputs are policy, value, ownership and score (the last two together, or neither) and the
short-term errors [2] of the nets that have them (KataGo's, model version >= 9).

Not thread-safe: :class:`engine.nets.evaluator.TorchEvaluator` holds its lock around every call.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np


class Lookup(NamedTuple):
    """Where each position of a batch comes from: ``hits`` (batch rows) served from the cache,
    ``misses`` (batch rows, the first occurrence of each missing key) to evaluate, ``repeats``
    (batch rows) whose key repeats the miss at batch row ``repeat_of``."""

    hits: list[int]
    misses: list[int]
    repeats: list[int]
    repeat_of: list[int]


class _Store:
    """The output arrays of one board size, rows handed out in order and reused when freed."""

    def __init__(self, size: int, aux: bool, errors: bool = False, opt: bool = False):
        self.size, self.aux, self.errors, self.opt = size, aux, errors, opt
        self.used = 0
        self.free: list[int] = []
        self.policy = np.zeros((0, size * size + 1), np.float32)
        self.value = np.zeros(0, np.float32)
        self.ownership = np.zeros((0, size * size), np.float32) if aux else None
        self.score = np.zeros(0, np.float32) if aux else None
        self.uncertainty = np.zeros((0, 2), np.float32) if errors else None
        self.policy_opt = np.zeros((0, size * size + 1), np.float32) if opt else None

    def take(self, capacity: int) -> int:
        """A free row, growing the arrays (doubling, at most ``capacity`` rows) when none is."""
        if self.free:
            return self.free.pop()
        if self.used == self.policy.shape[0]:
            grown = min(capacity, max(4096, 2 * self.used))
            self.policy = _grow(self.policy, grown)
            self.value = _grow(self.value, grown)
            if self.aux:
                self.ownership = _grow(self.ownership, grown)
                self.score = _grow(self.score, grown)
            if self.errors:
                self.uncertainty = _grow(self.uncertainty, grown)
            if self.opt:
                self.policy_opt = _grow(self.policy_opt, grown)
        self.used += 1
        return self.used - 1


def _check_size(size: int) -> None:
    if not 1 <= size < 64:
        raise ValueError(f"board size {size} outside 1..63")


def _grow(a: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows,) + a.shape[1:], a.dtype)
    out[:a.shape[0]] = a
    return out


class EvalCache:
    """At most ``capacity`` entries (>= 1), least recently used evicted first."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = int(capacity)
        self._rows: OrderedDict[int, int] = OrderedDict()
        self._stores: dict[int, _Store] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self._rows.clear()
        self._stores.clear()

    def lookup(self, keys: list[int], size: int) -> tuple[Lookup, list[int]]:
        """Sorts a batch's ``keys`` into hits, misses and repeats (see :class:`Lookup`); the
        hits become the most recently used.  Also returns the cache rows of the hits, valid
        until the next :meth:`insert`."""
        _check_size(size)
        rows = self._rows
        get, touch = rows.get, rows.move_to_end
        hits: list[int] = []
        hit_rows: list[int] = []
        misses: list[int] = []
        repeats: list[int] = []
        repeat_of: list[int] = []
        first: dict[int, int] = {}
        for i, k in enumerate(keys):
            ck = k << 6 | size
            r = get(ck)
            if r is not None:
                touch(ck)
                hits.append(i)
                hit_rows.append(r)
            elif k in first:
                repeats.append(i)
                repeat_of.append(first[k])
            else:
                first[k] = i
                misses.append(i)
        return Lookup(hits, misses, repeats, repeat_of), hit_rows

    def gather(self, size: int, rows: list[int]) -> tuple[np.ndarray, ...] | None:
        """Policy, value, ownership, score and short-term errors (None where the model has
        none) of cache ``rows`` of board ``size``, as new arrays; None when the size has no
        entries."""
        store = self._stores.get(size)
        if store is None:
            return None
        idx = np.asarray(rows, np.int64)
        aux = store.aux
        return (store.policy[idx], store.value[idx], store.ownership[idx] if aux else None,  # type: ignore[index]
                store.score[idx] if aux else None,  # type: ignore[index]
                store.uncertainty[idx] if store.errors else None,  # type: ignore[index]
                store.policy_opt[idx] if store.opt else None)  # type: ignore[index]

    def insert(self, keys: list[int], size: int, policy: np.ndarray, value: np.ndarray,
               ownership: np.ndarray | None, score: np.ndarray | None,
               uncertainty: np.ndarray | None = None, policy_opt: np.ndarray | None = None) -> None:
        """Adds the outputs of ``keys`` (row i of each array for keys[i]), new keys only,
        evicting the least recently used entries beyond the capacity."""
        _check_size(size)
        aux = ownership is not None and score is not None
        errors = uncertainty is not None
        opt = policy_opt is not None
        store = self._stores.get(size)
        if store is None or store.aux != aux or store.errors != errors or store.opt != opt:
            if store is not None:           # another model's outputs: forget that size
                for ck in [ck for ck in self._rows if ck & 63 == size]:
                    del self._rows[ck]
            store = self._stores[size] = _Store(size, aux, errors, opt)
        rows = self._rows
        start = max(0, len(keys) - self.capacity)   # earlier ones would be evicted by later ones
        picked: list[int] = []
        fresh: list[int] = []
        for i in range(start, len(keys)):
            ck = keys[i] << 6 | size
            if ck not in rows:               # (another thread may have added it meanwhile)
                picked.append(i)
                fresh.append(ck)
        targets: list[int] = []
        for _ in range(len(rows) + len(fresh) - self.capacity):    # the least recently used go
            old, r = rows.popitem(last=False)
            if old & 63 == size:
                targets.append(r)
            else:
                self._stores[old & 63].free.append(r)
        targets += [store.take(self.capacity) for _ in range(len(fresh) - len(targets))]
        rows.update(zip(fresh, targets))
        if not picked:
            return
        src, dst = np.asarray(picked, np.int64), np.asarray(targets, np.int64)
        store.policy[dst] = policy[src]
        store.value[dst] = value[src]
        if aux:
            store.ownership[dst] = ownership[src]  # type: ignore[index]
            store.score[dst] = score[src]  # type: ignore[index]
        if errors:
            store.uncertainty[dst] = uncertainty[src]  # type: ignore[index]
        if opt:
            store.policy_opt[dst] = policy_opt[src]  # type: ignore[index]
