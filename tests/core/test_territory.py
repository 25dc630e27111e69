"""Counting by the rules (src_c/count.h): area or territory scoring, the seki tax and the tax on
every group, as readable tables of ASCII positions, and the Japanese count of real game ends
against GNU Go's.

Each row is (name, setup diagram, moves played after it in GTP notation, dead stones, seki
stones, rules, expected Black-minus-White count with komi 0).  Diagrams are top row first,
``X`` Black, ``O`` White; the dead and seki stones are named by the test (the judge that finds
them is tested in tests/core/test_scoring.py), so each count can be checked by hand in the comment.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from engine import coords
from engine.core import BLACK, WHITE, Game, Rules, board_from_ascii
from engine.scoring import judge

DATA = Path(__file__).resolve().parents[1] / "data"
CHINESE = Rules.preset("chinese", komi=0.0)
JAPANESE = Rules.preset("japanese", komi=0.0)
TERRITORY_NO_TAX = Rules("simple", False, 0.0, "territory", "none")
TERRITORY_TAX_ALL = Rules("simple", False, 0.0, "territory", "all")

DAME = """
. . X . O
. . X . O
. . X . O
. . X . O
. . X . O
"""
# a White stone inside Black's side, captured in play (moves) or left dead on the board
INVADER = """
. . X O .
. . X O .
. O X O .
. . X O .
. . X O .
"""
# Black's and White's inner groups live in seki: one shared liberty (D6), Black's eye of two
# points (A6, B6), White's of one (F6); the outer walls own six points each.
SEKI = """
. . X . O .
X X X O O O
O O O X X X
. . O X . .
. . O X . .
. . O X . .
"""
SEKI_STONES = ["C6", "A5", "B5", "C5", "E6", "D5", "E5", "F5"]


class Case(NamedTuple):
    name: str
    diagram: str
    moves: str
    dead: list
    seki: list
    rules: Rules
    expected: float


CASES = [
    # the middle column is dame: it counts for nobody under either scoring
    Case("dame, area", DAME, "", [], [], CHINESE, 15 - 5),            # 5 + 10 stones+area, 5
    Case("dame, territory", DAME, "", [], [], JAPANESE, 10 - 0),       # 10 empty points, none
    Case("dame, tax all", DAME, "", [], [], TERRITORY_TAX_ALL, 8 - 0),  # one living group: 2 off
    # Black captures the invader with three more stones: a prisoner, three points fewer
    Case("prisoner, area", INVADER, "B A3 B B4 B B2", [], [], CHINESE, 15 - 10),    # 8+7, 5+5
    Case("prisoner, territory", INVADER, "B A3 B B4 B B2", [], [], JAPANESE, 8 - 5),  # 7+1, 5
    # the invader left on the board and judged dead: its point and a prisoner
    Case("dead stone, area", INVADER, "", ["B3"], [], CHINESE, 15 - 10),            # 5+10, 5+5
    Case("dead stone, territory", INVADER, "", ["B3"], [], JAPANESE, 11 - 5),       # 10+1, 5
    Case("dead stone not named, territory", INVADER, "", [], [], JAPANESE, 0 - 5),  # A-B mixed
    # seki: area counts the eyes; territory with the seki tax gives them to nobody
    Case("seki, area", SEKI, "", [], SEKI_STONES, CHINESE, 18 - 17),           # 10+8, 10+7
    Case("seki, territory, seki tax", SEKI, "", [], SEKI_STONES, JAPANESE, 6 - 6),
    Case("seki, territory, no tax", SEKI, "", [], SEKI_STONES, TERRITORY_NO_TAX, 8 - 7),
    Case("seki not named, seki tax", SEKI, "", [], [], JAPANESE, 8 - 7),
    Case("seki, tax all", SEKI, "", [], SEKI_STONES, TERRITORY_TAX_ALL, 4 - 4),  # walls: 2 off each
]


def _position(case: Case) -> Game:
    game = board_from_ascii(case.diagram, case.rules)
    tokens = case.moves.split()
    for colour, vertex in zip(tokens[::2], tokens[1::2]):
        game.play(coords.from_gtp(vertex, game.size), BLACK if colour == "B" else WHITE)
    return game


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_counts(case):
    game = _position(case)
    n = game.size
    score, owner = game.count([coords.from_gtp(v, n) for v in case.dead],
                              [coords.from_gtp(v, n) for v in case.seki])
    assert score == case.expected


def test_komi_and_the_owner_map():
    game = board_from_ascii(DAME, Rules.preset("japanese"))
    score, owner = game.count()
    assert score == 10 - 6.5
    assert (owner[:, 3] == 0).all() and (owner[:, :2] == BLACK).all() and (owner[:, 4] == WHITE).all()


def test_prisoners_taken_in_play_are_kept_by_the_game():
    game = _position(CASES[3])
    assert (game.captures(BLACK), game.captures(WHITE)) == (1, 0)
    assert game.copy().count()[0] == game.count()[0]


def test_area_count_is_the_tromp_taylor_score_without_dead_stones():
    """count() under Chinese rules is score() (the search's and self-play's count) on random
    positions: the territory work leaves area scoring as it was."""
    rng = np.random.default_rng(5)
    for size in (5, 9, 13):
        game = Game(size, Rules.preset("chinese", 7.5))
        for _ in range(size * size):
            legal = [p for p in game.legal_moves(game.to_move) if p < size * size]
            if not legal:
                break
            game.play(int(rng.choice(legal)), game.to_move)
        assert game.count()[0] == game.score()
        assert game.judged_count(16, seed=3) == game.judged_score(16, seed=3)


def pachi_game_ends_territory() -> list[tuple[Game, float]]:
    """The 352 game ends of tests/data/pachi_game_ends.jsonl under Japanese rules at komi 6.5,
    each with GNU Go's territory count (tests/data/pachi_game_ends_territory.jsonl, written by
    tools/checks/gnugo_territory.py), Black-positive."""
    out = []
    ends = open(DATA / "pachi_game_ends.jsonl").read().splitlines()
    refs = open(DATA / "pachi_game_ends_territory.jsonl").read().splitlines()
    for line, ref_line in zip(ends, refs, strict=True):
        row, ref = json.loads(line), json.loads(ref_line)
        game = Game(9, Rules.preset("japanese", ref["komi"]))
        for token in row["moves"].split():
            color = BLACK if token[0] == "B" else WHITE
            game.play(game.pass_point if token[1:] == "pass" else coords.from_gtp(token[1:], 9), color)
        result = ref["referee"]
        out.append((game, 0.0 if result == "0" else float(result[2:]) * (1 if result[0] == "B" else -1)))
    return out


def test_japanese_final_count_agrees_with_gnu_go():
    """Differential test against GNU Go 3.8 counting territory (``gnugo --mode gtp --level 0``
    without ``--chinese-rules``, ``final_score``) on the 352 real game ends: the judge's dead
    stones off, counted as prisoners, with the stones captured in play; measured 348 winners
    and 313 exact scores (docs/results/rules.md)."""
    ends = pachi_game_ends_territory()
    assert len(ends) == 352
    winner = exact = 0
    for game, referee in ends:
        score = judge(game, None, seed=1).score
        winner += np.sign(score) == np.sign(referee)
        exact += score == referee
    assert winner >= 345 and exact >= 300, (winner, exact)


def test_a_game_that_ends_in_the_tree_is_counted_by_the_rules_in_force():
    """Black's three stones and a prisoner inside its own side: B+5 by area, B+3 by territory.
    At komi 4 Black's pass after White's ends the game a win under Chinese rules and a loss
    under Japanese rules (the search's count of a finished game, src_c/search_descent.c)."""
    from engine.core import Search, SearchParams
    from tests.play.test_search import FixedEvaluator, run
    for rules, q in ((Rules.preset("chinese", 4.0), 1.0), (Rules.preset("japanese", 4.0), -1.0)):
        game = _position(CASES[3]._replace(rules=rules))
        game.play(game.pass_point, WHITE)
        assert game.to_move == BLACK
        tree = Search(game, SearchParams(conservative_pass=0.0), max_batch=8, seed=4)
        run(tree, FixedEvaluator(np.zeros(26, np.float32)), 100)
        kids = {c.move: c for c in tree.children(with_pv=False)}
        assert kids[game.pass_point].q == q, rules.name
