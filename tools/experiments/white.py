"""A secondary analysis of a seed experiment: each final net's score as White.

On 5x5 at komi 24.5 Black wins with perfect play, and the write-up's colour check showed the top
of the rating scale bound by colour: the best nets win nearly every Black game and lose nearly
every White one against GNU Go level 1, so their Elo says only that they play Black as well as
it does.  A net's score as **White** against Black players that err measures how much of those
errors it turns into wins, which a stronger net does more often.  This analysis is registered
as its own file before any of its games, and changes nothing in the pre-registered one::

    python -m tools.experiments white register --name 5x5-v2     # once, before any game; commit it
    python -m tools.experiments white work --name 5x5-v2 --commit  # the nets of committed units

Once it is registered, the standing job (``python -m tools.experiments work``) runs ``white work``
after each unit it commits, pinned to the units' CPU.

**Games.**  Each committed unit's final net, at the primary rating's visits and search options,
plays ``games`` games (colours alternating) against each Black player of ``opponents`` (anchors
of the experiment's fixed ladder), through :func:`tools.experiments.anchors.rate_net` with every
game compulsory; one file per net under ``experiments/<name>/secondary/white-score/``, committed
as soon as it is played.

**Analysis** (:func:`analyse`): a net's White score is its points over all its White games, in
percent; the contrasts are the primary's (:data:`tools.experiments.paired.CONTRASTS`) on that
score, per seed, paired on the shared initial net, with Student's t intervals and Holm's
correction, over the seeds complete for every design, declared at the primary's looks and level.
The Black games are reported beside them and tested for nothing.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable

from tools import REPO_ROOT
from tools.experiments.registry import EXPERIMENTS, SCRATCH, Experiment, Unit, git, net_name

FORMAT = "tools.experiments white-score v1"
#: The Black players, chosen from the colour check of 5x5-v2's first 26 units: below the anchors
#: whose games with the best nets were colour-bound, where the nets' White games had some wins.
OPPONENTS = ("mc-256", "mc-1024", "net-5x5-8", "gnugo-L1")
GAMES = 40                 # per opponent, colours alternating: half of them as White
SEED = 4711                # the games' seeds: (SEED, unit seed, design's index)


def spec_path(exp: Experiment) -> Path:
    return exp.white_spec_path


def result_path(exp: Experiment, u: Unit) -> Path:
    return exp.root / "secondary" / "white-score" / u.design / f"seed-{u.seed}.json"


def load_spec(exp: Experiment) -> dict[str, Any] | None:
    path = spec_path(exp)
    return json.loads(path.read_text()) if path.is_file() else None


def registration_text(exp: Experiment, spec: dict[str, Any]) -> str:
    ops = ", ".join(spec["opponents"])
    return f"""# {exp.name}: secondary analysis, score as White (registered {spec['registered']}, before any of its games)

Registered at commit `{spec['commit'][:12]}`, after {spec['units_at_registration']} of the
experiment's units had been committed and the write-up's colour check (not pre-registered) had
shown that the top of the rating scale is bound by colour.  No game of this analysis had been
played.  The pre-registered analysis (`../preregistration.md`) is unchanged and remains the
experiment's answer; this one is reported beside it, as secondary.

- **Nets:** every committed unit's final net (`nets/{spec['net']}.pt`), at {spec['visits']}
  visits a move with `{spec['options'] or '(no options)'}`, as the primary rating plays it.
