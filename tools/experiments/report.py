"""The seed experiment's write-up: ``python -m tools.experiments report --name NAME``.

docs/seed-experiment.{md,json,png} regenerated from an experiment's committed folder
(``experiments/<name>/``, :class:`tools.experiments.registry.Experiment`) alone: every finished
unit's facts and ratings, the paired contrasts of :mod:`tools.experiments.paired` at the
pre-registered looks, and the pre-registration the write-up starts with.
"""
from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from tools import REPO_ROOT
from tools.experiments import white
from tools.experiments.anchors import colour_split
from tools.experiments.registry import EXPERIMENTS, Experiment, Unit, elo_text, net_name

LOOKS = (8, 16)            # seeds per design at the pre-registered looks
LOOK_LEVEL = 0.0294        # Pocock's nominal level for two looks at an overall 0.05


#: A net's games against one anchor are colour-bound when, over at least this many games, it won
#: at least COLOUR_BOUND of its Black games and at most 1 - COLOUR_BOUND of its White ones.
COLOUR_MIN_GAMES = 20
COLOUR_BOUND = 0.9


def colour_check(exp: Experiment, units: list[dict[str, Any]], final: str) -> dict[str, Any]:
    """The final nets' rating games by colour: the share of them Black won, and per design its
    nets' score as Black and as White against each anchor, with the anchors against which its
    games were colour-bound (:data:`COLOUR_BOUND`), where a 50% score says only that the net
    plays Black as well as the anchor does."""
    designs: dict[str, dict[str, dict[str, list[float]]]] = {}
    for f in units:
        doc = json.loads((exp.unit_dir(Unit(f["design"], f["seed"])) / "ratings" / f"{final}.json").read_text())
        by_anchor = designs.setdefault(f["design"], {})
        for anchor, split in colour_split(doc).items():
            mine = by_anchor.setdefault(anchor, {"black": [0.0, 0], "white": [0.0, 0]})
            for side in ("black", "white"):
                mine[side][0] += split[side][0]
                mine[side][1] += split[side][1]
    splits = [s for by_anchor in designs.values() for s in by_anchor.values()]
    games = sum(s["black"][1] + s["white"][1] for s in splits)
    black_points = sum(s["black"][0] + s["white"][1] - s["white"][0] for s in splits)
    out = {}
    for d, by_anchor in designs.items():
        bound = [a for a, s in by_anchor.items()
                 if min(s["black"][1], s["white"][1]) >= COLOUR_MIN_GAMES // 2
                 and s["black"][0] >= COLOUR_BOUND * s["black"][1]
                 and s["white"][0] <= (1 - COLOUR_BOUND) * s["white"][1]]
        out[d] = {"by_anchor": by_anchor, "colour_bound": sorted(bound)}
    return {"games": games, "black_share": round(black_points / games, 3) if games else None, "designs": out}


def collect(exp: Experiment) -> dict[str, Any]:
    """Every committed unit's facts and ratings: {"units": [...], "elo": {fraction: {(design, seed): elo}}}."""
    units, elo = [], {net_name(f): {} for f in exp.fractions}
    for u in exp.units():
        if not exp.done(u):
            continue
        f = exp.facts(u)
        units.append(f)
        for name, r in f["ratings"].items():
            elo[name][(u.design, u.seed)] = float(r["elo"])
        initial = exp.initial_path(u.seed).with_suffix(".json")
        if "f0" in elo and initial.is_file():
            elo["f0"][(u.design, u.seed)] = float(json.loads(initial.read_text())["elo"])
    return {"units": units, "elo": elo}


