"""``python -m train.loop``: self-play and training together, as separate processes that share
a run directory (layout: :mod:`train.rundir`).

    python -m train.loop --run-dir runs/9x9 --board-size 9 --mode az --budget 2h
    python -m train.loop --run-dir runs/9x9 --resume --budget 500g     # after a crash or kill -9
    python -m train.report runs/9x9                                    # table + plots
    python -m train.loop --run-dir runs/9x9 --ray auto --selfplay-workers 32 --ray-trainer-gpus 1
                     # the same stages as Ray actors on many machines (train/ray_cluster.py)

The loop is a supervisor: it creates the run directory and the first (random) network, starts
the stage processes, draws progress bars from their metrics records, enforces the budget and
stops everything cleanly.  Stages are independent programs (``python -m train.selfplay``,
``python -m train.trainer``) that only read and write the run directory, so each can be killed
at any moment; the kernel kills them when the loop dies (``PR_SET_PDEATHSIG``) and ``--resume``
continues from the files on disk, losing at most the games in flight.

Budgets (``--budget``, comma-separated, the first reached ends the run): ``90s``, ``20m``,
``2h``, ``1d`` of wall time for this invocation; ``500g``: the run holds 500 games (self-play
finishes its games in flight and starts no more, then the trainer does the steps those games
paid for, then in ``agz`` mode the gate decides on the last checkpoint); ``1000steps``: the
trainer reaches step 1000.  Games and steps budgets end a run at the same point whatever the
machine's speed (tests use them); a time budget does not.

Modes are lists of stages (:func:`stages_for`): ``az`` = self-play worker(s) + trainer; ``agz``
adds the gating stage (``python -m train.gating``), and self-play plays the current best
(``models/best.json``) instead of the latest checkpoint.  ``--selfplay-only`` runs self-play
alone (a baseline for throughput measurements).

Pipelines: ``async`` (default): every stage works all the time on its share of the machine.
``sync``: the loop drives generations through RUN_DIR/pipeline.json (:class:`SyncPipeline`):
self-play until the run holds ``generation_games`` more games, then the trainer does the steps
those games paid for and writes a checkpoint, then (agz) the gate decides on it, then the next
generation; the idle stages wait (self-play's games in flight stay paused, and what happens to
them when the model changes is ``--on-new-model``).

Every invocation ends with a summary record in the metrics (:func:`train.report.run_summary`):
self-play games and positions kept per hour, network evaluations thrown away, gating games,
promotions, evaluation lag, and the time self-play spent waiting.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from train.config import RunConfig, add_arguments, from_namespace
from train.rundir import MetricsTail, RunDir, repair_metrics

REPO_ROOT = Path(__file__).resolve().parents[1]
# Settings that define the network or the game and cannot change when a run resumes.
FROZEN_ON_RESUME = ("board_size", "blocks", "filters", "feature_set", "mode")


# ---------------------------------------------------------------------------------------------
# Budgets


@dataclass
class Budget:
    seconds: float | None = None
    games: int | None = None
    steps: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> "Budget":
        """``"2h"``, ``"500g"``, ``"1000steps"``, ``"20m,500g"``...; ValueError if malformed."""
        b = cls()
        units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
        for part in filter(None, (p.strip().lower() for p in (text or "").split(","))):
            m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(steps|step|s|m|h|d|g|games)", part)
            if not m:
                raise ValueError(f"bad budget {part!r}: use e.g. 90s, 20m, 2h, 500g, 1000steps")
            value, unit = float(m.group(1)), m.group(2)
            if unit in units:
                b.seconds = value * units[unit]
            elif unit in ("g", "games"):
                b.games = int(value)
            else:
                b.steps = int(value)
        return b

    def __str__(self) -> str:
        parts = []
        if self.seconds is not None:
            parts.append(f"{self.seconds:g}s")
        if self.games is not None:
            parts.append(f"{self.games} games")
        if self.steps is not None:
            parts.append(f"{self.steps} steps")
        return ", ".join(parts) or "none"


# ---------------------------------------------------------------------------------------------
# Stages


@dataclass
class Stage:
    """A stage process: a module run with ``python -m`` on the run directory."""

    name: str                     # also its log file name
    role: str                     # "selfplay" | "trainer" | "gate"
    module: str
    args: list[str] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    log: IO[bytes] | None = None
    stopping: bool = False

    def start(self, rd: RunDir) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.log = open(rd.log_path(self.name), "ab")
        self.log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} start {self.module} {' '.join(self.args)}\n".encode())
        self.log.flush()
        cmd = [sys.executable, "-m", self.module, "--run-dir", str(rd.root), "--parent-pid", str(os.getpid()),
               *self.args]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.proc is not None
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None


def stages_for(cfg: RunConfig, budget: Budget, selfplay_only: bool = False) -> list[Stage]:
    """The processes of a mode.  ``az``: ``selfplay_workers`` self-play workers and a trainer;
    ``agz``: and the gate; ``selfplay_only``: the self-play workers alone."""
    if cfg.mode not in ("az", "agz"):
        raise ValueError(f"unknown mode {cfg.mode!r}")
    out = []
    for w in range(cfg.selfplay_workers):
        args = ["--worker", str(w)]
        if budget.games is not None:
            args += ["--max-games", str(budget.games)]
        out.append(Stage(f"selfplay-w{w:02d}", "selfplay", "train.selfplay", args))
    if selfplay_only:
        return out
    args = ["--max-steps", str(budget.steps)] if budget.steps is not None else []
    out.append(Stage("trainer", "trainer", "train.trainer", args))
    if cfg.mode == "agz":
        out.append(Stage("gate", "gate", "train.gating"))
    return out


# ---------------------------------------------------------------------------------------------
# Setting up the run directory


def prepare_run(rd: RunDir, cfg: RunConfig, resume: bool) -> RunConfig:
    """Creates (or checks, on resume) the run directory and the first model; returns the
    config in force.  Raises ValueError for a run that exists without --resume and the like."""
    if rd.exists() and not resume:
        raise ValueError(f"{rd.root} already holds a run: add --resume to continue it")
    if resume and not rd.exists():
        raise ValueError(f"{rd.root} holds no run to resume")
    rd.create()
    rd.remove_stale_temps()
    repair_metrics(rd.metrics_path)
    rd.write_config(cfg.to_dict())
    if rd.latest_model() is not None:
        # The newest checkpoint that loads; corrupt ones are renamed *.corrupt (and logged).
        from engine import weights
        rd.latest_valid_model(weights.load, _log_corrupt(rd))
    if resume and rd.latest_model() is None and any(rd.models.glob("model-*.pt.corrupt*")):
        raise ValueError(f"{rd.models}: no checkpoint loads (the corrupt ones are renamed *.corrupt; "
                         f"remove them to start again from a new network)")
    if rd.latest_model() is None:
        from engine import weights
        from engine.network import NetConfig
        if cfg.init_weights:
            net, meta = weights.load(cfg.init_weights)    # WeightsError names the file
            parent = f"{cfg.init_weights} (step {meta.get('step', 0)})"
        else:
            net = weights.new_model(NetConfig(blocks=cfg.blocks, filters=cfg.filters,
                                              feature_set=cfg.feature_set), seed=cfg.seed)
            parent = None
        weights.save(rd.model_path(0), net, {"step": 0, "parent": parent, "board_sizes": [cfg.board_size]})
    if cfg.mode == "agz" and not rd.best_path.is_file():
        rd.set_best(rd.list_models()[0][0])
    return cfg


# ---------------------------------------------------------------------------------------------
# The sync pipeline


class SyncPipeline:
    """Drives the sync pipeline's generations by writing RUN_DIR/pipeline.json (see the module
    docstring).  ``update`` is called by the supervisor with the new metrics records; it returns
    False once the game budget leaves nothing to play."""

    def __init__(self, rd: RunDir, cfg: RunConfig, budget: Budget):
        self.rd, self.cfg, self.budget = rd, cfg, budget
        previous = [r.get("generation") for r in rd.read_metrics("loop") if r.get("event") == "phase"]
        self.generation = max([g for g in previous if isinstance(g, int)], default=0)
        self.phase: dict[str, Any] = {}
        self.since = time.time()
        self.done = False

    def _set(self, phase: dict[str, Any]) -> None:
        now = time.time()
        if self.phase:
            self.rd.append_metrics({"source": "loop", "event": "phase", **self.phase,
                                    "seconds": round(now - self.since, 3)})
        self.phase, self.since = phase, now
        self.rd.write_pipeline(phase)

    def begin_generation(self) -> bool:
        games = self.rd.count_games()
        if self.budget.games is not None and games >= self.budget.games:
            self.done = True
            return False
        self.generation += 1
        until = games + self.cfg.games_per_generation()
        if self.budget.games is not None:
            until = min(until, self.budget.games)
        self._set({"phase": "selfplay", "generation": self.generation, "until_games": until})
        return True

    def update(self, records: list[dict[str, Any]], selfplay_running: bool) -> bool:
        ph = self.phase.get("phase")
        if ph == "selfplay":
            if self.rd.count_games() >= self.phase["until_games"] or not selfplay_running:
                self._set({"phase": "train", "generation": self.generation})
        elif ph == "train":
            for r in records:
                if (r.get("source") == "trainer" and r.get("event") == "phase_done"
                        and r.get("generation") == self.generation):
                    if r.get("checkpoint") is not None and self.cfg.mode == "agz":
                        self._set({"phase": "gate", "generation": self.generation,
                                   "candidate": int(r["checkpoint"])})
                    else:
                        return self.begin_generation()
                    break
        elif ph == "gate":
            cand = self.rd.model_id(self.rd.model_path(self.phase["candidate"]))
            if self.rd.read_decision(cand) is not None:
                return self.begin_generation()
        return not self.done

    def close(self) -> None:
        if self.phase:
            self._set({"phase": "stopped", "generation": self.generation})


def _log_corrupt(rd: RunDir):
    def log(text: str) -> None:
        print(f"train.loop: {text}", file=sys.stderr, flush=True)
        rd.append_metrics({"source": "loop", "event": "corrupt_file", "message": text})
    return log


def resolve_config(args: argparse.Namespace, explicit: argparse.Namespace, rd: RunDir) -> RunConfig:
    """New run: the options.  Resume: the saved config, with options given explicitly on this
    command line overriding it (except those in FROZEN_ON_RESUME, which must match)."""
    if not args.resume:
        return from_namespace(args).check()
    if not rd.exists():
        raise ValueError(f"{rd.root} holds no run to resume")
    try:
        saved = RunConfig.from_dict(rd.read_config())
        cfg = from_namespace(explicit, base=saved).check()
    except TypeError as exc:                  # a value of the wrong type in config.json
        raise ValueError(f"{rd.config_path}: corrupt run config ({exc})") from None
    for name in FROZEN_ON_RESUME:
        if getattr(cfg, name) != getattr(saved, name):
            raise ValueError(f"--{name.replace('_', '-')} cannot change when resuming "
                             f"(run has {getattr(saved, name)!r})")
    return cfg


def acquire_lock(rd: RunDir) -> IO[str]:
    """An exclusive flock on RUN_DIR/lock, held while the loop runs (released by the kernel
    even on kill -9).  Raises ValueError if another loop holds it."""
    f = open(rd.lock_path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise ValueError(f"another train.loop is running on {rd.root}")
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


# ---------------------------------------------------------------------------------------------
# Supervising


class Progress:
    """tqdm bars for games and training steps, fed by metrics records."""

    def __init__(self, enabled: bool, games: int, step: int, budget: Budget):
        self.enabled = enabled
        self.latest: dict[str, dict[str, Any]] = {}
        if not enabled:
            return
        from tqdm import tqdm
        self.games = tqdm(total=budget.games, initial=games, desc="self-play games", unit="game",
                          position=0, dynamic_ncols=True, mininterval=1.0)
        self.steps = tqdm(total=budget.steps, initial=step, desc="train steps     ", unit="step",
                          position=1, dynamic_ncols=True, mininterval=1.0)

    def update(self, records: list[dict[str, Any]]) -> None:
        for r in records:
            src = r.get("source")
            if src:
                self.latest[src] = r
        if not self.enabled or not records:
            return
        sp, tr = self.latest.get("selfplay"), self.latest.get("trainer")
        if sp:
            self.games.n = max(self.games.n, int(sp.get("games", 0)))
            self.games.set_postfix_str(
                f"{sp.get('session_games_per_hour', 0):.0f} games/h, {sp.get('positions_per_s', 0):.1f} pos/s, "
                f"{sp.get('evals_per_s', 0):.0f} evals/s, resign {_fmt(sp.get('resign_threshold'))}"
                f" fp {_fmt(sp.get('resign_fp_rate'))}", refresh=False)
            self.games.refresh()
        if tr:
            self.steps.n = max(self.steps.n, int(tr.get("step", 0)))
            self.steps.set_postfix_str(
                f"loss {_fmt(tr.get('loss'))} (p {_fmt(tr.get('policy'))} v {_fmt(tr.get('value'))}), "
                f"lr {tr.get('lr', 0):.3g}, {tr.get('samples_per_s', 0):.0f} samples/s", refresh=False)
            self.steps.refresh()

    def close(self) -> None:
        if self.enabled:
            self.games.close()
            self.steps.close()


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def supervise(rd: RunDir, cfg: RunConfig, budget: Budget, progress: bool = True,
              poll_s: float = 0.5, stop_grace_s: float = 120.0, selfplay_only: bool = False) -> int:
    """Runs the stages until the budget is spent, a stage fails or the user interrupts.
    Returns the exit status (0: clean end)."""
    from train.report import format_summary

    stages = stages_for(cfg, budget, selfplay_only)
    latest = rd.latest_model()
    start_games, start_step = rd.count_games(), (latest[0] if latest else 0)
    t_start = time.time()
    rd.append_metrics({"source": "loop", "event": "start", "games": start_games, "step": start_step,
                       "budget": str(budget), "pid": os.getpid(), "mode": cfg.mode, "pipeline": cfg.pipeline,
                       "on_new_model": cfg.on_new_model, "selfplay_only": selfplay_only})
    tail = MetricsTail(rd.metrics_path)
    tail.read()                                    # progress starts from now
    bars = Progress(progress, start_games, start_step, budget)
    sync = SyncPipeline(rd, cfg, budget) if cfg.pipeline == "sync" and not selfplay_only else None
    if sync is not None:
        sync.begin_generation()
        poll_s = min(poll_s, 0.1)                  # phase changes are waiting time for everybody
    else:
        rd.write_pipeline(None)
    t0 = time.time()
    status = 0
    reason = "done"
    interrupted = False

    def on_signal(signum, frame):
        nonlocal interrupted
        interrupted = True

    old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for st in stages:
            st.start(rd)
        last_state = 0.0
        while True:
            time.sleep(poll_s)
            records = tail.read()
            bars.update(records)
            now = time.time()
            if now - last_state > 10.0:
                rd.write_state(pid=os.getpid())
                last_state = now
            selfplay = [s for s in stages if s.role == "selfplay"]
            trainer = [s for s in stages if s.role == "trainer"]
            gate = [s for s in stages if s.role == "gate"]
            failed = [s for s in stages if not s.running and s.proc is not None and s.proc.returncode not in (0, None)
                      and not s.stopping]
            if interrupted:
                reason, status = "interrupted", 130
                _stop(stages, signal.SIGTERM)
                break
            if failed:
                names = ", ".join(f"{s.name} (exit {s.proc.returncode})" for s in failed)  # type: ignore[union-attr]
                reason, status = f"stage failed: {names}; see {rd.logs}", 1
                _stop(stages, signal.SIGTERM)
                break
            if budget.seconds is not None and now - t0 >= budget.seconds:
                reason = "time budget spent"
                _stop(stages, signal.SIGTERM)
                break
            if sync is not None and not sync.update(records, any(s.running for s in selfplay)):
                reason = "game budget reached"
                _stop(stages, signal.SIGTERM)
                break
            if sync is None and not any(s.running for s in selfplay):
                # Self-play finished its game budget: the trainer does the steps it is owed,
                # then (agz) the gate decides on the last checkpoint (SIGUSR1: it exits once
                # nothing is left to gate).  The sync pipeline does that itself: a last train
                # phase, then gating.
                for s in trainer:
                    if not s.stopping:
                        s.stopping = True
                        s.signal(signal.SIGUSR1)
                if not any(s.running for s in trainer):
                    for s in gate:
                        if not s.stopping:
                            s.stopping = True
                            s.signal(signal.SIGUSR1)
                    if not any(s.running for s in gate):
                        reason = "game budget reached"
                        break
            if trainer and not any(s.running for s in trainer) and not any(s.stopping for s in trainer):
                reason = "step budget reached" if budget.steps is not None else "trainer stopped"
                _stop(selfplay + gate, signal.SIGTERM)
                break
        _wait(stages, stop_grace_s)
        bars.update(tail.read())
    finally:
        for s, h in old_handlers.items():
            signal.signal(s, h)
        for st in stages:
            if st.running:
                st.signal(signal.SIGKILL)
            st.close()
        bars.close()
    if status == 0:
        # A stage asked to stop may be caught by the signal while its interpreter shuts down
        # (after its own clean exit path): that is a clean end too.
        bad = [s for s in stages if s.proc is not None and s.proc.returncode != 0
               and not (s.stopping and s.proc.returncode == -signal.SIGTERM)]
        if bad:
            status = 1
            reason += "; " + ", ".join(f"{s.name} exit {s.proc.returncode}" for s in bad)  # type: ignore[union-attr]
    state, summary = finish_run(rd, cfg, reason, t0, t_start, selfplay_only, sync)
    print(f"train.loop: {reason}. {state['games']} games, step {state['step']}, latest model "
          f"{state['latest_model']} ({rd.root})", file=sys.stderr)
    print(format_summary(summary), file=sys.stderr)
    return status


def finish_run(rd: RunDir, cfg, reason: str, t0: float, t_start: float, selfplay_only: bool,
               sync=None, **extra) -> tuple[dict, dict]:
    """End-of-run bookkeeping shared by the local and the Ray supervisor: closes the sync
    pipeline file, writes the state and the ``stop`` and ``summary`` metrics records (``extra``
    goes into the summary); returns (state, summary)."""
    from train.report import run_summary

    if sync is not None:
        sync.close()
    state = rd.write_state(pid=None, last_exit=reason)
    rd.append_metrics({"source": "loop", "event": "stop", "reason": reason, "games": state["games"],
                       "step": state["step"], "seconds": round(time.time() - t0, 1)})
    best = rd.best_model() if cfg.mode == "agz" else rd.latest_model()
    summary = run_summary([r for r in rd.read_metrics() if r.get("time", 0) >= t_start - 1e-3],
                          final_model=best[1].name if best else None, mode=cfg.mode, pipeline=cfg.pipeline,
                          on_new_model=cfg.on_new_model, selfplay_only=selfplay_only)
    summary.update(extra)
    rd.append_metrics({"source": "loop", "event": "summary", **summary})
    return state, summary


def _stop(stages: list[Stage], sig: int) -> None:
    for s in stages:
        s.stopping = True
        s.signal(sig)


def _wait(stages: list[Stage], grace_s: float) -> None:
    deadline = time.time() + grace_s
    for s in stages:
        if s.proc is None:
            continue
        try:
            s.proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            s.signal(signal.SIGKILL)
            s.proc.wait()


# ---------------------------------------------------------------------------------------------
# Command line


def _config_doc() -> str:
    import train.config
    return (train.config.__doc__ or "").split("\n", 2)[-1]


def build_parser(suppress_defaults: bool = False) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m train.loop",
        description=__doc__.split("Modes are lists")[0] + "Settings are saved in RUN_DIR/config.json; "
                    "with --resume the saved ones apply unless given again.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_config_doc() + "\nFiles: see train/rundir.py. Report: python -m train.report RUN_DIR.")
    ap.add_argument("--run-dir", required=True, help="the run directory (created if new)")
    ap.add_argument("--resume", action="store_true", help="continue the run in --run-dir from its files")
    ap.add_argument("--budget", default=None,
                    help="when to stop, comma-separated, first reached wins: 90s, 20m, 2h, 1d (time of this "
                         "invocation), 500g (games in the run), 1000steps (training step)")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    ap.add_argument("--selfplay-only", action="store_true",
                    help="run the self-play stage alone (no trainer, no gate): a throughput baseline")
    add_arguments(ap, suppress_defaults=suppress_defaults)
    from train.ray_cluster import add_ray_arguments
    add_ray_arguments(ap)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    explicit = build_parser(suppress_defaults=True).parse_args(argv)
    rd = RunDir(args.run_dir)
    try:
        budget = Budget.parse(args.budget)
        cfg = resolve_config(args, explicit, rd)
        rd.make_root()                    # ValueError: a file in the way, not writable
        lock = acquire_lock(rd)
        try:
            prepare_run(rd, cfg, args.resume)
            if args.ray:                  # the same stages as Ray actors: train/ray_cluster.py
                from train.ray_cluster import options_from_namespace, supervise_ray
                return supervise_ray(rd, cfg, budget, options_from_namespace(args), progress=not args.quiet,
                                     selfplay_only=args.selfplay_only)
            return supervise(rd, cfg, budget, progress=not args.quiet, selfplay_only=args.selfplay_only)
        finally:
            lock.close()
    except (ValueError, OSError) as exc:
        print(f"train.loop: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
