"""Play one move: the search loop shared by the GTP engine, self-play, gating and matches.

A :class:`Player` owns one :class:`engine.core.Search` and an evaluator.  ``search`` runs
batched PUCT for a number of visits, a time budget or until ``stop()`` says so, and returns a
:class:`SearchResult` with the chosen move and the root statistics.  Tree reuse is automatic:
when the game handed to ``sync`` extends the position searched last, the subtree is kept.

With ``threads`` > 1 the search runs that many search threads on one tree, each with its own
batch in flight (one pending slot of the tree per thread).  A thread holds the tree's lock only
to collect its leaves or back its results up, never during its forward pass, so the threads
never wait for each other's network calls: while one batch is in the network, another thread
collects, backs up or runs its own batch.  On a CPU give torch one intra-op thread per search
thread (``torch.set_num_threads(1)``): the parallelism is the threads' own.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from engine.core import ChildStats, Game, IllegalMoveError, Search, SearchParams, ramp_leaves, winrate_of



@dataclass
class SearchResult:
    """What one search produced.  Values are from the side to move's view, -1..1."""

    move: int                       # chosen point (pass = N*N)
    value: float                    # root value
    visits: int                     # root visits after the search
    playouts: int                   # visits added by this search
    evals: int                      # leaves sent to the evaluator
    seconds: float
    children: list[ChildStats] = field(default_factory=list)
    policy_target: Optional[np.ndarray] = None   # normalised root visits (N*N+1)
    nodes: int = 0

    @property
    def winrate(self) -> float:
        return winrate_of(self.value)


