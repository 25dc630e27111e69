"""``python -m tools.experiments strength``: which training design buys the most strength for the
same computation?

    python -m tools.experiments strength --exp-dir runs/strength --board-size 7 --cpu-hours 1 --seeds 3
    python -m tools.experiments strength --exp-dir runs/strength            # resume after a kill
    python -m tools.experiments strength --designs az,agz-async-finish --seeds 1 --cpu-hours 0.05 \\
        --board-size 5 --exp-dir /tmp/smoke                               # a few minutes

Each design (:data:`DESIGNS`) trains from zero (``python -m train.loop``), every seed in its own
run directory ``EXP_DIR/runs/<design>/seed-<k>``, with the same budget of **computation**: the
FLOPs of every process of the run (self-play, training, gating; :mod:`engine.nets.flops`), counted by
``train.loop --budget <F>flops`` over sessions, so runs may share a machine, or change machine
between sittings, without biasing each other.  ``--cpu-hours H`` converts to FLOPs at the rate
measured once, on the machine where the experiment starts, by a short calibration run of the
``az`` design: FLOPs per CPU-second (not wall), over ``--calibration-seconds`` of wall time or a
fixed work, ``--calibration-flops`` (``EXP_DIR/experiment.json`` keeps the rate, the CPU and the
budget, and later sittings reuse them).  Everything but the design is identical across runs: the settings below
(or the ones given) are passed to every run.

Then the nets are rated on one Bradley-Terry scale (``EXP_DIR/rating/``):

- at each budget fraction (``--fractions``, default 0, 0.25, 0.5, 1), each run's net at that point:
  its latest checkpoint (``az``) or its best (gated designs) when its spending crossed the
  fraction;
- every pair of those nets at the same fraction plays ``--pair-games`` games (in-process, one
  batched game pool, ``--rate-visits`` visits), and each run's nets at consecutive fractions play
  too;
- every net at the fractions ``--anchor-fractions`` (default the full budget) plays
  ``--anchor-games`` games against each fixed anchor (``--anchors``: GNU Go levels ``gnugo:L``
  and Pachi ``pachi:PLAYOUTS``) through ``train.match``, a GNU Go referee counting dead stones;
- one Bradley-Terry fit of every game, shifted so that the runs' initial nets (fraction 0)
  average 0 Elo (without fraction 0: the first anchor is 0); a design's Elo at a fraction is the
  mean of its seeds' nets, and its 95% interval comes from a bootstrap over games and seeds.

Finished runs and finished matches are never repeated: a killed experiment continues where it
stopped (an unfinished run resumes with ``train.loop --resume``).  Writes ``EXP_DIR/summary.json``
(``{"board_size", "cpu_hours_per_run", "designs": {NAME: {"runs", "elo", "elo_ci95",
"cpu_hours", "fractions"}}}``), ``EXP_DIR/summary.png`` (Elo against CPU-hours, a band per design)
and a table.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import queue
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from train.config import RunConfig
from train.stage import stage_threads
from train.match.config import inproc_play
from train.match.ladder import LadderConfig, play_match
from train.match.ratings import MATCH_FORMAT, _checkpoint_time, _results_games
from train.rundir import RunDir, atomic_write_json
from train.match.stats import bradley_terry
from train.usage import Usage
from tools import REPO_ROOT
from tools.experiments.runs import round_robin
from tools.machine import cpu_label

FORMAT = "tools.experiment strength v1"           # the saved files' tag (the command's old name), kept

# The designs, as train.loop options.  "2v" doubles the visits of every search (self-play and
# gating): AlphaZero's 800 against AlphaGo Zero's 1,600, in our units.  Gated designs play up to
# 400 games a candidate (BASE_SETTINGS) with Leela Zero's SPRT early stop, except ELF OpenGo's
# sync-discard: 55% of 400 games, the SPRT made unreachable (its exact early stops, once 55% is
# guaranteed or out of reach, change no decision).
DESIGNS: dict[str, list[str]] = {
    "az": ["--mode", "az", "--pipeline", "async"],
    "agz-sync-discard": ["--mode", "agz", "--pipeline", "sync", "--on-new-model", "discard",
                         "--gate-alpha", "1e-9", "--gate-beta", "1e-9"],     # ELF: 55% of 400, no SPRT
    "agz-async-finish": ["--mode", "agz", "--pipeline", "async", "--on-new-model", "finish"],
    "agz-async-switch": ["--mode", "agz", "--pipeline", "async", "--on-new-model", "switch"],
    "az-2v": ["--mode", "az", "--pipeline", "async"],
    "agz-async-finish-2v": ["--mode", "agz", "--pipeline", "async", "--on-new-model", "finish"],
    "agz-async-finish-drop": ["--mode", "agz", "--pipeline", "async", "--on-new-model", "finish",
                              "--no-keep-old-games"],
}
DEFAULT_DESIGNS = list(DESIGNS)

# The run settings every design shares unless given on the command line: the pipeline
# experiment's 7x7 settings (docs/results/pipelines.md), small enough for a run to learn within an hour of one core.
BASE_SETTINGS: dict[str, str] = {
    "--board-size": "7", "--komi": "9", "--rules": "chinese", "--blocks": "2", "--filters": "16",
    "--visits": "16", "--parallel-games": "16", "--batch": "64", "--train-batch": "64",
    "--min-games": "20", "--checkpoint-every": "40", "--gate-games": "400",
    "--gate-parallel-games": "16", "--threads": "1", "--metrics-every": "5",
}
CALIBRATION_SECONDS = 60


def design_args(name: str, settings: dict[str, str]) -> list[str]:
    """train.loop options of design ``name`` on top of ``settings``."""
    if name not in DESIGNS:
        raise ValueError(f"unknown design {name!r}; known: {', '.join(DESIGNS)}")
    s = dict(settings)
    if name.endswith("-2v"):
        visits = int(s["--visits"])
        s["--visits"] = str(2 * visits)
        s["--gate-visits"] = str(2 * int(s.get("--gate-visits", visits)))
        if "--cheap-visits" in s:
            s["--cheap-visits"] = str(2 * int(s["--cheap-visits"]))
    return [x for kv in s.items() for x in kv] + DESIGNS[name]


# ---------------------------------------------------------------------------------------------
# The budget


def calibration_budget(seconds: float | None = None, flops: float | None = None) -> str:
    """The calibration run's ``train.loop --budget``: ``flops`` FLOPs of work (the same work
    however loaded the machine is), else ``seconds`` of wall time (default
    :data:`CALIBRATION_SECONDS`)."""
    if seconds is not None and flops is not None:
        raise ValueError("give the calibration's length once: --calibration-seconds or --calibration-flops")
    if flops is not None:
        if flops <= 0:
            raise ValueError(f"--calibration-flops wants a positive number, got {flops:g}")
        return f"{flops:.6g}flops"
    return f"{CALIBRATION_SECONDS if seconds is None else seconds:g}s"


def calibrate(exp_dir: Path, settings: dict[str, str], budget: str, log: Callable[[str], None],
              cpu: int | None = None) -> dict[str, Any]:
    """FLOPs per CPU-second of the ``az`` design on this machine (pinned to ``cpu`` as the runs
    are): a short run of ``train.loop --budget budget`` (:func:`calibration_budget`), measured
    once its trainer trains (start-up and the self-play-only opening left out: training buys
    fewer FLOPs per CPU-second than self-play).  The rate divides by CPU time, not wall time,
    so other load on the machine slows the run without changing the rate."""
    rd = RunDir(exp_dir / "calibration")
    if rd.root.exists():
        shutil.rmtree(rd.root)
    cmd = [sys.executable, "-m", "train.loop", "--run-dir", str(rd.root), "--budget", budget, "--quiet",
           "--seed", "999", *design_args("az", settings)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    log(f"calibration: {' '.join(cmd)}")
    with open(exp_dir / "calibration.log", "wb") as out:
        r = subprocess.run(cmd, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT)
    records = rd.read_metrics() if rd.exists() else []
    # Steady state: from the trainer's first step on (self-play alone runs at another rate),
    # else from self-play's first record (start-up left out).
    marks = [x["time"] for x in records if x.get("source") == "trainer" and x.get("step")] or \
        [x["time"] for x in records if x.get("source") == "selfplay"]
    if r.returncode != 0 or len(marks) < 2:
        raise RuntimeError(f"calibration run failed (exit {r.returncode}); see {exp_dir / 'calibration.log'}")
    a, b = Usage(records, until=marks[0]), Usage(records)
    flops, cpu = b.flops - a.flops, b.cpu_seconds - a.cpu_seconds
    if flops <= 0 or cpu <= 0:
        raise RuntimeError("calibration measured no computation")
    return {"flops_per_cpu_second": flops / cpu, "cpu": cpu_label(), "measured": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "calibration_cpu_seconds": round(cpu, 2), "calibration_flops": flops, "calibration_budget": budget}


# ---------------------------------------------------------------------------------------------
# The runs


@dataclass
class Run:
    design: str
    seed: int
    root: Path

    @property
    def name(self) -> str:
        return f"{self.design}/s{self.seed}"

    def usage(self) -> Usage:
        rd = RunDir(self.root)
        return Usage(rd.read_metrics() if rd.exists() else [])


def run_training(run: Run, settings: dict[str, str], flops: float, log: Callable[[str], None],
                 attempts: int = 3, cpu: int | None = None, ray: str | None = None) -> Usage:
    """Trains ``run`` until its spending reaches ``flops`` (resuming what an earlier sitting
    started), pinned to CPU ``cpu`` when given, its self-play on the Ray cluster at ``ray``
    when given (``train.loop --ray``: the run directory stays here, the actors' FLOPs count);
    returns its usage."""
    rd = RunDir(run.root)
    for _ in range(attempts):
        usage = run.usage()
        if usage.flops >= flops:
            return usage
        resume = rd.exists() and rd.latest_model() is not None
        if rd.root.exists() and not resume:
            shutil.rmtree(rd.root)                  # a run killed before its first checkpoint
        run.root.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "train.loop", "--run-dir", str(run.root), "--budget", f"{flops:.6g}flops",
               "--quiet"]
        cmd += ["--resume"] if resume else ["--seed", str(run.seed), *design_args(run.design, settings)]
        if ray is not None:
            cmd += ["--ray", ray]
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu), *cmd]
        log(f"{run.name}: {'resuming at %.3g FLOPs' % usage.flops if resume else 'starting'}")
        t0 = time.time()
        with open(run.root.parent / f"seed-{run.seed}.log", "ab") as out:
            r = subprocess.run(cmd, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT)
        usage = run.usage()
        log(f"{run.name}: exit {r.returncode} after {time.time() - t0:.0f} s; {usage.flops:.3g} FLOPs, "
            f"{usage.cpu_hours:.3f} CPU-hours")
        if r.returncode == 130:
            raise KeyboardInterrupt
    usage = run.usage()
    if usage.flops < flops:
        raise RuntimeError(f"{run.name}: stopped at {usage.flops:.3g} of {flops:.3g} FLOPs after {attempts} "
                           f"attempts; see {run.root.parent / f'seed-{run.seed}.log'}")
    return usage


def net_at(run: Run, flops: float) -> tuple[Path, float, float]:
    """(checkpoint, CPU-hours, FLOPs) of the net ``run`` played with when its spending reached
    ``flops``: its latest checkpoint written by then (az), or its best by then (gated designs:
    the last promotion decided by then, else the first net)."""
    rd = RunDir(run.root)
    records = rd.read_metrics()
    usage = Usage()
    when = math.inf
    for r in records:
        usage.add([r])
        if usage.flops >= flops:
            when = r.get("time", math.inf)
            break
    at = Usage(records, until=when)
    cfg = RunConfig.from_dict(rd.read_config())
    models = rd.list_models()
    if cfg.mode == "az":
        written = [(step, p) for step, p in models if (_checkpoint_time(p) or math.inf) <= when]
        step = written[-1][0] if written else models[0][0]
    else:
        promoted = [r for r in records if r.get("source") == "gate" and r.get("event") == "decision"
                    and r.get("verdict") == "promote" and r.get("decided", math.inf) <= when]
        step = int(promoted[-1]["candidate_step"]) if promoted else models[0][0]
    return rd.model_path(step), at.cpu_hours, at.flops


def run_facts(run: Run) -> dict[str, Any]:
    """What a finished run did: self-play games, promotions, its self-play's last mean game
    length, and its FLOPs and CPU seconds by stage."""
    rd = RunDir(run.root)
    records = rd.read_metrics()
    by_stage: dict[str, Usage] = {}
    for r in records:
        by_stage.setdefault(str(r.get("source")), Usage()).add([r])
    lengths = [r["mean_game_length"] for r in records
               if r.get("source") == "selfplay" and r.get("mean_game_length") is not None]
    return {"games": rd.count_games(),
            "promotions": sum(1 for r in records if r.get("source") == "gate" and r.get("verdict") == "promote"),
            "mean_game_length": lengths[-1] if lengths else None,
            "flops_by_stage": {k: u.flops for k, u in by_stage.items() if u.flops},
            "cpu_seconds_by_stage": {k: round(u.cpu_seconds, 1) for k, u in by_stage.items() if u.cpu_seconds}}


def _mean_facts(facts: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over a design's runs of :func:`run_facts`."""
    def mean(values: list[float]) -> float | None:
        return round(float(np.mean(values)), 2) if values else None

    stages = sorted({k for f in facts for k in f["flops_by_stage"]})
    return {"games": mean([f["games"] for f in facts]), "promotions": mean([f["promotions"] for f in facts]),
            "mean_game_length": mean([f["mean_game_length"] for f in facts if f["mean_game_length"] is not None]),
            "flops_share_by_stage": {k: round(float(np.mean([f["flops_by_stage"].get(k, 0.0) / max(1.0, sum(f["flops_by_stage"].values()))
                                                              for f in facts])), 3) for k in stages}}


# ---------------------------------------------------------------------------------------------
# Rating


def anchor_command(spec: str, pachi: str | None) -> tuple[str, str]:
    """(name, GTP command) of an anchor ``gnugo:LEVEL`` or ``pachi:PLAYOUTS``."""
    kind, _, value = spec.partition(":")
    if kind == "gnugo" and value.isdigit():
        return f"gnugo-L{value}", f"/usr/games/gnugo --mode gtp --chinese-rules --level {value}"
    if kind == "pachi" and value.isdigit():
        if not pachi:
            raise ValueError("a pachi anchor needs --pachi PATH (Pachi 12.90 built from source)")
        return f"pachi-{value}", f"{pachi} -t ={value} threads=1"
    raise ValueError(f"bad anchor {spec!r}: use gnugo:LEVEL or pachi:PLAYOUTS")


def play_pairs(rating_dir: Path, label: str, players: dict[str, Path], pairs: list[tuple[str, str]],
               cfg: RunConfig, games: int, visits: int, seed: int) -> list[tuple[str, str, float]]:
    """In-process games of ``pairs`` (cached in ``rating_dir/label.json``)."""
    path = rating_dir / f"{label}.json"
    key = sorted([list(p) for p in pairs])
    try:
        doc = json.loads(path.read_text())
        if (doc.get("pairs") == key and doc.get("games_per_pair") == games and doc.get("visits") == visits
                and doc.get("players") == {k: str(v) for k, v in players.items()}):
            return [tuple(g) for g in doc["games"]]     # the same nets: a raised budget moves them
    except (OSError, ValueError):
        pass
    results = round_robin(players, cfg, games, visits=visits, parallel=64, seed=seed, pairs=pairs)
    atomic_write_json(path, {"pairs": key, "games_per_pair": games, "visits": visits, "games": results,
                             "players": {k: str(v) for k, v in players.items()}})
    return results


def anchor_games(rating_dir: Path, player: str, path: Path, anchor: tuple[str, str], games: int,
                 cfg: RunConfig, visits: int, referee: str | None, seed: int) -> list[tuple[str, str, float]]:
    """``player`` against a GTP anchor through train.match (resumable: one match directory)."""
    lc = LadderConfig(games=games, play=inproc_play(visits), rules=cfg.rules, referee=referee,
                      seed=seed, gnugo=anchor[1])
    out = rating_dir / "anchors" / f"{player.replace('/', '_')}-{path.stem}-vs-{anchor[0]}"   # this net's match
    doc = play_match(out, lc, (player, f"inproc:{path}:visits={visits}"), anchor, games, cfg.board_size)
    if doc.get("format") != MATCH_FORMAT:
        return []
    rated, _ = _results_games(out / "results.json", doc)
    return [(g.black, g.white, g.score) for g in rated]


def bootstrap(games: list[tuple[str, str, float]], anchor: str, groups: dict[str, list[str]],
              reps: int, seed: int, zero: list[str] | None = None,
              contrasts: Sequence[tuple[str, str]] = ()) -> dict[str, tuple[float, float, float]]:
    """(mean Elo, 2.5%, 97.5%) of each group (the players of one design at one fraction): the
    Bradley-Terry fit of all games, and a bootstrap that resamples the games and, within each
    group, its players (the seeds).  With ``zero`` (players), every fit is shifted so that their
    mean is 0 (e.g. the runs' initial nets: Elo gained from zero).  Each contrast ``(a, b)`` of
    two groups adds ``"a - b"``: their difference, its interval from the same replicates."""

    def shifted(fit: dict[str, Any]) -> dict[str, float]:
        base = float(np.mean([fit[p].elo for p in zero if p in fit])) if zero else 0.0
        return {p: r.elo - base for p, r in fit.items()}

    fit = shifted(bradley_terry(games, anchor=anchor))
    point = {g: float(np.mean([fit[p] for p in ps if p in fit])) for g, ps in groups.items()
             if any(p in fit for p in ps)}
    pairs = [(a, b) for a, b in contrasts if a in point and b in point]
    for a, b in pairs:
        point[f"{a} - {b}"] = point[a] - point[b]
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {g: [] for g in point}
    for _ in range(reps):
        idx = rng.integers(0, len(games), len(games))
        try:
            fit_b = shifted(bradley_terry([games[i] for i in idx], anchor=anchor))
        except ValueError:
            continue
        rep: dict[str, float] = {}
        for g in groups:
            ps = [p for p in groups[g] if p in fit_b]
            if g in point and ps:
                pick = rng.choice(len(ps), len(ps))
                value = float(np.mean([fit_b[ps[i]] for i in pick]))
                if math.isfinite(value):          # a replicate may leave a player unbounded
                    rep[g] = value
                    samples[g].append(value)
        for a, b in pairs:
            if a in rep and b in rep:
                samples[f"{a} - {b}"].append(rep[a] - rep[b])
    out = {}
    for g, e in point.items():
        s = samples[g]
        lo, hi = (float(np.percentile(s, 2.5)), float(np.percentile(s, 97.5))) if len(s) >= 10 else (-math.inf, math.inf)
        out[g] = (e, lo, hi)
    return out


def plot_band(ax: Any, pts: list[tuple[float, ...]], label: str) -> None:
    """One design on ``ax``: its mean Elo against ``x`` and a band of its 95% interval, from
    ``pts`` = [(x, elo, lo, hi)] (an infinite bound draws no band there)."""
    x, y, lo, hi = (np.array(v, float) for v in zip(*pts))
    lo, hi = np.where(np.isfinite(lo), lo, y), np.where(np.isfinite(hi), hi, y)
    line, = ax.plot(x, y, marker="o", label=label)
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.12)


