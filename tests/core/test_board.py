"""Go rules of the C core, as readable tables of ASCII positions.

Each row of a table is (name, rules, setup diagram, side to move, moves in GTP notation,
expected diagram after the moves, expected captures (by Black, by White), expected simple-ko
point, expected Tromp-Taylor score with komi 0).  Diagrams are top row first, ``X`` Black,
``O`` White, ``.`` empty; they are parsed here without the core, so a wrong capture cannot hide
behind the same code that set the position up.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from engine import coords
from engine.core import (BLACK, EMPTY, WHITE, Game, IllegalMoveError, Rules, board_from_ascii,
                         other)

CHINESE = Rules.preset("chinese", komi=0.0)
TROMP_TAYLOR = Rules.preset("tromp-taylor", komi=0.0)
# Under positional superko a single-stone suicide is always illegal (it repeats the position),
# so removing a lone suicided stone needs suicide without superko.
SIMPLE_KO_SUICIDE = Rules(ko="simple", suicide=True, komi=0.0)


def parse_diagram(diagram: str) -> np.ndarray:
    """int8 [N, N] of EMPTY/BLACK/WHITE from a diagram (independent of the core)."""
    rows = [r.split() for r in diagram.strip().splitlines() if r.strip()]
    table = {".": EMPTY, "X": BLACK, "O": WHITE}
    return np.array([[table[ch] for ch in row] for row in rows], dtype=np.int8)


def show(stones: np.ndarray) -> str:
    return "\n".join(" ".join(".XO"[v] for v in row) for row in stones)


def play_gtp(game: Game, vertex: str, color: int | None = None) -> None:
    game.play(coords.from_gtp(vertex, game.size), color)


def snapshot(game: Game) -> dict:
    """Everything observable about a game, for before/after comparisons."""
    return {
        "stones": game.stones().tolist(),
        "hash": game.hash,
        "to_move": game.to_move,
        "moves": list(game.moves),
        "passes": game.passes,
        "ko": game.ko_point,
        "captures": (game.captures(BLACK), game.captures(WHITE)),
        "mask_b": game.legal_mask(BLACK).tolist(),
        "mask_w": game.legal_mask(WHITE).tolist(),
        "score": game.score(),
    }


class Case(NamedTuple):
    name: str
    rules: Rules
    setup: str
    to_move: int
    moves: list[str]
    after: str
    captures: tuple[int, int]
    ko: str | None
    score: float


PLAY_CASES = [
    Case("single stone in the centre", CHINESE, """
        . . . . .
        . . X . .
        . X O . .
        . . X . .
        . . . . .""", BLACK, ["D3"], """
        . . . . .
        . . X . .
        . X . X .
        . . X . .
        . . . . .""", (1, 0), None, 25),
    Case("three groups at once", CHINESE, """
        X O . O X
        . X O X .
        . . X . .
        . . . . .
        . . . . .""", BLACK, ["C5"], """
        X . X . X
        . X . X .
        . . X . .
        . . . . .
        . . . . .""", (3, 0), None, 25),
    Case("three-stone group on the edge", CHINESE, """
        . . . . .
        . . . . O
        . . . . .
        . X X . .
        X O O O X""", BLACK, ["D2"], """
        . . . . .
        . . . . O
        . . . . .
        . X X X .
        X . . . X""", (3, 0), None, 5 + 3 - 1),
    Case("corner stone", CHINESE, """
        O X . . .
        . . . . .
        . . . . .
        . . . . .
        . . . . O""", BLACK, ["A4"], """
        . X . . .
        X . . . .
        . . . . .
        . . . . .
        . . . . O""", (1, 0), None, 3 - 1),
    Case("White captures two stones in the corner", CHINESE, """
        X X O . .
        O . . . .
        . . . . .
        . . . . .
        . . . . .""", WHITE, ["B4"], """
        . . O . .
        O O . . .
        . . . . .
        . . . . .
        . . . . .""", (0, 2), None, -25),
    Case("ko capture sets the ko point", CHINESE, """
        . X O . .
        X O . O .
        . X O . .
        . . . . .
        . . . . .""", BLACK, ["C4"], """
        . X O . .
        X . X O .
        . X O . .
        . . . . .
        . . . . .""", (1, 0), "B4", 4 + 2 - 3),
    Case("snapback", CHINESE, """
        X O . . X
        X O O O X
        . X X X .
        . . . . .
        . . . . .""", BLACK, ["C5", "D5", "C5"], """
        X . X . X
        X . . . X
        . X X X .
        . . . . .
        . . . . .""", (5, 1), None, 25),
    Case("ko retaken after a threat exchange", CHINESE, """
        . X O . .
        X O . O .
        . X O . .
        . . . . .
        . . . . .""", BLACK, ["C4", "E1", "A1", "B4"], """
        . X O . .
        X O . O .
        . X O . .
        . . . . .
        X . . . O""", (1, 1), "C4", 4 + 1 - 5 - 1),
    Case("single-stone suicide removes the stone (simple ko, suicide allowed)", SIMPLE_KO_SUICIDE, """
        . O . . .
        O . . . .
        . . . . .
        . . . . .
        . . . . .""", BLACK, ["A5"], """
        . O . . .
        O . . . .
        . . . . .
        . . . . .
        . . . . .""", (0, 1), None, -25),
    Case("multi-stone suicide removes the group (Tromp-Taylor)", TROMP_TAYLOR, """
        X . O . .
        O O . . .
        . . . . .
        . . . . .
        . . . . .""", BLACK, ["B5"], """
        . . O . .
        O O . . .
        . . . . .
        . . . . .
        . . . . .""", (0, 2), None, -25),
    Case("a move that captures is not suicide", CHINESE, """
        . O X . .
        O X . . .
        X . . . .
        . . . . .
        . . . . .""", BLACK, ["A5"], """
        X . X . .
        . X . . .
        X . . . .
        . . . . .
        . . . . .""", (2, 0), None, 25),
]


@pytest.mark.parametrize("case", PLAY_CASES, ids=[c.name for c in PLAY_CASES])
def test_play_table(case: Case) -> None:
    game = board_from_ascii(case.setup, case.rules, to_move=case.to_move)
    assert game.stones().tolist() == parse_diagram(case.setup).tolist(), "setup differs"
    for vertex in case.moves:
        play_gtp(game, vertex)
    expected = parse_diagram(case.after)
    assert game.stones().tolist() == expected.tolist(), \
        f"\ngot:\n{show(game.stones())}\nexpected:\n{show(expected)}"
    assert (game.captures(BLACK), game.captures(WHITE)) == case.captures
    ko = None if case.ko is None else coords.from_gtp(case.ko, game.size)
    assert game.ko_point == ko
    assert game.score() == case.score
    # A position reached by play hashes like the same stones set up directly.
    assert game.hash == board_from_ascii(case.after, case.rules).hash


class IllegalCase(NamedTuple):
    name: str
    rules: Rules
    setup: str
    to_move: int
    moves: list[str]
    move: str
    reason: str


KO_SETUP = """
    . X O . .
    X O . O .
    . X O . .
    . . . . .
    . . . . ."""

# Three independent kos on 9x9.  Top-left and bottom-left hold a white stone that Black can
# capture (C9, C1); top-right holds a black stone that White can capture (G9).  Capturing in
# turn (B C9, W G9, B C1, W B9, B H9, W B1) never retakes the ko just taken, so simple ko allows
# all six moves, but the sixth recreates the starting position.
TRIPLE_KO = """
    X O . O . X . X O
    X X O O . X X O O
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    . . . . . . . . .
    X X O O . . . . .
    X O . O . . . . ."""
TRIPLE_KO_CYCLE = ["C9", "G9", "C1", "B9", "H9", "B1"]

ILLEGAL_CASES = [
    IllegalCase("occupied", CHINESE, KO_SETUP, BLACK, [], "B4", "occupied"),
    IllegalCase("occupied by own stone", CHINESE, KO_SETUP, WHITE, [], "B4", "occupied"),
    IllegalCase("single-stone suicide (chinese)", CHINESE, """
        . O . . .
        O . . . .
        . . . . .
        . . . . .
        . . . . .""", BLACK, [], "A5", "suicide"),
    IllegalCase("multi-stone suicide (chinese)", CHINESE, """
        X . O . .
        O O . . .
        . . . . .
        . . . . .
        . . . . .""", BLACK, [], "B5", "suicide"),
    IllegalCase("suicide filling a group's last liberty (chinese)", CHINESE, """
        X X O . .
        . X O . .
        X X O . .
        O O . . .
        . . . . .""", BLACK, [], "A4", "suicide"),
    IllegalCase("immediate ko retake (chinese)", CHINESE, KO_SETUP, BLACK, ["C4"], "B4", "ko"),
    IllegalCase("single-stone suicide repeats the position (positional superko)", TROMP_TAYLOR,
                """
        . O . . .
        O . . . .
        . . . . .
        . . . . .
        . . . . .""", BLACK, [], "A5", "superko"),
    IllegalCase("triple ko cycle (positional superko)", TROMP_TAYLOR, TRIPLE_KO, BLACK,
                TRIPLE_KO_CYCLE[:5], TRIPLE_KO_CYCLE[5], "superko"),
    IllegalCase("ko retake after two passes repeats a position (positional superko)",
                TROMP_TAYLOR, KO_SETUP, BLACK, ["C4", "pass", "pass"], "B4", "superko"),
]


@pytest.mark.parametrize("case", ILLEGAL_CASES, ids=[c.name for c in ILLEGAL_CASES])
def test_illegal_table(case: IllegalCase) -> None:
    game = board_from_ascii(case.setup, case.rules, to_move=case.to_move)
    for vertex in case.moves:
        play_gtp(game, vertex)
    point = coords.from_gtp(case.move, game.size)
    assert game.illegal_reason(point) == case.reason
    assert not game.is_legal(point)
    assert not game.legal_mask()[point]
    before = snapshot(game)
    with pytest.raises(IllegalMoveError) as info:
        game.play(point)
    assert info.value.reason == case.reason
    assert isinstance(info.value, ValueError)
    assert snapshot(game) == before, "an illegal move changed the game"


def test_passes_lift_the_simple_ko_ban() -> None:
    # Simple ko only bars the immediate retake; after W pass, B pass, White may retake (the
    # same sequence is a positional-superko violation, see the table above).
    game = board_from_ascii(KO_SETUP, CHINESE)
    play_gtp(game, "C4")
    play_gtp(game, "pass")
    assert game.ko_point is None
    play_gtp(game, "pass")
    assert game.illegal_reason(coords.from_gtp("B4", 5)) is None
    play_gtp(game, "B4")
    assert game.stones().tolist() == parse_diagram(KO_SETUP).tolist()


def test_immediate_ko_retake_under_superko_rules() -> None:
    # Either reason is right: the retake breaks simple ko and repeats a position.
    game = board_from_ascii(KO_SETUP, TROMP_TAYLOR)
    play_gtp(game, "C4")
    assert game.illegal_reason(coords.from_gtp("B4", 5)) in ("ko", "superko")


def test_ko_after_threat_exchange() -> None:
    game = board_from_ascii(KO_SETUP, CHINESE)
    b4, c4 = coords.from_gtp("B4", 5), coords.from_gtp("C4", 5)
    game.play(c4)
    assert game.ko_point == b4
    assert game.illegal_reason(b4) == "ko"
    play_gtp(game, "E1")          # White's threat
    assert game.ko_point is None
    play_gtp(game, "A1")          # Black answers
    assert game.illegal_reason(b4) is None
    game.play(b4)                  # White retakes
    assert game.ko_point == c4     # now Black may not retake at once
    assert game.illegal_reason(c4) == "ko"


def test_triple_ko_is_legal_under_simple_ko_and_repeats_the_position() -> None:
    game = board_from_ascii(TRIPLE_KO, CHINESE)
    start_hash, start_stones = game.hash, game.stones().tolist()
    hashes = []
    for vertex in TRIPLE_KO_CYCLE:
        play_gtp(game, vertex)
        hashes.append(game.hash)
    assert game.stones().tolist() == start_stones
    assert game.hash == start_hash
    assert len(set(hashes[:5])) == 5 and start_hash not in hashes[:5]
    assert (game.captures(BLACK), game.captures(WHITE)) == (3, 3)


def test_triple_ko_first_five_moves_are_legal_under_superko() -> None:
    game = board_from_ascii(TRIPLE_KO, TROMP_TAYLOR)
    for vertex in TRIPLE_KO_CYCLE[:5]:
        assert game.illegal_reason(coords.from_gtp(vertex, 9)) is None, vertex
        play_gtp(game, vertex)
    # White may still play elsewhere; only the repeating capture is barred.
    assert game.is_legal(coords.from_gtp("E5", 9))


def test_superko_ignores_the_side_to_move() -> None:
    # The start position is set up with White to move; Black captures out of turn and after
    # two passes White's retake recreates it with Black to move.  Positional superko compares
    # stones only, so it still forbids the retake; simple ko does not.
    for rules, reason in ((TROMP_TAYLOR, "superko"), (CHINESE, None)):
        game = board_from_ascii(KO_SETUP, rules, to_move=WHITE)
        play_gtp(game, "C4", BLACK)
        play_gtp(game, "pass")
        play_gtp(game, "pass")
        assert game.to_move == WHITE
        assert game.illegal_reason(coords.from_gtp("B4", 5)) == reason


SEKI = """
    X . O X . . .
    X . O X . . .
    X X O X . . .
    O O X X . . .
    . O X . . . .
    . O X . . . .
    . O X . . . ."""
SEKI_AREA = """
    X . O X X X X
    X . O X X X X
    X X O X X X X
    O O X X X X X
    O O X X X X X
    O O X X X X X
    O O X X X X X"""


def test_seki_is_a_seki() -> None:
    # Inner Black (A7) and inner White (C7) share the two liberties B7 and B6 and have no eyes:
    # whoever fills one is captured at the other.
    game = board_from_ascii(SEKI, CHINESE)
    shared = [coords.from_gtp(v, 7) for v in ("B7", "B6")]
    for color in (BLACK, WHITE):
        for point in shared:
            trial = game.copy()
            trial.play(point, color)
            assert trial.liberties(point) == 1
            reply = shared[1 - shared.index(point)]
            trial.play(reply, other(color))
            assert trial.stones()[coords.to_rowcol(point, 7)] == EMPTY


def test_seki_area_score() -> None:
    game = board_from_ascii(SEKI, Rules.preset("tromp-taylor", komi=7.5))
    # Black: 12 stones + 24 territory; White: 8 stones + 3 territory; B7 and B6 neutral.
    assert game.score() == 36 - 11 - 7.5
    assert game.area().tolist() == parse_diagram(SEKI_AREA).tolist()
    assert Game(7, game.rules).score() == -7.5


@pytest.mark.parametrize("komi, expected", [(7.5, 73.5), (0.5, 80.5), (0, 81), (-3, 84), (6, 75)])
def test_score_with_komi(komi: float, expected: float) -> None:
    game = Game(9, Rules.preset("chinese", komi=komi))
    assert game.score() == -komi
    play_gtp(game, "E5")
    assert game.score() == expected
    play_gtp(game, "D5")        # both colours touch the rest of the board: all neutral
    assert game.score() == -komi
    assert game.result_string() == ("0" if komi == 0 else f"{'W' if komi > 0 else 'B'}+{abs(komi):.1f}")


def test_score_with_non_binary_komi_is_exact() -> None:
    # GTP `komi` accepts any float; score() should be area minus komi as a Python float.
    game = Game(5, Rules.preset("chinese", komi=6.3))
    play_gtp(game, "C3")
    assert game.score() == 25 - 6.3


def test_hash_equal_for_transpositions() -> None:
    orders = [
        [("B", "D4"), ("W", "C3"), ("B", "E5"), ("W", "F6")],
        [("B", "E5"), ("W", "F6"), ("B", "D4"), ("W", "C3")],
        [("W", "C3"), ("B", "D4"), ("W", "F6"), ("B", "E5")],
    ]
    hashes = set()
    for order in orders:
        game = Game(9, CHINESE)
        for color, vertex in order:
            play_gtp(game, vertex, BLACK if color == "B" else WHITE)
        hashes.add(game.hash)
    assert len(hashes) == 1


def test_hash_after_capture_equals_hash_without_the_stone() -> None:
    game = board_from_ascii(PLAY_CASES[0].setup, CHINESE)
    play_gtp(game, "D3")
    direct = Game(5, CHINESE)
    for vertex in ("C4", "B3", "C2", "D3"):
        play_gtp(direct, vertex, BLACK)
    assert game.hash == direct.hash


def test_hash_differs_for_different_positions() -> None:
    seen = {}
    # Positions of one board size (the hash does not encode the size: superko never compares
    # across sizes, and evaluation-cache keys add it).
    for size in (5, 9):
        seen = {Game(size, CHINESE).hash}
        for point in range(size * size):
            for color in (BLACK, WHITE):
                g = Game(size, CHINESE)
                g.play(point, color)
                seen.add(g.hash)
                g.play((point + 1) % (size * size), other(color))
                seen.add(g.hash)
        assert len(seen) == 1 + 4 * size * size


def test_hash_is_stones_only() -> None:
    a, b = Game(9, CHINESE), Game(9, CHINESE)
    play_gtp(a, "E5")
    play_gtp(b, "E5")
    b.play(81)              # a pass changes the side to move, not the stones
    assert a.hash == b.hash and a.to_move != b.to_move


LIBERTY_CASES = [
    ("lone stone in the centre", """
        . . . . .
        . . . . .
        . . X . .
        . . . . .
        . . . . .""", "C3", 4),
    ("lone stone on the edge", """
        . . X . .
        . . . . .
        . . . . .
        . . . . .
        . . . . .""", "C5", 3),
    ("lone stone in the corner", """
        X . . . .
        . . . . .
        . . . . .
        . . . . .
        . . . . .""", "A5", 2),
    ("two-stone group", """
        . . . . .
        . X X . .
        . . . . .
        . . . . .
        . . . . .""", "C4", 6),
    ("shared liberty counted once", """
        . . . . .
        . X . . .
        . X X . .
        . . . . .
        . . . . .""", "B4", 7),
    ("two-stone group hemmed in", """
        . O . . .
        O X X . .
        . O O . .
        . . . . .
        . . . . .""", "B4", 2),
    ("stone in atari", """
        . X O . .
        X O . O .
        . X O . .
        . . . . .
        . . . . .""", "B4", 1),
    ("empty point", """
        . X . . .
        . . . . .
        . . . . .
        . . . . .
        . . . . .""", "C3", 0),
    ("big snake with an inner liberty", """
        X X X X X
        X . . . X
        X . O . X
        X . . . X
        X X X X X""", "A1", 8),
]


@pytest.mark.parametrize("name, diagram, vertex, libs", LIBERTY_CASES,
                         ids=[c[0] for c in LIBERTY_CASES])
def test_liberties(name: str, diagram: str, vertex: str, libs: int) -> None:
    game = board_from_ascii(diagram, CHINESE)
    assert game.liberties(coords.from_gtp(vertex, game.size)) == libs


def test_liberties_update_after_capture_and_merge() -> None:
    game = board_from_ascii(PLAY_CASES[1].setup, CHINESE)
    play_gtp(game, "C5")
    # C5 now has B5, D5 and C4 free (captured), A5 group gained B5.
    assert game.liberties(coords.from_gtp("C5", 5)) == 3
    assert game.liberties(coords.from_gtp("A5", 5)) == 2
    play_gtp(game, "C4", BLACK)     # merges C5, C4, B4, D4 and C3 into one group
    assert game.liberties(coords.from_gtp("C4", 5)) == 7
    assert game.liberties(coords.from_gtp("A5", 5)) == 2


def _random_positions():
    """Copies of positions from seeded random games (uniform among legal moves)."""
    rng = np.random.default_rng(7)
    for size, rules in ((5, CHINESE), (5, TROMP_TAYLOR), (7, TROMP_TAYLOR), (9, CHINESE)):
        game = Game(size, rules)
        for i in range(3 * size * size):
            legal = np.flatnonzero(game.legal_mask())
            game.play(int(rng.choice(legal)))
            if i % 5 == 0:
                yield game.copy()


def test_legal_mask_matches_is_legal_everywhere() -> None:
    positions = list(_random_positions())
    for case in ILLEGAL_CASES:       # positions with ko, superko and suicide points
        game = board_from_ascii(case.setup, case.rules, case.to_move)
        for vertex in case.moves:
            play_gtp(game, vertex)
        positions.append(game)
    positions.append(board_from_ascii(SEKI, TROMP_TAYLOR))
    reasons = set()
    for game in positions:
        area = game.size ** 2
        stones = game.stones().ravel()
        for color in (BLACK, WHITE):
            mask = game.legal_mask(color)
            assert mask.dtype == np.bool_ and mask.shape == (area + 1,)
            assert mask[area], "pass is always legal"
            for point in range(area + 1):
                reason = game.illegal_reason(point, color)
                reasons.add(reason)
                assert mask[point] == game.is_legal(point, color) == (reason is None), (point, color)
                if point < area and stones[point] != EMPTY:
                    assert reason == "occupied"
    assert len(positions) > 50
    assert reasons >= {None, "occupied", "suicide", "ko", "superko"}


def test_undo_restores_everything() -> None:
    game = board_from_ascii(PLAY_CASES[6].setup, CHINESE)   # snapback
    history = [snapshot(game)]
    for vertex in ["C5", "D5", "C5", "pass", "E3", "pass", "pass"]:
        play_gtp(game, vertex)
        history.append(snapshot(game))
    # Down to the first move only: undoing into the set-up is test_undo_restores_side_to_move...
    while len(history) > 2:
        history.pop()
        game.undo()
        assert snapshot(game) == history[-1]


def test_undo_restores_hash_through_kos_and_superko_history() -> None:
    game = board_from_ascii(TRIPLE_KO, TROMP_TAYLOR)
    hashes = [game.hash]
    for vertex in TRIPLE_KO_CYCLE[:5]:
        play_gtp(game, vertex)
        hashes.append(game.hash)
    for expected in reversed(hashes[:-1]):
        game.undo()
        assert game.hash == expected
    # the history is rebuilt: the cycle is again legal up to its last move
    for vertex in TRIPLE_KO_CYCLE[:5]:
        play_gtp(game, vertex)
    assert game.illegal_reason(coords.from_gtp("B1", 9)) == "superko"


def test_undo_without_moves_raises() -> None:
    with pytest.raises(IndexError):
        Game(5).undo()


def test_undo_restores_side_to_move_set_explicitly() -> None:
    # board_from_ascii(to_move=...) and GTP set-ups use set_to_move; undo must not forget it.
    game = board_from_ascii("""
        . . . . .
        . X . . .
        . . . . .
        . . . . .
        . . . . .""", CHINESE, to_move=BLACK)
    assert game.to_move == BLACK
    play_gtp(game, "D2")
    game.undo()
    assert game.to_move == BLACK


def test_copy_is_independent() -> None:
    game = board_from_ascii(KO_SETUP, TROMP_TAYLOR)
    play_gtp(game, "C4")
    before = snapshot(game)
    twin = game.copy()
    assert snapshot(twin) == before
    play_gtp(twin, "E1")
    play_gtp(twin, "A1")
    play_gtp(twin, "B4")
    assert snapshot(game) == before
    # and the other way round: the original's history does not leak into the copy
    twin_state = snapshot(twin)
    play_gtp(game, "E5")
    play_gtp(game, "E4")
    assert snapshot(twin) == twin_state
    # a copy keeps the superko history: after two passes the retake repeats a position
    a = board_from_ascii(KO_SETUP, TROMP_TAYLOR)
    for vertex in ["C4", "pass", "pass"]:
        play_gtp(a, vertex)
    assert a.copy().illegal_reason(coords.from_gtp("B4", 5)) == "superko"


def test_same_colour_may_play_twice() -> None:
    game = Game(5, CHINESE)
    play_gtp(game, "C3", BLACK)
    play_gtp(game, "D3", BLACK)
    assert game.to_move == WHITE
    assert game.moves == [(BLACK, 12), (BLACK, 13)]
    game.set_to_move(BLACK)
    assert game.to_move == BLACK


def test_two_passes_end_the_game() -> None:
    game = Game(5, CHINESE)
    play_gtp(game, "pass")
    assert game.passes == 1 and not game.is_over
    play_gtp(game, "pass")
    assert game.passes == 2 and game.is_over


def test_many_passes_keep_the_game_over() -> None:
    # The pass counter must not wrap (it was an int16: after 32,767 passes is_over went False).
    game = Game(2, CHINESE)
    for _ in range(33_000):
        game.play(4)
    assert game.is_over and game.passes >= 2
