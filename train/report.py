"""``python -m train.report RUN_DIR``: a run's metrics as a table, and PNG plots.

Reads RUN_DIR/metrics.jsonl (every stage's records), prints one row per time slice (the latest
self-play and trainer figures at that time) and writes into RUN_DIR/plots/:

- ``losses.png``: total, policy, value, ownership and score losses against the training step;
- ``throughput.png``: games/hour, positions/s, network evaluations/s and training samples/s
  against wall time;
- ``resign.png``: the resignation threshold and the measured false-positive rate;
- ``ratings.png``: Elo against the training step, once gating or match records (records
  carrying an ``elo`` field) exist;
- ``ladder.png``: the strength ladder (``python -m train.ladder``): Elo against CPU-hours and
  against self-play games, GNU Go levels as horizontal lines; with ``--compare RUN_DIR ...``
  ``ladder-compare.png`` puts several runs' ladders on the same axes.

:func:`run_summary` condenses one ``train.loop`` invocation into the accounting that every run
reports (``train.loop`` appends it as a ``summary`` record and prints it; the report prints the
latest): self-play games and positions kept per hour, network evaluations thrown away, gating
games and promotions, evaluation lag, time self-play spent waiting.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Sequence

from train.rundir import RunDir

COLUMNS = (
    # header, source, key, format
    ("min", None, "minutes", "{:7.1f}"),
    ("games", "selfplay", "games", "{:7d}"),
    ("step", "trainer", "step", "{:7d}"),
    ("games/h", "selfplay", "session_games_per_hour", "{:8.0f}"),
    ("pos/s", "selfplay", "positions_per_s", "{:7.1f}"),
    ("evals/s", "selfplay", "evals_per_s", "{:8.0f}"),
    ("batch", "selfplay", "mean_batch", "{:6.0f}"),
    ("loss", "trainer", "loss", "{:6.3f}"),
    ("policy", "trainer", "policy", "{:6.3f}"),
    ("value", "trainer", "value", "{:6.3f}"),
    ("own", "trainer", "ownership", "{:6.3f}"),
    ("score", "trainer", "score", "{:6.3f}"),
    ("lr", "trainer", "lr", "{:8.2g}"),
    ("smp/s", "trainer", "samples_per_s", "{:6.0f}"),
    ("resign", "selfplay", "resign_winrate", "{:6.3f}"),
    ("fp", "selfplay", "resign_fp_rate", "{:5.2f}"),
)


def table_rows(records: list[dict[str, Any]], max_rows: int = 20) -> list[dict[str, Any]]:
    """Up to ``max_rows`` rows: at evenly spaced times, the latest record of each source."""
    recs = [r for r in records if r.get("source") in ("selfplay", "trainer")]
    if not recs:
        return []
    t0 = records[0]["time"]
    times = sorted({r["time"] for r in recs})
    if len(times) > max_rows:
        times = [times[round(i * (len(times) - 1) / (max_rows - 1))] for i in range(max_rows)]
    rows = []
    latest: dict[str, dict[str, Any]] = {}
    it = iter(recs)
    pending = next(it, None)
    for t in times:
        while pending is not None and pending["time"] <= t:
            latest[pending["source"]] = pending
            pending = next(it, None)
        row = {"minutes": (t - t0) / 60.0}
        for _, src, key, _ in COLUMNS:
            if src is not None and src in latest and latest[src].get(key) is not None:
                row[key] = latest[src][key]
        rows.append(row)
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    widths = [max(len(h), len(fmt.format(1.0 if "f" in fmt or "g" in fmt else 1))) for h, _, _, fmt in COLUMNS]
    lines = ["  ".join(h.rjust(w) for (h, _, _, _), w in zip(COLUMNS, widths))]
    for row in rows:
        cells = []
        for (_, _, key, fmt), w in zip(COLUMNS, widths):
            v = row.get(key)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                cells.append("-".rjust(w))
            else:
                try:
                    cells.append(fmt.format(int(v) if "d" in fmt else float(v)).rjust(w))
                except (TypeError, ValueError):
                    cells.append(str(v).rjust(w))
        lines.append("  ".join(cells))
    return "\n".join(lines)


def run_summary(records: list[dict[str, Any]], **info: Any) -> dict[str, Any]:
    """The accounting of one loop invocation from its metrics ``records`` (those since its
    ``start`` record).  Rates are per hour of the invocation's wall time (start to stop record).

    - ``games_per_hour`` / ``positions_per_hour``: self-play games (training positions) written;
    - ``evals``: leaves self-play sent to its evaluators; ``wasted_evals``: those spent on games
      abandoned because a new model arrived (discard) plus searches cut short by a switch;
      ``wasted_share`` = wasted / evals.  Games cut off by the end of the run are counted apart
      (``unfinished_at_stop_evals``): every pipeline loses those;
    - ``gating_games``: gating games played to the end; ``decisions``, ``promotions``;
    - ``eval_lag_mean_s``: checkpoint written -> gating decision (agz), and
      ``adopt_lag_mean_s``: checkpoint written -> self-play plays it (both modes);
    - ``selfplay_wait_s`` and ``selfplay_wait_share``: time self-play waited (sync pipeline).
    ``info`` (mode, pipeline, final model...) is copied into the result."""
    if not records:
        return dict(info)
    start = next((r for r in records if r.get("source") == "loop" and r.get("event") == "start"), records[0])
    stops = [r for r in records if r.get("source") == "loop" and r.get("event") == "stop"]
    t0, t1 = start["time"], (stops[-1] if stops else records[-1])["time"]
    hours = max(1e-9, t1 - t0) / 3600.0
    last_sp: dict[Any, dict[str, Any]] = {}
    for r in records:
        if r.get("source") == "selfplay" and "session_leaves" in r:
            last_sp[r.get("worker", 0)] = r

    def total(key: str) -> float:
        return float(sum(r.get(key) or 0 for r in last_sp.values()))

    games, positions, evals = total("session_games"), total("session_positions"), total("session_leaves")
    discarded, switched = total("session_discarded_leaves"), total("session_switched_leaves")
    wasted = discarded + switched
    wait, sp_seconds = total("wait_s"), total("session_seconds")
    adoptions = total("adoptions")
    lag_sum = sum((r.get("adopt_lag_mean_s") or 0) * (r.get("adoptions") or 0) for r in last_sp.values())
    decisions = [r for r in records if r.get("source") == "gate" and r.get("event") == "decision"]
    lags = [float(r["lag_s"]) for r in decisions if r.get("lag_s") is not None]
    steps = [r["step"] for r in records if r.get("source") == "trainer" and r.get("step") is not None]
    out = {
        "seconds": round(t1 - t0, 1),
        "games": int(games), "positions": int(positions),
        "games_per_hour": games / hours, "positions_per_hour": positions / hours,
        "evals": int(evals), "evals_per_s": evals / (hours * 3600.0),
        "wasted_evals": int(wasted), "wasted_share": wasted / evals if evals else 0.0,
        "discarded_games": int(total("session_discarded")), "discarded_evals": int(discarded),
        "switched_evals": int(switched),
        "unfinished_at_stop_evals": int(total("session_abandoned_leaves") - discarded),
        "gating_games": int(sum(r.get("games_played") or 0 for r in decisions)),
        "decisions": len(decisions), "promotions": sum(r.get("verdict") == "promote" for r in decisions),
        "eval_lag_mean_s": sum(lags) / len(lags) if lags else None,
        "adopt_lag_mean_s": lag_sum / adoptions if adoptions else None,
        "selfplay_wait_s": wait, "selfplay_wait_share": wait / sp_seconds if sp_seconds else 0.0,
        "train_steps": (max(steps) - min(steps)) if steps else 0, "final_step": max(steps) if steps else None,
    }
    out.update(info)
    return out


def format_summary(s: dict[str, Any]) -> str:
    """A few lines for people from a :func:`run_summary` dict."""
    def f(v: Any, fmt: str) -> str:
        return "-" if v is None else fmt.format(v)
    lines = [
        f"summary ({s.get('mode', '?')}, {s.get('pipeline', '?')}, on new model: {s.get('on_new_model', '?')}"
        f"{', self-play only' if s.get('selfplay_only') else ''}), {f(s.get('seconds'), '{:.0f}')} s:",
        f"  self-play kept  {f(s.get('games'), '{}')} games ({f(s.get('games_per_hour'), '{:.0f}')}/h), "
        f"{f(s.get('positions'), '{}')} positions ({f(s.get('positions_per_hour'), '{:.0f}')}/h)",
        f"  evaluations     {f(s.get('evals'), '{}')} ({f(s.get('evals_per_s'), '{:.0f}')}/s), thrown away "
        f"{f(s.get('wasted_evals'), '{}')} ({f(s.get('wasted_share'), '{:.1%}')}: {f(s.get('discarded_games'), '{}')}"
        f" discarded games, {f(s.get('switched_evals'), '{}')} in switched searches); unfinished at stop "
        f"{f(s.get('unfinished_at_stop_evals'), '{}')}",
        f"  gating          {f(s.get('gating_games'), '{}')} games, {f(s.get('decisions'), '{}')} decisions, "
        f"{f(s.get('promotions'), '{}')} promotions; lag checkpoint->decision {f(s.get('eval_lag_mean_s'), '{:.1f}')} s,"
        f" checkpoint->self-play {f(s.get('adopt_lag_mean_s'), '{:.1f}')} s",
        f"  self-play waited {f(s.get('selfplay_wait_s'), '{:.1f}')} s ({f(s.get('selfplay_wait_share'), '{:.1%}')}); "
        f"{f(s.get('train_steps'), '{}')} training steps; final model {s.get('final_model') or '-'}",
    ]
    return "\n".join(lines)


def _series(records: list[dict[str, Any]], source: str | None, x: str, y: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for r in records:
        if (source is None or r.get("source") == source) and r.get(x) is not None and r.get(y) is not None:
            xs.append(float(r[x]))
            ys.append(float(r[y]))
    return xs, ys


def write_plots(records: list[dict[str, Any]], out_dir: Path,
                ratings: dict | None = None) -> list[Path]:
    """Writes the PNG plots that the records (and ``ratings.json`` from ``python -m
    train.match.ratings``, when given) allow; returns their paths."""
    import matplotlib  # lazy: slow to import, only plots need it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, as matplotlib

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if not records:
        return written
    t0 = records[0]["time"]
    recs = [dict(r, minutes=(r["time"] - t0) / 60.0) for r in records]

    def save(fig, name: str) -> None:
        path = out_dir / name
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    train = [r for r in recs if r.get("source") == "trainer" and r.get("loss") is not None]
    if train:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for key in ("loss", "policy", "value"):
            axes[0].plot(*_series(train, None, "step", key), label=key)
        for key in ("ownership", "score"):
            axes[1].plot(*_series(train, None, "step", key), label=key)
        for ax, title in zip(axes, ("total, policy, value", "auxiliary")):
            ax.set_xlabel("training step")
            ax.set_ylabel("loss")
            ax.set_title(title)
            ax.legend()
            ax.grid(alpha=0.3)
        save(fig, "losses.png")

    sp = [r for r in recs if r.get("source") == "selfplay"]
    if sp or train:
        fig, axes = plt.subplots(2, 2, figsize=(11, 7))
        for ax, (src, key, label) in zip(axes.flat, (
                ("selfplay", "session_games_per_hour", "self-play games / hour (since start)"),
                ("selfplay", "positions_per_s", "self-play positions / s"),
                ("selfplay", "evals_per_s", "network evaluations / s"),
                ("trainer", "samples_per_s", "training samples / s"))):
            xs, ys = _series(recs, src, "minutes", key)
            ax.plot(xs, ys, marker=".")
            ax.set_title(label)
            ax.set_xlabel("minutes")
            ax.grid(alpha=0.3)
        save(fig, "throughput.png")

    if any(r.get("resign_winrate") is not None for r in sp):
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(*_series(sp, None, "games", "resign_winrate"), label="resignation winrate")
        ax.plot(*_series(sp, None, "games", "resign_fp_rate"), label="false-positive rate")
        ax.axhline(0.05, color="grey", ls=":", lw=1)
        ax.set_xlabel("games")
        ax.legend()
        ax.grid(alpha=0.3)
        save(fig, "resign.png")

    rated = [r for r in recs if r.get("elo") is not None]
    if rated:
        fig, ax = plt.subplots(figsize=(6, 4))
        xkey = "step" if all(r.get("step") is not None for r in rated) else "minutes"
        xs, ys = _series(rated, None, xkey, "elo")
        ax.plot(xs, ys, marker="o")
        ax.set_xlabel(xkey)
        ax.set_ylabel("Elo of the candidate against the best (gating match)")
        ax.grid(alpha=0.3)
        save(fig, "ratings.png")

    models = [p for p in (ratings or {}).get("players", [])
              if p.get("model") and p.get("hours") is not None]
    if models:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.errorbar([p["hours"] for p in models], [p["elo"] for p in models],
                    yerr=[p["stderr"] for p in models], marker="o", capsize=3)
        ax.set_xlabel("training time (hours)")
        ax.set_ylabel(f"Elo ({ratings['anchor']} = 0)")
        ax.set_title(f"Bradley-Terry ratings, {ratings['games']} games")
        ax.grid(alpha=0.3)
        save(fig, "elo-vs-time.png")
    return written


def anchor_lines(players: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(label, player) of a ladder's fixed anchors, drawn as horizontal lines: GNU Go levels
    (``gnugo-L5`` -> "GNU Go level 5") and Pachi (``pachi-1000`` -> "Pachi 1000 playouts")."""
    out = []
    for p in players:
        if p.get("model"):
            continue
        if p["name"].startswith("gnugo-L"):
            out.append((p["name"].replace("gnugo-L", "GNU Go level "), p))
        elif p["name"].startswith("pachi-"):
            out.append((f"Pachi {p['name'][len('pachi-'):]} playouts", p))
    return out