class Player:
    """Searches positions with one evaluator.  ``batch`` is the most leaves per network call;
    ``threads`` the number of search threads, each with its own batch in flight (the evaluator
    must then accept concurrent calls, as :class:`engine.nets.evaluator.TorchEvaluator` does).
    With one thread and fixed visits a search is deterministic for a given seed.

    ``ramp`` > 0 lets the batches grow with the tree: at most one leaf in flight (over all
    threads) per ``ramp`` root visits, at least one.  Leaves in flight are descended with
    virtual loss, blind to each other's results; in a small tree that spreads them over moves
    a sequential search would not visit, so a 32-visit search batched 16 at a time plays much
    weaker than one visit at a time.  0: always full batches (benchmarks of throughput)."""

    def __init__(self, evaluator, params: SearchParams | None = None, batch: int = 16,
                 seed: int = 0, size: int | None = None, threads: int = 1, ramp: int = 0):
        self.evaluator = evaluator
        self.params = params or SearchParams()
        self.batch = max(1, int(batch))
        self.ramp = max(0, int(ramp))
        self.seed = seed
        self.threads = max(1, int(threads))
        self.feature_set = getattr(evaluator, "feature_set", "rich")
        self.search_tree: Search | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._executor_threads = 0

    def close(self) -> None:
        """Stops the helper threads (a later search starts them again)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def set_params(self, params: SearchParams) -> None:
        self.params = params
        if self.search_tree is not None:
            self.search_tree.set_params(params)

    def clear(self) -> None:
        """Forgets the tree (new game)."""
        self.search_tree = None

    def sync(self, game: Game) -> Search:
        """Points the tree at ``game``, reusing the subtree when ``game`` extends the last root."""
        tree = self.search_tree
        if tree is not None and tree.size == game.size and tree.game.rules == game.rules:
            old = tree.game.moves
            new = game.moves
            if len(new) >= len(old) and new[:len(old)] == old and self._advance(tree, new[len(old):]) \
                    and tree.game.to_move == game.to_move:
                return tree
            # otherwise the tree is rebuilt from scratch below
        if tree is None or tree.size != game.size or tree.max_batch != self.batch:
            self.seed += 1
            tree = Search(game, self.params, self.feature_set, self.batch, seed=self.seed,
                          slots=self.threads)
            self.search_tree = tree
        else:
            tree.set_params(self.params)
            tree.set_game(game)
        return tree

    def _tree_slots(self, tree: Search) -> None:
        if tree.slots != self.threads:
            for slot in range(tree.slots):
                if tree.pending_in(slot):
                    tree.cancel(slot)
            tree.set_slots(self.threads)

    @staticmethod
    def _advance(tree: Search, moves: list[tuple[int, int]]) -> bool:
        """Plays ``moves`` at the tree's root (keeping subtrees); False if one is refused."""
        try:
            for color, point in moves:
                tree.advance(point, color)
        except (IllegalMoveError, RuntimeError, MemoryError):
            return False
        return True

    def leaves(self, visits: int, in_flight: int = 0) -> int:
        """How many leaves the next collect may add with ``visits`` root visits and
        ``in_flight`` leaves already out (0 or less: wait for a backup)."""
        return ramp_leaves(visits, self.ramp, self.batch, in_flight)

    def evaluate_pending(self, tree: Search) -> int:
        """Evaluates and backs up the leaves pending in slot 0; returns how many.  When the
        evaluator raises, the leaves are withdrawn first, so the tree stays usable."""
        n = tree.pending
        if n:
            try:
                ev = self.evaluator.evaluate(tree.planes[:n], keys=tree.keys[:n])
            except BaseException:
                tree.cancel()
                raise
            tree.backup(ev.policy, ev.value, scores=ev.score, uncertainty=getattr(ev, "uncertainty", None),
                        policy_opt=getattr(ev, "policy_opt", None))
        return n

    def search(self, game: Game, visits: int | None = None, seconds: float | None = None,
               stop: Callable[[], bool] | None = None, noise: bool = False,
               callback: Callable[[Search], None] | None = None, callback_interval: float = 1.0,
               min_visits: int = 1, avoid: dict[int, dict[int, int]] | None = None) -> SearchResult:
        """Searches ``game`` until ``visits`` root visits, ``seconds`` elapse or ``stop()``.

        ``visits`` counts root visits including those kept from the previous move's tree.
        ``callback(tree)`` is called every ``callback_interval`` seconds (analysis output).
        At least ``min_visits`` visits are made even if ``stop()`` is already true.
        ``avoid``: moves kept out of the search (:meth:`engine.core.Search.set_avoid`); a
        search with other avoided moves than the tree's starts a fresh tree."""
        t0 = time.monotonic()
        if visits is None and seconds is None and stop is None:
            raise ValueError("search needs visits, seconds or a stop condition")
        tree = self.sync(game)
        tree.set_avoid(avoid)
        self._tree_slots(tree)
        if noise:
            tree.request_noise()
        start_visits = tree.visits
        target = visits if visits is not None else (1 << 62)
        if self.threads > 1:
            evals = self._search_threads(tree, t0, target, seconds, stop, callback,
                                         callback_interval, min_visits)
            return self.result(tree, start_visits, evals, time.monotonic() - t0)
        evals = 0
        next_callback = t0 + callback_interval
        while True:
            done = tree.visits
            if done >= max(target, min_visits):
                break
            now = time.monotonic()
            if done >= min_visits:
                if seconds is not None and now - t0 >= seconds:
                    break
                if stop is not None and stop():
                    break
            want = min(self.leaves(done), max(1, target - done))
            before = tree.visits
            n = tree.collect(want)
            if n:
                evals += self.evaluate_pending(tree)
            elif tree.visits == before:
                break   # nothing left to search (terminal root)
            if callback is not None and now >= next_callback:
                callback(tree)
                next_callback = now + callback_interval
        return self.result(tree, start_visits, evals, time.monotonic() - t0)

    def _search_threads(self, tree: Search, t0: float, target: int, seconds: float | None,
                        stop: Callable[[], bool] | None, callback: Callable[[Search], None] | None,
                        callback_interval: float, min_visits: int) -> int:
        """The search loop of ``self.threads`` threads on ``tree`` (slot i = thread i; this
        thread is slot 0).  Returns the leaves evaluated."""
        cond = threading.Condition(threading.Lock())
        goal = max(target, min_visits)
        st = {"finished": False, "evals": 0, "error": None, "next_callback": t0 + callback_interval}

        def finish() -> None:          # under the lock
            st["finished"] = True
            cond.notify_all()

        def take(slot: int) -> int:
            """Under the lock: collect the slot's next batch; 0 when the search is over."""
            while not st["finished"]:
                done = tree.visits
                if done >= goal:
                    break
                if done >= min_visits:
                    if seconds is not None and time.monotonic() - t0 >= seconds:
                        break
                    if stop is not None and stop():
                        break
                in_flight = tree.pending_total
                room = min(goal - done - in_flight, self.leaves(done, in_flight))
                if room > 0:
                    n = tree.collect(room, slot)
                    if n:
                        return n
                    if tree.visits != done:
                        continue            # terminal positions were backed up: go on
                    if in_flight == 0:
                        break               # nothing left to search (terminal root)
                # Everything left, or all the ramp allows, is in flight in other slots: wait.
                cond.wait(0.05)
            finish()
            return 0

        def work(slot: int) -> None:
            planes, keys = tree.slot_planes(slot), tree.slot_keys(slot)
            try:
                while True:
                    with cond:
                        n = take(slot)
                    if not n:
                        return
                    ev = self.evaluator.evaluate(planes[:n], keys=keys[:n])
                    with cond:
                        tree.backup(ev.policy, ev.value, slot, scores=ev.score,
                                    uncertainty=getattr(ev, "uncertainty", None),
                                    policy_opt=getattr(ev, "policy_opt", None))
                        st["evals"] += n
                        cond.notify_all()
                        if callback is not None and not st["finished"]:
                            now = time.monotonic()
                            if now >= st["next_callback"]:
                                callback(tree)
                                st["next_callback"] = now + callback_interval
            except BaseException as exc:   # noqa: BLE001 - re-raised by the calling thread
                with cond:
                    if tree.pending_in(slot):
                        tree.cancel(slot)
                    if st["error"] is None:
                        st["error"] = exc
                    finish()

        helpers = self.threads - 1
        if self._executor is None or self._executor_threads != helpers:
            self.close()
            self._executor = ThreadPoolExecutor(helpers, thread_name_prefix="search")
            self._executor_threads = helpers
        futures = [self._executor.submit(work, slot) for slot in range(1, self.threads)]
        try:
            work(0)
        finally:
            with cond:
                if st["error"] is None and not st["finished"]:
                    finish()
            for f in futures:
                f.result()
        if st["error"] is not None:
            raise st["error"]
        return st["evals"]

    def result(self, tree: Search, start_visits: int = 0, evals: int = 0,
               seconds: float = 0.0) -> SearchResult:
        """The result of the tree's current state (move chosen with the params' rules)."""
        children = tree.children()
        move = tree.choose()
        return SearchResult(move=move, value=tree.value, visits=tree.visits,
                            playouts=tree.visits - start_visits, evals=evals, seconds=seconds,
                            children=children, policy_target=tree.visit_distribution(),
                            nodes=tree.nodes)
