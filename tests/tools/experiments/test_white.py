"""The secondary analysis, each final net's score as White: registered before its games, played
through the anchors' rating with every game compulsory, committed net by net, and analysed as
the primary contrasts on a hand-made table with a known answer."""
from __future__ import annotations

import json

import pytest

from tools.experiments import anchors, registry, report, white
from tools.experiments.registry import Experiment, Unit

from tests.tools.experiments.test_registry import fake_unit, git, make_repo

#: White games the net wins in each batch of 10 (5 as White), by unit: az/seed-s and
#: agz-async-finish/seed-s, so White scores (two batches, 10 White games) of 20/40/60% and 40/80/60%.
WHITE_WINS = {("az", 1): 1, ("az", 2): 2, ("az", 3): 3,
              ("agz-async-finish", 1): 2, ("agz-async-finish", 2): 4, ("agz-async-finish", 3): 3}


def real_anchors(exp: Experiment) -> None:
    """The experiment's anchors file in the calibrated format (names, specs, fixed Elos)."""
    doc = {"format": anchors.FORMAT, "board_size": 5, "komi": 2.5, "rules": "chinese",
           "anchors": [{"name": n, "spec": f"inproc:uniform:visits={v}", "elo": e, "elo_ci95": [e - 50, e + 50]}
                       for n, v, e in (("uniform-1", 1, -600.0), ("gnugo-L1", 2, 0.0))]}
    (exp.root.parent.parent / "anchors.json").write_text(json.dumps(doc))


def fake_games(wins: int):
    """A game player where the net wins every Black game and ``wins`` White games of a batch."""
    def play(me, anchor, games, seed, folder):
        out = []
        for i in range(games):
            if i % 2 == 0:
                out.append((me[0], anchor[0], 1.0))
            else:
                out.append((anchor[0], me[0], 0.0 if i // 2 < wins else 1.0))
        return out
    return play


@pytest.fixture
def exp(tmp_path, monkeypatch):
    monkeypatch.setattr(white, "SCRATCH", tmp_path / "scratch")
    monkeypatch.setattr(registry, "SCRATCH", tmp_path / "scratch")
    e = make_repo(tmp_path / "repo")
    real_anchors(e)
    return e


def test_registration_comes_before_any_game_and_is_written_once(exp):
    with pytest.raises(ValueError, match="not anchors"):
        white.register(exp, ("uniform-1", "gnugo-L9"), 10)
    with pytest.raises(ValueError, match="even"):
        white.register(exp, ("uniform-1",), 9)
    spec = white.register(exp, ("uniform-1", "gnugo-L1"), 10, commit=True)
    assert spec["commit"] != git(exp.root, "rev-parse", "HEAD")           # the code's commit, then its own
    assert "white-score" in git(exp.root, "log", "-1", "--name-only")
    assert "before any of its games" in (exp.root / "secondary" / "white-score.md").read_text()
    with pytest.raises(ValueError, match="registered already"):
        white.register(exp, ("uniform-1", "gnugo-L1"), 10)


def test_work_plays_and_commits_each_net_and_the_analysis_pairs_by_seed(exp, monkeypatch):
    with pytest.raises(ValueError, match="not registered"):
        white.work(exp, commit=True, max_nets=None, log=lambda m: None)
    white.register(exp, ("uniform-1", "gnugo-L1"), 10, commit=True)
    for (design, seed) in WHITE_WINS:
        u = Unit(design, seed)
        fake_unit(exp, u, 0.0)
        (exp.unit_dir(u) / "nets").mkdir()
        (exp.unit_dir(u) / "nets" / "f1.pt").write_bytes(f"{design}-{seed}".encode())
    played = []
    original = white.play

    def play(exp_, spec, u, log=None):
        played.append(u)
        return original(exp_, spec, u, play_games=fake_games(WHITE_WINS[(u.design, u.seed)]), log=log)

    monkeypatch.setattr(white, "play", play)
    assert white.work(exp, commit=True, max_nets=None, log=lambda m: None) == 0
    assert len(played) == 6
    log = git(exp.root, "log", "--format=%s")
    assert "experiments/x/secondary: az/seed-2's final net, 4/10 as White, 10/10 as Black" in log
    assert white.work(exp, commit=True, max_nets=None, log=lambda m: None) == 0
    assert len(played) == 6                                                # nothing is played twice
    doc = json.loads(white.result_path(exp, Unit("az", 1)).read_text())
    assert doc["net"] == "runs/az/seed-1/nets/f1.pt" and doc["games"] == 20 and doc["done"]

    summary = white.analyse(exp, looks=(3,), level=0.05)
    assert summary["seeds_complete"] == [1, 2, 3] and summary["look"] == 1
    assert summary["designs"]["az"]["white"] == pytest.approx(40.0)
    assert summary["designs"]["agz-async-finish"]["white_games"] == [18.0, 30]
    assert summary["designs"]["az"]["black_games"] == [30.0, 30]
    (c,) = summary["contrasts"]                          # gating at V: 20, 40, 0 points by seed
    assert c["per_seed"] == {"1": 20.0, "2": 40.0, "3": 0.0}
    assert c["estimate"] == pytest.approx(20.0)
    assert c["ci95"] == pytest.approx([20 - 49.7, 20 + 49.7], abs=0.1)   # t(0.975, 2) = 4.303, se = 11.55
    text = "\n".join(white.lines(summary, 6))
    assert "| gating at V (agz-async-finish - az) | 3 | +20.0 |" in text and "cannot be told apart" in text

    whole = report.analyse(exp)                          # the write-up carries the section
    assert whole["white"]["contrasts"][0]["estimate"] == pytest.approx(20.0)


def test_the_standing_job_plays_the_secondary_games_once_registered(exp):
    """work runs ``white work`` after each unit (pinned like the units) once it is registered."""
    assert registry.secondary_command(exp, 1, commit=True) is None
    white.register(exp, ("uniform-1", "gnugo-L1"), 10)
    cmd = registry.secondary_command(exp, 1, commit=True)
    assert cmd[:3] == ["taskset", "-c", "1"] and cmd[4:] == [
        "-m", "tools.experiments", "white", "work", "--name", "x", "--base", str(exp.root.parent), "--commit"]
    assert "--commit" not in registry.secondary_command(exp, None, commit=False)
