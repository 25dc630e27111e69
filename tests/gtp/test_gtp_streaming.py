"""Input while the engine thinks: analysis streams until any line arrives, ``# interrupt`` ends a
genmove early, ``*-genmove_analyze`` is not stopped by input, pondering yields to input, clocks
are respected.  Real subprocesses and pipes; format checked, not content."""
from __future__ import annotations

import re
import time

import pytest

from tests.helpers.gtp_process import EngineProcess, check_info_line

BASE = ["--weights", "uniform", "--seed", "1", "--threads", "1", "--quiet"]


@pytest.fixture(scope="module")
def shared():
    """One engine for the whole module (start-up costs seconds); each test sets what it needs."""
    with EngineProcess(BASE + ["--size", "9", "--visits", "64"]) as eng:
        assert eng.command("1 name") == ["=1 goengine"]      # started and ready
        yield eng
        eng.send("quit")
        assert eng.reply() == ["= "]
        assert eng.close() == 0


@pytest.fixture
def engine_9x9(shared):
    for line in ("boardsize 9", "clear_board", "goengine-param visits 64", "goengine-param time 0",
                 "goengine-param ponder 0", "goengine-param lag_buffer 1", "kgs-time_settings none"):
        assert shared.command(line)[0].startswith("="), line
    return shared


@pytest.mark.parametrize("kind", ["lz", "kata"])
def test_analysis_streams_until_input(engine_9x9, kind):
    eng = engine_9x9
    eng.command("play b e5")
    eng.send(f"7 {kind}-analyze w 10" + (" ownership true" if kind == "kata" else ""))
    assert eng.line()[1] == "=7 "
    infos = []
    while len(infos) < 3:
        _, text = eng.line()
        assert text, "the analysis ended before any input"
        infos.append(text)
    sent = eng.send("8 protocol_version")
    tail = []
    while True:
        arrived, text = eng.line()
        if text == "":
            break
        tail.append(text)
    assert arrived >= sent                          # the reply ends only after the input
    for line in infos + tail:
        check_info_line(line, kind, 9, ownership=(kind == "kata"))
    assert eng.reply() == ["=8 2"]                  # the interrupting line is answered next


def test_analysis_options(engine_9x9):
    eng = engine_9x9
    eng.send("lz-analyze b interval 5 maxmoves 2 minmoves 1")
    assert eng.line()[1] == "= "
    for _ in range(2):
        text = eng.line()[1]
        entries = check_info_line(text, "lz", 9)
        assert 1 <= len(entries) <= 2
    eng.send("name")
    while eng.line()[1] != "":
        pass
    assert eng.reply() == ["= goengine"]


def test_interrupt_ends_genmove_early(engine_9x9):
    eng = engine_9x9
    eng.command("boardsize 19")
    eng.command("goengine-param visits 0")
    eng.command("goengine-param time 60")
    sent = eng.send("5 genmove b")
    time.sleep(0.7)
    eng.send("# interrupt")
    reply = eng.reply(timeout=10)
    assert time.monotonic() - sent < 8
    assert len(reply) == 1 and re.fullmatch(r"=5 [A-T]\d+", reply[0]), reply
    assert eng.command("6 name") == ["=6 goengine"]       # no reply to the comment line itself
    assert eng.command("gogui-interrupt") == ["= "]


def test_genmove_analyze_is_not_stopped_by_input(engine_9x9):
    eng = engine_9x9
    eng.command("goengine-param visits 1500")
    eng.send("3 kata-genmove_analyze b 5")
    eng.send("4 name")
    assert eng.line()[1] == "=3 "
    lines = []
    while True:
        _, text = eng.line()
        if text == "":
            break
        lines.append(text)
    assert re.fullmatch(r"play ([A-J]\d|pass)", lines[-1]), lines[-1]
    infos = lines[:-1]
    assert infos
    for line in infos:
        check_info_line(line, "kata", 9)
    last = check_info_line(infos[-1], "kata", 9)
    assert sum(int(e["visits"]) for e in last) >= 1000     # searched to the end
    assert eng.reply() == ["=4 goengine"]
    board = "\n".join(eng.command("showboard"))
    assert "White to move" in board                      # the move was played


