"""Tests for train.match.ratings: games collected from a synthetic run directory (gating SGFs, match
results, stray match SGFs; self-play and already-listed SGFs skipped) and Bradley-Terry Elo
checked against hand-computed values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from engine import sgf
from engine.core import BLACK, WHITE
from engine.nets.network import NetConfig
from engine.nets.weights import new_model, read_meta, save
from train.match.ratings import collect_games, main, rate, score_from_result

ELO_PER_NAT = 400.0 / math.log(10.0)
M0, M1, M2 = "model-0000000", "model-0000100", "model-0000200"


def write_model(run: Path, step: int, created: str | None) -> Path:
    path = run / "models" / f"model-{step:07d}.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"step": step}
    if created:
        meta["created"] = created
    save(path, new_model(NetConfig(blocks=1, filters=8), seed=step), meta)
    return path


def write_sgf(path: Path, black: str, white: str, result: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(sgf.write_game(9, 7.5, "chinese", [(BLACK, 40), (WHITE, 81), (BLACK, 81)],
                                    black=black, white=white, result=result))


def gating_games(run: Path, candidate: str, best: str, wins: int, losses: int) -> None:
    """``wins + losses`` gating SGFs of ``candidate`` against ``best``, colours alternating."""
    for i in range(wins + losses):
        cand_wins = i < wins
        black, white = (candidate, best) if i % 2 == 0 else (best, candidate)
        black_wins = cand_wins == (black == candidate)
        write_sgf(run / "gating" / candidate / f"g{i:05d}.sgf", black, white,
                  "B+R" if black_wins else "W+3.5")


def match_results(folder: Path, a: str, b: str, a_wins: int, b_wins: int, draws: int = 0) -> None:
    """A train.match results file (engines named ``a`` and ``b``) plus the SGFs it lists."""
    games = []
    outcomes = ["A"] * a_wins + ["B"] * b_wins + [None] * draws
    for i, winner in enumerate(outcomes):
        black, white = ("A", "B") if i % 2 == 0 else ("B", "A")
        name = folder / f"{i:04d}-{black}-vs-{white}.sgf"
        result = "0" if winner is None else ("B+R" if winner == black else "W+R")
        names = {"A": a, "B": b}
        write_sgf(name, names[black], names[white], result)
        games.append({"index": i, "black": black, "white": white, "winner": winner,
                      "result": result, "sgf": str(name)})
    doc = {"format": "train.match results v1", "complete": True,
           "engines": {"A": {"name": a, "command": f"inproc:{a}.pt"},
                       "B": {"name": b, "command": f"inproc:{b}.pt"}},
           "games": games}
    (folder / "results.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("result, score", [
    ("B+R", 1.0), ("W+12.5", 0.0), ("b+t", 1.0), ("0", 0.5), ("Draw", 0.5), ("?", None),
    ("Void", None), (None, None)])
def test_score_from_result(result, score):
    assert score_from_result(result) == score


def test_two_models_known_scores(tmp_path):
    """3 wins in 4 games: Elo difference 400 log10(3) = 190.8; standard error
    1 / sqrt(n p (1 - p)) nats = 1 / sqrt(4 * 0.75 * 0.25) = 1.1547 nats = 200.6 Elo."""
    run = tmp_path / "run"
    write_model(run, 0, "2026-01-01T00:00:00+00:00")
    write_model(run, 100, "2026-01-01T02:30:00+00:00")
    gating_games(run, M1, M0, wins=3, losses=1)
    write_sgf(run / "sgf" / "g00000001-w00.sgf", M1, M1, "B+R")        # self-play: skipped
    write_sgf(run / "sgf" / "g00000002-w00.sgf", M0, M1, "B+R")        # self-play folder: skipped
    write_sgf(run / "gating" / M1 / "g00004.sgf", M1, M0, "?")        # no result: skipped
    write_sgf(run / "gating" / M1 / "g00005.sgf", f"{M0},{M1}", M0, "B+R")  # model switch: skipped

    games, counts = collect_games(run)
    assert counts == {"results": 0, "sgf": 4, "skipped_sgf": 2}
    assert sorted((g.black, g.white, g.score) for g in games) == sorted(
        [(M1, M0, 1.0), (M0, M1, 0.0), (M1, M0, 1.0), (M0, M1, 1.0)])

    doc = rate(games, run, prior_draws=0)
    assert doc["anchor"] == M0
    p0, p1 = doc["players"]
    assert (p0["name"], p0["step"], p0["elo"], p0["stderr"]) == (M0, 0, 0.0, 0.0)
    assert (p1["name"], p1["step"], p1["games"], p1["points"]) == (M1, 100, 4, 3.0)
    assert p1["elo"] == pytest.approx(400 * math.log10(3), abs=1e-6)            # 190.85
    assert p1["stderr"] == pytest.approx(ELO_PER_NAT / math.sqrt(0.75), abs=1e-6)  # 200.59
    assert (p0["hours"], p1["hours"]) == (0.0, 2.5)                   # from the checkpoint meta


def test_three_models_transitive(tmp_path):
    """A beats B 3:1, B beats C 3:1, A beats C 9:1: odds 3, 3 and 9 are exactly Bradley-Terry
    consistent, so the maximum-likelihood fit reproduces them: B = -190.8, C = -381.7."""
    run = tmp_path / "run"
    for step in (0, 100, 200):
        write_model(run, step, None)   # no created time: the file's mtime
    gating_games(run, M1, M0, wins=1, losses=3)               # A = M0 beats B = M1 3:1
    gating_games(run, M2, M1, wins=1, losses=3)               # B = M1 beats C = M2 3:1
    match_results(run / "matches" / "a-vs-c", M0, M2, a_wins=9, b_wins=1)   # A beats C 9:1

    games, counts = collect_games(run)
    assert counts == {"results": 1, "sgf": 8, "skipped_sgf": 0}   # the match SGFs count once
    assert len(games) == 18
    doc = rate(games, run, prior_draws=0)
    elo = {p["name"]: p["elo"] for p in doc["players"]}
    assert elo[M0] == 0.0
    assert elo[M1] == pytest.approx(-400 * math.log10(3), abs=1e-6)
    assert elo[M2] == pytest.approx(-800 * math.log10(3), abs=1e-6)
    assert [p["name"] for p in doc["players"]] == [M0, M1, M2]        # models by step
    assert all(p["hours"] is not None and p["hours"] >= 0 for p in doc["players"])


def test_other_engines_and_the_command_line(tmp_path, capsys):
    """A match against GNU Go without its results file (SGFs only) rates GNU Go too; the CLI
    prints the table and writes RUN_DIR/ratings.json (and --json OUT)."""
    run = tmp_path / "run"
    write_model(run, 0, "2026-01-01T00:00:00+00:00")
    write_model(run, 100, "2026-01-01T01:00:00+00:00")
    gating_games(run, M1, M0, wins=3, losses=1)
    for i in range(4):   # M1 vs GNU Go 1:3
        black, white = (M1, "GNU Go 3.8") if i % 2 == 0 else ("GNU Go 3.8", M1)
        m1_wins = i == 0
        write_sgf(run / "match-gnugo" / f"{i:04d}.sgf", black, white,
                  "B+R" if m1_wins == (black == M1) else "W+R")
    out = tmp_path / "copy.json"
    assert main([str(run), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "anchor model-0000000 = 0" in text and "GNU Go 3.8" in text
    doc = json.loads((run / "ratings.json").read_text())
    assert doc == json.loads(out.read_text())
    assert doc["format"] == "train.ratings v1" and doc["games"] == 8 and doc["prior_draws"] == 1.0
    names = [p["name"] for p in doc["players"]]
    assert names == [M0, M1, "GNU Go 3.8"]
    elo = {p["name"]: p["elo"] for p in doc["players"]}
    assert elo["GNU Go 3.8"] > elo[M1] > elo[M0] == 0.0      # the prior keeps them finite
    gnugo = doc["players"][2]
    assert (gnugo["model"], gnugo["step"], gnugo["hours"]) == (False, None, None)
    assert doc["players"][1]["hours"] == 1.0

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([str(empty)]) == 1
    assert main([str(tmp_path / "missing")]) == 2


def test_read_meta_without_loading_tensors(tmp_path):
    path = write_model(tmp_path, 300, "2026-02-03T04:05:06+00:00")
    meta = read_meta(path)
    assert (meta["step"], meta["feature_set"]) == (300, "rich")
    assert meta["created"] == "2026-02-03T04:05:06+00:00"
    assert meta["config"]["blocks"] == 1
    with pytest.raises(ValueError, match="no such weights file"):
        read_meta(tmp_path / "nothing.pt")
