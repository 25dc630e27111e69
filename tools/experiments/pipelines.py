"""``python -m tools.experiments pipelines``: what gating and the pipeline design cost self-play.

    python -m tools.experiments pipelines --exp-dir runs/pipelines --board-size 9 --budget 30m
    python -m tools.experiments pipelines --exp-dir runs/pipelines --board-size 9 --budget 30m \\
        --device cuda --parallel-games 256 --batch 1024            # a GPU machine: same command
    python -m tools.experiments pipelines --exp-dir runs/pipelines --budget 30m --selfplay-only

Runs ``python -m train.loop`` (``--mode agz`` unless ``--mode`` says otherwise) once per
combination of ``--pipeline`` {sync, async} x ``--on-new-model`` {discard, finish, switch}, one
after another, each with the same ``--budget`` and the same seed (so the same first network),
each in its own run directory ``EXP_DIR/<pipeline>-<policy>``; and a baseline
``EXP_DIR/selfplay-only``: the self-play stage alone on the share of the machine self-play has
in the async pipeline (``train.loop --selfplay-only``), which is the rate gating and training
are measured against.  Then the final nets of the six runs (each run's best, or latest in az
mode) and the initial net play a short in-process round robin (every pair ``--rr-games`` games,
colours alternating, through :class:`train.games.pool.GamePool`), rated with
:func:`train.match.stats.bradley_terry` (the initial net anchored at 0 Elo).

Prints one table and writes ``EXP_DIR/pipelines.json`` and ``EXP_DIR/pipelines.png``:

- kept games/h, positions/h: self-play games (training positions) written per hour of the run;
- evals/s and "vs alone": leaves self-play evaluated per second, and the kept share of them
  (minus those thrown away) relative to the self-play-only baseline's evals/s.  Nets that
  learn to end games quickly change that rate (per-game costs weigh more), so "net0 vs alone"
  compares like with like: self-play's evals/s while it still played the initial net (the
  same net as the baseline's), against the baseline's (async runs only: sync self-play waits);
- wasted: share of self-play evaluations thrown away (games discarded when a model arrived,
  searches cut short by a switch); wait: share of self-play's time spent waiting (sync);
- lag: mean seconds from a checkpoint being written to its gating decision;
- promotions/decisions, gating games played, and the round-robin Elo (+- standard error).

Every option other than the ones below (the run settings of ``python -m train.loop``: board
size, net, visits, devices, threads, gating...) is passed through to every run, so the command
scales from a laptop to a GPU box.  A run that already finished (its metrics hold a summary) is
reused; ``--rerun`` plays it again.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from train.config import OPTIONS, RunConfig, add_arguments
from train.stage import stage_threads
from train.rundir import RunDir
from train.match.stats import bradley_terry
from tools import REPO_ROOT
from tools.experiments.runs import final_model, round_robin, run_summary_of

PIPELINES = ("sync", "async")
POLICIES = ("discard", "finish", "switch")
COMBOS = [f"{p}-{o}" for p in PIPELINES for o in POLICIES]
BASELINE = "selfplay-only"


# ---------------------------------------------------------------------------------------------
# Running the loops


def passthrough_args(explicit: argparse.Namespace) -> list[str]:
    """The run settings given on the command line, as ``train.loop`` options."""
    out: list[str] = []
    for name, value in sorted(vars(explicit).items()):
        if name not in OPTIONS or name in ("pipeline", "on_new_model"):
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            out.append(flag if value else "--no-" + name.replace("_", "-"))
        elif value is not None:
            out += [flag, str(value)]
    return out


def run_one(exp_dir: Path, name: str, budget: str, extra: list[str], rerun: bool, log=print) -> dict[str, Any]:
    """Runs (or reuses) the loop of ``name`` (a combination or the baseline); returns its summary."""
    rd = RunDir(exp_dir / name)
    if rd.exists():
        summary = run_summary_of(rd)
        if summary is not None and not rerun:
            log(f"{name}: reusing the finished run in {rd.root}")
            return summary
        shutil.rmtree(rd.root)                 # an unfinished (or to be rerun) run of ours
    elif rd.root.exists() and any(rd.root.iterdir()):
        raise ValueError(f"{rd.root} exists and is not a run directory")
    if name == BASELINE:
        args = ["--pipeline", "async", "--selfplay-only"]
    else:
        pipeline, policy = name.split("-", 1)
        args = ["--pipeline", pipeline, "--on-new-model", policy]
    cmd = [sys.executable, "-m", "train.loop", "--run-dir", str(rd.root), "--budget", budget, "--quiet",
           *args, *extra]
    log(f"{name}: {' '.join(cmd[1:])}")
    t0 = time.time()
    with open(exp_dir / f"{name}.log", "wb") as out:
        r = subprocess.run(cmd, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT)
    summary = run_summary_of(rd) if rd.exists() else None
    if r.returncode != 0 or summary is None:
        raise RuntimeError(f"{name}: train.loop failed (exit {r.returncode}); see {exp_dir / (name + '.log')}")
    log(f"{name}: done in {time.time() - t0:.0f} s: {summary['games']} games, "
        f"{summary.get('promotions', 0)} promotions")
    return summary


# ---------------------------------------------------------------------------------------------
# Table and chart


def initial_net_rate(rd: RunDir) -> float | None:
    """Self-play's mean evals/s over the metrics periods it played the initial net (the first
    period, which includes start-up, left out); None without such periods."""
    initial = rd.model_id(rd.model_path(0))
    rates = [r["evals_per_s"] for r in rd.read_metrics("selfplay")
             if r.get("model") == initial and r.get("event") != "stop" and r.get("evals_per_s")]
    rates = rates[1:]
    return sum(rates) / len(rates) if rates else None


def build_rows(summaries: dict[str, dict[str, Any]], ratings: dict[str, Any],
               net0_rates: dict[str, float | None] | None = None) -> list[dict[str, Any]]:
    net0_rates = net0_rates or {}
    base0 = net0_rates.get(BASELINE)
    base = summaries.get(BASELINE)
    base_rate = base["evals_per_s"] if base and base.get("evals_per_s") else None
    rows = []
    for name in [*COMBOS, BASELINE]:
        s = summaries.get(name)
        if s is None:
            continue
        kept_rate = (s["evals"] - s["wasted_evals"]) / max(1e-9, s["seconds"])
        r = ratings.get(name)
        rows.append({
            "run": name, "games_per_hour": s["games_per_hour"], "positions_per_hour": s["positions_per_hour"],
            "evals_per_s": s["evals_per_s"], "vs_alone": kept_rate / base_rate if base_rate else None,
            # sync self-play waits between generations: its per-period rate mixes in the waits
            "net0_vs_alone": (net0_rates[name] / base0 if base0 and net0_rates.get(name)
                              and not name.startswith("sync") else None),
            "wasted_share": s["wasted_share"], "wait_share": s["selfplay_wait_share"],
            "eval_lag_s": s.get("eval_lag_mean_s"), "adopt_lag_s": s.get("adopt_lag_mean_s"),
            "promotions": s.get("promotions", 0), "decisions": s.get("decisions", 0),
            "gating_games": s.get("gating_games", 0), "final_model": s.get("final_model"),
            "elo": r.elo if r else None, "elo_se": r.stderr if r else None,
        })
    return rows


def format_rows(rows: list[dict[str, Any]]) -> str:
    head = (f"{'run':15s} {'games/h':>8s} {'pos/h':>8s} {'evals/s':>8s} {'vs alone':>8s} {'net0':>5s} {'wasted':>7s} "
            f"{'wait':>6s} {'lag s':>7s} {'promo':>6s} {'gating':>7s} {'Elo':>12s}")

    def f(v, fmt, w):
        return ("-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)).rjust(w)

    lines = [head, "-" * len(head)]
    for r in rows:
        elo = "-" if r["elo"] is None else f"{r['elo']:+.0f} +-{r['elo_se']:.0f}"
        promo = f"{r['promotions']}/{r['decisions']}" if r["run"] != BASELINE else "-"
        lines.append(f"{r['run']:15s} {f(r['games_per_hour'], '{:.0f}', 8)} {f(r['positions_per_hour'], '{:.0f}', 8)} "
                     f"{f(r['evals_per_s'], '{:.0f}', 8)} {f(r['vs_alone'], '{:.0%}', 8)} "
                     f"{f(r.get('net0_vs_alone'), '{:.0%}', 5)} "
                     f"{f(r['wasted_share'], '{:.1%}', 7)} {f(r['wait_share'], '{:.0%}', 6)} "
                     f"{f(r['eval_lag_s'], '{:.1f}', 7)} {promo:>6s} {f(r['gating_games'], '{}', 7)} {elo:>12s}")
    return "\n".join(lines)


def write_chart(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib  # lazy: slow to import, only plots need it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, as matplotlib

    runs = [r for r in rows if r["run"] != BASELINE]
    base = next((r for r in rows if r["run"] == BASELINE), None)
    names = [r["run"] for r in runs]
    colors = ["#4c72b0" if n.startswith("sync") else "#dd8452" for n in names]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    ax = axes[0, 0]
    ax.bar(names, [r["games_per_hour"] for r in runs], color=colors)
    if base:
        ax.axhline(base["games_per_hour"], color="grey", ls="--", label="self-play alone")
        ax.legend(loc="upper left")
    ax.set_title("self-play games kept per hour")
    ax = axes[0, 1]
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], [100 * r["wasted_share"] for r in runs], width=0.4, label="evaluations thrown away")
    ax.bar([i + 0.2 for i in x], [100 * r["wait_share"] for r in runs], width=0.4, label="self-play waiting")
    ax.set_xticks(list(x), names)
    ax.set_ylabel("%")
    ax.set_title("where self-play time goes")
    ax.legend()
    ax = axes[1, 0]
    ax.bar(names, [r["eval_lag_s"] or 0 for r in runs], color=colors)
    ax.set_ylabel("s")
    ax.set_title("evaluation lag (checkpoint -> gating decision)")
    ax = axes[1, 1]
    rated = [r for r in runs if r["elo"] is not None]
    ax.errorbar([r["run"] for r in rated], [r["elo"] for r in rated], yerr=[r["elo_se"] for r in rated],
                fmt="o", capsize=4)
    ax.axhline(0, color="grey", ls=":", lw=1)
    ax.set_title("final net, Elo over the initial net (round robin)")
    for a in axes.flat:
        a.tick_params(axis="x", labelrotation=30)
        a.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# Command line


def pipelines(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.experiments pipelines",
                                 description=__doc__.split("Prints one table")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exp-dir", required=True, help="experiment directory (one run directory per combination)")
    ap.add_argument("--budget", default="30m", help="budget of every run (train.loop --budget), e.g. 30m")
    ap.add_argument("--baseline-budget", default=None, help="budget of the self-play-only run (default --budget)")
    ap.add_argument("--runs", default=",".join(COMBOS),
                    help=f"comma-separated combinations to run (default all: {','.join(COMBOS)})")
    ap.add_argument("--no-baseline", action="store_true", help="skip the self-play-only baseline")
    ap.add_argument("--selfplay-only", action="store_true", help="run only the self-play-only baseline")
    ap.add_argument("--rr-games", type=int, default=20, help="round-robin games per pair of final nets (0: none)")
    ap.add_argument("--rr-visits", type=int, default=None, help="visits per round-robin move (default the gating visits)")
    ap.add_argument("--rr-parallel", type=int, default=64, help="round-robin games in flight")
    ap.add_argument("--rerun", action="store_true", help="play again runs that already finished")
    add_arguments(ap, suppress_defaults=True)
    a = ap.parse_args(argv)
    if getattr(a, "pipeline", None) is not None or getattr(a, "on_new_model", None) is not None:
        ap.error("--pipeline and --on-new-model are what the experiment varies")
    explicit = argparse.Namespace(**{k: v for k, v in vars(a).items() if k in OPTIONS})
    if not hasattr(explicit, "mode"):
        explicit.mode = "agz"
    extra = passthrough_args(explicit)
    exp_dir = Path(a.exp_dir)
    exp_dir.mkdir(parents=True, exist_ok=True)
    names = [] if a.selfplay_only else [n.strip() for n in a.runs.split(",") if n.strip()]
    bad = [n for n in names if n not in COMBOS]
    if bad:
        ap.error(f"unknown run(s) {', '.join(bad)}; known: {', '.join(COMBOS)}")
    if not a.no_baseline or a.selfplay_only:
        names.append(BASELINE)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    log(f"{len(names)} runs of {a.budget} each in {exp_dir}: {', '.join(names)}")
    summaries: dict[str, dict[str, Any]] = {}
    for name in names:
        budget = a.baseline_budget or a.budget if name == BASELINE else a.budget
        summaries[name] = run_one(exp_dir, name, budget, extra, a.rerun, log)
    # Also pick up finished runs of an earlier invocation (e.g. the baseline run on its own).
    for name in [*COMBOS, BASELINE]:
        rd = RunDir(exp_dir / name)
        if name not in summaries and rd.exists() and run_summary_of(rd) is not None:
            summaries[name] = run_summary_of(rd)

    ratings: dict[str, Any] = {}
    combos = [n for n in COMBOS if n in summaries]
    if a.rr_games > 0 and len(combos) >= 1:
        first = RunDir(exp_dir / combos[0])
        cfg = RunConfig.from_dict(first.read_config())
        torch.set_num_threads(stage_threads(cfg, "gate"))
        players = {"initial": first.model_path(0)}
        for name in combos:
            rd = RunDir(exp_dir / name)
            players[name] = final_model(rd, RunConfig.from_dict(rd.read_config()))
        t0 = time.time()
        log(f"round robin: {len(players)} nets, {a.rr_games} games per pair")
        games = round_robin(players, cfg, a.rr_games, a.rr_visits, a.rr_parallel, seed=cfg.seed)
        ratings = bradley_terry(games, anchor="initial")
        log(f"round robin: {len(games)} games in {time.time() - t0:.0f} s")
        (exp_dir / "round_robin.json").write_text(json.dumps(
            {"players": {k: str(v) for k, v in players.items()}, "games": games,
             "ratings": {k: vars(v) for k, v in ratings.items()}}, indent=1))
    net0 = {name: initial_net_rate(RunDir(exp_dir / name)) for name in summaries}
    rows = build_rows(summaries, ratings, net0)
    table = format_rows(rows)
    print(table)
    base = next((r for r in rows if r["run"] == BASELINE), None)
    asw = next((r for r in rows if r["run"] == "async-switch"), None)
    if base and asw and asw["vs_alone"] is not None:
        loss = 1.0 - asw["vs_alone"]
        print(f"async-switch keeps {asw['vs_alone']:.0%} of the self-play-alone evaluation rate "
              f"({'within' if loss <= 0.05 else 'more than'} the 5% target: {loss:+.1%} lost)")
        if asw.get("net0_vs_alone") is not None:
            loss0 = 1.0 - asw["net0_vs_alone"]
            print(f"  with the same (initial) net on both sides: {asw['net0_vs_alone']:.0%} "
                  f"({'within' if loss0 <= 0.05 else 'more than'} the 5% target: {loss0:+.1%} lost)")
    out = {"rows": rows, "budget": a.budget, "args": extra, "time": time.time()}
    (exp_dir / "pipelines.json").write_text(json.dumps(out, indent=1))
    if rows:
        write_chart(rows, exp_dir / "pipelines.png")
        print(f"wrote {exp_dir / 'pipelines.json'} and {exp_dir / 'pipelines.png'}")
    return 0


# ---------------------------------------------------------------------------------------------
# Repeats: mean and 95% interval over experiments run with different seeds

SUMMARY_FIELDS = (("games_per_hour", "games/h", "{:.0f}"), ("positions_per_game", "pos/game", "{:.1f}"),
                  ("evals_per_s", "evals/s", "{:.0f}"), ("vs_alone", "vs alone", "{:.0%}"),
                  ("net0_vs_alone", "net0", "{:.0%}"), ("wasted_share", "wasted", "{:.1%}"),
                  ("wait_share", "wait", "{:.0%}"), ("eval_lag_s", "lag s", "{:.1f}"))
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def mean_interval(values: list[float]) -> tuple[float, float] | None:
    """Mean and half-width of its 95% Student-t interval (0 for a single value); None if empty."""
    if not values:
        return None
    n = len(values)
    mean = sum(values) / n
    if n == 1:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, T95.get(n - 1, 1.96) * sd / math.sqrt(n)


def summarise(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run name over several ``pipelines.json`` documents: {field: (mean, half-width)}."""
    by_run: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        for row in doc["rows"]:
            row = dict(row, positions_per_game=row["positions_per_hour"] / max(1e-9, row["games_per_hour"]))
            by_run.setdefault(row["run"], []).append(row)
    out = []
    for name in [*COMBOS, BASELINE]:
        rows = by_run.get(name)
        if not rows:
            continue
        entry: dict[str, Any] = {"run": name, "repeats": len(rows)}
        for key, _, _ in SUMMARY_FIELDS:
            entry[key] = mean_interval([float(r[key]) for r in rows if r.get(key) is not None])
        out.append(entry)
    return out


