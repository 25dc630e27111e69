"""Network input planes (src_c/feature_planes.h) on small positions worked out by hand.

The main position, 5x5, after B B5, W C5, B A4, W B4, B B3, W D4, B E1, W C3, B C4 (which
captures B4, so White may not retake at B4 at once); White to move:

        A B C D E
     5  . X O . .       Black: B5 2 libs, A4 3, C4 1, B3 3, E1 2
     4  X . X O .       White: C5 1 lib, D4 3, C3 2
     3  . X O . .       ko point B4 (for White); A5 would be suicide for White
     2  . . . . .
     1  . . . . X
"""
from __future__ import annotations

import numpy as np
import pytest

from engine import coords
from engine.core import BLACK, WHITE, Game, Rules, feature_planes

MOVES = ["B5", "C5", "A4", "B4", "B3", "D4", "E1", "C3", "C4"]
N = 5


def points(*vertices: str) -> np.ndarray:
    """A 0/1 float32 plane with ones at the given GTP vertices."""
    plane = np.zeros((N, N), np.float32)
    for v in vertices:
        plane[coords.to_rowcol(coords.from_gtp(v, N), N)] = 1.0
    return plane


ZERO = points()
ONES = np.ones((N, N), np.float32)


def make_game(moves=MOVES, rules: Rules | None = None) -> Game:
    game = Game(N, rules or Rules.preset("chinese", komi=7.5))
    for v in moves:
        game.play(coords.from_gtp(v, N))
    return game


def assert_planes(planes: np.ndarray, expected: dict[int, np.ndarray]) -> None:
    for index, plane in expected.items():
        assert np.array_equal(planes[index], plane), \
            f"plane {index}:\n{planes[index]}\nexpected:\n{plane}"


def test_plane_counts() -> None:
    assert feature_planes("rich") == 20
    assert feature_planes("lz18") == 18
    game = Game(9)
    assert game.features().shape == (20, 9, 9)
    assert game.features("lz18").shape == (18, 9, 9)
    assert game.features().dtype == np.float32


def test_rich_planes_white_to_move() -> None:
    game = make_game()
    assert game.to_move == WHITE and game.ko_point == coords.from_gtp("B4", N)
    planes = game.features("rich")
    assert_planes(planes, {
        0: points("C5", "D4", "C3"),                        # own (White) stones
        1: points("B5", "A4", "C4", "B3", "E1"),            # opponent stones
        2: points("C5"), 3: points("C3"), 4: points("D4"),  # own: 1 / 2 / >=3 liberties
        5: points("C4"), 6: points("B5", "E1"), 7: points("A4", "B3"),
        8: points("B4"),                                    # ko point barred to White
        9: points("C4"), 10: points("C3"), 11: points("E1"), 12: points("D4"),
        13: points("A5"),                                   # suicide for White
        14: ZERO,                                           # Black to move?
        15: ONES,
        16: ONES * (7.5 / 15),                              # White receives komi
        17: ZERO, 18: ZERO,                                 # no passes
        19: ZERO,                                           # chinese rules
    })


def test_rich_planes_swap_with_side_to_move() -> None:
    white = make_game().features("rich")
    game = make_game()
    game.set_to_move(BLACK)
    black = game.features("rich")
    for own, opp in ((0, 1), (2, 5), (3, 6), (4, 7)):
        assert np.array_equal(black[own], white[opp]) and np.array_equal(black[opp], white[own])
    assert_planes(black, {
        8: ZERO,                  # the ko bars White, not Black
        13: ZERO,                 # A5 is no suicide for Black
        14: ONES,
        16: ONES * (-7.5 / 15),   # komi is against Black
    })
    for k in range(9, 13):        # history of moves does not depend on who is to move
        assert np.array_equal(black[k], white[k])


def test_rich_pass_planes_and_recent_moves_after_passes() -> None:
    game = make_game()
    game.play(N * N)              # White passes: the ko ban is lifted
    planes = game.features("rich")
    assert_planes(planes, {
        8: ZERO, 9: ZERO, 10: points("C4"), 11: points("C3"), 12: points("E1"),
        14: ONES, 17: ONES, 18: ZERO,
    })
    game.play(N * N)              # Black passes too
    planes = game.features("rich")
    assert_planes(planes, {9: ZERO, 10: ZERO, 11: points("C4"), 12: points("C3"),
                           14: ZERO, 17: ONES, 18: ONES})


