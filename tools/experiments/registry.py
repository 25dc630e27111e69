"""The seed experiment as committed results: ``python -m tools.experiments register | work | unit``
(its write-up, ``report``: :mod:`tools.experiments.report`).

    python -m tools.experiments register --name 7x7-v1 --board-size 7 --cpu-hours 1 --seeds 8 \\
        --anchors experiments/anchors/7x7-komi9.json --blocks 3 --filters 32      # once, before any data
    python -m tools.experiments work --name 7x7-v1 --cpu 1 --commit               # the standing job
    python -m tools.experiments work --name 7x7-v1 --cpu 1 --commit --shard 2/2   # a second machine
    python -m tools.experiments report --name 7x7-v1                              # docs/seed-experiment.*

An experiment lives in the tracked folder ``experiments/<name>/``:

- ``experiment.json``: what was registered before any data: the commit the experiment runs from,
  the designs (:data:`tools.experiments.strength.DESIGNS`), the seeds, the run settings, the budget in FLOPs
  (converted once from CPU-hours on the registering machine), the budget fractions whose nets
  are kept, the anchors file and the rating settings;
- ``preregistration.md``: the contrasts, the test and the rule for adding seeds, written at
  registration (docs/seed-experiment.md starts with it);
- ``initial/seed-<k>.pt`` and ``.json``: the initial net every design of seed k starts from, and
  its rating;
- ``runs/<design>/seed-<k>/``: one **unit**, at most about 2 hours of one core: ``nets/f<F>.pt``
  (the net the run played with when its spending crossed fraction F of the budget, fp16),
  ``ratings/f<F>.json`` (its games against the fixed anchors and its Elo) and ``facts.json``
  (FLOPs and CPU-seconds by stage, games with their lengths and endings, promotions and gating
  games, the CPU and the commit it ran from), written last: a unit with ``facts.json`` is done.

``work`` takes the units without ``facts.json`` in a fixed order (seed by seed, so an early stop
leaves every design with the same seeds), or its share of them (``--shard k/n``: every n-th unit,
so machines split the runs without talking to each other), runs each from a worktree of the
experiment's commit (``runs/worktrees/<commit>``, its C core built there: refactoring elsewhere
in the tree cannot change a design halfway), and with ``--commit`` commits each unit's folder as
soon as it is done.  A unit interrupted by a lost machine is simply run again; on the same
machine its scratch run directory (``runs/experiments/<name>/...``, ignored) resumes.  A change
to the code that alters play or training is a new experiment name.

Inside the experiment's worktree, ``work`` and ``register`` start ``python -m tools.experiment``:
the one module path that every commit has, those from before tools/ was split into bench/,
checks/ and experiments/ (5x5-v2 runs from one) and those after (tools/experiment.py forwards).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable

import numpy as np

from engine.fileio import try_hold
from tools import REPO_ROOT
from tools.machine import cpu_label

FORMAT = "tools.registry experiment v1"          # the committed files' tag: it names the old module, kept
EXPERIMENTS = REPO_ROOT / "experiments"
SCRATCH = REPO_ROOT / "runs" / "experiments"
WORKTREES = REPO_ROOT / "runs" / "worktrees"
#: The code whose change alters play or training: it must be committed before registration.
CODE_PATHS = ("engine", "train", "src_c", "tools", "setup.py", "pyproject.toml")
ENDINGS = ("passes", "resign", "move cap")


def git(*args: str, cwd: Path = REPO_ROOT, attempts: int = 20) -> str:
    """git's output; retried while another git process holds the index lock."""
    for i in range(attempts):
        r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.strip()
        if "index.lock" not in r.stderr or i == attempts - 1:
            raise subprocess.CalledProcessError(r.returncode, ["git", *args], r.stdout, r.stderr)
        time.sleep(0.5 + i)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Unit:
    design: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.design}/seed-{self.seed}"