def format_summary(rows: list[dict[str, Any]]) -> str:
    head = f"{'run':15s} {'n':>2s} " + " ".join(f"{label:>15s}" for _, label, _ in SUMMARY_FIELDS)
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = []
        for key, _, fmt in SUMMARY_FIELDS:
            v = r[key]
            cells.append(("-" if v is None else f"{fmt.format(v[0])} +-{fmt.format(v[1])}").rjust(15))
        lines.append(f"{r['run']:15s} {r['repeats']:>2d} " + " ".join(cells))
    return "\n".join(lines)


def write_summary_chart(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib  # lazy: slow to import, only plots need it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, as matplotlib

    names = [r["run"] for r in rows]
    colors = ["#4c72b0" if n.startswith("sync") else "#dd8452" if n.startswith("async") else "grey"
              for n in names]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, key, title, scale in ((axes[0], "games_per_hour", "self-play games kept per hour", 1),
                                  (axes[1], "vs_alone", "kept evaluations / self-play alone (%)", 100),
                                  (axes[2], "positions_per_game", "positions per game", 1)):
        vals = [r[key] for r in rows]
        ax.bar(names, [scale * v[0] if v else 0 for v in vals], color=colors,
               yerr=[scale * v[1] if v else 0 for v in vals], capsize=4)
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=30)
        ax.grid(alpha=0.3, axis="y")
    axes[1].axhline(95, color="red", ls=":", lw=1, label="95% target")
    axes[1].legend(loc="lower right")
    fig.suptitle(f"pipeline designs: mean and 95% interval over {max(r['repeats'] for r in rows)} seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def summary(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.experiments summary",
                                 description="Mean and 95% interval of the pipelines experiment over "
                                             "repeats (one EXP_DIR per seed).")
    ap.add_argument("exp_dirs", nargs="+", type=Path, help="experiment directories holding pipelines.json")
    ap.add_argument("--out", type=Path, default=None, help="where to write summary.json/.png "
                    "(default: the first EXP_DIR's parent)")
    a = ap.parse_args(argv)
    docs = []
    for d in a.exp_dirs:
        path = d / "pipelines.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no pipelines.json (run the experiment there first)")
        docs.append(json.loads(path.read_text()))
    rows = summarise(docs)
    print(format_summary(rows))
    out = a.out or a.exp_dirs[0].parent
    out.mkdir(parents=True, exist_ok=True)
    (out / "pipelines-summary.json").write_text(json.dumps({"dirs": [str(d) for d in a.exp_dirs],
                                                            "rows": rows}, indent=1))
    write_summary_chart(rows, out / "pipelines-summary.png")
    print(f"wrote {out / 'pipelines-summary.json'} and {out / 'pipelines-summary.png'}")
    return 0
