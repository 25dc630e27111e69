"""Game records and metrics of the previous release still read, in today's units.

``tests/data/game-record-v1.npz`` was written by the previous release (RECORD_VERSION 1): a 5x5
game, komi 24.5, White resigning at a root value below the threshold -0.9 it kept as a root
value.  Today's records keep the resignation winrate (0.05) instead."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from engine.core import BLACK, Game, Rules, WHITE
from train.games.records import (MoveInfo, RECORD_VERSION, build_record, read_npz, to_npz_bytes, to_sgf_bytes,
                                 write_npz)
from train.rundir import iter_metrics
from train.selfplay import ResignCalibrator

V1 = Path(__file__).parent.parent / "data" / "game-record-v1.npz"


def test_a_version_1_record_reads_with_its_threshold_as_a_winrate():
    rec = read_npz(V1)
    assert (rec.size, rec.rules.komi, rec.reason, rec.winner, rec.seed) == (5, 24.5, "resign", BLACK, 7)
    assert rec.moves.tolist() == [12, 7, 13, 17] and rec.model_ids == ["model-0000040"]
    assert rec.resign_winrate == pytest.approx(0.05, abs=1e-6)           # -0.9 as kept, as a winrate
    assert np.allclose(rec.values.astype(np.float32), [0.2, -0.85, 0.5, -0.95], atol=1e-3)   # root values stay
    assert b"resign winrate 0.050" in to_sgf_bytes(rec)


def test_todays_records_keep_the_winrate_and_name_their_version(tmp_path):
    game, moves = Game(5, Rules.preset("chinese", 24.5)), []
    for i, p in enumerate([12, 7]):
        color = BLACK if i == 0 else WHITE
        game.play(p, color)
        moves.append(MoveInfo(color, p, "m", 8, -0.5, None))
    rec = build_record(game, moves, reason="resign", winner=BLACK, resign_winrate=0.05)
    write_npz(tmp_path / "g.npz", rec)
    with np.load(tmp_path / "g.npz") as z:
        assert int(z["version"]) == RECORD_VERSION == 2
        assert "resign_threshold" not in z.files and float(z["resign_winrate"]) == np.float32(0.05)
    assert read_npz(tmp_path / "g.npz").resign_winrate == np.float32(0.05)
    off = build_record(game, moves, reason="resign", winner=BLACK)
    assert math.isnan(read_npz_bytes(tmp_path, off).resign_winrate)


def read_npz_bytes(tmp_path: Path, rec) -> object:
    path = tmp_path / "x.npz"
    path.write_bytes(to_npz_bytes(rec))
    return read_npz(path)


def test_a_version_the_code_does_not_read_is_a_clear_error(tmp_path):
    with np.load(V1) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["version"] = np.int32(3)
    np.savez(tmp_path / "v3.npz", **arrays)
    with pytest.raises(ValueError, match="record version 3, this code reads versions 1, 2"):
        read_npz(tmp_path / "v3.npz")


def test_the_calibration_reads_version_1_no_resign_games_in_winrates(tmp_path):
    rec = read_npz(V1)
    rec.no_resign = True
    cal = ResignCalibrator(min_games=1)
    cal.add(rec)
    # Black won and never fell below a winrate of 0.6; White, who lost, fell to 0.075 (root value
    # -0.85) and then 0.025 (-0.95).  No false resignation at the 0.05 in force; White, the loser,
    # would have resigned at 0.08 (its first move) and at 0.07 (its second), nobody at 0.02.
    assert cal.measured_fp_rate() == (0.0, 1)
    assert cal.rates(0.08) == (0.0, 0.0, 1) and cal.rates(0.07) == (0.0, 0.0, 1) and cal.rates(0.02) == (0.0, 0.0, 0)
    assert cal.threshold == 0.25                          # the cap: no winner ever fell below it


def test_old_metrics_give_the_resignation_threshold_as_a_winrate(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = [{"source": "selfplay", "games": 10, "resign_threshold": -0.9},
             {"source": "selfplay", "games": 20, "resign_threshold": None},
             {"source": "selfplay", "games": 30, "resign_winrate": 0.1}]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    got = list(iter_metrics(path))
    assert [r.get("resign_winrate") for r in got] == [pytest.approx(0.05), None, 0.1]
    assert not any("resign_threshold" in r for r in got)