class Experiment:
    """An experiment folder ``experiments/<name>``."""

    def __init__(self, root: Path):
        self.root = Path(root)
        path = self.root / "experiment.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no registered experiment (python -m tools.experiments register)")
        self.spec: dict[str, Any] = json.loads(path.read_text())
        if self.spec.get("format") != FORMAT:
            raise ValueError(f"{path}: not a registered experiment ({FORMAT})")

    @classmethod
    def named(cls, name: str, base: Path = EXPERIMENTS) -> "Experiment":
        return cls(base / name)

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def flops(self) -> float:
        return float(self.spec["flops_per_run"])

    @property
    def fractions(self) -> list[float]:
        return [float(f) for f in self.spec["fractions"]]

    def units(self) -> list[Unit]:
        """Every unit, seed by seed, designs in registered order."""
        return [Unit(d, s) for s in self.spec["seeds"] for d in self.spec["designs"]]

    def unit_dir(self, u: Unit) -> Path:
        return self.root / "runs" / u.design / f"seed-{u.seed}"

    def done(self, u: Unit) -> bool:
        return (self.unit_dir(u) / "facts.json").is_file()

    def facts(self, u: Unit) -> dict[str, Any]:
        return json.loads((self.unit_dir(u) / "facts.json").read_text())

    def pending(self, shard: tuple[int, int] = (1, 1)) -> list[Unit]:
        k, n = shard
        return [u for i, u in enumerate(self.units()) if i % n == k - 1 and not self.done(u)]

    def initial_path(self, seed: int) -> Path:
        return self.root / "initial" / f"seed-{seed}.pt"

    def scratch(self, u: Unit) -> Path:
        return SCRATCH / self.name / u.design / f"seed-{u.seed}"

    @property
    def white_spec_path(self) -> Path:
        """The secondary White-score analysis's spec (``tools.experiments.white``), once registered."""
        return self.root / "secondary" / "white-score.json"


def elo_text(v: dict[str, Any] | None) -> str:
    """"+120 [+40, +200]" of a rating or a design's mean; an open end (a net that won or lost
    every game) shows as "..."."""
    if not v or v.get("elo") is None:
        return "-"
    lo, hi = v.get("elo_ci95") or (None, None)
    if (lo is None or not np.isfinite(lo)) and (hi is None or not np.isfinite(hi)):
        return f"{v['elo']:+.0f}"
    def end(x: float | None) -> str:
        return "..." if x is None or not np.isfinite(x) else f"{x:+.0f}"
    return f"{v['elo']:+.0f} [{end(lo)}, {end(hi)}]"


def net_name(fraction: float) -> str:
    return f"f{fraction:g}"


def save_half(src: Path, dst: Path) -> None:
    """A copy of our weights file ``src`` with its floating tensors in fp16 (the loader copies
    them back into fp32 parameters)."""
    import torch
    payload = torch.load(src, weights_only=True, map_location="cpu")
    payload["tensors"] = {k: (t.half() if t.is_floating_point() else t) for k, t in payload["tensors"].items()}
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, dst)


# ---------------------------------------------------------------------------------------------
# What a finished run did


def game_facts(run_root: Path) -> dict[str, Any]:
    """Self-play games of a run directory: their number, length quantiles and histogram, and
    how they ended (two passes, resignation, the move cap)."""
    from train.games.records import read_npz
    from train.rundir import RunDir
    lengths, endings = [], {e: 0 for e in ENDINGS}
    for _, path in RunDir(run_root).list_games():
        try:
            rec = read_npz(path)
        except ValueError:
            continue
        lengths.append(int(rec.length))
        endings[rec.reason] = endings.get(rec.reason, 0) + 1
    if not lengths:
        return {"games": 0, "endings": endings}
    a = np.array(lengths)
    edges = [0, 5, 10, 20, 30, 40, 60, 80, 120, 1000]
    hist = np.histogram(a, bins=edges)[0]
    return {"games": len(lengths), "endings": endings,
            "length": {"mean": round(float(a.mean()), 2),
                       "quantiles": {str(q): float(np.quantile(a, q)) for q in (0.05, 0.25, 0.5, 0.75, 0.95)},
                       "histogram": {f"{lo}-{hi - 1}": int(c) for lo, hi, c in zip(edges, edges[1:], hist)}}}


