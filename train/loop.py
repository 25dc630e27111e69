"""``python -m train.loop``: self-play and training together, as separate processes that share
a run directory (layout: :mod:`train.rundir`).

    python -m train.loop --run-dir runs/9x9 --board-size 9 --mode az --budget 2h
    python -m train.loop --run-dir runs/9x9 --resume --budget 500g     # after a crash or kill -9
    python -m train.report runs/9x9                                    # table + plots

The loop is a supervisor: it creates the run directory and the first (random) network, starts
the stage processes, draws progress bars from their metrics records, enforces the budget and
stops everything cleanly.  Stages are independent programs (``python -m train.selfplay``,
``python -m train.trainer``) that only read and write the run directory, so each can be killed
at any moment; the kernel kills them when the loop dies (``PR_SET_PDEATHSIG``) and ``--resume``
continues from the files on disk, losing at most the games in flight.

Budgets (``--budget``, comma-separated, the first reached ends the run): ``90s``, ``20m``,
``2h``, ``1d`` of wall time for this invocation; ``500g``: the run holds 500 games (self-play
finishes its games in flight and starts no more, then the trainer does the steps those games
paid for); ``1000steps``: the trainer reaches step 1000.

Modes are lists of stages (:func:`stages_for`): ``az`` = self-play worker(s) + trainer.  Gating
(``agz``) and pipelines (sync/async) add or sequence stages without changing the others.
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
    role: str                     # "selfplay" | "trainer" (later "gate")
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


def stages_for(cfg: RunConfig, budget: Budget) -> list[Stage]:
    """The processes of a mode.  ``az``: ``selfplay_workers`` self-play workers and a trainer."""
    if cfg.mode != "az":
        raise ValueError(f"mode {cfg.mode!r} is not implemented yet")
    out = []
    for w in range(cfg.selfplay_workers):
        args = ["--worker", str(w)]
        if budget.games is not None:
            args += ["--max-games", str(budget.games)]
        out.append(Stage(f"selfplay-w{w:02d}", "selfplay", "train.selfplay", args))
    args = ["--max-steps", str(budget.steps)] if budget.steps is not None else []
    out.append(Stage("trainer", "trainer", "train.trainer", args))
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
    if rd.latest_model() is None:
        from engine import weights
        from engine.network import NetConfig
        net = weights.new_model(NetConfig(blocks=cfg.blocks, filters=cfg.filters, feature_set=cfg.feature_set),
                                seed=cfg.seed)
        weights.save(rd.model_path(0), net, {"step": 0, "parent": None, "board_sizes": [cfg.board_size]})
    return cfg


def resolve_config(args: argparse.Namespace, explicit: argparse.Namespace, rd: RunDir) -> RunConfig:
    """New run: the options.  Resume: the saved config, with options given explicitly on this
    command line overriding it (except those in FROZEN_ON_RESUME, which must match)."""
    if not args.resume:
        return from_namespace(args).check()
    saved = RunConfig.from_dict(rd.read_config())
    cfg = from_namespace(explicit, base=saved).check()
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
              poll_s: float = 0.5, stop_grace_s: float = 120.0) -> int:
    """Runs the stages until the budget is spent, a stage fails or the user interrupts.
    Returns the exit status (0: clean end)."""
    stages = stages_for(cfg, budget)
    latest = rd.latest_model()
    start_games, start_step = rd.count_games(), (latest[0] if latest else 0)
    rd.append_metrics({"source": "loop", "event": "start", "games": start_games, "step": start_step,
                       "budget": str(budget), "pid": os.getpid()})
    tail = MetricsTail(rd.metrics_path)
    tail.read()                                    # progress starts from now
    bars = Progress(progress, start_games, start_step, budget)
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
            bars.update(tail.read())
            now = time.time()
            if now - last_state > 10.0:
                rd.write_state(pid=os.getpid())
                last_state = now
            selfplay = [s for s in stages if s.role == "selfplay"]
            trainer = [s for s in stages if s.role == "trainer"]
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
            if not any(s.running for s in selfplay):
                # Self-play finished its game budget: the trainer does the steps it is owed.
                for s in trainer:
                    if not s.stopping:
                        s.stopping = True
                        s.signal(signal.SIGUSR1)
                if not any(s.running for s in trainer):
                    reason = "game budget reached"
                    break
            if not any(s.running for s in trainer):
                reason = "step budget reached" if budget.steps is not None else "trainer stopped"
                _stop(selfplay, signal.SIGTERM)
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
        bad = [s for s in stages if s.proc is not None and s.proc.returncode not in (0,)]
        if bad:
            status = 1
            reason += "; " + ", ".join(f"{s.name} exit {s.proc.returncode}" for s in bad)  # type: ignore[union-attr]
    state = rd.write_state(pid=None, last_exit=reason)
    rd.append_metrics({"source": "loop", "event": "stop", "reason": reason, "games": state["games"],
                       "step": state["step"], "seconds": round(time.time() - t0, 1)})
    print(f"train.loop: {reason}. {state['games']} games, step {state['step']}, latest model "
          f"{state['latest_model']} ({rd.root})", file=sys.stderr)
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
    add_arguments(ap, suppress_defaults=suppress_defaults)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    explicit = build_parser(suppress_defaults=True).parse_args(argv)
    rd = RunDir(args.run_dir)
    try:
        budget = Budget.parse(args.budget)
        cfg = resolve_config(args, explicit, rd)
        rd.root.mkdir(parents=True, exist_ok=True)
        lock = acquire_lock(rd)
        try:
            prepare_run(rd, cfg, args.resume)
            return supervise(rd, cfg, budget, progress=not args.quiet)
        finally:
            lock.close()
    except (ValueError, FileNotFoundError) as exc:
        print(f"train.loop: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