def plot_ladder(doc: dict[str, Any], path: Path, label: str | None = None,
                others: Sequence[tuple[str, dict[str, Any]]] = ()) -> Path:
    """The strength ladder (``train.match.ladder``'s document) as a PNG: Elo with 95% intervals
    against CPU-hours and against self-play games, GNU Go levels as horizontal lines.
    ``others`` adds more runs' ladders ``(label, doc)`` to the same axes (comparisons)."""
    import matplotlib  # lazy: slow to import, only plots need it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, as matplotlib

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    runs = [(label or Path(doc.get("run_dir", "run")).name, doc), *others]
    anchors: dict[str, dict[str, Any]] = {}
    for name, d in runs:
        models = [p for p in d["players"] if p.get("model") and p.get("cpu_hours") is not None]
        models.sort(key=lambda p: p.get("step") or 0)
        for ax, key in zip(axes, ("cpu_hours", "selfplay_games")):
            ax.errorbar([p[key] for p in models], [p["elo"] for p in models],
                        yerr=[1.96 * p["stderr"] for p in models], marker="o", capsize=3, label=name)
        for label, p in anchor_lines(d["players"]):
            anchors.setdefault(label, p)
    for ax, xlabel in zip(axes, ("CPU-hours of training from zero", "self-play games")):
        for label, p in sorted(anchors.items(), key=lambda kv: kv[1]["elo"]):
            ax.axhline(p["elo"], color="grey", ls="--", lw=1)
            ax.annotate(label, (0.01, p["elo"]),
                        xycoords=("axes fraction", "data"), va="bottom", fontsize=8, color="dimgrey")
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"Elo ({doc['anchor']} = 0), 95% intervals")
    axes[0].legend(loc="lower right")
    fig.suptitle(f"Strength ladder: {doc['games']} games" +
                 "".join(f" + {d['games']}" for _, d in others))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--rows", type=int, default=20, help="table rows")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--compare", nargs="*", default=[], metavar="RUN_DIR",
                    help="also draw these runs' strength ladders (train.match.ladder) on the same axes")
    a = ap.parse_args(argv)
    rd = RunDir(a.run_dir)
    if not rd.metrics_path.is_file():
        print(f"train.report: {rd.metrics_path}: no metrics", file=sys.stderr)
        return 2
    records = rd.read_metrics()
    latest = rd.latest_model()
    print(f"run {rd.root}: {rd.count_games()} games, latest model "
          f"{latest[1].name if latest else '-'} (step {latest[0] if latest else '-'})")
    print(format_table(table_rows(records, a.rows)))
    summaries = [r for r in records if r.get("source") == "loop" and r.get("event") == "summary"]
    if summaries:
        print(format_summary(summaries[-1]))
    ratings_path = rd.root / "ratings.json"
    ratings = json.loads(ratings_path.read_text()) if ratings_path.is_file() else None
    if not a.no_plots:
        for p in write_plots(records, rd.plots, ratings):
            print(f"wrote {p}")
        ladder_path = rd.root / "ladder" / "ladder.json"
        if ladder_path.is_file() or a.compare:
            if not ladder_path.is_file():
                print(f"train.report: {ladder_path}: no ladder (python -m train.ladder {rd.root})",
                      file=sys.stderr)
                return 2
            others = []
            for other in a.compare:
                op = Path(other) / "ladder" / "ladder.json"
                if not op.is_file():
                    print(f"train.report: {op}: no ladder", file=sys.stderr)
                    return 2
                others.append((Path(other).name, json.loads(op.read_text())))
            png = rd.plots / ("ladder-compare.png" if others else "ladder.png")
            print(f"wrote {plot_ladder(json.loads(ladder_path.read_text()), png, others=others)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