- **Games:** {spec['games']} games against each of {ops} (fixed anchors of
  `{exp.spec['anchors']}`), colours alternating, so {spec['games'] // 2} as White each; the games'
  seeds are fixed by ({spec['seed']}, the unit's seed, the design's index).  The opponents were
  chosen after seeing the colour check's table: they are the anchors below the colour-bound top
  against which the nets' White games had some wins.
- **Outcome:** a net's score as White, in percent, over all its White games.
- **Analysis:** the primary's contrasts on this outcome, per seed, paired on the shared initial
  net, each with Student's t 95% interval, and Holm's correction over the set; computed on the
  seeds complete for every design, and declared only at the primary's looks (8 and 16 seeds)
  with Holm-adjusted p below the primary's level.  Each net's score as Black is reported beside
  it and tests nothing.
- **Command:** `python -m tools.experiments white work --name {exp.name} --commit`; the write-up
  (`python -m tools.experiments report --name {exp.name}`) adds its section once results exist.
"""


def register(exp: Experiment, opponents: tuple[str, ...] = OPPONENTS, games: int = GAMES,
             commit: bool = False) -> dict[str, Any]:
    """Writes the analysis's spec and registration text (and commits them with ``commit``).
    ValueError if it is registered already or names an opponent the anchors lack."""
    from tools.experiments.anchors import load_anchors
    if spec_path(exp).exists():
        raise ValueError(f"{spec_path(exp)}: registered already")
    if results(exp):
        raise ValueError(f"{spec_path(exp).parent}: holds results already")
    known = {a.name for a in load_anchors(REPO_ROOT / exp.spec["anchors"]).anchors}
    unknown = [o for o in opponents if o not in known]
    if unknown:
        raise ValueError(f"not anchors of {exp.spec['anchors']}: {', '.join(unknown)}")
    if games < 2 or games % 2:
        raise ValueError(f"games must be even and at least 2 (half as White), got {games}")
    r = exp.spec["rating"]
    spec = {"format": FORMAT, "experiment": exp.name, "registered": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "commit": git("rev-parse", "HEAD", cwd=exp.root), "units_at_registration": sum(map(exp.done, exp.units())),
            "net": net_name(exp.fractions[-1]), "visits": int(r["visits"]), "options": r.get("options", ""),
            "opponents": list(opponents), "games": games, "seed": SEED}
    spec_path(exp).parent.mkdir(parents=True, exist_ok=True)
    spec_path(exp).write_text(json.dumps(spec, indent=2) + "\n")
    md = spec_path(exp).with_suffix(".md")
    md.write_text(registration_text(exp, spec))
    if commit:
        paths = [str(spec_path(exp)), str(md)]
        git("add", "--", *paths, cwd=exp.root)
        git("commit", "-q", "-m", f"experiments/{exp.name}: register a secondary analysis, each final net's score "
            "as White (before any of its games)", "--", *paths, cwd=exp.root)
    return spec


def play(exp: Experiment, spec: dict[str, Any], u: Unit, play_games: Callable | None = None,
         log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Plays (or finishes) the games of ``u``'s final net; returns its result document."""
    from tools.experiments.anchors import _seed, rate_net
    from tools.machine import cpu_label
    net = exp.unit_dir(u) / "nets" / f"{spec['net']}.pt"
    out = result_path(exp, u)
    t0, c0 = time.time(), time.process_time()
    doc = rate_net(net, REPO_ROOT / exp.spec["anchors"], out, visits=int(spec["visits"]),
                   seed=_seed(int(spec["seed"]), u.seed, exp.spec["designs"].index(u.design)),
                   must_play={o: int(spec["games"]) for o in spec["opponents"]},
                   max_games=int(spec["games"]) * len(spec["opponents"]), options=spec["options"], name=spec["net"],
                   work_dir=SCRATCH / exp.name / "white-games" / u.design / f"seed-{u.seed}",
                   play_games=play_games, log=log)
    doc["net"] = str(net.relative_to(exp.root))              # not the absolute path: the same in every clone
    doc["white_score"] = {"format": FORMAT, "design": u.design, "seed": u.seed, "cpu": cpu_label(),
                          "wall_seconds": round(time.time() - t0, 1),
                          "cpu_seconds_this_process": round(time.process_time() - c0, 1)}
    from train.rundir import atomic_write_json
    atomic_write_json(out, doc)
    return doc


def sides(doc: dict[str, Any]) -> dict[str, list[float]]:
    """{"white": [points, games], "black": [points, games]} of a result document (the net's)."""
    from tools.experiments.anchors import colour_split
    out = {"white": [0.0, 0], "black": [0.0, 0]}
    for split in colour_split(doc).values():
        for side in out:
            out[side][0] += split[side][0]
            out[side][1] += split[side][1]
    return out


def results(exp: Experiment) -> dict[Unit, dict[str, Any]]:
    """Every finished result document, by unit."""
    out = {}
    for u in exp.units():
        path = result_path(exp, u)
        if path.is_file():
            doc = json.loads(path.read_text())
            if doc.get("done"):
                out[u] = doc
    return out


def analyse(exp: Experiment, looks: tuple[int, ...], level: float) -> dict[str, Any] | None:
    """The write-up's secondary section as data; None when the analysis is not registered."""
    from tools.experiments.paired import CONTRASTS, contrasts, design_means
    spec = load_spec(exp)
    if spec is None:
        return None
    docs = results(exp)
    score = {}
    table: dict[str, dict[str, list[float]]] = {}
    for u, doc in docs.items():
        s = sides(doc)
        if s["white"][1]:
            score[(u.design, u.seed)] = 100.0 * s["white"][0] / s["white"][1]
        mine = table.setdefault(u.design, {"white": [0.0, 0], "black": [0.0, 0]})
        for side in mine:
            mine[side][0] += s[side][0]
            mine[side][1] += s[side][1]
    means = design_means(score)
    complete = [s for s in exp.spec["seeds"] if all((d, s) in score for d in exp.spec["designs"])]
    look = max((i + 1 for i, n in enumerate(looks) if len(complete) >= n), default=0)
    defs = {k: v for k, v in CONTRASTS.items() if all(d in exp.spec["designs"] for d in v)}
    cs = contrasts({k: v for k, v in score.items() if k[1] in complete}, defs)
    designs = {d: {"runs": means[d]["runs"], "white": means[d]["elo"], "white_ci95": means[d]["elo_ci95"],
                   "white_games": table[d]["white"], "black_games": table[d]["black"]}
               for d in exp.spec["designs"] if d in means}
    return {"registered": spec["registered"], "commit": spec["commit"], "opponents": spec["opponents"],
            "games": spec["games"], "units": len(docs), "seeds_complete": complete, "look": look,
            "level": level, "designs": designs, "contrasts": [c.as_json() for c in cs]}


def lines(summary: dict[str, Any] | None, total_units: int) -> list[str]:
    """The write-up's section."""
    if summary is None:
        return []
    out = ["", f"## Secondary: score as White (registered {summary['registered'][:10]} at `{summary['commit'][:10]}`, "
               "see `secondary/white-score.md`)", "",
           f"Each final net plays {summary['games']} games against each of {', '.join(summary['opponents'])} "
           f"(half as White).  {summary['units']} of {total_units} units' nets played; seeds complete for every "
           f"design: {', '.join(map(str, summary['seeds_complete'])) or 'none'}.", ""]
    if not summary["designs"]:
        return out + ["No net has played yet."]
    out += ["| design | nets | White score, % (95% t interval) | as White | as Black |", "|---|---|---|---|---|"]
    for d, v in summary["designs"].items():
        ci = "" if v["runs"] < 2 else f" [{v['white_ci95'][0]:.0f}, {v['white_ci95'][1]:.0f}]"
        out.append(f"| `{d}` | {v['runs']} | {v['white']:.0f}{ci} | {v['white_games'][0]:g}/{v['white_games'][1]} | "
                   f"{v['black_games'][0]:g}/{v['black_games'][1]} |")
    if summary["contrasts"]:
        out += ["", "| contrast | seeds | points of White score | 95% t interval | p | p (Holm) | |",
                "|---|---|---|---|---|---|---|"]
        for c in summary["contrasts"]:
            verdict = ("declared" if c["p_holm"] < summary["level"] else "cannot be told apart") if summary["look"] \
                else "interim"
            out.append(f"| {c['name']} | {c['seeds']} | {c['estimate']:+.1f} | [{c['ci95'][0]:+.1f}, "
                       f"{c['ci95'][1]:+.1f}] | {c['p']:.3f} | {c['p_holm']:.3f} | {verdict} |")
    if not summary["look"]:
        out += ["", "No look reached: interim figures, which declare nothing."]
    return out


def work(exp: Experiment, commit: bool, max_nets: int | None, log: Callable[[str], None]) -> int:
    """Plays the games of every committed unit's net that has none yet, committing each file."""
    from engine.fileio import try_hold
    spec = load_spec(exp)
    if spec is None:
        raise ValueError(f"{spec_path(exp)}: not registered (python -m tools.experiments white register)")
    played = 0
    for u in exp.units():
        if max_nets is not None and played >= max_nets:
            break
        if not exp.done(u) or u in results(exp):
            continue
        lock = SCRATCH / exp.name / "white-games" / u.design / f"seed-{u.seed}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        held = try_hold(lock)
        if held is None:
            continue                                  # another driver on this machine plays it
        try:
            if u in results(exp):
                continue
            doc = play(exp, spec, u, log=log)
            s = sides(doc)
            what = (f"{s['white'][0]:g}/{s['white'][1]} as White, {s['black'][0]:g}/{s['black'][1]} as Black "
                    f"({doc['white_score']['cpu_seconds_this_process'] / 60:.1f} CPU-minutes, {doc['white_score']['cpu']})")
            log(f"{u.key}: {what}")
            if commit:
                path = str(result_path(exp, u))
                git("add", "--", path, cwd=exp.root)
                git("commit", "-q", "-m", f"experiments/{exp.name}/secondary: {u.key}'s final net, {what}",
                    "--", path, cwd=exp.root)
            played += 1
        finally:
            held.close()
    log(f"{played} nets played; {sum(1 for u in exp.units() if exp.done(u) and u not in results(exp))} "
        "committed units' nets left")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.experiments white",
                                 description="The secondary analysis: each final net's score as White.")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("register", help="write the analysis's spec, before any game")
    w = sub.add_parser("work", help="play the games of every committed unit's net that has none yet")
    for p in (r, w):
        p.add_argument("--name", required=True, help="experiments/NAME")
        p.add_argument("--commit", action="store_true", help="git commit what is written")
        p.add_argument("--base", type=Path, default=EXPERIMENTS, help=argparse.SUPPRESS)
    r.add_argument("--opponents", default=",".join(OPPONENTS), help=f"Black players (default {','.join(OPPONENTS)})")
    r.add_argument("--games", type=int, default=GAMES, help=f"games per opponent, half as White (default {GAMES})")
    w.add_argument("--max-nets", type=int, default=None, help="stop after this many nets")
    a = ap.parse_args(argv)
    exp = Experiment(a.base / a.name)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    if a.command == "register":
        spec = register(exp, tuple(o for o in a.opponents.split(",") if o), a.games, a.commit)
        log(f"registered at {spec['commit'][:12]}: {spec_path(exp)}")
        return 0
    return work(exp, a.commit, a.max_nets, log)