def gating_facts(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Gating decisions of a run's metrics: candidates, promotions, games played."""
    decisions = [r for r in records if r.get("source") == "gate" and r.get("event") == "decision"]
    return {"candidates": len(decisions),
            "promotions": sum(1 for r in decisions if r.get("verdict") == "promote"),
            "games": int(sum(int(r.get("games_played") or 0) for r in decisions)),
            "decisions": [{k: r.get(k) for k in ("candidate_step", "verdict", "counted", "games_played", "score",
                                                 "reason")} for r in decisions]}


def usage_facts(records: list[dict[str, Any]]) -> dict[str, Any]:
    from train.usage import Usage
    by_stage: dict[str, Usage] = {}
    for r in records:
        by_stage.setdefault(str(r.get("source")), Usage()).add([r])
    total = Usage(records)
    return {"flops": total.flops, "cpu_seconds": round(total.cpu_seconds, 1),
            "flops_by_stage": {k: u.flops for k, u in by_stage.items() if u.flops},
            "cpu_seconds_by_stage": {k: round(u.cpu_seconds, 1) for k, u in by_stage.items() if u.cpu_seconds}}


# ---------------------------------------------------------------------------------------------
# One unit: train, keep the nets, rate them, write the facts (run from the experiment's commit)


def rate(exp: Experiment, net: Path, out: Path, prior: float | None, seed: int) -> dict[str, Any]:
    """The net's rating against the experiment's fixed anchors (resumable in ``out``)."""
    from tools.experiments import anchors
    r = exp.spec["rating"]
    return anchors.rate_net(net, REPO_ROOT / exp.spec["anchors"], out, visits=int(r["visits"]),
                            prior=prior, seed=seed, target_halfwidth=float(r["target_halfwidth"]),
                            max_games=int(r["max_games"]), must_play={r["competence_anchor"]: int(r["competence_games"])},
                            options=r.get("options", ""), work_dir=SCRATCH / exp.name / "rating-games" / out.parent.relative_to(exp.root) / out.stem)


def run_unit(exp: Experiment, u: Unit, cpu: int | None, log: Callable[[str], None]) -> dict[str, Any]:
    from train.rundir import RunDir, atomic_write_json
    from tools.experiments.strength import Run, net_at, run_training

    if u.design not in exp.spec["designs"] or u.seed not in exp.spec["seeds"]:
        raise ValueError(f"{u.key} is not a unit of {exp.name}")
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    run = Run(u.design, u.seed, exp.scratch(u))
    t0 = time.time()
    usage = run_training(run, exp.spec["settings"], exp.flops, log, cpu=cpu)
    train_wall = time.time() - t0
    out = exp.unit_dir(u)
    nets: dict[str, Any] = {}
    for f in exp.fractions:
        path, cpu_h, fl = net_at(run, f * exp.flops)
        if f == 0:
            dst = exp.initial_path(u.seed)
            if not dst.is_file():
                save_half(path, dst)
        else:
            dst = out / "nets" / f"{net_name(f)}.pt"
            save_half(path, dst)
        nets[net_name(f)] = {"file": str(dst.relative_to(exp.root)), "checkpoint": path.name,
                             "flops": fl, "cpu_hours": round(cpu_h, 4)}
    ratings: dict[str, Any] = {}
    prior = None
    initial_rating = exp.initial_path(u.seed).with_suffix(".json")
    if 0.0 in exp.fractions:
        r = rate(exp, exp.initial_path(u.seed), initial_rating, None, seed=1000 * u.seed)
        prior = r["elo"]
    for i, f in enumerate(x for x in exp.fractions if x > 0):
        r = rate(exp, out / "nets" / f"{net_name(f)}.pt", out / "ratings" / f"{net_name(f)}.json", prior,
                 seed=1000 * u.seed + 10 * i + 1)
        ratings[net_name(f)] = {"elo": r["elo"], "elo_ci95": r["elo_ci95"], "games": r["games"]}
        prior = r["elo"]
        log(f"{u.key}: {net_name(f)} rates {elo_text(r)} in {r['games']} games")
    records = RunDir(run.root).read_metrics()
    facts = {"experiment": exp.name, "design": u.design, "seed": u.seed,
             "commit": git("rev-parse", "HEAD", cwd=Path.cwd()), "cpu": cpu_label(),
             "started": started, "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
             "train_wall_seconds": round(train_wall, 1), "budget_flops": exp.flops,
             **usage_facts(records), "selfplay": game_facts(run.root), "gating": gating_facts(records),
             "nets": nets, "ratings": ratings}
    del usage
    atomic_write_json(out / "facts.json", facts)
    return facts


# ---------------------------------------------------------------------------------------------
# The standing job


def worktree(commit: str, log: Callable[[str], None]) -> Path:
    """A worktree of ``commit`` with its C core built (made once, reused)."""
    wt = WORKTREES / commit[:12]
    if not (wt / "engine").is_dir():
        WORKTREES.mkdir(parents=True, exist_ok=True)
        git("worktree", "prune")
        git("worktree", "add", "--detach", str(wt), commit)
        log(f"worktree {wt} at {commit[:12]}")
    if not list((wt / "engine").glob("_core*.so")):
        log(f"building the C core in {wt}")
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=wt, check=True,
                       stdout=subprocess.DEVNULL)
    return wt


