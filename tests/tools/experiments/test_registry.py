"""The seed experiment as committed results (tools.experiments.registry): registration before any data, units
that any clone can take up where the committed results stop, shards that split the units between
machines, and a write-up regenerated from the committed files alone."""
from __future__ import annotations

import json
import shutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools import REPO_ROOT
from tools.experiments import paired, registry, report
from tools.experiments.registry import Experiment, Unit

TINY = {"--board-size": "5", "--komi": "2.5", "--rules": "chinese", "--blocks": "1", "--filters": "8",
        "--visits": "8", "--parallel-games": "4", "--batch": "16", "--train-batch": "16", "--min-games": "2",
        "--checkpoint-every": "4", "--gate-games": "400", "--gate-parallel-games": "4", "--threads": "1",
        "--metrics-every": "1", "--inference-dtype": "fp32"}
DESIGNS = ["az", "agz-async-finish"]


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def anchors_file(path: Path) -> Path:
    path.write_text(json.dumps({"board_size": 5, "komi": 2.5, "rules": "chinese",
                                "anchors": [{"name": "uniform-1", "elo": -600.0}, {"name": "gnugo-L1", "elo": 0.0}]}))
    return path


def make_repo(root: Path, seeds=(1, 2, 3)) -> Experiment:
    """A git repository holding one registered experiment (nothing run yet)."""
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "t")
    anchors_file(root / "anchors.json")
    shutil.copy(REPO_ROOT / ".gitignore", root / ".gitignore")      # the project's own ignore rules
    git(root, "add", "anchors.json", ".gitignore")
    git(root, "commit", "-q", "-m", "anchors")
    spec = {"format": registry.FORMAT, "name": "x", "commit": git(root, "rev-parse", "HEAD"),
            "registered": "2026-12-07T00:00:00", "designs": DESIGNS, "seeds": list(seeds),
            "settings": TINY, "fractions": [0.0, 0.5, 1.0], "flops_per_run": 1.5e9,
            "anchors": str(root / "anchors.json"),
            "rating": {"visits": 8, "target_halfwidth": 75, "max_games": 20, "competence_anchor": "gnugo-L1",
                       "competence_games": 6}}
    exp_dir = root / "experiments" / "x"
    exp_dir.mkdir(parents=True)
    (exp_dir / "experiment.json").write_text(json.dumps(spec))
    (exp_dir / "preregistration.md").write_text(registry.preregistration(spec))
    git(root, "add", "experiments")
    git(root, "commit", "-q", "-m", "register x")
    return Experiment(exp_dir)


def test_the_projects_ignore_rules_keep_a_units_files(tmp_path):
    """git add refused a unit's files when ``runs/`` was ignored at every depth."""
    exp = make_repo(tmp_path / "repo")
    u = Unit("az", 1)
    fake_unit(exp, u, 0.0)
    registry.commit_unit(exp, u, json.loads((exp.unit_dir(u) / "facts.json").read_text()))
    tracked = git(tmp_path / "repo", "ls-files", "experiments/x/runs")
    assert "experiments/x/runs/az/seed-1/facts.json" in tracked


def fake_rate(exp, net, out, prior, seed):
    """A rating that depends on the unit only (design, seed), written as rate_net writes it."""
    design = 1 if "agz" in str(out) else 0
    s = int(re.search(r"seed-(\d+)", str(out)).group(1))
    doc = {"elo": 100.0 * design + 10.0 * s, "elo_ci95": [0.0, 200.0], "games": 6,
           "results": [{"anchor": "gnugo-L1", "score": 0.5}] * 6}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc))
    return doc


def fake_unit(exp: Experiment, u: Unit, elo: float) -> None:
    """Committed results of a unit, written by hand."""
    d = exp.unit_dir(u)
    (d / "ratings").mkdir(parents=True)
    won, lost = ["f1", "gnugo-L1", 1.0], ["f1", "gnugo-L1", 0.0]         # [black, white, Black's score]
    games = [won, won, lost, lost, lost] + [g[1::-1] + [1.0 - g[2]] for g in (won, won, lost, lost, lost)]
    (d / "ratings" / "f1.json").write_text(json.dumps({"name": "f1", "elo": elo, "elo_ci95": [elo - 50, elo + 50],
                                                       "games": 40, "batches": [{"anchor": "gnugo-L1", "games": games}],
                                                       "results": [{"anchor": "gnugo-L1", "score": 1.0}] * 4
                                                       + [{"anchor": "gnugo-L1", "score": 0.0}] * 6}))
    facts = {"design": u.design, "seed": u.seed, "commit": "c" * 40, "cpu": "test CPU", "cpu_seconds": 360.0,
             "flops": 1.6e9, "selfplay": {"games": 10, "endings": {"passes": 9, "resign": 1, "move cap": 0},
                                          "length": {"mean": 20.0}},
             "gating": {"promotions": 1, "games": 30},
             "ratings": {"f0.5": {"elo": elo / 2, "elo_ci95": [elo / 2 - 50, elo / 2 + 50], "games": 20},
                         "f1": {"elo": elo, "elo_ci95": [elo - 50, elo + 50], "games": 40}}}
    (d / "facts.json").write_text(json.dumps(facts))