def test_rich_recent_move_planes_skip_captured_stones() -> None:
    # After a threat exchange (W E5, B D1) White retakes the ko at B4: Black's C4, the fourth
    # most recent move, has left the board, so its plane stays empty; Black may not retake at C4.
    game = make_game(MOVES + ["E5", "D1", "B4"])
    planes = game.features("rich")
    assert_planes(planes, {9: points("B4"), 10: points("D1"), 11: points("E5"), 12: ZERO,
                           8: points("C4")})


def test_rich_rules_plane_and_komi_sign() -> None:
    tt = make_game(rules=Rules.preset("tromp-taylor", komi=-6.0)).features("rich")
    assert_planes(tt, {19: ONES, 16: ONES * (-6.0 / 15)})    # White gives 6 points
    empty = Game(N, Rules.preset("chinese", komi=7.5)).features("rich")
    assert_planes(empty, {0: ZERO, 1: ZERO, 14: ONES, 16: ONES * (-0.5), 9: ZERO})
    assert np.array_equal(Game(N, Rules(komi=0.0)).features("rich")[16], ZERO)


def stones_after(moves: list[str]) -> np.ndarray:
    return make_game(moves).stones()


@pytest.mark.parametrize("n_moves", [0, 1, 3, 9])
def test_lz18_history_planes(n_moves: int) -> None:
    moves = MOVES[:n_moves]
    game = make_game(moves)
    me = game.to_move
    planes = game.features("lz18")
    for t in range(8):
        if t <= n_moves:
            stones = stones_after(moves[:n_moves - t])
            own, opp = (stones == me).astype(np.float32), (stones == 3 - me).astype(np.float32)
        else:                                   # before the start of the game
            own = opp = ZERO
        assert np.array_equal(planes[t], own), f"own stones at t-{t}"
        assert np.array_equal(planes[8 + t], opp), f"opponent stones at t-{t}"
    assert np.array_equal(planes[16], ONES if me == BLACK else ZERO)
    assert np.array_equal(planes[17], ONES if me == WHITE else ZERO)


def test_lz18_known_values_after_nine_moves() -> None:
    planes = make_game().features("lz18")           # White to move
    assert_planes(planes, {
        0: points("C5", "D4", "C3"),
        1: points("C5", "B4", "D4", "C3"),          # before Black's C4 captured B4
        2: points("C5", "B4", "D4"),
        8: points("B5", "A4", "C4", "B3", "E1"),
        9: points("B5", "A4", "B3", "E1"),
        15: points("B5"),                           # t-7: after the first two moves
        7: points("C5"),
        16: ZERO, 17: ONES,
    })


def test_lz18_history_counts_passes() -> None:
    game = make_game(MOVES[:2])
    game.play(N * N)
    planes = game.features("lz18")                  # White to move; t-1 is the same position
    assert np.array_equal(planes[0], planes[1]) and np.array_equal(planes[8], planes[9])
    assert np.array_equal(planes[2], points())      # t-2: before White's C5


def test_features_out_buffer_and_row_orientation() -> None:
    game = Game(N)
    game.play(coords.from_gtp("A5", N))             # top-left corner: row 0, col 0
    out = np.full((20, N, N), 9.0, np.float32)
    result = game.features("rich", out=out)
    assert result is out
    assert out[1, 0, 0] == 1.0 and out[1].sum() == 1.0      # White to move: opponent plane
    lz = np.empty((18, N, N), np.float32)
    game.features("lz18", out=lz)
    assert lz[8, 0, 0] == 1.0 and lz[8].sum() == 1.0


def test_features_are_deterministic_and_cover_all_sizes() -> None:
    rng = np.random.default_rng(5)
    for size in range(2, 20):
        game = Game(size)
        for _ in range(size * 2):
            legal = np.flatnonzero(game.legal_mask())
            game.play(int(rng.choice(legal)))
        for name in ("rich", "lz18"):
            a, b = game.features(name), game.copy().features(name)
            assert a.shape == (feature_planes(name), size, size)
            assert np.array_equal(a, b) and np.isfinite(a).all()
            own = (game.stones() == game.to_move)
            assert np.array_equal(a[0], own.astype(np.float32))