def analyse(exp: Experiment) -> dict[str, Any]:
    """docs/seed-experiment.json's content, from the committed results alone."""
    from tools.experiments.paired import CONTRASTS, contrasts, design_means
    data = collect(exp)
    final = net_name(exp.fractions[-1])
    anchors_doc = json.loads((REPO_ROOT / exp.spec["anchors"]).read_text())
    anchor_list = anchors_doc["anchors"]
    anchors = {a["name"]: a["elo"] for a in anchor_list} if isinstance(anchor_list, list) \
        else {k: v["elo"] for k, v in anchor_list.items()}
    designs: dict[str, Any] = {}
    for d in exp.spec["designs"]:
        facts = [f for f in data["units"] if f["design"] == d]
        per_fraction = {}
        for f in exp.fractions:
            m = design_means({k: v for k, v in data["elo"][net_name(f)].items() if k[0] == d})
            per_fraction[net_name(f)] = m.get(d)
        full = per_fraction.get(final) or {}
        designs[d] = {"runs": len(facts), "elo": full.get("elo"), "elo_ci95": full.get("elo_ci95"),
                      "cpu_hours": round(float(np.mean([f["cpu_seconds"] for f in facts])) / 3600, 4) if facts else None,
                      "games": round(float(np.mean([f["selfplay"]["games"] for f in facts])), 1) if facts else None,
                      "mean_game_length": round(float(np.mean([f["selfplay"]["length"]["mean"] for f in facts
                                                               if f["selfplay"].get("length")])), 2) if facts else None,
                      "promotions": round(float(np.mean([f["gating"]["promotions"] for f in facts])), 2) if facts else None,
                      "gating_games": round(float(np.mean([f["gating"]["games"] for f in facts])), 1) if facts else None,
                      "fractions": per_fraction}
    complete = [s for s in exp.spec["seeds"] if all(exp.done(Unit(d, s)) for d in exp.spec["designs"])]
    look = max((i + 1 for i, n in enumerate(LOOKS) if len(complete) >= n), default=0)
    defs = {k: v for k, v in CONTRASTS.items() if all(d in exp.spec["designs"] for d in v)}
    cs = contrasts({k: v for k, v in data["elo"][final].items() if k[1] in complete}, defs)
    colour = colour_check(exp, data["units"], final)
    # competence: the best design's final nets against the competence anchor, both colours
    comp_anchor = exp.spec["rating"]["competence_anchor"]
    rated = {d: v["elo"] for d, v in designs.items() if v["elo"] is not None}
    competence = None
    if rated:
        best = max(rated, key=rated.get)
        split = colour["designs"].get(best, {}).get("by_anchor", {}).get(comp_anchor)
        points = split["black"][0] + split["white"][0] if split else 0.0
        games = split["black"][1] + split["white"][1] if split else 0
        competence = {"design": best, "anchor": comp_anchor, "score": round(points / games, 3) if games else None,
                      "games": games}
    return {"name": exp.name, "commit": exp.spec["commit"], "board_size": int(exp.spec["settings"]["--board-size"]),
            "komi": float(exp.spec["settings"]["--komi"]), "budget_flops": exp.flops,
            "cpu_hours_per_run": exp.spec.get("cpu_hours_per_run"), "anchors": anchors,
            "seeds_registered": exp.spec["seeds"], "seeds_complete": complete, "look": look,
            "look_level": LOOK_LEVEL, "designs": designs, "contrasts": [c.as_json() for c in cs],
            "competence": competence, "colour": colour, "white": white.analyse(exp, LOOKS, LOOK_LEVEL),
            "units": [{k: f[k] for k in ("design", "seed", "commit", "cpu", "cpu_seconds", "flops")}
                      | {"elo": {n: r["elo"] for n, r in f["ratings"].items()},
                         "games": f["selfplay"]["games"], "endings": f["selfplay"]["endings"],
                         "mean_length": (f["selfplay"].get("length") or {}).get("mean"),
                         "promotions": f["gating"]["promotions"]} for f in data["units"]]}


