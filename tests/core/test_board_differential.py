"""Differential test of the C rules against sgfmill's independent board (sgfmill.boards.Board).

Random games (seeded; each move uniform among the points our legal_mask allows, with a few
passes) are replayed move by move on both boards:

* the stones must be identical after every move (so captures and suicides match), and the
  captures the core reports must equal the stones that left the board;
* our simple-ko point must be the one sgfmill's ``play`` returns;
* points we call illegal are checked against sgfmill: "occupied" ones hold a stone there,
  "suicide" ones lose the played stone on sgfmill's board, "ko" is sgfmill's ko point,
  "superko" (Tromp-Taylor games) recreates a position seen earlier in the game; a few points we
  call legal are checked the other way round;
* the liberty counts of the groups next to each move (and of one random stone) equal a flood
  fill of the stones;
* equal stones always give equal hashes (transpositions across all games of a size);
* at the end, sgfmill's ``area_score()`` (Black minus White, no komi) equals our Tromp-Taylor
  score plus komi.

sgfmill counts rows from the BOTTOM; engine.coords.to_sgfmill converts.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
from sgfmill.boards import Board

from engine import coords
from engine.core import BLACK, EMPTY, WHITE, Game, Rules, other

pytestmark = pytest.mark.slow          # 2,000 random games move by move against sgfmill (about 2 minutes)

KOMI = 7.5
PASS_PROBABILITY = 0.04
PROBES = 1                # illegal empty points cross-checked per move (plus the ko point)
SGF_COLOUR = {BLACK: "b", WHITE: "w"}
TO_INT = {None: EMPTY, "b": BLACK, "w": WHITE}

# (size, games, move cap): mostly small boards, for speed; 2,000 games in all.
PLAN = [(5, 800, 50), (9, 800, 70), (13, 300, 100), (19, 100, 130)]


def sgfmill_stones(board: Board) -> np.ndarray:
    """int8 [N, N] in our orientation (row 0 = top) from an sgfmill board."""
    rows = [[TO_INT[v] for v in row] for row in reversed(board.board)]
    return np.array(rows, dtype=np.int8)


def sgfmill_key(board: Board) -> tuple:
    return tuple(tuple(row) for row in board.board)


def sgfmill_play(board: Board, point: int, color: int):
    row, col = coords.to_sgfmill(point, board.side)
    return board.play(row, col, SGF_COLOUR[color])


def pick(rng: np.random.Generator, items: np.ndarray) -> int:
    """A uniform element of a non-empty array (much cheaper than rng.choice)."""
    return int(items[rng.integers(len(items))])


def neighbours(point: int, size: int) -> list[int]:
    row, col = divmod(point, size)
    out = []
    if row > 0:
        out.append(point - size)
    if row < size - 1:
        out.append(point + size)
    if col > 0:
        out.append(point - 1)
    if col < size - 1:
        out.append(point + 1)
    return out


def flood_liberties(flat: list[int], size: int, point: int) -> tuple[set[int], int]:
    """(stones of the group at point, its liberty count) by a plain flood fill."""
    color = flat[point]
    group, stack, libs = {point}, [point], set()
    while stack:
        p = stack.pop()
        for q in neighbours(p, size):
            if flat[q] == EMPTY:
                libs.add(q)
            elif flat[q] == color and q not in group:
                group.add(q)
                stack.append(q)
    return group, len(libs)


def check_liberties(game: Game, stones: np.ndarray, move: int, rng) -> int:
    """Compares game.liberties with a flood fill for the groups around `move`; returns checks."""
    size = game.size
    flat = stones.ravel().tolist()
    todo = [p for p in [move] + neighbours(move, size) if flat[p] != EMPTY]
    occupied = np.flatnonzero(stones.ravel())
    if len(occupied):
        todo.append(int(pick(rng, occupied)))
    done: set[int] = set()
    for point in todo:
        if point in done:
            continue
        group, libs = flood_liberties(flat, size, point)
        done |= group
        assert game.liberties(point) == libs, \
            f"liberties at {coords.to_gtp(point, size)}: {game.liberties(point)} != {libs}\n{game}"
    return len(todo)


class Stats:
    def __init__(self) -> None:
        self.games = self.moves = self.captures = self.passes_end = 0
        self.probes = {"occupied": 0, "suicide": 0, "ko": 0, "superko": 0, "legal": 0}
        self.superko_not_suicide = 0     # superko points where the stone would stay
        self.liberty_checks = 0


def check_illegal(game: Game, board: Board, point: int, reason: str, seen: set | None,
                  sgf_ko, stats: Stats) -> None:
    size = game.size
    row, col = coords.to_sgfmill(point, size)
    color = game.to_move
    stats.probes[reason] += 1
    if reason == "occupied":
        assert board.get(row, col) is not None
        with pytest.raises(ValueError):     # raised before sgfmill changes anything
            board.play(row, col, SGF_COLOUR[color])
        return
    assert board.get(row, col) is None, f"{reason} at an occupied point"
    if reason == "ko":
        assert sgf_ko == (row, col)
        return
    trial = board.copy()
    trial.play(row, col, SGF_COLOUR[color])
    if reason == "suicide":
        assert not game.rules.suicide
        assert trial.get(row, col) is None, "sgfmill keeps a stone we call suicide"
    elif reason == "superko":
        assert seen is not None and sgfmill_key(trial) in seen, "superko without a repetition"
        stats.superko_not_suicide += trial.get(row, col) is not None
    else:
        raise AssertionError(f"unexpected reason {reason!r}")


def check_legal(game: Game, board: Board, point: int, seen: set | None, sgf_ko,
                stats: Stats) -> None:
    row, col = coords.to_sgfmill(point, game.size)
    stats.probes["legal"] += 1
    assert board.get(row, col) is None
    assert sgf_ko != (row, col), "we allow a simple-ko retake"
    trial = board.copy()
    trial.play(row, col, SGF_COLOUR[game.to_move])
    if trial.get(row, col) is None:          # the move was a suicide on sgfmill's board
        assert game.rules.suicide, "we allow a suicide under no-suicide rules"
    if seen is not None:
        assert sgfmill_key(trial) not in seen, "we allow a positional-superko repetition"


def play_random_games(size: int, n_games: int, max_moves: int, seed: int) -> Stats:
    rng = np.random.default_rng(seed)
    stats = Stats()
    area = size * size
    hash_of: dict[bytes, int] = {}            # stones -> hash, across all games of this size
    for game_index in range(n_games):
        tromp_taylor = game_index % 4 == 3
        rules = Rules.preset("tromp-taylor" if tromp_taylor else "chinese", komi=KOMI)
        game = Game(size, rules)
        board = Board(size)
        seen = {sgfmill_key(board)} if tromp_taylor else None
        sgf_ko = None
        stones = np.zeros((size, size), np.int8)
        for _ in range(max_moves):
            color = game.to_move
            mask = game.legal_mask()
            assert mask[area]
            assert not mask[:area][stones.ravel() != EMPTY].any(), "legal move on a stone"
            # Cross-check a few illegal empty points (the ko point first), one occupied point
            # and one legal point.
            illegal_empty = np.flatnonzero(~mask[:area] & (stones.ravel() == EMPTY))
            probes = [pick(rng, illegal_empty) for _ in range(min(PROBES, len(illegal_empty)))]
            if game.ko_point is not None and game.ko_point not in probes:
                probes.append(game.ko_point)
            occupied = np.flatnonzero(stones.ravel() != EMPTY)
            if len(occupied):
                probes.append(pick(rng, occupied))
            for point in probes:
                point = int(point)
                check_illegal(game, board, point, game.illegal_reason(point), seen, sgf_ko, stats)
            candidates = np.flatnonzero(mask[:area])
            if len(candidates):
                check_legal(game, board, int(pick(rng, candidates)), seen, sgf_ko, stats)

            if len(candidates) == 0 or rng.random() < PASS_PROBABILITY:
                move = area
            else:
                move = int(pick(rng, candidates))
            game.play(move)
            stats.moves += 1
            if move == area:
                sgf_ko = None
                if game.is_over:
                    stats.passes_end += 1
                    break
                continue
            sgf_ko = sgfmill_play(board, move, color)
            if seen is not None:
                key = sgfmill_key(board)
                assert key not in seen
                seen.add(key)
            new_stones = game.stones()
            expected = sgfmill_stones(board)
            if not np.array_equal(new_stones, expected):
                raise AssertionError(
                    f"size {size} game {game_index} move {len(game.moves)} "
                    f"({coords.to_gtp(move, size)}): stones differ\n"
                    f"moves: {[coords.to_gtp(p, size) for _, p in game.moves]}\n"
                    f"ours:\n{new_stones}\nsgfmill:\n{expected}")
            # Captures: every opponent stone that left the board (own ones for a suicide).
            lost_opp = np.count_nonzero(stones == other(color)) - \
                np.count_nonzero(new_stones == other(color))
            lost_own = np.count_nonzero(stones == color) + 1 - np.count_nonzero(new_stones == color)
            assert lost_opp == 0 or lost_own == 0
            stats.captures += lost_opp + lost_own
            assert game.ko_point == (None if sgf_ko is None else coords.from_sgfmill(sgf_ko, size))
            stones = new_stones
            stats.liberty_checks += check_liberties(game, stones, move, rng)
            key = stones.tobytes()
            assert hash_of.setdefault(key, game.hash) == game.hash, "same stones, other hash"
        assert game.captures(BLACK) + game.captures(WHITE) == \
            sum(1 for c, p in game.moves if p != area) - int((stones != EMPTY).sum())
        assert board.area_score() == game.score() + KOMI, \
            f"size {size} game {game_index}: area {board.area_score()} vs {game.score()}"
        stats.games += 1
    # Distinct stones must hash differently (a collision here is astronomically unlikely).
    assert len(set(hash_of.values())) == len(hash_of)
    return stats


@pytest.mark.parametrize("size, n_games, max_moves", PLAN, ids=[f"{p[0]}x{p[0]}" for p in PLAN])
def test_random_games_match_sgfmill(size: int, n_games: int, max_moves: int) -> None:
    start = time.perf_counter()
    stats = play_random_games(size, n_games, max_moves, seed=1000 + size)
    elapsed = time.perf_counter() - start
    assert stats.games == n_games
    assert stats.captures > (stats.games if size <= 9 else 0)   # the games do capture
    assert stats.probes["occupied"] > 0 and stats.probes["suicide"] > 0
    assert stats.probes["superko"] > 0
    if size <= 9:       # kos and two-pass endings are rare in short games on big boards
        assert stats.probes["ko"] > 0 and stats.passes_end > 0
    if size == 5:       # a capture that would repeat a position (not just a lone suicide)
        assert stats.superko_not_suicide > 0
    print(f"{size}x{size}: {stats.games} games, {stats.moves} moves, {stats.captures} stones "
          f"captured, probes {stats.probes} ({stats.superko_not_suicide} superko captures), "
          f"{stats.liberty_checks} liberty checks, "
          f"{elapsed:.1f} s")
