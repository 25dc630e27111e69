"""The GTP engine in-process: command parsing, the table, and the game-end decisions (resign,
pass, clean-up) with hand-made search results."""
from __future__ import annotations

import io

import numpy as np
import pytest

from engine import coords
from engine.core import BLACK, WHITE, ChildStats, Game, Rules
from engine.nets.evaluator import UniformEvaluator
from engine.gtp import CommandTable, EngineConfig, GTPEngine, GTPError, engine_play, gtp_command, parse_command
from engine.play.player import SearchResult
from engine.play.settings import DEFAULT_RESIGN


def make_engine(size: int = 9, resign: float = DEFAULT_RESIGN, **kw) -> GTPEngine:
    ev = UniformEvaluator()
    cfg = EngineConfig(size=size, play=engine_play(8, resign), seed=1, quiet=True, **kw)
    return GTPEngine(lambda n: ev, cfg, stdout=io.StringIO(), stderr=io.StringIO())


def result(move: int, winrate: float = 0.5, visits: int = 100) -> SearchResult:
    value = 2 * winrate - 1
    child = ChildStats(move, visits - 1, value, 0.5, value, [move])
    return SearchResult(move=move, value=value, visits=visits, playouts=visits, evals=visits,
                        seconds=0.0, children=[child])


def setup_walls(eng: GTPEngine, dead: bool = True) -> None:
    """Black walls column E, White column F; with ``dead``, White B7 and Black H3 inside."""
    for r in range(1, 10):
        eng.command(f"play b e{r}")
        eng.command(f"play w f{r}")
    if dead:
        eng.command("play w b7")
        eng.command("play b h3")


def v(text: str, size: int = 9) -> int:
    return coords.from_gtp(text, size)


# -- parsing and the table ------------------------------------------------------------------

@pytest.mark.parametrize("line,expected", [
    ("", None), ("   ", None), ("# comment", None), ("\t# x", None), ("\r", None),
    ("name", (None, "name", [])), ("12 name", ("12", "name", [])),
    ("3\tplay  B\t d4 # c", ("3", "play", ["B", "d4"])), ("play b d4\r", (None, "play", ["b", "d4"])),
    ("7", ("7", "", [])), ("x\x00y", (None, "xy", [])), ("007 name", ("7", "name", [])),
    ("000 name", ("0", "name", [])), ("9" * 4301 + " name", ("9" * 4301, "name", [])),
    # GTP's whitespace is space and tab: other Unicode spaces are ordinary characters
    ("\xa0", (None, "\xa0", [])), ("\u3000", (None, "\u3000", [])), ("\x85", (None, "\x85", [])),
    ("play\xa0b d4", (None, "play\xa0b", ["d4"])), ("\x0b\x0c", None),
])
def test_parse_command(line, expected):
    assert parse_command(line) == expected


LONG = "9" * 4301


@pytest.mark.parametrize("line", [
    "boardsize " + LONG, "gg-undo " + LONG, "kata-analyze B " + LONG, "lz-analyze b 1" + "0" * 400,
    "loadsgf x.sgf " + LONG, "time_left B 10 " + LONG, "time_left B 10 1" + "0" * 400,
    "time_left B " + LONG + " 0", "komi " + LONG, "komi 1e999", "komi 0." + "0" * 200 + "1",
    "komi \uff15", "komi 1_0", "fixed_handicap " + LONG, "place_free_handicap -" + LONG,
    "time_settings " + LONG + " 0 0", "kgs-time_settings absolute " + LONG,
    "kata-analyze B interval " + LONG, "kata-genmove_analyze b maxmoves " + LONG,
    "goengine-param visits " + LONG, "goengine-param c_puct " + LONG,
    "goengine-param max_memory " + LONG, "goengine-param max_memory 1.5G",
    "goengine-param max_memory 0",
])
def test_overlong_and_odd_numbers_are_syntax_errors(line):
    eng = make_engine()
    with pytest.raises(GTPError) as exc:
        eng.command(line)
    assert str(exc.value) == "syntax error"


def test_max_memory_parameter_reaches_the_search():
    eng = make_engine()
    assert "[string] max_memory 2G" in eng.command("goengine-param").split("\n")
    eng.command("genmove b")                       # a tree exists: it gets the new cap too
    eng.command("goengine-param max_memory 64M")
    assert eng.config.search.max_memory == 64 << 20
    assert eng.player.params.max_memory == 64 << 20
    assert eng.player.search_tree.params.max_memory == 64 << 20
    assert "[string] max_memory 64M" in eng.command("goengine-param").split("\n")