def plot_summary(summary: dict[str, Any], fractions: list[float], path: Path) -> None:
    from tools.experiments.strength import plot_anchor, plot_band
    import matplotlib  # lazy: slow to import, only the plot needs it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy, as matplotlib
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for name, d in summary["designs"].items():
        pts = [(f * summary["budget_flops"], v["elo"], *v["elo_ci95"]) for f in fractions
               if (v := d["fractions"].get(net_name(f))) and v.get("elo") is not None]
        if pts:
            plot_band(ax, pts, f"{name} ({d['runs']} runs)")
    for n, e in summary["anchors"].items():
        plot_anchor(ax, n, e)
    ax.set_xlabel("computation (FLOPs)")
    ax.set_ylabel("Elo on the fixed anchors' scale")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"{summary['name']}: {summary['board_size']}x{summary['board_size']}, mean over seeds and 95% t interval")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def relink(text: str, src: Path, dst: Path) -> str:
    """Markdown ``text`` written in folder ``src`` with its relative links made relative to
    folder ``dst``."""
    def fix(m: "re.Match[str]") -> str:
        target = m.group(2)
        if re.match(r"[a-z]+:|#|/", target):
            return m.group(0)
        return f"{m.group(1)}({os.path.relpath(src / target, dst)})"
    return re.sub(r"(\[[^\]]*\])\(([^)\s]+)\)", fix, text)


def write_up(exp: Experiment, summary: dict[str, Any], command: str, where: Path | None = None) -> str:
    """docs/seed-experiment.md: the pre-registration, then the results and the answer (its
    links made relative to the folder ``where`` the write-up goes)."""
    fr = [net_name(f) for f in exp.fractions]
    prereg = (exp.root / "preregistration.md").read_text().rstrip()
    if where is not None:
        prereg = relink(prereg, exp.root.resolve(), where.resolve())
    lines = [prereg, "",
             f"# Results (generated by `{command}` from `experiments/{exp.name}/`)", ""]
    done = len(summary["units"])
    total = len(exp.units())
    lines += [f"{done} of {total} units committed; seeds complete for every design: "
              f"{', '.join(map(str, summary['seeds_complete'])) or 'none'}.  Pre-registered look reached: "
              f"{summary['look'] or 'none yet'}.", ""]
    lines += ["| design | runs | CPU-h a run | games | mean length | promotions | gating games | "
              + " | ".join(f"Elo @{f[1:]}" for f in fr) + " |",
              "|---|---|---|---|---|---|---|" + "---|" * len(fr)]
    for d, v in summary["designs"].items():
        cells = [str(v["runs"]), *(("-" if v[k] is None else f"{v[k]:g}") for k in
                                   ("cpu_hours", "games", "mean_game_length", "promotions", "gating_games"))]
        lines.append(f"| `{d}` | " + " | ".join(cells) + " | " + " | ".join(elo_text(v["fractions"].get(f)) for f in fr) + " |")
    lines += ["", "Elo on the fixed anchors' scale (" + ", ".join(f"{n} {e:+.0f}" for n, e in summary["anchors"].items())
              + "); a design's interval is the unpaired 95% t interval over its seeds.  Comparisons between "
              "designs are the paired contrasts below.", ""]
    lines += ["## Contrasts at the full budget (paired by seed, Holm-adjusted)", ""]
    if summary["contrasts"]:
        lines += ["| contrast | seeds | Elo | 95% t interval | p | p (Holm) |", "|---|---|---|---|---|---|"]
        for c in summary["contrasts"]:
            lines.append(f"| {c['name']} | {c['seeds']} | {c['estimate']:+.0f} | [{c['ci95'][0]:+.0f}, "
                         f"{c['ci95'][1]:+.0f}] | {c['p']:.3f} | {c['p_holm']:.3f} |")
    else:
        lines.append("No contrast can be estimated yet: it needs two seeds complete for every design it weighs.")
    lines += ["", "## The answer so far", ""]
    if not summary["look"]:
        lines.append(f"**None yet.**  The analysis is pre-registered at {LOOKS[0]} seeds per design, and "
                     f"{len(summary['seeds_complete'])} {'is' if len(summary['seeds_complete']) == 1 else 'are'} "
                     "complete.  The figures above are interim and declare "
                     "nothing.")
    else:
        for c in summary["contrasts"]:
            if c["p_holm"] < LOOK_LEVEL:
                lines.append(f"- **{c['name']}: {c['estimate']:+.0f} Elo [{c['ci95'][0]:+.0f}, {c['ci95'][1]:+.0f}]**, "
                             f"declared (Holm p = {c['p_holm']:.3f}).")
            else:
                lines.append(f"- {c['name']}: cannot be told apart ({c['estimate']:+.0f} Elo [{c['ci95'][0]:+.0f}, "
                             f"{c['ci95'][1]:+.0f}], Holm p = {c['p_holm']:.2f}).")
    comp = summary["competence"]
    if comp:
        score = "-" if comp["score"] is None else f"{comp['score']:.0%}"
        lines += ["", f"Competence: the best design so far (`{comp['design']}`) scores {score} in {comp['games']} "
                      f"games against {comp['anchor']} (the pre-registered bar: 25% over 40 or more)."]
    lines += colour_lines(summary["colour"])
    lines += white.lines(summary.get("white"), total)
    lines += ["", "## Every unit", "", "| design | seed | CPU | commit | CPU-h | games | endings | mean length | "
              "promotions | " + " | ".join(f"Elo @{f[1:]}" for f in fr if f != "f0") + " |",
              "|---|---|---|---|---|---|---|---|---|" + "---|" * len([f for f in fr if f != "f0"])]
    for u in summary["units"]:
        ends = ", ".join(f"{k} {v}" for k, v in u["endings"].items() if v)
        lines.append(f"| `{u['design']}` | {u['seed']} | {u['cpu']} | `{u['commit'][:10]}` | "
                     f"{u['cpu_seconds'] / 3600:.2f} | {u['games']} | {ends} | {u['mean_length']} | {u['promotions']} | "
                     + " | ".join(f"{u['elo'].get(f, float('nan')):+.0f}" for f in fr if f != "f0") + " |")
    return "\n".join(lines) + "\n"


