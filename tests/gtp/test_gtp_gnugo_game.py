"""A full 9x9 game against GNU Go over GTP, each engine a subprocess, moves relayed by ``play``.

Our engine plays Black with no network (``--weights uniform``, a few visits), so GNU Go wins;
what is tested is the protocol and the game end: every move of ours is legal for GNU Go, the
game ends by two passes (our engine accepts GNU Go's pass once its judged score loses and its
search sees no way back) or by a resignation, and when it ends by passes both engines'
``final_score`` agree on the winner and on the margin within TOLERANCE points (GNU Go judges
dead stones with its own reading; ours with floating-stone analysis plus random playouts).
"""
from __future__ import annotations

import os
import re
import shutil

import pytest

from tests.helpers.gtp_process import EngineProcess

pytestmark = pytest.mark.slow          # a full game against GNU Go

GNUGO = shutil.which("gnugo") or ("/usr/games/gnugo" if os.path.exists("/usr/games/gnugo") else None)
TOLERANCE = 3.0
MAX_PLIES = 250


def score_value(text: str) -> float:
    """``B+3.5`` -> 3.5, ``W+2.0`` -> -2.0, ``0`` -> 0."""
    m = re.fullmatch(r"([BW])\+(\d+(?:\.\d+)?)", text.strip())
    if text.strip() == "0":
        return 0.0
    assert m, text
    return float(m.group(2)) * (1 if m.group(1) == "B" else -1)


def answer(eng: EngineProcess, line: str, timeout: float = 30.0) -> str:
    reply = eng.command(line, timeout)
    assert reply and reply[0].startswith("="), (line, reply)
    return "\n".join([reply[0][1:].strip()] + reply[1:])


@pytest.mark.skipif(GNUGO is None, reason="gnugo is not installed")
def test_full_game_against_gnugo():
    ours = EngineProcess(["--weights", "uniform", "--seed", "9", "--threads", "1", "--quiet",
                          "--visits", "24", "--size", "9"])
    gnugo = EngineProcess([], command=[GNUGO, "--mode", "gtp", "--chinese-rules", "--level", "1",
                                       "--seed", "1"])
    with ours, gnugo:
        for eng in (ours, gnugo):
            answer(eng, "boardsize 9")
            answer(eng, "komi 7.5")
            answer(eng, "clear_board")
        players = {"b": (ours, gnugo), "w": (gnugo, ours)}
        color, passes, moves, result = "b", 0, [], None
        while len(moves) < MAX_PLIES:
            mover, other = players[color]
            move = answer(mover, f"genmove {color}").lower()
            if move == "resign":
                result = ("W" if color == "b" else "B") + "+R"
                break
            reply = other.command(f"play {color} {move}")
            assert [r.strip() for r in reply] == ["="], (color, move, reply, moves)
            moves.append(move)
            passes = passes + 1 if move == "pass" else 0
            if passes == 2:
                break
            color = "w" if color == "b" else "b"
        assert result is not None or passes == 2, f"no end after {len(moves)} plies: {moves}"
        if result is None:
            ours_score = score_value(answer(ours, "final_score"))
            gnugo_score = score_value(answer(gnugo, "final_score"))
            assert (ours_score > 0) == (gnugo_score > 0), (ours_score, gnugo_score)
            assert abs(ours_score - gnugo_score) <= TOLERANCE, (ours_score, gnugo_score, moves)
        sgf = answer(ours, "printsgf")
        assert len(re.findall(r";\s*[BW]\[", sgf)) == len(moves)
        for eng in (ours, gnugo):
            eng.send("quit")
            eng.reply()
            assert eng.close() == 0