def test_loadsgf_without_km_keeps_the_komi(tmp_path):
    eng = make_engine()
    eng.command("komi 3.5")
    (tmp_path / "nokm.sgf").write_text("(;GM[1]FF[4]SZ[9];B[ee];W[cc])")
    (tmp_path / "km.sgf").write_text("(;GM[1]FF[4]SZ[9]KM[0.5];B[ee])")
    assert eng.command(f"loadsgf {tmp_path / 'nokm.sgf'}") == "black"
    assert eng.game.rules.komi == 3.5 and len(eng.game.moves) == 2
    eng.command(f"loadsgf {tmp_path / 'km.sgf'}")
    assert eng.game.rules.komi == 0.5


def test_every_registered_command_is_listed_and_every_listed_one_has_a_handler():
    eng = make_engine()
    listed = eng.command("list_commands").split("\n")
    assert len(set(listed)) == len(listed)
    registered = [name for concern in (eng, eng.analysis, eng.params)
                  for name, _ in CommandTable.marked(type(concern))]
    assert sorted(registered) == sorted(listed)
    assert tuple(listed) == GTPEngine.COMMANDS
    for name in listed:
        assert callable(eng.commands.handler(name)), name
        assert eng.command(f"known_command {name}") == "true"
    assert "analyze" not in listed and "genmove_analyze" not in listed
    assert eng.commands.handler("no_such_command") is None


def test_a_command_handled_twice_is_refused():
    class Twice:
        @gtp_command("name")
        def other_name(self, args):
            return "twice"
    with pytest.raises(ValueError, match="two handlers"):
        make_engine().commands.add(Twice())


def test_list_and_known_command_come_from_the_table():
    eng = make_engine()
    assert eng.command("known_command kata-analyze") == "true"
    assert eng.command("known_command kata_analyze") == "false"
    assert "." in eng.command("version")


def test_errors_never_escape():
    eng = make_engine()
    with pytest.raises(GTPError, match="unknown command"):
        eng.command("PLAY b d4")
    with pytest.raises(GTPError, match="syntax error"):
        eng.command("play b")
    with pytest.raises(GTPError, match="illegal move"):
        eng.command("play b k10")
    eng.command("play b d4")
    with pytest.raises(GTPError, match="illegal move"):
        eng.command("play w D4")


def test_komi_survives_boardsize_and_rules_replay_the_game():
    eng = make_engine()
    eng.command("komi 0.5")
    eng.command("boardsize 13")
    assert eng.game.rules.komi == 0.5
    eng.command("play b d4")
    eng.command("goengine-rules tromp-taylor")
    assert eng.game.rules.name == "tromp-taylor" and len(eng.game.moves) == 1
    assert eng.game.rules.komi == 0.5


def test_fixed_handicap_table():
    def vertices(size, n):
        return [coords.to_gtp(p, size) for p in coords.fixed_handicap(size, n)]

    assert vertices(19, 9) == "D4 Q16 D16 Q4 D10 Q10 K4 K16 K10".split()
    assert vertices(19, 5) == ["D4", "Q16", "D16", "Q4", "K10"]
    assert vertices(19, 7) == ["D4", "Q16", "D16", "Q4", "D10", "Q10", "K10"]
    assert vertices(19, 8) == "D4 Q16 D16 Q4 D10 Q10 K4 K16".split()
    assert vertices(13, 3) == ["D4", "K10", "D10"]
    assert vertices(9, 2) == ["C3", "G7"]
    # the same points GNU Go's fixed_handicap gives
    assert sorted(vertices(9, 9)) == sorted("C7 E7 G7 C5 E5 G5 C3 E3 G3".split())
    assert sorted(vertices(7, 4)) == sorted("C5 E5 C3 E3".split())
    assert coords.fixed_handicap(9, 0) == []
    assert [coords.max_handicap(n) for n in (6, 7, 8, 9, 10, 19)] == [0, 4, 4, 9, 4, 9]
    for size, bad in ((19, 10), (19, 1), (8, 5), (7, 5), (6, 2)):
        with pytest.raises(ValueError):
            coords.fixed_handicap(size, bad)


