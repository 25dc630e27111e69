"""``python -m train.loop``: self-play and training together, as separate processes that share
a run directory (layout: :mod:`train.rundir`).

    python -m train.loop --run-dir runs/9x9 --board-size 9 --mode az --budget 2h
    python -m train.loop --run-dir runs/9x9 --resume --budget 500g     # after a crash or kill -9
    python -m train.report runs/9x9                                    # table + plots
    python -m train.loop --run-dir runs/9x9 --ray auto --selfplay-workers 32 --ray-trainer-gpus 1
                     # the same stages as Ray actors on many machines (train/cluster/driver.py)

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
import dataclasses
import os
import signal
import subprocess
import sys
import time
from typing import IO

import train.config
from engine.fileio import try_hold
from engine.nets import weights
from train.config import RunConfig, add_arguments, from_namespace
from train.cluster.driver import add_ray_arguments, options_from_namespace, supervise_ray
from train.report import format_summary
from train.rundir import MetricsTail, RunDir, repair_metrics
from train.supervisor import Budget, Progress, Stage, SyncPipeline, finish_run, stages_for
from train.usage import Usage

# Settings that define the network or the game and cannot change when a run resumes.
FROZEN_ON_RESUME = ("board_size", "blocks", "filters", "feature_set", "mode")   # options (config.json keys)


# ---------------------------------------------------------------------------------------------
# Setting up the run directory


def prepare_run(rd: RunDir, cfg: RunConfig, resume: bool) -> RunConfig:
    """Creates (or checks, on resume) the run directory and the first model; returns the
    config in force.  Raises ValueError for a run that exists without --resume and the like."""
    if rd.exists() and not resume:
        raise ValueError(f"{rd.root} already holds a run: add --resume to continue it")
    if resume and not rd.exists():
        raise ValueError(f"{rd.root} holds no run to resume")
    init = None
    if cfg.init_weights and not resume:
        init = weights.load(cfg.init_weights)             # WeightsError names the file
        cfg = _inherit_lineage(cfg, init[1])
    rd.create()
    rd.remove_stale_temps()
    repair_metrics(rd.metrics_path)
    rd.write_config(cfg.to_dict())
    if rd.latest_model() is not None:
        # The newest checkpoint that loads; corrupt ones are renamed *.corrupt (and logged).
        rd.latest_valid_model(weights.load, _log_corrupt(rd))
    if resume and rd.latest_model() is None and any(rd.models.glob("model-*.pt.corrupt*")):
        raise ValueError(f"{rd.models}: no checkpoint loads (the corrupt ones are renamed *.corrupt; "
                         f"remove them to start again from a new network)")
    if rd.latest_model() is None:
        if cfg.init_weights:
            net, meta = init or weights.load(cfg.init_weights)
            parent = f"{cfg.init_weights} (step {meta.get('step', 0)})"
        else:
            net = weights.new_model(cfg.net, seed=cfg.seed)
            parent = None
        weights.save(rd.model_path(0), net, {"step": 0, "parent": parent, "board_sizes": [cfg.board_size]})
    if cfg.mode == "agz" and not rd.best_path.is_file():
        rd.set_best(rd.list_models()[0][0])
    return cfg


def _inherit_lineage(cfg: RunConfig, meta: dict) -> RunConfig:
    """--init-cpu-hours / --init-games default to what the init network's file records
    (``cpu_hours`` and ``games`` of its whole lineage), so a run continued from a shipped net
    reports the cost of the nets it makes from zero."""
    changes = {}
    for key, name in (("cpu_hours", "init_cpu_hours"), ("games", "init_games")):
        value = meta.get(key)
        if not getattr(cfg, name) and isinstance(value, (int, float)) and value > 0:
            changes[name] = type(getattr(cfg, name))(value)
    return dataclasses.replace(cfg, **changes) if changes else cfg


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
    now, before = cfg.to_dict(), saved.to_dict()
    for name in FROZEN_ON_RESUME:
        if now[name] != before[name]:
            raise ValueError(f"--{name.replace('_', '-')} cannot change when resuming "
                             f"(run has {before[name]!r})")
    return cfg


def acquire_lock(rd: RunDir) -> IO[str]:
    """An exclusive flock on RUN_DIR/lock, held while the loop runs (released by the kernel
    even on kill -9).  Raises ValueError if another loop holds it."""
    held = try_hold(rd.lock_path)
    if held is None:
        raise ValueError(f"another train.loop is running on {rd.root}")
    return held


def supervise(rd: RunDir, cfg: RunConfig, budget: Budget, progress: bool = True,
              poll_s: float = 0.5, stop_grace_s: float = 120.0, selfplay_only: bool = False) -> int:
    """Runs the stages until the budget is spent, a stage fails or the user interrupts.
    Returns the exit status (0: clean end)."""
    stages = stages_for(cfg, budget, selfplay_only)
    latest = rd.latest_model()
    start_games, start_step = rd.count_games(), (latest[0] if latest else 0)
    t_start = time.time()
    rd.append_metrics({"source": "loop", "event": "start", "games": start_games, "step": start_step,
                       "budget": str(budget), "pid": os.getpid(), "mode": cfg.mode, "pipeline": cfg.pipeline,
                       "on_new_model": cfg.on_new_model, "selfplay_only": selfplay_only})
    tail = MetricsTail(rd.metrics_path)
    usage = Usage(tail.read())                     # earlier sessions' spending counts; progress starts from now
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
            usage.add(records)
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
            spent = budget.spent(usage)
            if spent is not None:
                reason = spent
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
    return (train.config.__doc__ or "").split("\n", 2)[-1]


def build_parser(suppress_defaults: bool = False) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m train.loop",
        description="Trains Go networks by self-play: AlphaZero, or AlphaGo Zero with gating, on one machine or "
                    "a Ray cluster.\n\n" + __doc__.split("Modes are lists")[0] + "Settings are saved in RUN_DIR/config.json; "
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
            if args.ray:                  # the same stages as Ray actors: train/cluster/driver.py
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