def test_pondering_yields_to_input(engine_9x9):
    eng = engine_9x9
    eng.command("goengine-param visits 32")
    eng.command("goengine-param ponder 1")
    assert re.fullmatch(r"= ([A-J]\d|pass)", eng.command("genmove b")[0])
    time.sleep(1.0)                                    # the engine ponders meanwhile
    sent = eng.send("play w e5")
    eng.reply()
    assert time.monotonic() - sent < 2.0
    assert re.fullmatch(r"= ([A-J]\d|pass)", eng.command("genmove b")[0])


def test_end_of_input_during_analysis_exits_cleanly():
    with EngineProcess(BASE + ["--size", "9"]) as eng:
        eng.command("name")
        eng.send("lz-analyze b 5")
        assert eng.line()[1] == "= "
        eng.line()                         # at least one info line
        assert eng.close() == 0


@pytest.mark.parametrize("settings,seconds", [
    ("kgs-time_settings byoyomi 0 1.5 3", 1.5),
    ("time_settings 0 2 1", 2.0),
])
def test_clock_is_respected(engine_9x9, settings, seconds):
    eng = engine_9x9
    eng.command("boardsize 19")
    eng.command("goengine-param visits 0")         # only the clock stops the search
    eng.command("goengine-param lag_buffer 0.5")
    eng.command(settings)
    for color in "bw":
        sent = eng.send(f"genmove {color}")
        reply = eng.reply(timeout=10)
        took = time.monotonic() - sent
        assert reply[0].startswith("= ") and took < seconds, (reply, took)


def test_absolute_time_is_spread_over_the_game(engine_9x9):
    eng = engine_9x9
    eng.command("goengine-param visits 0")
    eng.command("goengine-param lag_buffer 0.2")
    eng.command("time_settings 4 0 0")
    start = time.monotonic()
    for i in range(6):
        eng.command(f"genmove {'bw'[i % 2]}", timeout=10)
    assert time.monotonic() - start < 4.0


def _analysis_moves(eng, command: str) -> set[str]:
    """The moves of the first info line of ``command`` (then interrupted with ``name``)."""
    eng.send(command)
    assert eng.line()[1] == "= "
    entries = check_info_line(eng.line()[1], "kata" if command.startswith("kata") else "lz", 9)
    eng.send("name")
    while eng.line()[1] != "":
        pass
    assert eng.reply() == ["= goengine"]
    return {e["move"] for e in entries}


def test_avoid_and_allow_keep_moves_out_of_the_analysis(engine_9x9):
    """Leela Zero's and KataGo's ``avoid COLOR VERTICES DEPTH`` / ``allow ...`` arguments (what
    Lizzie sends for its "avoid" feature): the avoided moves are never searched at the root."""
    eng = engine_9x9
    free = _analysis_moves(eng, "lz-analyze b 5")
    assert len(free) > 3
    avoided = sorted(free)[:3]
    got = _analysis_moves(eng, f"lz-analyze b 5 avoid b {','.join(avoided)} 1")
    assert got and not got & set(avoided)
    assert _analysis_moves(eng, "kata-analyze b 5 allow b a1,j9 1") <= {"A1", "J9"}
    assert _analysis_moves(eng, "lz-analyze b 5 avoid w a1 1 allow b pass,e5 2") <= {"pass", "E5"}
    for bad in ("lz-analyze b 5 avoid b a1", "lz-analyze b 5 avoid b z1 1",
                "lz-analyze b 5 allow b a1 1 allow b b1 1", "lz-analyze b 5 avoid x a1 1"):
        assert eng.command(bad)[0].startswith("? syntax error"), bad
