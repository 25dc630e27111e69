"""Random playouts mixed into the net's value at the leaves (``rollout_weight``, ``rollouts``,
``rollout_policy``; src_c/search.h): the mixed value on positions whose playouts have one
possible result, the options by name, reproducibility, and the tactical playout's move rules
(playout_tactical_move, src_c/playout.h) on ASCII positions."""
from __future__ import annotations

import numpy as np
import pytest

from engine.core import BLACK, WHITE, Game, Search, SearchParams
from engine.rules import Rules
from engine.nets.evaluator import Evaluation
from engine.play import searchopts

SIZE = 5


class FixedEvaluator:
    """Uniform policy (pass ruled out), value ``value`` for Black to move and ``-value`` for
    White (rich plane 14: Black to move)."""

    feature_set = "rich"

    def __init__(self, value: float):
        self.value = value

    def evaluate(self, planes, keys=None):
        n = len(planes)
        policy = np.zeros((n, SIZE * SIZE + 1), np.float32)
        policy[:, -1] = -30.0
        values = np.array([self.value if p[14, 0, 0] > 0.5 else -self.value for p in planes], np.float32)
        return Evaluation(policy, values, None, None)


def black_wall(to_move: int) -> Game:
    """Black on every point but two separate one-point eyes (A1 and E5), komi 0.5: every
    random playout ends in two passes with all 25 points Black's (White may not play in
    either eye, Black does not fill its own), a sure win for Black."""
    game = Game(SIZE, Rules(komi=0.5))
    for p in range(SIZE * SIZE):
        if p not in (0, SIZE * SIZE - 1):
            game.play(p, BLACK)
    game.set_to_move(to_move)
    return game


def root_value(game: Game, value: float, **params) -> float:
    tree = Search(game, SearchParams(**params), max_batch=1, seed=3)
    ev = FixedEvaluator(value)
    n = tree.collect(1)
    out = ev.evaluate(tree.planes[:n])
    tree.backup(out.policy, out.value)
    assert tree.visits == 1
    return tree.value


@pytest.mark.parametrize("to_move,value,weight,expected", [
    (BLACK, 0.0, 0.0, 0.0),           # off: the net's value alone
    (BLACK, 0.0, 0.25, 0.25),         # playouts all won: 0.75 * 0 + 0.25 * 1
    (BLACK, 0.6, 0.25, 0.7),          # 0.75 * 0.6 + 0.25 * 1
    (BLACK, -0.4, 1.0, 1.0),          # playouts alone
    (WHITE, 0.0, 0.25, -0.25),        # White to move: every playout lost
    (WHITE, 0.2, 0.5, -0.6),          # the net says -0.2 for White: 0.5 * -0.2 + 0.5 * -1
])
@pytest.mark.parametrize("policy", [0.0, 1.0])
def test_mixed_leaf_value(to_move, value, weight, expected, policy):
    got = root_value(black_wall(to_move), value, rollout_weight=weight, rollouts=8, rollout_policy=policy)
    assert got == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("start,end,expected", [
    (0.0, 0.0, 0.5),                  # no ramp: lambda = rollout_weight
    (0.5, 1.0, 0.42),                 # 23 of 25 points filled: (0.92 - 0.5) / 0.5 * 0.5 = 0.42
    (0.0, 0.46, 0.5),                 # past the end: the full weight
    (0.95, 1.0, 0.0),                 # before the start: lambda 0, the net's value alone
    (0.8, 0.2, 0.5),                  # end <= start: no ramp
])
def test_ramped_leaf_value(start, end, expected):
    got = root_value(black_wall(BLACK), 0.0, rollout_weight=0.5, rollouts=8,
                     rollout_ramp_start=start, rollout_ramp_end=end)
    assert got == pytest.approx(expected, abs=1e-5)


