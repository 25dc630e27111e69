"""The pieces of a run's supervisor shared by the local one (:func:`train.loop.supervise`) and
the Ray one (:class:`train.cluster.driver.RaySupervisor`): budgets, stage processes, the sync
pipeline's generations, progress bars, and the end-of-run bookkeeping.  Both supervisors depend
on this module and not on each other."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from train.config import RunConfig
from train.report import run_summary
from train.rundir import RunDir
from train.usage import Usage

REPO_ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------
# Budgets


@dataclass
class Budget:
    """When a run ends: the first of its limits reached.  ``flops`` and ``cpu_hours`` count the
    run's whole spending (:class:`train.usage.Usage`: every stage process, every session), so a
    resumed run continues its count; ``seconds`` is this session's wall time."""

    seconds: float | None = None
    games: int | None = None
    steps: int | None = None
    flops: float | None = None
    cpu_hours: float | None = None

    @classmethod
    def parse(cls, text: str | None) -> "Budget":
        """``"2h"``, ``"500g"``, ``"1000steps"``, ``"2.5e12flops"``, ``"0.5cpuh"``,
        ``"20m,500g"``...; ValueError if malformed."""
        b = cls()
        units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
        for part in filter(None, (p.strip().lower() for p in (text or "").split(","))):
            m = re.fullmatch(r"(\d+(?:\.\d+)?(?:e\+?\d+)?)\s*(steps|step|s|m|h|d|g|games|flops|flop|cpuh)", part)
            if not m:
                raise ValueError(f"bad budget {part!r}: use e.g. 90s, 20m, 2h, 500g, 1000steps, "
                                 f"2.5e12flops, 0.5cpuh")
            value, unit = float(m.group(1)), m.group(2)
            if unit in units:
                b.seconds = value * units[unit]
            elif unit in ("g", "games"):
                b.games = int(value)
            elif unit in ("flops", "flop"):
                b.flops = value
            elif unit == "cpuh":
                b.cpu_hours = value
            else:
                b.steps = int(value)
        return b

    def spent(self, usage: Usage) -> str | None:
        """Why the run's spending ends it now, or None."""
        if self.flops is not None and usage.flops >= self.flops:
            return f"compute budget spent ({usage.flops:.3g} of {self.flops:.3g} FLOPs)"
        if self.cpu_hours is not None and usage.cpu_hours >= self.cpu_hours:
            return f"CPU budget spent ({usage.cpu_hours:.3f} of {self.cpu_hours:g} CPU-hours)"
        return None

    def __str__(self) -> str:
        parts = []
        if self.seconds is not None:
            parts.append(f"{self.seconds:g}s")
        if self.games is not None:
            parts.append(f"{self.games} games")
        if self.steps is not None:
            parts.append(f"{self.steps} steps")
        if self.flops is not None:
            parts.append(f"{self.flops:.4g} FLOPs")
        if self.cpu_hours is not None:
            parts.append(f"{self.cpu_hours:g} CPU-hours")
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


# ---------------------------------------------------------------------------------------------
# Supervising


class Progress:
    """tqdm bars for games and training steps, fed by metrics records."""

    def __init__(self, enabled: bool, games: int, step: int, budget: Budget):
        self.enabled = enabled
        self.latest: dict[str, dict[str, Any]] = {}
        if not enabled:
            return
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
                f"{sp.get('evals_per_s', 0):.0f} evals/s, resign {_fmt(sp.get('resign_winrate'))}"
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


def finish_run(rd: RunDir, cfg: RunConfig, reason: str, t0: float, t_start: float, selfplay_only: bool,
               sync: SyncPipeline | None = None, **extra: Any) -> tuple[dict, dict]:
    """End-of-run bookkeeping shared by the local and the Ray supervisor: closes the sync
    pipeline file, writes the state and the ``stop`` and ``summary`` metrics records (``extra``
    goes into the summary); returns (state, summary)."""
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
