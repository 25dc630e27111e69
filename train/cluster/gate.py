"""Gating games on Ray actors, driven from the driver: :class:`RemoteGateMatch` is the gate
stage's :class:`train.gating.GateMatch` with :class:`train.cluster.actors.GateActor`\\ s for its
workers (``train.loop --ray ... --ray-gate-actors N``).  It runs in a thread of the driver
(:class:`train.cluster.driver.RaySupervisor`), which hands it what it uses: the run's settings, the
Ray options and where to log its metrics records.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from train.config import RunConfig
from train.gating import GateMatch
from train.cluster.actors import GateActor, ModelMsg
from train.cluster.options import RayOptions


class _Returned:
    """A gating game that came back from an actor, shaped like a FinishedGame for ``on_game``."""

    def __init__(self, rec: Any):
        self._rec = rec

    def record(self) -> Any:
        return self._rec


class RemoteGateMatch(GateMatch):
    """:class:`train.gating.GateMatch` whose worker threads drive :class:`GateActor`\\ s
    instead of local pools: the coordinator (start order, deadlines, lost games, the rule)
    stays in the driver, unchanged.  An actor that dies is replaced; every game it was
    playing is declared lost (``GateCoordinator.worker_died``) and played again under its own
    number by a live actor or the replacement.  The moves of the games in flight, reported
    with every call, tell the coordinator how long a lost game had lasted.

    ``candidate`` and ``best`` are (step, checkpoint path); ``cfg`` gives the actors their
    settings and the seeds their root, ``opts`` the number of actors (``gate_actors``), their
    resources and the length of a call (``slice_s``); ``append_metrics`` records a lost actor.
    The other arguments are :class:`train.gating.GateMatch`'s."""

    def __init__(self, candidate: tuple[int, Path], best: tuple[int, Path], *args: Any, cfg: RunConfig,
                 opts: RayOptions, append_metrics: Callable[[dict[str, Any]], None], **kwargs: Any):
        kwargs["workers"] = max(1, opts.gate_actors)
        kwargs["slots"] = max(kwargs.get("slots", 32), kwargs["workers"])
        super().__init__(*args, **kwargs)
        import ray  # lazy: ray is optional and slow to import
        self.cfg, self.opts, self.append_metrics = cfg, opts, append_metrics
        self.models = []
        for step, path in (candidate, best):
            self.models.append((ModelMsg(step, path.stat().st_mtime), ray.put(path.read_bytes())))
        self.replaced = 0

    def _actor(self, w: int) -> Any:
        import ray  # lazy: ray is optional and slow to import
        o, cfg = self.opts, self.cfg
        seeds = np.random.SeedSequence([cfg.seed, self.models[0][0].step, 7, w, self.replaced]).generate_state(2)
        name = f"goengine-gate-{self.models[0][0].step}-w{w:02d}-{self.replaced}"
        cls = ray.remote(GateActor).options(name=name, max_restarts=0, **o.gate_request())
        return cls.remote(cfg.to_dict(), self.models[0][0], self.models[0][1], self.models[1][0],
                          self.models[1][1], self.slots[w], self.seed, (int(seeds[0]), int(seeds[1])),
                          max(1, int(o.gate_cpus)))

    def _work(self, w: int) -> None:
        import ray  # lazy: ray is optional and slow to import
        from ray.exceptions import RayActorError  # lazy, as ray
        coord = self.coordinator
        actor, mine = None, set()
        try:
            while not self._done.is_set():
                if actor is None:
                    actor = self._actor(w)
                new = []
                while len(mine) + len(new) < self.slots[w]:
                    index = coord.claim(w)
                    if index is None:
                        break
                    new.append(index)
                lost = coord.lost_games(w) & mine
                ref = actor.play.remote(new, sorted(lost), self.opts.slice_s)
                while not ray.wait([ref], timeout=0.5)[0]:     # an actor with no node yet: wait,
                    if self._done.is_set():                     # but never past the match's end
                        return
                try:
                    reply = ray.get(ref)
                except RayActorError:
                    gone = coord.worker_died(w)          # its games in flight: lost, played again
                    self.replaced += 1
                    self.append_metrics({"source": "ray", "event": "gate_actor_lost", "worker": w,
                                         "candidate_step": self.models[0][0].step,
                                         "lost_games": len(gone)})
                    actor, mine = None, set()
                    continue
                mine = (mine | set(new)) - lost
                coord.progress(w, reply["in_flight"])
                for index, score, moves, rec in reply["games"]:
                    mine.discard(index)
                    counted = coord.report(index, score, worker=w, moves=moves)
                    with self._count_lock:
                        self.finished_games += 1
                    if self.on_game is not None:
                        self.on_game(index, _Returned(rec), counted)
                if not new and not mine:
                    time.sleep(self.poll_s)
        finally:
            if actor is not None:
                ray.kill(actor)