def test_rollouts_reproducible_and_used():
    """The same search twice gives the same tree (playouts seeded by position and seed);
    with playouts the values differ from the net's alone."""
    def search(weight: float, policy: float = 0.0) -> tuple[float, list[int]]:
        game = Game(SIZE, Rules(komi=0.5))
        for p in (6, 7, 12, 18):
            game.play(p)
        tree = Search(game, SearchParams(rollout_weight=weight, rollouts=4, rollout_policy=policy),
                      max_batch=4, seed=11)
        ev = FixedEvaluator(0.0)
        while tree.visits < 60:
            n = tree.collect()
            out = ev.evaluate(tree.planes[:n])
            tree.backup(out.policy, out.value)
        return tree.value, [c.visits for c in tree.children(with_pv=False)]

    a, b = search(0.5), search(0.5)
    assert a == b
    plain = search(0.0)
    assert plain[0] == pytest.approx(0.0, abs=1e-6)
    assert abs(a[0]) > 1e-3
    # each playout policy reaches the search's leaves, reproducibly, with values of its own
    by_policy = [search(0.5, policy)[0] for policy in (0.0, 1.0, 2.0)]
    assert by_policy == [search(0.5, policy)[0] for policy in (0.0, 1.0, 2.0)]
    assert len(set(by_policy)) == 3


def test_options_by_name():
    opts = searchopts.parse_options("rollout_weight=0.5,rollouts=8,rollout_policy=1,"
                                    "rollout_ramp_start=0.2,rollout_ramp_end=0.45")
    assert opts == {"rollout_weight": 0.5, "rollouts": 8.0, "rollout_policy": 1.0,
                    "rollout_ramp_start": 0.2, "rollout_ramp_end": 0.45}
    assert SearchParams().rollout_weight == 0.0 and SearchParams().rollout_policy == 0.0
    with pytest.raises(ValueError):
        searchopts.parse_options("rollout_weight=1.5")
    with pytest.raises(ValueError):
        searchopts.parse_options("rollouts=0")
    with pytest.raises(ValueError):
        searchopts.parse_options("rollout_policy=3")


def position(diagram: str, last: tuple[int, int]) -> Game:
    """A game on the diagram's board (5x5 in most cases) with its stones (X Black, O White),
    the stone at ``last`` played last (the move a tactical playout answers); Black to move."""
    rows = [r.split() for r in diagram.strip().splitlines()]
    size = len(rows)
    game = Game(size, Rules(komi=0.5))
    stones = [(r, c, {"X": BLACK, "O": WHITE}[ch]) for r, row in enumerate(rows)
              for c, ch in enumerate(row) if ch != "."]
    for r, c, color in sorted(stones, key=lambda s: (s[0], s[1]) == last):
        game.play(r * size + c, color)
    game.set_to_move(BLACK)
    return game


def first_moves(game: Game, tactical: bool, seeds: int = 64) -> np.ndarray:
    """Black's area after one playout move (``max_moves=1``; the first of a game's playouts
    starts with Black), one row per seed."""
    return np.array([game.playout_ownership(1, seed=s, max_moves=1, tactical=tactical).ravel()
                     for s in range(seeds)])


# (name, diagram, the last move, the point that tells: (row, col), the ownership it must have
# there after every tactical first move, and the one some random first moves give it)
TACTICAL_CASES = [
    # White's last stone has one liberty: Black captures it, and its point becomes Black's.
    ("capture the last move", """
        . . . . .
        . . X . .
        . X O X .
        . . . . .
        . . . . .""", (2, 2), (2, 2), 1.0, -1.0),
    # White's last move put the black stone in atari: Black extends to three liberties.
    ("escape atari", """
        . . . . .
        . O . . .
        O X O . .
        . . . . .
        . . . . .""", (2, 2), (3, 1), 1.0, 0.0),
    # Black's corner pair has two liberties, and filling either leaves it one: a self-atari
    # that joins a group, never played (a random move fills one, making the corner Black's).
    ("no self-atari", """
        . X O . .
        . X O . .
        O O . . .
        . . . . .
        . . . . O""", (4, 4), (0, 0), 0.0, 1.0),
]


@pytest.mark.parametrize("name,diagram,last,point,tactical_owner,random_owner", TACTICAL_CASES,
                         ids=[c[0] for c in TACTICAL_CASES])