def plot_anchor(ax: Any, name: str, elo: float) -> None:
    """A fixed anchor's Elo on ``ax``: a dotted line with its name."""
    ax.axhline(elo, color="grey", ls=":", lw=1)
    ax.annotate(name, (0.01, elo), xycoords=("axes fraction", "data"), fontsize=8, color="grey", va="bottom")


def plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib  # lazy: slow to import, only the plot needs it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, as matplotlib

    fig, axes = plt.subplots(1, 2, figsize=(14, 5.5), sharey=True)
    for ax, key, label in ((axes[0], "flops", "computation (FLOPs: net forward and training passes, search share)"),
                           (axes[1], "cpu_hours", f"CPU-hours of training ({summary.get('cpu') or 'this CPU'})")):
        for name, d in summary["designs"].items():
            pts = sorted((f[key], f["elo"], *f["elo_ci95"]) for f in d["fractions"].values() if f.get("elo") is not None)
            if pts:
                plot_band(ax, pts, f"{name} ({d['runs']} runs)")
        for a in summary.get("anchors", []):
            if a.get("elo") is not None:
                plot_anchor(ax, a["name"], a["elo"])
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"Elo ({summary['anchor']} = 0)")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.suptitle(f"Strength per computation, {summary['board_size']}x{summary['board_size']}: "
                 f"mean and 95% interval over seeds and games")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def format_table(summary: dict[str, Any]) -> str:
    fr = [f"{float(f):.0%}" for f in summary["fractions"]]
    head = f"{'design':24s} {'runs':>4s} {'CPU-h':>6s} {'games':>7s} {'len':>5s} {'promo':>5s} " + \
        " ".join(f"{'Elo @' + f:>22s}" for f in fr)
    lines = [head, "-" * len(head)]
    for name, d in summary["designs"].items():
        cells = []
        for f in summary["fractions"]:
            e = d["fractions"].get(str(f))
            if e is None or e.get("elo") is None:
                cells.append("-".rjust(22))
            else:
                lo, hi = e["elo_ci95"]
                cells.append(f"{e['elo']:+.0f} [{lo:+.0f}, {hi:+.0f}]".rjust(22))
        facts = " ".join("-".rjust(w) if d.get(k) is None else f"{d[k]:>{w}.{p}f}"
                         for k, w, p in (("games", 7, 0), ("mean_game_length", 5, 1), ("promotions", 5, 1)))
        lines.append(f"{name:24s} {d['runs']:>4d} {d['cpu_hours']:>6.3f} {facts} " + " ".join(cells))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Command line