def test_units_run_seed_by_seed_and_shards_split_them(tmp_path):
    exp = make_repo(tmp_path / "repo")
    order = [u.key for u in exp.units()]
    assert order[:4] == ["az/seed-1", "agz-async-finish/seed-1", "az/seed-2", "agz-async-finish/seed-2"]
    a, b = exp.pending((1, 2)), exp.pending((2, 2))
    assert not set(a) & set(b) and set(a) | set(b) == set(exp.units())
    with pytest.raises(ValueError):
        registry.parse_shard("3/2")


def test_preregistration_states_the_contrasts_the_test_and_the_looks(tmp_path):
    exp = make_repo(tmp_path / "repo")
    text = (exp.root / "preregistration.md").read_text()
    assert "gating at V (agz-async-finish - az)" in text
    assert "gating x visits interaction" not in text     # listed only when its designs are registered
    assert "Holm" in text and "Student-t" in text and "0.0294" in text and "seeds 9-16" in text


@pytest.mark.slow          # trains a unit for real (about a minute)
def test_a_fresh_clone_resumes_where_the_committed_results_stop(tmp_path, monkeypatch):
    origin = make_repo(tmp_path / "origin")
    fake_unit(origin, Unit("az", 1), 0.0)
    git(origin.root.parents[1], "add", "experiments")
    git(origin.root.parents[1], "commit", "-q", "-m", "az seed 1")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin.root.parents[1]), str(clone))
    git(clone, "config", "user.email", "t@example.org")
    git(clone, "config", "user.name", "t")
    exp = Experiment(clone / "experiments" / "x")
    assert exp.done(Unit("az", 1))
    todo = exp.pending()
    assert todo[0] == Unit("agz-async-finish", 1) and Unit("az", 1) not in todo

    # the next unit, for real: trained to the budget, its nets kept, rated, its facts written
    monkeypatch.setattr(registry, "SCRATCH", tmp_path / "scratch")
    monkeypatch.setattr(registry, "rate", fake_rate)
    monkeypatch.chdir(clone)
    facts = registry.run_unit(exp, todo[0], cpu=None, log=lambda m: None)
    assert facts["commit"] == git(clone, "rev-parse", "HEAD")
    assert facts["flops"] >= exp.flops and facts["cpu_seconds"] > 0
    sp = facts["selfplay"]
    assert sp["games"] > 0 and sum(sp["endings"].values()) == sp["games"]
    assert set(facts["nets"]) == {"f0", "f0.5", "f1"} and facts["ratings"]["f1"]["elo"] == 110.0
    from engine.nets import weights
    model, _ = weights.load(exp.unit_dir(todo[0]) / "nets" / "f1.pt")        # fp16 on disk, loads
    assert next(model.parameters()).dtype.is_floating_point
    assert exp.initial_path(1).is_file()
    registry.commit_unit(exp, todo[0], facts)
    assert git(clone, "status", "--porcelain", "--", "experiments") == ""

    # a second clone, of the first: both units of seed 1 are done there
    again = tmp_path / "again"
    git(tmp_path, "clone", "-q", str(clone), str(again))
    exp2 = Experiment(again / "experiments" / "x")
    assert exp2.pending()[0] == Unit("az", 2)


def test_a_unit_runs_only_from_the_experiments_commit(tmp_path, monkeypatch):
    exp = make_repo(tmp_path / "repo")
    (tmp_path / "repo" / "change.txt").write_text("a refactoring")
    git(tmp_path / "repo", "add", "change.txt")
    git(tmp_path / "repo", "commit", "-q", "-m", "later")
    monkeypatch.chdir(tmp_path / "repo")
    with pytest.raises(ValueError, match="runs from"):
        registry.unit(["--exp-dir", str(exp.root), "--design", "az", "--seed", "1"])


def test_report_regenerates_from_committed_results(tmp_path):
    exp = make_repo(tmp_path / "repo", seeds=(1, 2, 3, 4, 5, 6, 7, 8))
    table = {}
    for s in range(1, 9):
        for d, extra in (("az", 0.0), ("agz-async-finish", 80.0 + (s % 3) * 10)):
            table[(d, s)] = 30.0 * s + extra            # a seed effect shared by both designs
            fake_unit(exp, Unit(d, s), table[(d, s)])
    out = tmp_path / "docs" / "seed-experiment"
    assert report.report(["--name", "x", "--base", str(exp.root.parent), "--out", str(out)]) == 0
    doc = json.loads(out.with_suffix(".json").read_text())
    assert doc["look"] == 1 and doc["seeds_complete"] == list(range(1, 9))
    assert doc["designs"]["az"]["runs"] == 8 and doc["anchors"] == {"uniform-1": -600.0, "gnugo-L1": 0.0}
    (c,) = doc["contrasts"]
    want = paired.contrasts(table, {"g": paired.CONTRASTS["gating at V (agz-async-finish - az)"]})[0]
    assert c["estimate"] == pytest.approx(want.estimate, abs=0.05) and c["p_holm"] < report.LOOK_LEVEL
    assert doc["competence"] == {"design": "agz-async-finish", "anchor": "gnugo-L1", "score": 0.4, "games": 80}
    md = out.with_suffix(".md").read_text()
    assert md.startswith("# Pre-registration: x") and "declared" in md
    assert out.with_suffix(".png").stat().st_size > 5000
    # fewer seeds than the first look: interim figures, nothing declared
    for s in range(4, 9):
        (exp.unit_dir(Unit("az", s)) / "facts.json").unlink()
    report.report(["--name", "x", "--base", str(exp.root.parent), "--out", str(out)])
    assert json.loads(out.with_suffix(".json").read_text())["look"] == 0
    assert "**None yet.**" in out.with_suffix(".md").read_text()