def test_tactical_playout_moves(name, diagram, last, point, tactical_owner, random_owner):
    game = position(diagram, last)
    i = point[0] * SIZE + point[1]
    tactical = first_moves(game, True)[:, i]
    assert np.all(tactical == tactical_owner), name
    assert np.any(first_moves(game, False)[:, i] == random_owner), name      # the rule decides



# White's corner group has two liberties, both shared with the black pair inside it: a seki
# unless Black throws in.  Black's only moves that fill no own eye are those two points, each
# a self-atari that joins the pair, and each puts White in atari: the nakade throw-in, which
# kills the group once White captures three stones and Black takes the vital point.
NAKADE = """
    O . . O X
    O X X O X
    O O O O X
    X X X X X
    X . X . X"""


def test_nakade_throw_in():
    game = position(NAKADE, (2, 2))
    throw_ins = [1, 2]
    tactical = first_moves(game, True)[:, throw_ins]
    assert np.all(tactical.max(axis=1) == 1.0)              # one of them, every time
    assert np.all(tactical.min(axis=1) == 0.0)
    # A whole playout: the group lives in seki without the throw-in, and dies in some with it.
    corner = np.array([game.playout_ownership(1, seed=s, tactical=True)[0, 0] for s in range(64)])
    assert np.any(corner == 1.0) and np.any(corner == -1.0)


@pytest.mark.parametrize("diagram,last", [
    # The same pair's throw-in when White has a third liberty outside: no atari, no throw-in.
    ("""
    O . . O X
    O X X O X
    O O O O .
    X X X X X
    X . X . X""", (2, 2)),
    # Five stones would be too many to kill (a square of four inside, on a 6x6 board; White
    # is in atari after the throw-in as before): Black passes.
    ("""
    O . . O X .
    O X X O X X
    O X X O X .
    O O O O X X
    X X X X X .
    . X . X . X""", (3, 3)),
])
def test_no_throw_in_without_nakade(diagram, last):
    game = position(diagram, last)
    first = first_moves(game, True)
    assert np.all(first[:, 1] <= 0.0) and np.all(first[:, 2] <= 0.0)     # (0, 1) and (0, 2) stay empty


def first_points(game: Game, tactical: int, seeds: int = 100) -> set[tuple[int, int]]:
    """The points Black's first playout move takes, over ``seeds`` playouts: where Black's
    area gained a stone (the other empty points touch both colours and stay neutral)."""
    before = (game.area().ravel() == BLACK)
    points = set()
    for s in range(seeds):
        own = game.playout_ownership(1, seed=s, max_moves=1, tactical=tactical).ravel()
        new = [p for p in range(own.size) if own[p] == 1.0 and not before[p]]
        assert len(new) == 1
        points.add(divmod(new[0], game.size))
    return points


# MoGo's 3x3 patterns, checked by hand (rows from the top): with rollout_policy 2 Black's first
# move is a pattern point around White's last stone, every time; tactical playouts alone
# (policy 1) play all over the board.
PATTERN_CASES = [
    # Black's stone beside White's: the hanes above and below both stones (a hane is a hane
    # for either colour).
    ("hane", """
        . . . . . . .
        . . . . . . .
        . . X O . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .""", (2, 3), {(1, 2), (1, 3), (3, 2), (3, 3)}),
    # White's last stone makes a diagonal pair around Black's: the cut at (3, 3), and the two
    # hanes beside the new stone.
    ("cut", """
        . . . . . . .
        . . . . . . .
        . . X O . . .
        . . O . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .""", (3, 2), {(3, 3), (2, 1), (3, 1)}),
]


@pytest.mark.parametrize("name,diagram,last,points", PATTERN_CASES, ids=[c[0] for c in PATTERN_CASES])
def test_pattern_playout_moves(name, diagram, last, points):
    game = position(diagram, last)
    assert first_points(game, 2) == points, name
    assert len(first_points(game, 1) - points) > 10, name