def parse_settings(extra: Sequence[str]) -> dict[str, str]:
    """The base settings with ``--opt value`` pairs of the command line over them."""
    s = dict(BASE_SETTINGS)
    it = iter(extra)
    for opt in it:
        if not opt.startswith("--"):
            raise ValueError(f"run settings come as --option value pairs, got {opt!r}")
        value = next(it, None)
        if value is None or value.startswith("--"):
            raise ValueError(f"{opt} needs a value")
        s[opt] = value
    return s


def strength(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.experiments strength",
                                 description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                                 epilog="Other --option value pairs are train.loop run settings shared by every "
                                        "run (defaults: " + " ".join(f"{k} {v}" for k, v in BASE_SETTINGS.items()) + ").")
    ap.add_argument("--exp-dir", type=Path, required=True)
    ap.add_argument("--designs", default=None, help=f"comma-separated (default all: {','.join(DEFAULT_DESIGNS)})")
    ap.add_argument("--seeds", type=int, default=None, help="runs per design (default 3)")
    ap.add_argument("--cpu-hours", type=float, default=None, help="budget of each run in CPU-hours of the machine "
                    "the experiment starts on (converted to FLOPs once)")
    ap.add_argument("--flops", type=float, default=None, help="budget of each run in FLOPs (instead of --cpu-hours)")
    ap.add_argument("--fractions", default="0,0.25,0.5,1", help="budget fractions whose nets are rated (0: the "
                    "initial nets)")
    ap.add_argument("--pair-games", type=int, default=2, help="games between two nets of the same fraction")
    ap.add_argument("--anchors", default="gnugo:1", help="fixed anchors, comma-separated: gnugo:LEVEL, "
                    "pachi:PLAYOUTS, or 'none' (the scale's 0 is the initial nets' mean; without fraction 0 the "
                    "first anchor, or the first net)")
    ap.add_argument("--anchor-games", type=int, default=4, help="games of every net against each anchor")
    ap.add_argument("--anchor-fractions", default="1", help="the fractions whose nets play the anchors")
    ap.add_argument("--pachi", default=None, help="the pachi binary for pachi:PLAYOUTS anchors")
    ap.add_argument("--rate-visits", type=int, default=None, help="visits per move in rating games "
                    "(default the runs' --visits)")
    ap.add_argument("--bootstrap", type=int, default=200, help="bootstrap replicates for the intervals")
    ap.add_argument("--calibration-seconds", type=float, default=None, help="length of the calibration run "
                    f"in wall-clock seconds (default {CALIBRATION_SECONDS})")
    ap.add_argument("--calibration-flops", type=float, default=None, help="length of the calibration run in FLOPs "
                    "instead: the same work on a loaded machine (what tests use)")
    ap.add_argument("--cpus", default=None, help="CPUs to pin runs to, e.g. 1 or 0,1: one run at a time on each "
                    "(default: one run at a time, unpinned)")
    ap.add_argument("--parallel-runs", type=int, default=1, help="runs at a time when not pinned (--cpus)")
    ap.add_argument("--ray", default=None, help="a Ray cluster address (or 'local'): every run's self-play runs there "
                    "as actors (train.loop --ray); several runs at a time with --parallel-runs")
    ap.add_argument("--no-rating", action="store_true", help="train only")
    a, extra = ap.parse_known_args(argv)

    exp_dir: Path = a.exp_dir
    exp_dir.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, file=sys.stderr, flush=True)
        with open(exp_dir / "experiment.log", "a") as f:
            f.write(line + "\n")

    meta_path = exp_dir / "experiment.json"
    meta: dict[str, Any] = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    if meta and meta.get("format") != FORMAT:
        raise ValueError(f"{meta_path}: not a strength experiment")
    if meta:                                          # a later sitting: the saved choices hold
        given = {k: v for k, v in (("designs", a.designs), ("seeds", a.seeds), ("cpu_hours", a.cpu_hours),
                                   ("flops", a.flops)) if v is not None}
        if extra or given:
            raise ValueError(f"{exp_dir} holds an experiment already; resume it without run settings "
                             f"(given: {', '.join([*given, *extra])})")
    else:
        if (a.cpu_hours is None) == (a.flops is None):
            raise ValueError("give the budget of each run: --cpu-hours H or --flops F")
        settings = parse_settings(extra)
        meta = {"format": FORMAT, "designs": (a.designs or ",".join(DEFAULT_DESIGNS)).split(","),
                "seeds": a.seeds or 3, "settings": settings, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        for d in meta["designs"]:
            design_args(d, settings)                  # unknown names fail before any work
        if a.cpu_hours is not None:
            budget = calibration_budget(a.calibration_seconds, a.calibration_flops)
            meta["calibration"] = calibrate(exp_dir, settings, budget, log,
                                            cpu=int(a.cpus.split(",")[0]) if a.cpus else None)
            meta["cpu_hours_per_run"] = a.cpu_hours
            meta["flops_per_run"] = a.cpu_hours * 3600 * meta["calibration"]["flops_per_cpu_second"]
        else:
            meta["flops_per_run"] = a.flops
        atomic_write_json(meta_path, meta)
    settings, flops = meta["settings"], float(meta["flops_per_run"])
    log(f"{len(meta['designs'])} designs x {meta['seeds']} seeds, {flops:.4g} FLOPs per run"
        + (f" (= {meta['cpu_hours_per_run']:g} CPU-hours on {meta['calibration']['cpu']})" if "calibration" in meta else ""))

    runs = [Run(d, k, exp_dir / "runs" / d / f"seed-{k}") for k in range(1, meta["seeds"] + 1) for d in meta["designs"]]
    # Seed by seed (an early stop leaves every design comparable), one run per CPU of --cpus.
    cpus = [int(c) for c in a.cpus.split(",")] if a.cpus else [None] * a.parallel_runs
    free: queue.Queue = queue.Queue()
    for c in cpus:
        free.put(c)

    def train(run: Run) -> Usage:
        cpu = free.get()
        try:
            return run_training(run, settings, flops, log, cpu=cpu, ray=a.ray)
        finally:
            free.put(cpu)

    with ThreadPoolExecutor(len(cpus)) as pool:
        for fut in [pool.submit(train, run) for run in runs]:
            fut.result()
    if a.no_rating:
        return 0
    if cpus[0] is not None:
        os.sched_setaffinity(0, set(cpus))              # the rating games stay on the same CPUs

    # -- rating ---------------------------------------------------------------------------
    fractions = [float(f) for f in a.fractions.split(",")]
    cfg = RunConfig.from_dict(RunDir(runs[0].root).read_config())
    torch.set_num_threads(stage_threads(cfg, "gate"))
    visits = a.rate_visits or int(settings["--visits"])
    rating_dir = exp_dir / "rating"
    rating_dir.mkdir(exist_ok=True)
    players: dict[str, Path] = {}
    where: dict[str, dict[str, Any]] = {}
    for run in runs:
        for f in fractions:
            path, cpu_h, fl = net_at(run, f * flops)
            name = f"{run.name}@{f:g}"
            players[name] = path
            where[name] = {"design": run.design, "seed": run.seed, "fraction": f, "cpu_hours": cpu_h,
                           "flops": fl, "model": str(path)}
    games: list[tuple[str, str, float]] = []
    for f in fractions:
        at = [p for p in players if where[p]["fraction"] == f]
        pairs = [(x, y) for i, x in enumerate(at) for y in at[i + 1:]]
        games += play_pairs(rating_dir, f"pairs-{f:g}", {p: players[p] for p in at}, pairs, cfg, a.pair_games,
                            visits, seed=cfg.seed)
        log(f"rating: {len(pairs)} pairs at {f:g} of the budget played")
    links = [(f"{r.name}@{f:g}", f"{r.name}@{g:g}") for r in runs for f, g in zip(fractions, fractions[1:])]
    if links:
        games += play_pairs(rating_dir, "links", {p: players[p] for pair in links for p in pair}, links, cfg,
                            a.pair_games, visits, seed=cfg.seed + 1)
    anchors = [] if a.anchors == "none" else [anchor_command(s, a.pachi) for s in a.anchors.split(",")]
    referee = "/usr/games/gnugo --mode gtp --chinese-rules --level 0" if Path("/usr/games/gnugo").exists() else None
    anchor_fractions = {float(f) for f in a.anchor_fractions.split(",")}
    for i, (name, path) in enumerate(players.items()):
        if where[name]["fraction"] not in anchor_fractions:
            continue                 # tied to the scale by their runs' link games
        for anchor in anchors:
            games += anchor_games(rating_dir, name, path, anchor, a.anchor_games, cfg, visits, referee,
                                  seed=cfg.seed + i)
    if anchors:
        log(f"rating: {sum(where[p]['fraction'] in anchor_fractions for p in players)} nets against "
            f"{', '.join(n for n, _ in anchors)}")
    anchor_name = anchors[0][0] if anchors else next(iter(players))
    groups = {f"{d}@{f:g}": [p for p in players if where[p]["design"] == d and where[p]["fraction"] == f]
              for d in meta["designs"] for f in fractions}
    for n, _ in anchors:
        groups[n] = [n]
    initial = [p for p in players if where[p]["fraction"] == 0] or None
    last = f"{fractions[-1]:g}"
    contrasts = [(f"{d}@{last}", f"{e}@{last}") for i, d in enumerate(meta["designs"])
                 for e in meta["designs"][i + 1:]]
    est = bootstrap(games, anchor_name, groups, a.bootstrap, seed=cfg.seed, zero=initial, contrasts=contrasts)
    scale = "the initial nets' mean" if initial else anchor_name

    designs: dict[str, Any] = {}
    for d in meta["designs"]:
        frs = {}
        for f in fractions:
            ps = groups[f"{d}@{f:g}"]
            e = est.get(f"{d}@{f:g}")
            frs[str(f)] = {"elo": None if e is None else round(e[0], 1),
                           "elo_ci95": [None, None] if e is None else [round(e[1], 1), round(e[2], 1)],
                           "cpu_hours": round(float(np.mean([where[p]["cpu_hours"] for p in ps])), 4),
                           "flops": float(np.mean([where[p]["flops"] for p in ps]))}
        full = frs[str(fractions[-1])]
        designs[d] = {"runs": meta["seeds"], "elo": full["elo"], "elo_ci95": full["elo_ci95"],
                      "cpu_hours": full["cpu_hours"], "fractions": frs,
                      **_mean_facts([run_facts(r) for r in runs if r.design == d])}
    fit = bradley_terry(games, anchor=anchor_name)
    base = float(np.mean([fit[p].elo for p in initial])) if initial else 0.0
    summary = {"format": FORMAT, "board_size": cfg.board_size, "komi": cfg.rules.komi,
               "cpu_hours_per_run": meta.get("cpu_hours_per_run"), "flops_per_run": flops,
               "cpu": (meta.get("calibration") or {}).get("cpu") or cpu_label(),
               "calibration": meta.get("calibration"), "settings": settings, "fractions": fractions,
               "anchor": scale, "rate_visits": visits, "games": len(games),
               "anchors": [{"name": n, "elo": round(est[n][0], 1), "elo_ci95": [round(est[n][1], 1), round(est[n][2], 1)]}
                           for n, _ in anchors if n in est],
               "designs": designs,
               "differences": {k.replace(f"@{last}", ""): {"elo": round(v[0], 1), "elo_ci95": [round(v[1], 1), round(v[2], 1)]}
                               for k, v in est.items() if " - " in k},
               "players": {p: {**where[p], "elo": round(fit[p].elo - base, 1) if p in fit else None} for p in players}}
    atomic_write_json(exp_dir / "summary.json", summary)
    plot(summary, exp_dir / "summary.png")
    print(format_table(summary))
    print(f"wrote {exp_dir / 'summary.json'} and {exp_dir / 'summary.png'}")
    return 0
