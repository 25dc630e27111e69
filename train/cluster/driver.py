"""``python -m train.loop ... --ray ADDRESS|auto|local``: the same run on a Ray cluster, any number
of machines.  The local multi-process run (:func:`train.loop.supervise`) stays the default.

    pip install -e .[cluster]                                          # ray>=2.9
    python -m train.loop --run-dir runs/9x9 --board-size 9 --ray local --ray-cpus 8 --budget 2h
    ray start --head   (and ray start --address HEAD:6379 on the other machines)
    python -m train.loop --run-dir runs/9x9 --ray auto --selfplay-workers 32 --ray-trainer-gpus 1

**Who runs where.**  The driver (``train.loop`` itself) owns the run directory.  Each self-play
worker is a Ray actor (:class:`train.cluster.actors.SelfPlayActor`, ``--ray-selfplay-cpus/-gpus``
each) that may run on any machine: it wraps the very same :class:`train.selfplay.SelfPlayWorker`
(pool, resignation calibration, ``--on-new-model``, metrics) over a scratch run directory of its
own.  The trainer and the gate are the unchanged stage programs (``python -m train.trainer`` /
``train.gating``, from :func:`train.supervisor.stages_for`) run by a
:class:`train.cluster.actors.StageActor` with its resource request (``--ray-trainer-cpus/-gpus``,
``--ray-gate-cpus/-gpus``); they read and write the run directory, so they are pinned to the
driver's machine unless ``--ray-shared-run-dir`` says the run directory is on a filesystem every
machine mounts at the same path.

**How models travel: the object store**, so no shared disk is needed.  When the self-play model
changes (the latest checkpoint in az mode, ``models/best.json`` in agz), the driver reads the
checkpoint once, ``ray.put``\\ s its bytes and hands the reference to every actor
(``set_model``); the actor writes the bytes into its scratch directory and lets
``SelfPlayWorker.poll_model`` adopt them, so discard/finish/switch behave exactly as in a local
run.  A new or replacement actor gets the current model's reference in its constructor.

**How games travel: as return values.**  The driver keeps one ``play`` call outstanding per actor
(a time slice of ``--ray-slice`` seconds); each returns the finished games as
:class:`train.games.records.GameRecord` objects, and the driver writes them, SGF then npz, atomically
through :mod:`train.rundir` (name ``g<seq>-w<slot>``), plus the actor's metrics record.  The
driver also hands out the game quota each call may start (game budget, sync pipeline's
``until_games``), counting games in flight, so budgets are exact as in a local run.  In the sync
pipeline the driver only calls ``play`` in the "selfplay" phase; between calls the actors' games
in flight simply wait, as the local workers' paused games do.

**Dead workers.**  A self-play actor that dies (node lost, OOM, ``ray.kill``) is replaced at once
by a new actor for the same slot; the games it had in flight at its last report are counted as
lost (metrics record ``{"source": "ray", "event": "actor_lost", "lost_games": n}`` and
``lost_games`` in the run summary; games started during the failed call are not known, so this
is a lower bound).  Its finished games were already written.  A trainer or gate actor that dies
is restarted: both resume from the run directory (a gate killed mid-match gates the candidate
again from scratch, which keeps the decision unbiased).  Inside the gate the match is
:class:`train.gating.GateMatch`: results counted in start order, a dead gating actor's games
declared lost and played again under their own numbers.

Throughput with 1, 2, 4 actors: ``python -m tools.bench.ray_selfplay`` (figures in docs/results/benchmarks.md).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from train.config import RunConfig
from train.gating import gate_candidate, next_candidate
from train.cluster.actors import ModelMsg, SelfPlayActor, StageActor
from train.games.records import write_npz, write_sgf
from train.report import format_summary
from train.rundir import GameName, MetricsTail, RunDir
from train.supervisor import Budget, Progress, SyncPipeline, finish_run, stages_for
from train.cluster.gate import RemoteGateMatch
from train.cluster.options import (RayOptions, _alive_nodes, _request, add_ray_arguments, init_ray,  # noqa: F401
                               options_from_namespace, ray_available)
from train.usage import Usage


# ---------------------------------------------------------------------------------------------
# The driver


@dataclass
class _Slot:
    """A self-play slot: its current actor, the call in flight, its game numbering."""

    worker: int
    seq: int
    actor: Any = None
    incarnation: int = 0
    pending: Any = None
    granted: int = 0
    in_flight: int = 0
    wait_s: float = 0.0          # this incarnation's time held back by the sync pipeline
    waiting_since: float | None = None
    pending_since: float = 0.0   # when the call in flight was made
    placed: bool = False         # this incarnation has returned a call (it found a node)
    created: float = 0.0
    noticed: bool = False        # "not started" said once
    node: str | None = None      # the Ray node of this incarnation (once it has answered)

    @property
    def metrics_key(self) -> int:
        # Each incarnation has its own session counters: report them under their own key so
        # the run summary adds them up instead of keeping only the last incarnation's.
        return self.worker + 1000 * self.incarnation

    @property
    def name(self) -> str:
        return f"goengine-selfplay-w{self.worker:02d}-{self.incarnation}"


@dataclass
class _StageSlot:
    name: str
    role: str
    module: str
    args: list[str]
    actor: Any = None
    exit: int | None = None
    stopping: bool = False
    restarts: int = 0
    poll_ref: Any = None         # the poll() call in flight
    placed: bool = False         # the actor has answered once (it found a node)
    created: float = 0.0
    noticed: bool = False


class RaySupervisor:
    """The driver of a Ray run (see the module docstring); :meth:`run` returns an exit status."""

    def __init__(self, rd: RunDir, cfg: RunConfig, budget: Budget, opts: RayOptions, progress: bool = True,
                 selfplay_only: bool = False, poll_s: float = 0.1, stop_grace_s: float = 120.0):
        self.rd, self.cfg, self.budget, self.opts = rd, cfg, budget, opts
        self.progress, self.selfplay_only = progress, selfplay_only
        self.poll_s, self.stop_grace_s = poll_s, stop_grace_s
        self.lost_games = 0
        self.replaced = 0
        self.model: tuple[ModelMsg, Any] | None = None
        self.slots: list[_Slot] = []
        self.stages: list[_StageSlot] = []
        self.interrupted = False
        self._gate_stop = threading.Event()
        self._gate_thread: threading.Thread | None = None
        self.gate_error: str | None = None
        self.node_games: dict[str, int] = {}      # games written per Ray node id

    # -- actors -------------------------------------------------------------------------------
    def _refresh_model(self) -> bool:
        import ray  # lazy: ray is optional and slow to import
        sp = self.rd.selfplay_model(self.cfg.mode)
        if sp is None or (self.model is not None and sp[0] <= self.model[0].step):
            return False
        try:
            data = sp[1].read_bytes()
            msg = ModelMsg(sp[0], sp[1].stat().st_mtime)
        except OSError:
            return False
        self.model = (msg, ray.put(data))
        return True

    def _start_selfplay(self, slot: _Slot) -> None:
        import ray  # lazy: ray is optional and slow to import
        assert self.model is not None
        threads = max(1, int(self.opts.selfplay_cpus)) if not self.cfg.selfplay_threads else self.cfg.selfplay_threads
        cls = ray.remote(SelfPlayActor).options(name=slot.name, max_restarts=0, **self.opts.selfplay_request())
        slot.actor = cls.remote(self.cfg.to_dict(), slot.worker, self.model[0], self.model[1], threads)
        slot.pending, slot.granted, slot.in_flight = None, 0, 0
        slot.placed, slot.noticed, slot.created = False, False, time.time()

    def _start_stage(self, st: _StageSlot) -> None:
        import ray  # lazy: ray is optional and slow to import
        opts: dict[str, Any] = {"num_cpus": self.opts.trainer_cpus if st.role == "trainer" else self.opts.gate_cpus,
                                "num_gpus": self.opts.trainer_gpus if st.role == "trainer" else self.opts.gate_gpus,
                                "max_restarts": 0}
        if not self.opts.shared_run_dir:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # lazy, as ray
            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                node_id=ray.get_runtime_context().get_node_id(), soft=False)
        st.actor = ray.remote(StageActor).options(**opts).remote(st.name, st.role, st.module, st.args,
                                                                 str(self.rd.root.resolve()))
        st.exit, st.poll_ref, st.placed, st.noticed, st.created = None, None, False, False, time.time()

    def _check_driver_node(self) -> None:
        """ValueError when the stages pinned to the driver's node (trainer, gate: they use the
        run directory) can never fit there; a run would otherwise wait for them forever."""
        import ray  # lazy: ray is optional and slow to import
        if self.opts.shared_run_dir:
            return
        me = ray.get_runtime_context().get_node_id()
        have = next((n.get("Resources", {}) for n in ray.nodes() if n.get("NodeID") == me), {})
        roles = [s.role for s in self.stages]
        need = {"CPU": sum(self.opts.trainer_cpus if r == "trainer" else self.opts.gate_cpus for r in roles),
                "GPU": sum(self.opts.trainer_gpus if r == "trainer" else self.opts.gate_gpus for r in roles)}
        short = {k: v for k, v in need.items() if v > have.get(k, 0.0) + 1e-9}
        if short:
            raise ValueError(
                f"the driver's node has {have.get('CPU', 0):g} CPUs and {have.get('GPU', 0):g} GPUs, but the "
                f"stages that use the run directory ({', '.join(roles)}) run there and need "
                f"{need['CPU']:g} CPUs and {need['GPU']:g} GPUs: run the driver on a node with more "
                f"(ray start --num-cpus/--num-gpus), lower --ray-trainer-cpus/--ray-gate-cpus, or put the run "
                f"directory on a shared filesystem (--ray-shared-run-dir)")

    def _notice(self, what: str, request: dict[str, Any], since: float) -> None:
        """Says why an actor has not started: the resources it waits for."""
        import ray  # lazy: ray is optional and slow to import
        free = {k: round(v, 2) for k, v in ray.available_resources().items()
                if not k.startswith(("node:", "memory", "object_store"))}
        print(f"train.loop[ray]: {what} not started after {time.time() - since:.0f} s: it waits for a node "
              f"with {request} free (free in the cluster now: {free or 'nothing'}, {len(_alive_nodes())} "
              f"nodes alive)", file=sys.stderr, flush=True)
        self.rd.append_metrics({"source": "ray", "event": "actor_waiting", "actor": what,
                                "request": {k: v for k, v in request.items() if k != "scheduling_strategy"},
                                "free": free})

    def _actor_lost(self, slot: _Slot, exc: BaseException) -> None:
        import ray  # lazy: ray is optional and slow to import
        try:
            ray.kill(slot.actor)          # an actor only unreachable for now must not come back
        except Exception:
            pass
        lost = slot.in_flight
        self.lost_games += lost
        self.replaced += 1
        self.rd.append_metrics({"source": "ray", "event": "actor_lost", "worker": slot.worker,
                                "incarnation": slot.incarnation, "lost_games": lost, "node": slot.node,
                                "lost_games_total": self.lost_games, "error": f"{type(exc).__name__}"})
        print(f"train.loop[ray]: self-play actor w{slot.worker:02d} died ({type(exc).__name__}); "
              f"{lost} games in flight lost; starting a replacement", file=sys.stderr, flush=True)
        slot.incarnation += 1
        slot.wait_s, slot.waiting_since = 0.0, None
        self._start_selfplay(slot)

    # -- game accounting ------------------------------------------------------------------------
    def _limit(self, phase: dict[str, Any] | None) -> int | None:
        """The game count self-play may reach now (None: no limit)."""
        limits = []
        if self.budget.games is not None:
            limits.append(self.budget.games)
        if phase is not None:
            if phase.get("phase") != "selfplay":
                return -1
            if phase.get("until_games") is not None:
                limits.append(int(phase["until_games"]))
        return min(limits) if limits else None

    def _write(self, slot: _Slot, result: dict[str, Any]) -> None:
        for rec in result["games"]:
            name = GameName(slot.seq, slot.worker)
            npz, sgf = self.rd.game_paths(name)
            write_sgf(sgf, rec, game_name=name.stem)
            write_npz(npz, rec)
            slot.seq += 1
        node = result.get("node")
        if node:
            slot.node = node
            self.node_games[node] = self.node_games.get(node, 0) + len(result["games"])
        slot.in_flight = int(result["in_flight"])
        if result.get("metrics"):
            self._metrics(slot, result["metrics"])

    def _metrics(self, slot: _Slot, rec: dict[str, Any]) -> None:
        rec = dict(rec)
        wait = slot.wait_s + (time.time() - slot.waiting_since if slot.waiting_since is not None else 0.0)
        rec.update(games=self.rd.count_games(), worker=slot.metrics_key, slot=slot.worker,
                   incarnation=slot.incarnation, ray=True, wait_s=rec.get("wait_s", 0.0) + wait)
        self.rd.append_metrics(rec)

    def _selfplay_done(self) -> bool:
        """Game budget reached and nothing in flight: self-play has finished (the local run's
        self-play processes exit then)."""
        return (self.budget.games is not None and self.rd.count_games() >= self.budget.games
                and all(s.in_flight == 0 and s.pending is None for s in self.slots))

    def _pump_selfplay(self, phase: dict[str, Any] | None, wait_s: float) -> None:
        """Collects finished calls (writing their games), replaces dead actors, starts calls."""
        import ray  # lazy: ray is optional and slow to import
        from ray.exceptions import RayActorError, RayTaskError  # lazy, as ray
        pending = [s.pending for s in self.slots if s.pending is not None]
        ready = set()
        if pending:
            done, _ = ray.wait(pending, num_returns=len(pending), timeout=wait_s)
            ready = set(done)
        elif wait_s > 0:
            time.sleep(wait_s)
        for slot in self.slots:
            if slot.pending is None or slot.pending not in ready:
                continue
            ref, slot.pending, slot.granted = slot.pending, None, 0
            try:
                result = ray.get(ref)
            except (RayActorError, RayTaskError) as exc:
                self._actor_lost(slot, exc)
                continue
            slot.placed = True
            self._write(slot, result)
        now = time.time()
        for slot in self.slots:
            if (slot.pending is not None and not slot.placed and not slot.noticed
                    and now - slot.created >= self.opts.notice_s):
                slot.noticed = True
                self._notice(f"self-play actor w{slot.worker:02d}", self.opts.selfplay_request(), slot.created)
        limit = self._limit(phase)
        on_disk = self.rd.count_games() if limit is not None else 0
        for slot in self.slots:
            if slot.pending is not None:
                continue
            quota = None
            if limit is not None:
                owed = (limit - on_disk - sum(s.in_flight for s in self.slots)
                        - sum(s.granted for s in self.slots))
                quota = max(0, min(owed, self.cfg.parallel_games))
                if limit < 0 or (quota == 0 and slot.in_flight == 0):
                    if limit < 0 and slot.waiting_since is None:
                        slot.waiting_since = time.time()
                    continue            # sync pipeline not in self-play, or nothing to do: games wait
            if slot.waiting_since is not None:
                slot.wait_s += time.time() - slot.waiting_since
                slot.waiting_since = None
            slot.granted = quota or 0
            slot.pending = slot.actor.play.remote(quota, self.opts.slice_s)
            slot.pending_since = time.time()

    def _stalled(self, now: float) -> bool:
        """Self-play waits on calls and none has returned for ``stall_s``: every node able to
        host a self-play actor is gone (or hung) and none has joined."""
        return bool(self.slots) and all(s.pending is not None and now - s.pending_since >= self.opts.stall_s
                                        for s in self.slots)

    def _broadcast_model(self) -> None:
        assert self.model is not None
        for slot in self.slots:
            slot.actor.set_model.remote(self.model[0], self.model[1])

    def _poll_stages(self) -> list[_StageSlot]:
        """Updates the stages' exit codes; restarts a stage whose actor died; returns the stages
        that failed (exit status other than 0 when not asked to stop)."""
        import ray  # lazy: ray is optional and slow to import
        from ray.exceptions import RayActorError  # lazy, as ray
        failed = []
        for st in self.stages:
            if st.exit is not None:
                continue
            if st.poll_ref is None:
                st.poll_ref = st.actor.poll.remote()
            ready, _ = ray.wait([st.poll_ref], timeout=0)
            if not ready:               # an actor still starting (importing torch on a busy node)
                if not st.placed and not st.noticed and time.time() - st.created >= self.opts.notice_s:
                    st.noticed = True
                    self._notice(f"{st.role} stage actor (pinned to the driver's node)",
                                 _request(self.opts.trainer_cpus if st.role == "trainer" else self.opts.gate_cpus,
                                          self.opts.trainer_gpus if st.role == "trainer" else self.opts.gate_gpus,
                                          None), st.created)
                continue
            ref, st.poll_ref = st.poll_ref, None
            try:
                st.exit = ray.get(ref)
                st.placed = True
            except RayActorError:
                if st.stopping:
                    st.exit = -signal.SIGKILL
                    continue
                st.restarts += 1
                self.rd.append_metrics({"source": "ray", "event": "stage_restarted", "stage": st.name,
                                        "restarts": st.restarts})
                self._start_stage(st)
                continue
            if st.exit is not None and st.exit != 0 and not st.stopping:
                failed.append(st)
        return failed

    def _gate_loop(self) -> None:
        """--ray-gate-actors: the gate stage's loop (:func:`train.gating.next_candidate`,
        :func:`train.gating.gate_candidate`) in a driver thread, its games on remote actors."""
        try:
            while not self._gate_stop.is_set():
                candidate, generation = next_candidate(self.rd, self.rd.read_pipeline())
                if candidate is None:
                    self._gate_stop.wait(0.1)
                    continue
                gate_candidate(self.rd, self.cfg, candidate, stop=self._gate_stop.is_set, generation=generation,
                               make_match=lambda c, b, *a, **k: RemoteGateMatch(
                                   c, b, *a, cfg=self.cfg, opts=self.opts,
                                   append_metrics=self.rd.append_metrics, **k))
        except BaseException as exc:          # reported by the supervisor as a failed stage
            self.gate_error = f"{type(exc).__name__}: {exc}"

    def _signal(self, stages: list[_StageSlot], sig: int) -> None:
        for st in stages:
            st.stopping = True
            if st.exit is None:
                st.actor.signal.remote(sig)

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> int:
        import ray  # lazy: ray is optional and slow to import

        started_ray = init_ray(self.opts)
        rd, cfg, budget = self.rd, self.cfg, self.budget
        remote_gate = self.opts.gate_actors > 0
        self.stages = [_StageSlot(s.name, s.role, s.module, s.args)
                       for s in stages_for(cfg, budget, self.selfplay_only)
                       if s.role == "trainer" or (s.role == "gate" and not remote_gate)]
        try:
            self._check_driver_node()
        except ValueError:
            if started_ray:
                ray.shutdown()
            raise
        latest = rd.latest_model()
        start_games, start_step = rd.count_games(), (latest[0] if latest else 0)
        t_start = time.time()
        rd.append_metrics({"source": "loop", "event": "start", "games": start_games, "step": start_step,
                           "budget": str(budget), "pid": os.getpid(), "mode": cfg.mode, "pipeline": cfg.pipeline,
                           "on_new_model": cfg.on_new_model, "selfplay_only": self.selfplay_only,
                           "ray": self.opts.address or "initialised", "ray_nodes": len(ray.nodes()),
                           "ray_resources": ray.cluster_resources()})
        tail = MetricsTail(rd.metrics_path)
        usage = Usage(tail.read())              # earlier sessions' spending counts
        bars = Progress(self.progress, start_games, start_step, budget)
        sync = SyncPipeline(rd, cfg, budget) if cfg.pipeline == "sync" and not self.selfplay_only else None
        if sync is not None:
            sync.begin_generation()
        else:
            rd.write_pipeline(None)
        old_handlers = {}
        if threading.current_thread() is threading.main_thread():
            def on_signal(signum, frame):
                self.interrupted = True
            old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        t0 = time.time()
        status, reason = 0, "done"
        try:
            self._refresh_model()
            for st in self.stages:          # first: they are pinned to the driver's node
                self._start_stage(st)
            self.slots = [_Slot(w, rd.next_game_seq(w)) for w in range(cfg.selfplay_workers)]
            for slot in self.slots:
                self._start_selfplay(slot)
            if remote_gate and cfg.mode == "agz" and not self.selfplay_only:
                self._gate_thread = threading.Thread(target=self._gate_loop, name="ray-gate", daemon=True)
                self._gate_thread.start()
            last_state = last_stage_poll = last_model = 0.0
            failed: list[_StageSlot] = []
            while True:
                phase = rd.read_pipeline() if sync is not None else None
                self._pump_selfplay(phase, self.poll_s)
                records = tail.read()
                bars.update(records)
                now = time.time()
                if now - last_model >= 0.5:
                    last_model = now
                    if self._refresh_model():
                        self._broadcast_model()
                if now - last_state > 10.0:
                    rd.write_state(pid=os.getpid())
                    last_state = now
                    self._node_record()
                if now - last_stage_poll >= 0.5:
                    last_stage_poll = now
                    failed = self._poll_stages()
                trainer = [s for s in self.stages if s.role == "trainer"]
                sp_running = not self._selfplay_done()
                if self.interrupted:
                    reason, status = "interrupted", 130
                    break
                if failed:
                    names = ", ".join(f"{s.name} (exit {s.exit})" for s in failed)
                    reason, status = f"stage failed: {names}; see {rd.logs}", 1
                    break
                if self.gate_error is not None:
                    reason, status = f"gate failed: {self.gate_error}", 1
                    break
                if budget.seconds is not None and now - t0 >= budget.seconds:
                    reason = "time budget spent" + self._waiting_note(now)
                    break
                if self._stalled(now):
                    reason, status = (f"self-play stalled: no self-play actor returned a call for "
                                      f"{self.opts.stall_s:g} s{self._waiting_note(now)}"), 1
                    break
                usage.add(records)
                spent = budget.spent(usage)
                if spent is not None:
                    reason = spent
                    break
                if sync is not None and not sync.update(records, sp_running):
                    reason = "game budget reached"
                    break
                if sync is None and not sp_running:
                    for s in trainer:
                        if not s.stopping:
                            self._signal([s], signal.SIGUSR1)
                    if all(s.exit is not None for s in trainer):
                        reason = "game budget reached"
                        break
                    if self.selfplay_only:
                        break
                if trainer and all(s.exit is not None for s in trainer) and not any(s.stopping for s in trainer):
                    reason = "step budget reached" if budget.steps is not None else "trainer stopped"
                    break
            self._shutdown()
            self._node_record()
            bars.update(tail.read())
        finally:
            for s, h in old_handlers.items():
                signal.signal(s, h)
            bars.close()
            for slot in self.slots:
                if slot.actor is not None:
                    ray.kill(slot.actor)
            for st in self.stages:
                if st.actor is not None:
                    ray.kill(st.actor)
            if started_ray:
                ray.shutdown()
        unstarted = [s.name for s in self.stages if s.exit is None and not s.placed]
        if unstarted:
            reason += f"; never started (no room for them): {', '.join(unstarted)}"
        if status == 0:
            bad = [s for s in self.stages if s.exit not in (0, None) and not (s.stopping and s.exit == -signal.SIGTERM)]
            if bad:
                status = 1
                reason += "; " + ", ".join(f"{s.name} exit {s.exit}" for s in bad)
        state, summary = finish_run(rd, cfg, reason, t0, t_start, self.selfplay_only, sync,
                                    ray=True, lost_games=self.lost_games, replaced_actors=self.replaced,
                                    selfplay_actors=cfg.selfplay_workers, games_per_node=self._named(self.node_games))
        print(f"train.loop[ray]: {reason}. {state['games']} games, step {state['step']}, latest model "
              f"{state['latest_model']}, {self.lost_games} games lost to dead actors ({rd.root})", file=sys.stderr)
        print(format_summary(summary), file=sys.stderr)
        return status

    def _node_record(self) -> None:
        """Where self-play runs: a ``nodes`` metrics record (games written per node, actors per
        node, nodes alive) when it changed."""
        import ray  # lazy: ray is optional and slow to import
        self._node_names = {n.get("NodeID"): n.get("NodeName") or n.get("NodeManagerAddress") for n in ray.nodes()}
        actors: dict[str, int] = {}
        for slot in self.slots:
            if slot.placed and slot.node:
                actors[slot.node] = actors.get(slot.node, 0) + 1
        rec = {"games_per_node": self._named(self.node_games), "actors_per_node": self._named(actors),
               "nodes_alive": len(_alive_nodes())}
        if rec != getattr(self, "_last_nodes", None):
            self._last_nodes = rec
            self.rd.append_metrics({"source": "ray", "event": "nodes", **rec})

    def _named(self, per_node: dict[str, int]) -> dict[str, int]:
        """``per_node`` keyed by node name (``ray start --node-name``, else its IP) and id prefix."""
        names = getattr(self, "_node_names", {})
        return {f"{names.get(k, '?')}:{k[:8]}": v for k, v in sorted(per_node.items())}

    def _waiting_note(self, now: float) -> str:
        """Why self-play is short of actors, for the end-of-run reason ('' when it is not)."""
        import ray  # lazy: ray is optional and slow to import
        waiting = [s for s in self.slots if not s.placed and s.pending is not None
                   and now - s.created >= min(self.opts.notice_s, 5.0)]
        if not waiting:
            return ""
        return (f" ({len(waiting)} of {len(self.slots)} self-play actors waiting for a node with "
                f"{self.opts.selfplay_request()} free; {len(_alive_nodes())} nodes alive, cluster resources "
                f"{ {k: v for k, v in ray.cluster_resources().items() if not k.startswith(('node:', 'memory', 'object_store'))} })")

    def _shutdown(self) -> None:
        """Stops self-play (the calls under way finish and their games are kept; games in
        flight abandoned, final metrics written), then the stages, all within one deadline of
        ``stop_grace_s``: an actor that cannot answer (its node is gone, or it never found one)
        is not waited for."""
        import ray  # lazy: ray is optional and slow to import
        from ray.exceptions import RayActorError, RayTaskError  # lazy, as ray
        deadline = time.time() + self.stop_grace_s
        self._gate_stop.set()

        def gather(calls: list[tuple[Any, Any]], limit: float) -> dict[Any, Any]:
            """{key: result} of the (key, ref) calls that answered by ``limit``."""
            refs = [r for _, r in calls]
            done = set(ray.wait(refs, num_returns=len(refs), timeout=max(0.0, limit - time.time()))[0]) if refs else set()
            out = {}
            for key, ref in calls:
                if ref in done:
                    try:
                        out[key] = ray.get(ref)
                    except (RayActorError, RayTaskError):
                        pass
            return out

        calls = [(s.worker, s.pending) for s in self.slots if s.pending is not None and s.placed]
        results = gather(calls, min(deadline, time.time() + self.opts.slice_s * 5 + 30))
        for slot in self.slots:
            if slot.worker in results:
                self._write(slot, results[slot.worker])
            slot.pending = None
        placed = [s for s in self.slots if s.placed]
        closed = gather([(s.worker, s.actor.close.remote()) for s in placed], min(deadline, time.time() + 30))
        for slot in placed:
            if slot.worker in closed:
                self._metrics(slot, closed[slot.worker])
        if self._gate_thread is not None:
            self._gate_thread.join(timeout=max(0.0, min(deadline, time.time() + self.opts.slice_s * 5 + 30) - time.time()))
        for st in self.stages:
            if st.exit is None and not st.placed:      # never found a node: nothing to stop
                st.stopping = True
                ray.kill(st.actor)
        live = [s for s in self.stages if s.exit is None and s.placed]
        self._signal([s for s in live if not s.stopping or s.exit is None], signal.SIGTERM)
        exits = gather([(st.name, st.actor.wait.remote(max(0.1, deadline - time.time() - 5)))
                        for st in live], deadline)
        for st in live:
            st.exit = exits.get(st.name, -signal.SIGKILL)


def supervise_ray(rd: RunDir, cfg: RunConfig, budget: Budget, opts: RayOptions, progress: bool = True,
                  selfplay_only: bool = False) -> int:
    """:func:`train.loop.supervise` on a Ray cluster; returns the exit status.  ValueError when
    Ray is not installed."""
    if not ray_available():
        raise ValueError("--ray needs Ray: pip install 'ray>=2.9' (or pip install -e .[cluster])")
    return RaySupervisor(rd, cfg, budget, opts, progress, selfplay_only).run()
