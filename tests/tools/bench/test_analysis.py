"""tools.bench.analysis: its games are legal, whole games, and its timing client reads a real
analysis engine's responses (ours, with no network) turn by turn."""
import sys

import pytest

from engine import coords
from engine.core import Game, Rules, parse_color
from tools import REPO_ROOT as ROOT
from tools.bench.analysis import GAMES, JsonEngine, game_moves, katago_config, query


@pytest.mark.parametrize("size,length", [(9, 60), (19, 200)])
def test_the_benchmark_games_are_legal_and_full_length(size, length):
    n, moves = game_moves(GAMES[size])
    assert n == size and len(moves) == length
    game = Game(size, Rules.preset("chinese", komi=7))
    for colour, vertex in moves:
        assert vertex != "pass"
        game.play(coords.from_gtp(vertex, size), parse_color(colour))   # raises if illegal
    assert [c for c, _ in moves[:4]] == ["B", "W", "B", "W"]


def test_the_client_times_every_turn_of_a_query(tmp_path):
    eng = JsonEngine("ours", [sys.executable, "-m", "engine", "analysis", "--weights", "uniform",
                              "--threads", "1", "--seed", "1", "--quiet"], cwd=ROOT)
    try:
        _, moves = game_moves(GAMES[9])
        turns = list(range(0, 61, 20))
        secs, final = eng.analyse(query("q", 9, moves, 8, turns), timeout=120)
        assert secs > 0
        assert sorted(r["turnNumber"] for r in final) == turns
        assert all(r["rootInfo"]["visits"] >= 8 for r in final)
        with pytest.raises(RuntimeError, match="error"):
            eng.analyse(query("bad", 9, [["B", "Z99"]], 8, [0, 1]), timeout=60)
    finally:
        eng.close()
    assert eng.proc.returncode == 0


def test_katago_gets_as_many_analysis_threads_as_we_search_positions(tmp_path):
    cfg = tmp_path / "a.cfg"
    katago_config(cfg, threads=2, positions=16, log_dir=tmp_path, size=9)
    text = cfg.read_text()
    for line in ("numAnalysisThreads = 16", "numSearchThreadsPerAnalysisThread = 1",
                 "nnMaxBatchSize = 16", "numEigenThreadsPerModel = 2",
                 "maxBoardSizeForNNBuffer = 9", "requireMaxBoardSize = true"):
        assert line in text