def test_fixed_handicap_command_rejects_zero_and_one():
    eng = make_engine()
    for n in (0, 1, 10):
        with pytest.raises(GTPError, match="invalid handicap"):
            eng.command(f"fixed_handicap {n}")
    assert eng.command("fixed_handicap 2") == "C3 G7"


def test_handicap_leaves_white_to_move_and_counts():
    eng = make_engine()
    eng.command("fixed_handicap 4")
    assert eng.game.to_move == WHITE and eng._handicap_count() == 4
    eng.command("clear_board")
    assert eng._handicap_count() == 0
    for vtx in ("c3", "g7", "c7"):     # handicap as plain plays, as Sabaki may send it
        eng.command(f"play b {vtx}")
    eng.command("play w e5")
    assert eng._handicap_count() == 3


# -- game end -------------------------------------------------------------------------------

def test_pass_that_would_lose_by_raw_count_becomes_a_capture():
    eng = make_engine()
    setup_walls(eng)
    eng.command("play w pass")
    game = eng.game
    assert game.score() < 0                      # raw Tromp-Taylor: White wins
    assert eng._judge().score > 0                # dead stones removed: Black wins
    move = eng._choose(game, BLACK, result(game.pass_point))
    assert move in {v("a7"), v("c7"), v("b8"), v("b6")}, coords.to_gtp(move, 9)


def test_pass_when_losing_anyway_is_kept():
    eng = make_engine(rules=Rules(komi=30.5), resign=0.0)
    setup_walls(eng)
    eng.command("play w pass")
    # The search proposes the pass; playing on (A9, its visits) is truly lost (below the
    # resignation winrate; resignation off: the default's): the pass stands.
    res = result(v("a9"), winrate=0.02)
    res.move = eng.game.pass_point
    assert eng._choose(eng.game, BLACK, res) == eng.game.pass_point
    # Lost by the count but not by the winrate: no pass into the lost count (tests/gtp/test_pass_reply).
    res = result(v("a9"), winrate=0.5)
    res.move = eng.game.pass_point
    assert eng._choose(eng.game, BLACK, res) == v("a9")


def test_opponent_passed_and_passing_wins():
    eng = make_engine()
    setup_walls(eng, dead=False)
    eng.command("play w pass")
    assert eng.game.score() > 0
    assert eng._choose(eng.game, BLACK, result(v("a9"))) == eng.game.pass_point
    # Not when passing would lose and the search still sees chances.
    eng.command("undo")
    eng.command("play b pass")
    assert eng._choose(eng.game, WHITE, result(v("a9"), winrate=0.7)) == v("a9")
    # Nor at 50%: a pass into a lost count only when the game is truly lost (below the
    # resignation winrate), then the opponent's pass is accepted.
    assert eng._choose(eng.game, WHITE, result(v("a9"), winrate=0.5)) == v("a9")
    assert eng._choose(eng.game, WHITE, result(v("a9"), winrate=0.02)) == eng.game.pass_point


def test_raw_count_win_with_dead_stones_passes_only_under_tromp_taylor():
    eng = make_engine()
    setup_walls(eng)
    eng.command("play b pass")                   # White to move: raw count wins, judged loses
    assert eng._choose(eng.game, WHITE, result(v("a9"), winrate=0.7)) == v("a9")
    eng.command("goengine-rules tromp-taylor")
    assert eng._choose(eng.game, WHITE, result(v("a9"), winrate=0.7)) == eng.game.pass_point


def test_cleanup_never_passes_while_dead_stones_remain():
    eng = make_engine(rules=Rules(komi=30.5))               # Black loses anyway: genmove would pass
    setup_walls(eng)
    eng.command("play w pass")
    move = eng._choose(eng.game, BLACK, result(eng.game.pass_point), cleanup=True)
    assert move in {v("a7"), v("c7"), v("b8"), v("b6")}


def test_resignation_threshold_early_game_and_handicap():
    eng = make_engine(resign=0.05)
    game = eng.game
    assert not eng._should_resign(game, BLACK, result(0, winrate=0.01))   # move 0: too early
    for i in range(12):                      # 24 moves: past a quarter of 81 points
        eng.command(f"play b {coords.to_gtp(i, 9)}")
        eng.command(f"play w {coords.to_gtp(80 - i, 9)}")
    assert eng._should_resign(game, WHITE, result(0, winrate=0.035))
    assert not eng._should_resign(game, WHITE, result(0, winrate=0.06))
    eng.handicap = [v("c3"), v("g7"), v("c7"), v("g3")]
    assert not eng._should_resign(game, WHITE, result(0, winrate=0.035))  # handicap game
    assert eng._should_resign(game, WHITE, result(0, winrate=0.01))
    assert eng._should_resign(game, BLACK, result(0, winrate=0.035))      # Black: normal
    eng.config.play.resign = 0.0
    assert not eng._should_resign(game, WHITE, result(0, winrate=0.0))


