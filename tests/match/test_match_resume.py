"""``python -m train.match --resume``: a stopped or shorter match continues where it ended, its
finished games counted once, and a results file of another match is refused without harm."""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

pytest.importorskip("engine._core")

from train.match.cli import main  # noqa: E402

FAKES = Path(__file__).resolve().parents[1] / "fake_engines"
BLACK = shlex.join([sys.executable, str(FAKES / "fake_engine.py")])
WHITE = shlex.join([sys.executable, str(FAKES / "fake_engine.py"), "--name", "Other"])


def match(folder: Path, *args: str, white: str = WHITE) -> tuple[int, dict | None]:
    status = main(["--black", BLACK, "--white", white, "--size", "7", "--komi", "7.5",
                   "--random-moves", "3", "--sgf-dir", str(folder / "sgf"), "--no-progress", *args])
    path = folder / "sgf" / "results.json"
    return status, (json.loads(path.read_text()) if status == 0 else None)


def fingerprints(results: dict) -> list[tuple[int, str]]:
    return [(g["index"], g["fingerprint"]) for g in results["games"]]


def test_a_longer_match_resumed_equals_one_played_straight(tmp_path):
    status, straight = match(tmp_path / "straight", "--games", "4", "--seed", "5")
    assert status == 0 and straight["complete"] and straight["distinct_games"] == 4
    status, short = match(tmp_path / "resumed", "--games", "2", "--seed", "5")
    assert status == 0 and short["games_played"] == 2
    status, resumed = match(tmp_path / "resumed", "--games", "4", "--resume")      # seed from the file
    assert status == 0 and resumed["complete"]
    assert resumed["settings"]["seed"] == 5
    assert fingerprints(resumed) == fingerprints(straight)
    assert resumed["games"][:2] == short["games"]               # kept as they were, not replayed
    assert len(list((tmp_path / "resumed" / "sgf").glob("*.sgf"))) == 4


def test_an_interrupted_match_plays_only_its_missing_games(tmp_path):
    status, full = match(tmp_path, "--games", "3", "--seed", "8")
    assert status == 0
    path = tmp_path / "sgf" / "results.json"
    cut = dict(full, complete=False, games=[g for g in full["games"] if g["index"] != 1])
    cut["games"][0]["detail"] = "kept"                  # a finished game is not played again
    path.write_text(json.dumps(cut))
    status, resumed = match(tmp_path, "--games", "3", "--resume")
    assert status == 0 and resumed["complete"] and resumed["games_played"] == 3
    assert fingerprints(resumed) == fingerprints(full)
    assert resumed["games"][0]["detail"] == "kept"
    assert resumed["pairs"] == full["pairs"]


def test_resume_without_a_results_file_starts_the_match(tmp_path):
    status, results = match(tmp_path, "--games", "2", "--seed", "3", "--resume")
    assert status == 0 and results["games_played"] == 2


@pytest.mark.parametrize("change, message", [
    (["--komi", "6.5"], "komi 7.5 -> 6.5"),
    (["--random-moves", "2"], "random_moves 3 -> 2"),
    (["--seed", "4"], "seed 9 -> 4"),
    (["--white", BLACK], "other engines"),
    (["--games", "1"], "game 1 is not in a schedule of 1 games"),
])
def test_another_matchs_results_are_refused_and_kept(tmp_path, capsys, change, message):
    status, before = match(tmp_path, "--games", "2", "--seed", "9")
    assert status == 0
    path = tmp_path / "sgf" / "results.json"
    saved = path.read_bytes()
    white = change[1] if change[0] == "--white" else WHITE
    extra = [] if change[0] == "--white" else change
    status, _ = match(tmp_path, "--games", "2", "--resume", *extra, white=white)
    assert status == 2
    assert message in capsys.readouterr().err
    assert path.read_bytes() == saved


def test_a_corrupt_results_file_is_refused(tmp_path, capsys):
    (tmp_path / "sgf").mkdir()
    (tmp_path / "sgf" / "results.json").write_text('{"games": [')
    status, _ = match(tmp_path, "--games", "2", "--resume", "--seed", "1")
    assert status == 2
    assert "not a readable results file" in capsys.readouterr().err
    with pytest.raises(SystemExit):                     # and without --seed, before anything starts
        match(tmp_path, "--games", "2", "--resume")
    assert "not a readable results file" in capsys.readouterr().err
    assert (tmp_path / "sgf" / "results.json").read_text() == '{"games": ['