def test_report_splits_the_final_nets_games_by_colour_and_flags_colour_bound_scores(tmp_path):
    """A net that wins every game as Black and loses every game as White against an anchor scores
    50% whatever its strength: the colour check counts its games by colour and flags it."""
    exp = make_repo(tmp_path / "repo")
    for design in ("az", "agz-async-finish"):
        fake_unit(exp, Unit(design, 1), 0.0)
    def games(net_black: float, net_white: float, n: int) -> list[list]:   # [black, white, Black's score]
        return [["f1", "gnugo-L1", net_black], ["gnugo-L1", "f1", 1.0 - net_white]] * n
    bound = {"name": "f1", "elo": 0.0, "batches": [{"anchor": "gnugo-L1", "games": games(1.0, 0.0, 10)},
                                                    {"anchor": "uniform-1", "games": games(1.0, 1.0, 2)}]}
    mixed = {"name": "f1", "elo": 0.0, "batches": [{"anchor": "gnugo-L1", "games": games(1.0, 0.0, 5)
                                                     + games(0.0, 1.0, 5)}]}
    for design, doc in (("az", bound), ("agz-async-finish", mixed)):
        (exp.unit_dir(Unit(design, 1)) / "ratings" / "f1.json").write_text(json.dumps(doc))
    out = tmp_path / "docs" / "seed-experiment"
    report.report(["--name", "x", "--base", str(exp.root.parent), "--out", str(out)])
    colour = json.loads(out.with_suffix(".json").read_text())["colour"]
    assert colour["games"] == 24 + 20 and colour["black_share"] == pytest.approx((20 + 2 + 10) / 44, abs=1e-3)
    az = colour["designs"]["az"]
    assert az["by_anchor"]["gnugo-L1"] == {"black": [10.0, 10], "white": [0.0, 10]}
    assert az["by_anchor"]["uniform-1"] == {"black": [2.0, 2], "white": [2.0, 2]}
    assert az["colour_bound"] == ["gnugo-L1"] and colour["designs"]["agz-async-finish"]["colour_bound"] == []
    md = out.with_suffix(".md").read_text()
    assert "| `az` | gnugo-L1 | 10/10 | 0/10 |" in md and "Colour-bound (`az` against gnugo-L1)" in md


def test_drivers_hold_distinct_units_and_never_run_a_finished_one(tmp_path, monkeypatch):
    """Two drivers on one machine: each holds a unit the other cannot take, a held unit is free
    again once released, and a unit another driver finished meanwhile is skipped, even from a
    list read before it finished (re-running it would rewrite its committed facts)."""
    monkeypatch.setattr(registry, "SCRATCH", tmp_path / "scratch")
    exp = make_repo(tmp_path / "repo")
    first, second = registry.next_claim(exp), registry.next_claim(exp)
    assert (first.unit, second.unit) == (Unit("az", 1), Unit("agz-async-finish", 1))
    assert registry.claim(exp, Unit("az", 1)) is None                     # held by the first driver
    fake_unit(exp, Unit("az", 1), 0.0)                                    # the first driver finishes it
    first.release()
    stale = [Unit("az", 1), Unit("agz-async-finish", 1), Unit("az", 2)]   # a list read before that
    monkeypatch.setattr(exp, "pending", lambda shard=(1, 1): stale)
    third = registry.next_claim(exp)
    assert third.unit == Unit("az", 2)                    # not the finished one, not the held one
    second.release()
    again = registry.claim(exp, Unit("agz-async-finish", 1))              # free once released
    assert again is not None
    again.release()
    third.release()


def test_a_units_process_keeps_its_hold_after_the_driver_lets_go(tmp_path, monkeypatch):
    """The unit runs with the claim's file passed to it, so a unit left running by a driver
    that was killed is not taken by another driver until the unit itself ends."""
    monkeypatch.setattr(registry, "SCRATCH", tmp_path / "scratch")
    exp = make_repo(tmp_path / "repo")
    held = registry.claim(exp, Unit("az", 1))
    unit = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                            pass_fds=(held.fileno(),))
    try:
        held.release()                                     # the driver is gone; its unit runs on
        assert registry.claim(exp, Unit("az", 1)) is None
    finally:
        unit.communicate(b"")                              # the unit ends
    again = registry.claim(exp, Unit("az", 1))
    assert again is not None
    again.release()