class Claim:
    """This machine's hold on a unit (``engine.fileio.try_hold`` on its lock file).  ``fileno``
    goes to the unit's process, so the hold lasts until both the driver and the unit have ended:
    a unit left running by a killed driver is not taken by another driver."""

    def __init__(self, u: Unit, held: IO[str]):
        self.unit, self._held = u, held

    def fileno(self) -> int:
        return self._held.fileno()

    def release(self) -> None:
        self._held.close()         # closing drops this process's share of the flock; the file stays


def claim(exp: Experiment, u: Unit) -> Claim | None:
    """A hold on ``u`` for this process (another ``work`` on this machine skips it); None if a
    live process holds it."""
    lock = exp.scratch(u).parent / f"seed-{u.seed}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    held = try_hold(lock)
    return None if held is None else Claim(u, held)


def next_claim(exp: Experiment, shard: tuple[int, int] = (1, 1)) -> Claim | None:
    """A hold on the next unit of ``shard`` that is neither done nor held, or None.  The list
    is read afresh each time and a unit is checked again once held, so a unit that another
    driver finished meanwhile is never run (and its facts never rewritten) a second time."""
    for u in exp.pending(shard):
        held = claim(exp, u)
        if held is None:
            continue
        if exp.done(u):
            held.release()
            continue
        return held
    return None


def commit_unit(exp: Experiment, u: Unit, facts: dict[str, Any]) -> None:
    paths = [exp.unit_dir(u), exp.initial_path(u.seed), exp.initial_path(u.seed).with_suffix(".json")]
    paths = [str(p.resolve()) for p in paths if p.exists()]
    git("add", "--", *paths, cwd=exp.root)
    elo = elo_text(facts["ratings"].get(net_name(exp.fractions[-1])))
    git("commit", "-q", "-m", f"experiments/{exp.name}: {u.key} finished, final net {elo} Elo "
        f"({facts['cpu_seconds'] / 3600:.2f} CPU-hours, {facts['selfplay']['games']} games, {facts['cpu']})",
        "--", *paths, cwd=exp.root)


