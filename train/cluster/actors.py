"""The Ray actors of a run on a Ray cluster (driven by :class:`train.cluster.driver.RaySupervisor`;
the module docstring there says who runs where and how models and games travel): self-play
workers, stage programs (trainer, gate), and gating games played on remote actors (driven by
:class:`train.cluster.gate.RemoteGateMatch`).  Nothing here imports the driver's side.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from engine.nets import flops
from train.config import RunConfig
from train.gating import GateMatch, candidate_score, gate_settings
from train.games.pool import GamePool
from train.rundir import RunDir, atomic_write
from train.selfplay import SelfPlayWorker, make_agent
from train.usage import process_id
from train.supervisor import Stage


# ---------------------------------------------------------------------------------------------
# Actors


class ActorWorker(SelfPlayWorker):
    """A SelfPlayWorker whose finished games are handed back instead of written, and whose
    new games are limited by the quota the driver grants."""

    quota: int | None = None

    def _next_game(self, slot):
        if self.quota is not None and self.quota <= 0:
            return None
        spec = super()._next_game(slot)
        if spec is not None and self.quota is not None:
            self.quota -= 1
        return spec

    def write(self, fg):
        rec = fg.record()      # the driver writes it; this actor only counts it
        self.account(rec)
        return rec


@dataclass
class ModelMsg:
    """A checkpoint on its way to the actors: step, file mtime (adoption lag) and the bytes (an
    ObjectRef on the driver's side; Ray resolves it to bytes when it is a call's argument)."""

    step: int
    mtime: float


class SelfPlayActor:
    """A self-play worker anywhere in the cluster (see the module docstring)."""

    def __init__(self, cfg: dict[str, Any], worker: int, model: ModelMsg, data: bytes, threads: int = 1):
        torch.set_num_threads(max(1, int(threads)))
        self.cfg = RunConfig.from_dict(cfg)
        self.scratch = Path(tempfile.mkdtemp(prefix=f"goengine-selfplay-w{worker:02d}-"))
        self.rd = RunDir(self.scratch).create()
        self.rd.write_config(cfg)
        self._install(model, data)
        self.w = ActorWorker(self.rd, self.cfg, worker)
        self.mark = self.w.mark()

    def _install(self, model: ModelMsg, data: bytes) -> None:
        path = self.rd.model_path(model.step)
        atomic_write(path, lambda f: f.write(data))
        os.utime(path, (model.mtime, model.mtime))
        if self.cfg.mode == "agz":
            self.rd.set_best(model.step)
        for step, p in self.rd.list_models():
            if step != model.step:
                p.unlink(missing_ok=True)

    def set_model(self, model: ModelMsg, data: bytes) -> bool:
        """Adopts a new checkpoint (``--on-new-model`` applies to the games in flight)."""
        if model.step <= self.w.model_step:
            return False
        self._install(model, data)
        return self.w.poll_model()

    def play(self, quota: int | None, seconds: float) -> dict[str, Any]:
        """Plays for ``seconds`` (less if the pool runs idle), starting at most ``quota`` new
        games (None: no limit); returns the finished games, the games in flight and, every
        ``metrics_every`` seconds, a metrics record."""
        self.w.quota = quota
        t0 = time.time()
        games = []
        while time.time() - t0 < seconds:
            games.extend(self.w.write(fg) for fg in self.w.pool.step())
            if self.w.pool.idle:
                break
        metrics = None
        if time.time() - self.mark.time >= self.cfg.metrics_every:
            m = self.w.mark()
            metrics = {**self.w.metrics(self.mark, m), **_spending()}
            self.mark = m
        return {"games": games, "in_flight": len(self.w.pool.active()), "metrics": metrics, "pid": os.getpid(),
                "node": _node_id()}

    def close(self) -> dict[str, Any]:
        """Abandons the games in flight; returns the final metrics record."""
        self.w.pool.abandon_all()
        rec = {**self.w.metrics(self.mark, self.w.mark()), **_spending()}
        rec["event"] = "stop"
        shutil.rmtree(self.scratch, ignore_errors=True)
        return rec


def _node_id() -> str | None:
    """The Ray node this actor runs on (None outside Ray)."""
    try:
        import ray  # lazy: ray is optional and slow to import
        return ray.get_runtime_context().get_node_id()
    except Exception:
        return None


def _spending() -> dict[str, Any]:
    """This actor process's running totals for the driver's metrics (which count a run's
    compute and CPU budgets per process: train.usage): its host and pid name it."""
    return {"pid": f"{socket.gethostname()}:{os.getpid()}", "proc": process_id(), "cpu_s": round(time.process_time(), 2),
            "flops": round(flops.COUNTER.total)}


class StageActor:
    """Runs one unchanged stage program (:class:`train.loop.Stage`: trainer or gate) on its
    node; the program dies with the actor (``--parent-pid`` + PR_SET_PDEATHSIG)."""

    def __init__(self, name: str, role: str, module: str, args: list[str], run_dir: str):
        self.rd = RunDir(run_dir)
        self.stage = Stage(name, role, module, list(args))
        self.stage.start(self.rd)

    def poll(self) -> int | None:
        """None while the program runs, else its exit status."""
        assert self.stage.proc is not None
        return self.stage.proc.poll()

    def signal(self, sig: int) -> None:
        self.stage.signal(sig)

    def wait(self, timeout: float) -> int | None:
        assert self.stage.proc is not None
        try:
            return self.stage.proc.wait(timeout=timeout)
        except Exception:
            self.stage.signal(signal.SIGKILL)
            return self.stage.proc.wait()


class GateActor:
    """Plays gating games anywhere in the cluster: the game indices the driver's
    :class:`train.gating.GateCoordinator` claimed for it, colours and seeds from
    ``GateMatch._spec`` (the same as a local gate), both nets in one GamePool."""

    def __init__(self, cfg: dict[str, Any], cand: ModelMsg, cand_data: bytes, best: ModelMsg, best_data: bytes,
                 slots: int, match_seed: int, agent_seeds: tuple[int, int], threads: int = 1):
        torch.set_num_threads(max(1, int(threads)))
        self.cfg = c = RunConfig.from_dict(cfg)
        self.scratch = Path(tempfile.mkdtemp(prefix="goengine-gate-"))
        rd = RunDir(self.scratch).create()
        agents = []
        for msg, data, seed in ((cand, cand_data, agent_seeds[0]), (best, best_data, agent_seeds[1])):
            path = rd.model_path(msg.step)
            atomic_write(path, lambda f, d=data: f.write(d))
            agents.append(make_agent(path, c, seed=int(seed), device=c.gate_device or c.device,
                                      params=c.gate_search_params()))
        self.candidate, self.best = agents
        self.match = GateMatch(lambda w: (self.candidate, self.best), c.gate, c.board_size,
                               c.rules, gate_settings(c), workers=1, slots=slots,
                               seed=match_seed)
        self.queue: deque[int] = deque()
        self.pool = GamePool(slots, self._next_game, batch=c.gate_batch or c.batch,
                             max_leaves_per_search=c.max_leaves_per_search, batch_ramp=c.batch_ramp)

    def _next_game(self, slot):
        return self.match._spec(self.queue.popleft(), self.candidate, self.best) if self.queue else None

    def play(self, new: list[int], lost: list[int], seconds: float) -> dict[str, Any]:
        """Starts games ``new``, abandons ``lost`` ones, plays for ``seconds``; returns the games
        that finished (number, candidate's score, moves, GameRecord) and the moves played so far
        in the games in flight (number -> moves)."""
        self.queue.extend(new)
        gone = set(lost)
        for slot in self.pool.active():
            if slot.spec is not None and slot.spec.tag in gone:
                self.pool.abandon(slot.index, why="lost")
        out = []
        t0 = time.time()
        while time.time() - t0 < seconds:
            for fg in self.pool.step():
                out.append((fg.spec.tag, candidate_score(fg, self.candidate), len(fg.moves), fg.record()))
            if self.pool.idle and not self.queue:
                break
        return {"games": out,
                "in_flight": {s.spec.tag: len(s.moves) for s in self.pool.active() if s.spec is not None}}

    def close(self) -> None:
        self.pool.abandon_all()
        shutil.rmtree(self.scratch, ignore_errors=True)
