"""Pachi as a ladder anchor (train.match.ladder --pachi / --pachi-playouts): the anchor list built from
the options, and a real 2-game ladder against Pachi 12.90 when its binary is there ($PACHI, else
/work/pachi/pachi; docs/matches.md says how to build it)."""
import json
import os

import pytest

from tests.match.test_ladder import make_run
from train.match import ladder


def test_anchors_are_gnugo_levels_then_pachi_by_playouts():
    cfg = ladder.LadderConfig(levels=(1, 5), pachi="/opt/my pachi/pachi", pachi_playouts=(2000, 500, 2000))
    assert ladder.anchors(cfg) == [
        ("gnugo-L1", ladder.GNUGO.format(level=1)),
        ("gnugo-L5", ladder.GNUGO.format(level=5)),
        ("pachi-500", "'/opt/my pachi/pachi' -t =500 threads=1"),
        ("pachi-2000", "'/opt/my pachi/pachi' -t =2000 threads=1"),
    ]
    # Pachi alone, and no Pachi at all
    only = ladder.LadderConfig(levels=(), pachi="/p/pachi", pachi_playouts=(1000,))
    assert ladder.anchors(only) == [("pachi-1000", "/p/pachi -t =1000 threads=1")]
    assert [n for n, _ in ladder.anchors(ladder.LadderConfig())] == ["gnugo-L1", "gnugo-L5", "gnugo-L10"]
    with pytest.raises(ValueError, match="--pachi"):
        ladder.anchors(ladder.LadderConfig(pachi=None, pachi_playouts=(500,)))


def test_the_skip_rule_runs_from_the_last_gnugo_level_into_pachi(tmp_path, monkeypatch):
    rd = make_run(tmp_path)
    played = []
    monkeypatch.setattr(ladder, "play", lambda rd_, cfg, me, opp, games, size: played.append(opp[0]) or {})
    monkeypatch.setattr(ladder, "_results", lambda path: {"lost": True} if path.name.endswith("gnugo-L10") else None)
    monkeypatch.setattr(ladder, "_score_of", lambda doc, name: (0.0, 4))
    cfg = ladder.LadderConfig(levels=(1, 10), pachi="/p/pachi", pachi_playouts=(500, 1000), pair_games=0)
    ladder.run_ladder(rd, cfg, log=lambda *a: None)
    # lost every game to gnugo-L10: neither Pachi anchor is played
    assert played == ["gnugo-L1", "gnugo-L10"] * 2


def test_pachi_options(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PACHI", "/from/env/pachi")
    assert ladder.default_pachi() == "/from/env/pachi"
    monkeypatch.delenv("PACHI")
    assert ladder.default_pachi() == (ladder.PACHI_DEFAULT if os.path.isfile(ladder.PACHI_DEFAULT) else None)
    with pytest.raises(SystemExit):
        ladder.main([str(tmp_path), "--pachi", "/p/pachi", "--pachi-playouts", "20"])
    assert "fewer than 500 playouts" in capsys.readouterr().err


PACHI = ladder.default_pachi()


@pytest.mark.slow          # games against Pachi
@pytest.mark.skipif(not (PACHI and os.access(PACHI, os.X_OK)),
                    reason="no Pachi binary ($PACHI or /work/pachi/pachi): build Pachi 12.90 as in "
                           "docs/matches.md")
def test_two_games_against_pachi(tmp_path):
    rd = make_run(tmp_path)                     # 5x5, tiny random checkpoints: rate the newest only
    rd.model_path(0).unlink()
    # komi 30.5 on 5x5: White wins every game, so each side wins its game as White and Pachi is
    # rated (a player that won every game is left out of the fit as unbounded)
    code = ladder.main([str(rd.root), "--levels", "--pachi", PACHI, "--pachi-playouts", "500",
                        "--games", "2", "--pair-games", "0", "--komi", "30.5", "--visits", "4",
                        "--referee", "none", "--nice", "0"])
    assert code == 0
    doc = json.loads((rd.root / "ladder" / "ladder.json").read_text())
    names = {p["name"]: p for p in doc["players"]}
    assert doc["games"] == 2 and names["pachi-500"]["games"] == 2 and not names["pachi-500"]["model"]
    assert names["pachi-500"]["points"] == 1.0 and doc["anchor"] == "model-0000100"
    results = json.loads((rd.root / "ladder" / "model-0000100-vs-pachi-500" / "results.json").read_text())
    assert len(results["games"]) == 2 and results["complete"]