def secondary_command(exp: Experiment, cpu: int | None, commit: bool) -> list[str] | None:
    """The command that plays the registered secondary analysis's games of every committed unit
    that has none yet (from this tree, pinned like the units); None when none is registered."""
    if not exp.white_spec_path.is_file():
        return None
    cmd = [sys.executable, "-m", "tools.experiments", "white", "work", "--name", exp.name,
           "--base", str(exp.root.parent)] + (["--commit"] if commit else [])
    return cmd if cpu is None else ["taskset", "-c", str(cpu), *cmd]


def parse_shard(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise ValueError(f"--shard wants K/N with 1 <= K <= N, got {text!r}")
    return int(k), int(n)


def work(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.experiments work",
                                 description="The standing job: run the experiment's next units, each from its "
                                             "fixed commit, and commit each as soon as it is done.")
    ap.add_argument("--name", required=True, help="experiments/NAME")
    ap.add_argument("--cpu", type=int, default=None, help="the CPU to pin the units to (default: unpinned)")
    ap.add_argument("--shard", default="1/1", help="K/N: this machine takes every N-th unit from the K-th")
    ap.add_argument("--max-units", type=int, default=None, help="stop after this many units")
    ap.add_argument("--commit", action="store_true", help="git commit each finished unit's folder")
    a = ap.parse_args(argv)
    exp = Experiment.named(a.name)
    shard = parse_shard(a.shard)
    log_path = SCRATCH / exp.name / "work.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, file=sys.stderr, flush=True)
        with open(log_path, "a") as f:
            f.write(line + "\n")

    wt = worktree(exp.spec["commit"], log)
    if a.commit:                  # units finished by an earlier sitting whose commit did not happen
        for u in exp.units():
            if exp.done(u) and git("status", "--porcelain", "--", str(exp.unit_dir(u).resolve()), cwd=exp.root):
                commit_unit(exp, u, exp.facts(u))
                log(f"{u.key}: committed (finished earlier)")
    def secondary() -> None:
        cmd = secondary_command(exp, a.cpu, a.commit)
        if cmd is not None:
            with open(SCRATCH / exp.name / "white.log", "ab") as out:
                r = subprocess.run(cmd, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT)
            log(f"white score: {'played' if r.returncode == 0 else f'failed (exit {r.returncode})'}; "
                f"see {SCRATCH / exp.name / 'white.log'}")

    secondary()
    done = 0
    while a.max_units is None or done < a.max_units:
        held = next_claim(exp, shard)
        if held is None:
            break
        u = held.unit
        try:
            log(f"{u.key}: starting from {exp.spec['commit'][:12]}")
            # tools.experiment, not tools.experiments: the worktree may be of a commit before the split
            cmd = [sys.executable, "-m", "tools.experiment", "unit", "--exp-dir", str(exp.root),
                   "--design", u.design, "--seed", str(u.seed)]
            if a.cpu is not None:
                cmd = ["taskset", "-c", str(a.cpu), *cmd, "--cpu", str(a.cpu)]
            with open(exp.scratch(u).parent / f"seed-{u.seed}.unit.log", "ab") as out:
                r = subprocess.run(cmd, cwd=wt, stdout=out, stderr=subprocess.STDOUT, pass_fds=(held.fileno(),))
            if r.returncode != 0 or not exp.done(u):
                log(f"{u.key}: failed (exit {r.returncode}); see {exp.scratch(u).parent / f'seed-{u.seed}.unit.log'}")
                return 1
            facts = exp.facts(u)
            log(f"{u.key}: done, {facts['cpu_seconds'] / 3600:.2f} CPU-hours")
            if a.commit:
                commit_unit(exp, u, facts)
                log(f"{u.key}: committed")
            done += 1
        finally:
            held.release()
        secondary()
    log(f"{done} units run; {len(exp.pending(shard))} left in shard {a.shard}")
    return 0


def unit(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.experiments unit",
                                 description="One unit of a registered experiment, run in this checkout "
                                             "(work runs it from the experiment's commit).")
    ap.add_argument("--exp-dir", type=Path, required=True)
    ap.add_argument("--design", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args(argv)
    exp = Experiment(a.exp_dir)
    head = git("rev-parse", "HEAD", cwd=Path.cwd())
    if head != exp.spec["commit"]:
        raise ValueError(f"this checkout is at {head[:12]}, the experiment runs from {exp.spec['commit'][:12]} "
                         "(python -m tools.experiments work makes that worktree)")

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    run_unit(exp, Unit(a.design, a.seed), a.cpu, log)
    return 0


# ---------------------------------------------------------------------------------------------
# Registration: everything the analysis depends on, fixed before any data

PREREGISTRATION = """# Pre-registration: {name}

Registered {date} at commit `{commit}`, before any unit of this experiment ran.

## The question
Which training design is strongest for the same computation?  Every run trains from zero to
{flops:.4g} FLOPs (the budget: {budget_note}), on {size}x{size}, komi {komi:g}, Chinese rules,
a {blocks}x{filters} net, V = {visits} visits a move (2V = {visits2}).

{pilot}## Designs
{designs}

Seeds {seeds}: each seed starts every design from the same initial net (`train.loop --seed`).

## Gating
Gated designs play at most {gate_games} games per candidate with an SPRT early stop
(elo0 0, elo1 35, alpha = beta = 0.05, Leela Zero's), except `agz-sync-discard`, ELF OpenGo's
design, which promotes at 55% of {gate_games} games with no SPRT (the decision stops as soon as
55% is guaranteed or out of reach, which changes no decision).  Gating games count in the
budget.

## Ratings
Every net at the fractions {fractions} of the budget is rated against the fixed anchors of
`{anchors}` (rated once by their own calibration round robin; their Elos never change):
batches of games against the anchor nearest its strength until the 95% interval is narrower
than +-{halfwidth:g} Elo or {max_games} games; {rating_visits} visits a move for every net,
whatever its design, with the search options `{rating_options}` (no leaf playouts: the net and
its search alone, as in self-play).  Every final net also plays {competence_games} games against
{competence_anchor}, which count in its rating and in the competence check.

## The analysis
The outcome is the Elo of each run's final net (fraction 1).  Each contrast below is a linear
combination of the designs' Elos, computed **per seed** (paired on the shared initial net), and
estimated as the mean over seeds with a 95% Student-t interval (n - 1 degrees of freedom) and a
two-sided one-sample t-test; the p-values of the contrasts estimated are adjusted together by
Holm's step-down method.  A contrast is **declared** when its Holm-adjusted p is below the
look's level (below); otherwise the designs it compares **cannot be told apart** at this budget.

{contrasts}

The competence check: the best design's final nets (by mean Elo) score at least 25% against
{competence_anchor} over all their games against it (40 or more).

## Adding seeds
Two looks, fixed now.  Look 1 after seeds 1-8 of every design; look 2 after seeds 1-16.  At
each look a contrast is declared at Holm-adjusted p < 0.0294 (Pocock's boundary for two looks
at an overall 0.05).  After look 1, seeds 9-16 are run for every design unless every contrast
is declared or its 95% interval is narrower than +-50 Elo.  No other seeds are added, and no
unit is run again except one that did not finish.
"""


def preregistration(spec: dict[str, Any]) -> str:
    from tools.experiments.paired import CONTRASTS
    from tools.experiments.strength import DESIGNS
    s, r = spec["settings"], spec["rating"]
    designs = "\n".join(f"- `{d}`: `{' '.join(DESIGNS[d])}`" + (" with doubled visits" if d.endswith("-2v") else "")
                        for d in spec["designs"])
    contrasts = "\n".join(f"- {name}: " + " ".join(f"{w:+g} x `{d}`" for d, w in weights.items())
                          for name, weights in CONTRASTS.items() if all(d in spec["designs"] for d in weights))
    note = (f"{spec['cpu_hours_per_run']:g} CPU-hours at {spec['calibration']['flops_per_cpu_second']:.4g} FLOPs per "
            f"CPU-second, measured on {spec['calibration']['cpu']}" if spec.get("calibration") else "given in FLOPs")
    return PREREGISTRATION.format(
        name=spec["name"], date=spec["registered"], commit=spec["commit"], flops=spec["flops_per_run"],
        budget_note=note, size=s["--board-size"], komi=float(s["--komi"]), blocks=s["--blocks"],
        filters=s["--filters"], visits=s["--visits"], visits2=2 * int(s["--visits"]), designs=designs,
        seeds=", ".join(map(str, spec["seeds"])), gate_games=s["--gate-games"],
        fractions=", ".join(f"{f:g}" for f in spec["fractions"]), anchors=spec["anchors"],
        halfwidth=r["target_halfwidth"], max_games=r["max_games"], rating_visits=r["visits"],
        rating_options=r.get("options") or "none",
        competence_games=r["competence_games"], competence_anchor=r["competence_anchor"], contrasts=contrasts,
        pilot=f"## The pilot: why this board, net and budget\n{spec['pilot'].strip()}\n\n" if spec.get("pilot") else "")


def anchors_path(path: Path) -> str:
    """The anchors file as the experiment names it: relative to the repository (whichever
    checkout or worktree holds it), else as given."""
    for root in (REPO_ROOT, *[p for p in path.parents if (p / ".git").exists()][:1]):
        if path.is_relative_to(root):
            return str(path.relative_to(root))
    return str(path)


def register(argv: list[str]) -> int:
    from tools.experiments.strength import DESIGNS, calibrate, calibration_budget, parse_settings
    from train.rundir import atomic_write_json, atomic_write_text
    ap = argparse.ArgumentParser(prog="python -m tools.experiments register",
                                 description="Register a seed experiment before any data: its commit, designs, "
                                             "seeds, budget, ratings and analysis (experiments/NAME).",
                                 epilog="Other --option value pairs are train.loop run settings shared by every run.")
    ap.add_argument("--name", required=True)
    ap.add_argument("--designs", default="az,agz-async-finish,az-2v,agz-async-finish-2v,agz-sync-discard",
                    help="comma-separated designs (default: the 2x2 of gating by visits, and sync-discard)")
    ap.add_argument("--seeds", type=int, default=8, help="seeds of look 1 (default 8)")
    ap.add_argument("--cpu-hours", type=float, default=None, help="budget per run in CPU-hours of this machine "
                    "(converted to FLOPs once, by a calibration run)")
    ap.add_argument("--flops", type=float, default=None, help="budget per run in FLOPs")
    ap.add_argument("--fractions", default="0,0.25,0.5,1", help="budget fractions whose nets are kept and rated")
    ap.add_argument("--anchors", required=True, type=Path, help="the committed anchors file (tools.experiments.anchors calibrate)")
    ap.add_argument("--rating-visits", type=int, default=None, help="visits of every rated net (default 2V)")
    ap.add_argument("--target-halfwidth", type=float, default=75.0, help="rating stops at this 95%% half-width, Elo")
    ap.add_argument("--max-games", type=int, default=120, help="most rating games per net")
    ap.add_argument("--rating-options", default="rollout_weight=0", help="search options of every rated net "
                    "(default rollout_weight=0: the net and its search alone, as in self-play, no leaf playouts)")
    ap.add_argument("--competence-anchor", default="gnugo-L1")
    ap.add_argument("--competence-games", type=int, default=6, help="games of each final net against it")
    ap.add_argument("--pilot", type=Path, default=None, help="a Markdown file: what the pilot measured and why "
                    "this board, net and budget (goes into the pre-registration)")
    ap.add_argument("--cpu", type=int, default=None, help="the CPU to pin the calibration run to")
    ap.add_argument("--commit", default="HEAD", help="the commit the experiment runs from (default HEAD); "
                    "registration itself runs there, in its worktree")
    ap.add_argument("--base", type=Path, default=EXPERIMENTS, help=argparse.SUPPRESS)
    a, extra = ap.parse_known_args(argv)
    commit = git("rev-parse", a.commit)
    if commit != git("rev-parse", "HEAD") or git("status", "--porcelain", "--", *CODE_PATHS):
        # run where the experiment will run: a worktree of the commit, clean by construction
        wt = worktree(commit, lambda m: print(m, file=sys.stderr))
        rest = [x for i, x in enumerate(argv) if x != "--commit" and (i == 0 or argv[i - 1] != "--commit")]
        rest = [x for x in rest if not x.startswith("--commit=")]
        paths = ["--base", str(a.base.resolve()), "--anchors", str(a.anchors.resolve())]
        if a.pilot is not None:
            paths += ["--pilot", str(a.pilot.resolve())]
        # tools.experiment, the path every commit has (the module docstring says why)
        return subprocess.run([sys.executable, "-m", "tools.experiment", "register", *rest, *paths], cwd=wt).returncode
    root = a.base / a.name
    if (root / "experiment.json").exists():
        raise ValueError(f"{root} is registered already: a changed experiment is a new name")
    if (a.cpu_hours is None) == (a.flops is None):
        raise ValueError("give the budget of each run: --cpu-hours H or --flops F")
    designs = a.designs.split(",")
    for d in designs:
        if d not in DESIGNS:
            raise ValueError(f"unknown design {d!r}; known: {', '.join(DESIGNS)}")
    anchors_file = a.anchors.resolve()
    anchors_doc = json.loads(anchors_file.read_text())
    names = [x["name"] for x in anchors_doc["anchors"]] if isinstance(anchors_doc["anchors"], list) \
        else list(anchors_doc["anchors"])
    if a.competence_anchor not in names:
        raise ValueError(f"{a.competence_anchor} is not an anchor of {a.anchors} ({', '.join(names)})")
    settings = parse_settings(extra)
    if int(settings["--board-size"]) != int(anchors_doc["board_size"]) or \
            float(settings["--komi"]) != float(anchors_doc["komi"]):
        raise ValueError(f"{a.anchors} is for {anchors_doc['board_size']}x{anchors_doc['board_size']} komi "
                         f"{anchors_doc['komi']}, the runs for {settings['--board-size']} komi {settings['--komi']}")
    spec: dict[str, Any] = {
        "format": FORMAT, "name": a.name, "commit": git("rev-parse", "HEAD"),
        "registered": time.strftime("%Y-%m-%dT%H:%M:%S"), "designs": designs,
        "seeds": list(range(1, a.seeds + 1)), "settings": settings,
        "fractions": [float(f) for f in a.fractions.split(",")],
        "anchors": anchors_path(anchors_file),
        "rating": {"visits": a.rating_visits or 2 * int(settings["--visits"]), "target_halfwidth": a.target_halfwidth,
                   "max_games": a.max_games, "competence_anchor": a.competence_anchor,
                   "competence_games": a.competence_games, "options": a.rating_options},
    }
    if a.pilot is not None:
        spec["pilot"] = a.pilot.read_text()
    root.mkdir(parents=True, exist_ok=True)
    if a.cpu_hours is not None:
        scratch = SCRATCH / a.name
        scratch.mkdir(parents=True, exist_ok=True)
        spec["calibration"] = calibrate(scratch, settings, calibration_budget(), lambda m: print(m, file=sys.stderr), cpu=a.cpu)
        spec["cpu_hours_per_run"] = a.cpu_hours
        spec["flops_per_run"] = a.cpu_hours * 3600 * spec["calibration"]["flops_per_cpu_second"]
    else:
        spec["flops_per_run"] = a.flops
    atomic_write_json(root / "experiment.json", spec)
    atomic_write_text(root / "preregistration.md", preregistration(spec))
    print(f"registered {root}: {len(designs)} designs x {a.seeds} seeds, {spec['flops_per_run']:.4g} FLOPs a run")
    return 0