def colour_lines(colour: dict[str, Any]) -> list[str]:
    """The write-up's colour check (added after the pre-registration: it changes no figure)."""
    if not colour["games"]:
        return []
    lines = ["", "## Colour (a check added while the experiment ran: not pre-registered, it changes no figure above)", "",
             f"Black won {colour['black_share']:.0%} of the final nets' {colour['games']} rating games.  "
             "A final net's score as Black and as White against each anchor it played (all its seeds together):", "",
             "| design | anchor | as Black | as White |", "|---|---|---|---|"]
    for d, v in colour["designs"].items():
        for anchor, s in sorted(v["by_anchor"].items()):
            cells = [f"{p:g}/{n}" if n else "-" for p, n in (s["black"], s["white"])]
            lines.append(f"| `{d}` | {anchor} | {cells[0]} | {cells[1]} |")
    bound = {d: v["colour_bound"] for d, v in colour["designs"].items() if v["colour_bound"]}
    if bound:
        lines += ["", "Colour-bound (" + ", ".join(f"`{d}` against {', '.join(a)}" for d, a in bound.items())
                  + f"): the nets won at least {COLOUR_BOUND:.0%} of their Black games and at most "
                  f"{1 - COLOUR_BOUND:.0%} of their White ones there.  Such a score places a net at that anchor's "
                  "Elo whatever its strength beyond it: its Elo is bounded by the anchor it played, and a contrast "
                  "that weighs such a design can be off by as much as its nets' strength lies beyond that anchor."]
    return lines


def report(argv: list[str]) -> int:
    from train.rundir import atomic_write_json, atomic_write_text
    ap = argparse.ArgumentParser(prog="python -m tools.experiments report",
                                 description="Regenerate the write-up (docs/seed-experiment.{md,json,png}) from an "
                                             "experiment's committed results alone.")
    ap.add_argument("--name", required=True, help="experiments/NAME")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "seed-experiment",
                    help="path prefix of the .md, .json and .png (default docs/seed-experiment)")
    ap.add_argument("--base", type=Path, default=EXPERIMENTS, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    exp = Experiment(a.base / a.name)
    summary = analyse(exp)
    command = f"python -m tools.experiments report --name {a.name}"
    a.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(a.out.with_suffix(".json"), summary)
    atomic_write_text(a.out.with_suffix(".md"), write_up(exp, summary, command, a.out.parent))
    plot_summary(summary, exp.fractions, a.out.with_suffix(".png"))
    print(f"wrote {a.out.with_suffix('.md')}, .json and .png: {len(summary['units'])} units")
    return 0