def test_genmove_resigns_in_a_hopeless_position():
    class Hopeless(UniformEvaluator):
        """Black always loses: lz18 plane 16 is all ones when Black is to move."""

        def evaluate(self, planes, keys=None):
            ev = super().evaluate(planes, keys)
            black = np.asarray(planes)[:, 16, 0, 0] == 1
            return ev._replace(value=np.where(black, -1.0, 1.0).astype(np.float32))

    ev = Hopeless(feature_set="lz18")
    for turns in (1, 3):
        eng = GTPEngine(lambda n: ev, EngineConfig(size=9, play=engine_play(16), seed=1, quiet=True, resign_turns=turns),
                        stdout=io.StringIO(), stderr=io.StringIO())
        assert eng.command("reg_genmove b") != "resign"      # too early to resign
        for i in range(12):
            eng.command(f"play b {coords.to_gtp(18 + i, 9)}")
            eng.command(f"play w {coords.to_gtp(45 + i, 9)}")
        # with resign_turns 3 the first two lost moves are played (KataGo's resignConsecTurns)
        for i in range(turns - 1):
            assert eng.command("genmove b") != "resign"
            eng.command(f"play w {coords.to_gtp(63 + i, 9)}")
        assert eng.command("genmove b") == "resign"
        assert eng.resigned == BLACK
        assert "RE[W+R]" in eng.command("printsgf")


def test_the_resignation_streak_counts_consecutive_own_moves_only():
    """Lost positions on Black's moves 24 and 26, then a move played by hand (no search) and
    lost again at 30: not three in a row, no resignation; 32 and 34 complete a new streak."""
    eng = make_engine(resign=0.05)
    game = Game(9)
    for i in range(12):
        game.play(18 + i, BLACK)
        game.play(45 + i, WHITE)
    lost = result(0, winrate=0.01)
    assert not eng._resign_streak(game, BLACK, lost)          # move 24
    game.play(2, BLACK); game.play(3, WHITE)
    assert not eng._resign_streak(game, BLACK, lost)          # 26
    for p in (4, 5, 6, 7):
        game.play(p, BLACK if p % 2 == 0 else WHITE)          # 28 played without a search
    assert not eng._resign_streak(game, BLACK, lost)          # 30: a new streak of one
    game.play(8, BLACK); game.play(9, WHITE)
    assert not eng._resign_streak(game, BLACK, result(0, winrate=0.5))   # 32: fine again
    game.play(10, BLACK); game.play(11, WHITE)
    assert not eng._resign_streak(game, BLACK, lost)          # 34
    game.play(12, BLACK); game.play(13, WHITE)
    assert not eng._resign_streak(game, BLACK, lost)          # 36
    game.play(14, BLACK); game.play(15, WHITE)
    assert eng._resign_streak(game, BLACK, lost)              # 38: three in a row


def test_final_status_lists_partition_the_stones():
    eng = make_engine()
    setup_walls(eng)
    stones = set()
    for status in ("alive", "dead", "seki"):
        text = eng.command(f"final_status_list {status}")
        stones |= {v(t) for t in text.split()}
    assert stones == {p for p in range(81) if eng.game.stones().ravel()[p]}
    assert eng.command("final_status_list dead").split() == ["B7", "H3"]
    assert eng.command("final_score") == "B+1.5"


def test_move_summary_shows_the_line_of_the_move_played():
    """The LCB may play a child other than the most-visited one: the stderr summary's PV is the
    line of the move played, not of the first child."""
    eng = make_engine()
    eng.config.quiet, eng.quiet = False, False
    top, played = v("G7"), v("G6")
    res = result(played, visits=400)
    res.children = [ChildStats(top, 250, 0.0, 0.6, -0.1, [top, v("E6")]),
                    ChildStats(played, 149, 0.1, 0.3, 0.05, [played, v("E5"), v("F5")])]
    eng._summary(9, BLACK, res, played, 0.5)
    line = eng.err.getvalue().splitlines()[-1]
    assert line.startswith("B G6: 400 visits") and line.endswith("pv G6 E5 F5")
