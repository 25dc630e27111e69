"""Bad input at the Python boundary of the C core and in engine.coords.

Everything here must raise ValueError with a message that names the bad value; nothing may reach
the C code unchecked (a crash there would take the whole process down, which the last test
checks in a child interpreter).
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from engine import coords
from engine.core import BLACK, WHITE, Game, Rules, board_from_ascii, feature_planes

REPO = Path(__file__).resolve().parents[2]

BAD_SIZES = [0, 1, 20, -3, "9", 2.5, None, 10**30, float("nan")]


@pytest.mark.parametrize("size", BAD_SIZES, ids=repr)
def test_bad_board_size(size) -> None:
    with pytest.raises(ValueError, match="board size"):
        Game(size)


def test_good_board_sizes() -> None:
    for size in (2, 19, np.int64(9)):
        assert Game(size).size == size


def _bad_points(n: int) -> list:
    return [-1, n * n + 1, n * n + 2, 10**20, 2**63, -(2**64), 1.5, "3", None, np.float64(3.0),
            np.uint64(2**63)]


@pytest.mark.parametrize("size", [2, 9, 19])
def test_bad_points(size: int) -> None:
    game = Game(size)
    game.play(0)
    hash_before, moves_before = game.hash, list(game.moves)
    for point in _bad_points(size):
        for call in (game.play, game.is_legal, game.illegal_reason, game.liberties):
            with pytest.raises(ValueError, match="not on a"):
                call(point)
    assert game.hash == hash_before and game.moves == moves_before


def test_edge_points_are_fine() -> None:
    game = Game(9)
    for point in (0, 80, np.int64(40), 81):
        game.play(point)
    assert game.passes == 1


BAD_COLOURS = [0, 3, -1, 2**70, "b", "black", 1.5, None]


@pytest.mark.parametrize("color", BAD_COLOURS, ids=repr)
def test_bad_colours(color) -> None:
    game = Game(9)
    calls = [lambda: game.set_to_move(color), lambda: game.captures(color)]
    if color is not None:           # None means "the side to move" for these
        calls += [lambda: game.play(4, color), lambda: game.is_legal(4, color),
                  lambda: game.illegal_reason(4, color), lambda: game.legal_mask(color)]
    for call in calls:
        with pytest.raises(ValueError, match="colour"):
            call()
    assert game.moves == [] and game.to_move == BLACK


def test_float_colour_is_rejected_as_value_error() -> None:
    # 1.0 == BLACK passes the `in (BLACK, WHITE)` check and then cffi raises TypeError
    # ("an integer is required"): the binding should raise ValueError itself, as it does for
    # float points.
    game = Game(9)
    for call in (lambda: game.play(4, 1.0), lambda: game.is_legal(4, 2.0),
                 lambda: game.legal_mask(1.0), lambda: game.set_to_move(2.0),
                 lambda: game.captures(1.0)):
        with pytest.raises(ValueError):
            call()


def test_bad_rules() -> None:
    with pytest.raises(ValueError, match="unknown rules"):
        Rules.preset("aga")
    with pytest.raises(ValueError, match="ko rule"):
        Rules(ko="situational")
    for komi in (float("nan"), float("inf"), 1e6):
        with pytest.raises(ValueError, match="komi"):
            Rules(komi=komi)


def test_bad_feature_requests() -> None:
    game = Game(9)
    for name in ("bogus", "", "RICH"):
        with pytest.raises(ValueError, match="feature set"):
            game.features(name)
        with pytest.raises(ValueError, match="feature set"):
            feature_planes(name)
    planes = feature_planes("rich")
    for out in (np.zeros((planes, 9, 9)), np.zeros((planes, 9, 8), np.float32),
                np.zeros((planes - 1, 9, 9), np.float32),
                np.zeros((planes, 9, 18), np.float32)[:, :, ::2]):
        with pytest.raises(ValueError, match="out must be"):
            game.features("rich", out=out)


@pytest.mark.parametrize("diagram, match", [
    ("XX\nX", "row 1"),
    ("X", "board size"),
    ("", "board size"),
    ("XQ\n..", "unknown character"),
    ("\n".join(["." * 20] * 20), "board size"),
])
def test_bad_diagrams(diagram: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        board_from_ascii(diagram)


@pytest.mark.parametrize("text", ["", "A", "Z9", "A0", "A10", "I5", "99", "AA", "A-1", "A+1",
                                  "A1.5", "\uff211", "pas", "passs", "A 1", "J10", "T19"])
def test_bad_gtp_vertex(text: str) -> None:
    with pytest.raises(ValueError, match="vertex"):
        coords.from_gtp(text, 9)


def test_gtp_vertex_digits_must_be_ascii() -> None:
    # str.isdigit() accepts Arabic-Indic and other Unicode digits, which int() then converts.
    for text in ("A\u0661", "A\u0967"):
        with pytest.raises(ValueError):
            coords.from_gtp(text, 9)
    with pytest.raises(ValueError):
        coords.from_gtp("A\u00b2", 9)      # superscript two: isdigit() but not int()


def test_good_gtp_vertices() -> None:
    assert coords.from_gtp("a9", 9) == 0
    assert coords.from_gtp(" J1 ", 9) == 80
    assert coords.from_gtp("PASS", 9) == 81
    assert coords.from_gtp("T19", 19) == 18
    assert coords.from_gtp("t1", 19) == 360


@pytest.mark.parametrize("text", ["a", "abc", "zz", "jj", "ja", "DD", "a1", "t t", "1a"])
def test_bad_sgf_point(text: str) -> None:
    with pytest.raises(ValueError):
        coords.from_sgf(text, 9)


@pytest.mark.parametrize("size", [1, 0, 30, -5])
def test_bad_size_in_coords(size: int) -> None:
    with pytest.raises(ValueError):
        coords.from_gtp("A1", size)


@pytest.mark.parametrize("point", [-1, 82, 1000])
def test_bad_points_in_coords(point: int) -> None:
    for call in (coords.to_gtp, coords.to_sgf, coords.to_rowcol, coords.to_sgfmill):
        with pytest.raises(ValueError):
            call(point, 9)


def test_off_board_rowcol() -> None:
    for row, col in ((9, 0), (0, 9), (-1, 0), (0, -1)):
        with pytest.raises(ValueError):
            coords.from_rowcol(row, col, 9)
        with pytest.raises(ValueError):
            coords.from_sgfmill((row, col), 9)


FUZZ = textwrap.dedent("""
    import random, numpy as np
    from engine import coords
    from engine.core import Game, Rules, board_from_ascii, feature_planes
    rng = random.Random(1)
    junk = [-1, 0, 1, 2, 3, 4, 80, 81, 82, 361, 362, 2**31, 2**31 - 1, -2**31, 2**63, -2**63,
            2**64, 10**30, 1.0, 1.5, float("nan"), float("inf"), None, "", "a", "9", b"x",
            [], (1, 2), {}, np.int64(5), np.uint64(2**64 - 1), np.int8(-1), np.float32(2), True]
    expected = (ValueError, TypeError, IndexError, AttributeError, OverflowError)
    games = [Game(s, Rules.preset(r)) for s in (2, 3, 9, 19) for r in ("chinese", "tromp-taylor")]
    calls = 0
    for _ in range(6000):
        g = rng.choice(games)
        a, b = rng.choice(junk), rng.choice(junk)
        what = rng.randrange(13)
        try:
            if what == 0: g.play(a, b)
            elif what == 1: g.play(a)
            elif what == 2: g.is_legal(a, b)
            elif what == 3: g.legal_mask(a)
            elif what == 4: g.liberties(a)
            elif what == 5: g.set_to_move(a)
            elif what == 6: g.captures(a)
            elif what == 7: Game(a)
            elif what == 8: coords.from_gtp(a, b)
            elif what == 9: coords.from_sgf(a, b)
            elif what == 10: coords.to_gtp(a, b)
            elif what == 11: g.features(rng.choice(["rich", "lz18"]))
            else: g.playout_ownership(rng.choice([1, 2]), seed=rng.randrange(2**64), max_moves=b)
        except expected:
            pass
        calls += 1
        # keep the games moving so the junk meets many positions
        legal = np.flatnonzero(g.legal_mask())
        g.play(int(rng.choice(list(legal))))
        if g.is_over or len(g.moves) > 3 * g.size * g.size:
            games[games.index(g)] = Game(g.size, g.rules)
    print("survived", calls)
""")


def test_no_bad_input_crashes_the_process() -> None:
    proc = subprocess.run([sys.executable, "-c", FUZZ], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"child died with {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert "survived 6000" in proc.stdout
