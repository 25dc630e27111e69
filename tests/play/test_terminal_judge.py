"""A game that ends in the tree (two passes) is counted as a referee under Chinese rules counts
it, dead stones off (``SearchParams.terminal_judge``, on by default), not Tromp-Taylor with
every stone on the board; Tromp-Taylor rules and self-play keep the count as it stands."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from engine.core import BLACK, WHITE, Game, Rules, Search, SearchParams, board_from_ascii
from train.config import RunConfig

from tests.play.test_search import ONE_EYE, FixedEvaluator, run

DATA = Path(__file__).parents[1] / "data"

# Black's lone stone on E5 is in atari inside White's area.  Counted as it stands, E5 is Black's
# and it makes the eight empty points on the right neutral: Black 11 (nine stones, two eyes),
# White 6, B+4.5 at komi 0.5.  Taken off (White captures at E4 whenever it likes), the right
# side is White's: Black 10, White 15, W+5.5.
LONE_STONE = """
X X O O X
. X O . .
X X O . .
. X O . .
X X O . .
"""


def pass_q(game, params, visits=200):
    """The q of Black's pass after White's pass (conservative pass off: it ends the game)."""
    tree = Search(game, params, max_batch=8, seed=4)
    run(tree, FixedEvaluator(np.zeros(26, np.float32)), visits)
    kids = {c.move: c for c in tree.children(with_pv=False)}
    return kids[game.pass_point].q


def after_white_pass(rows, rules):
    game = board_from_ascii(rows, rules)
    game.play(game.pass_point, WHITE)
    assert game.to_move == BLACK and game.passes == 1
    return game


def test_a_stone_in_atari_is_taken_off_the_count():
    game = after_white_pass(LONE_STONE, Rules.preset("chinese", 0.5))
    assert game.score() == 4.5                                      # as it stands
    judged = SearchParams(conservative_pass=0.0)
    assert judged.terminal_judge == 32                              # the default
    assert pass_q(game, judged) == -1.0                             # exact: a judged loss
    assert pass_q(game, SearchParams(conservative_pass=0.0, terminal_judge=0.0)) == 1.0


def test_a_mutual_atari_is_counted_as_it_stands():
    # White's one-eyed group and Black's ring are both in atari: whoever moves first captures,
    # and a finished game has no side to move, so neither is taken off (B+8 - 10.5 loses,
    # B+8 - 5.5 wins, as tests/play/test_search.py counts them without the judge).
    for komi, q in ((10.5, -1.0), (5.5, 1.0)):
        game = after_white_pass(ONE_EYE, Rules.preset("chinese", komi))
        assert pass_q(game, SearchParams(conservative_pass=0.0)) == q


def test_tromp_taylor_rules_count_the_board_as_it_stands():
    game = after_white_pass(LONE_STONE, Rules.preset("tromp-taylor", 0.5))
    assert pass_q(game, SearchParams(conservative_pass=0.0)) == 1.0
    # and a tree moved to Chinese rules judges again
    tree = Search(game, SearchParams(conservative_pass=0.0), max_batch=8, seed=4)
    tree.set_game(after_white_pass(LONE_STONE, Rules.preset("chinese", 0.5)))
    run(tree, FixedEvaluator(np.zeros(26, np.float32)), 200)
    kids = {c.move: c for c in tree.children(with_pv=False)}
    assert kids[tree.game.pass_point].q == -1.0


def test_self_play_counts_its_games_as_they_stand():
    assert RunConfig().search_params().terminal_judge == 0.0


def pachi_game_ends() -> list[tuple[Game, float]]:
    """The 352 games of tests/data/pachi_game_ends.jsonl (9x9, komi 7, Chinese rules), each
    played out to its two passes, with GNU Go's result as referee, Black-positive."""
    from engine.coords import from_gtp
    out = []
    for line in open(DATA / "pachi_game_ends.jsonl"):
        row = json.loads(line)
        game = Game(9, Rules.preset("chinese", 7.0))
        for token in row["moves"].split():
            color = BLACK if token[0] == "B" else WHITE
            game.play(game.pass_point if token[1:] == "pass" else from_gtp(token[1:], 9), color)
        result = row["referee"]
        out.append((game, 0.0 if result == "0" else float(result[2:]) * (1 if result[0] == "B" else -1)))
    return out


def sign(x: float) -> int:
    return (x > 0) - (x < 0)


def test_the_judged_count_agrees_with_gnu_go_where_the_raw_count_does_not():
    """Differential test against GNU Go 3.8 (``--chinese-rules``, the matches' referee): the 352
    games of our matches against Pachi 12.90 (9x9, komi 7) that ended by two passes, with the
    result GNU Go gave after taking its dead stones off.  The raw count gets the winner right
    in 146 of them (the loser's dead stones still stand); the judged count in 347, and the
    exact score in 307."""
    ends = pachi_game_ends()
    assert len(ends) == 352
    raw = judged = exact = 0
    for game, referee in ends:
        assert game.passes == 2
        score = game.judged_score(32, seed=1)
        raw += sign(game.score()) == sign(referee)
        judged += sign(score) == sign(referee)
        exact += score == referee
    assert raw < 160
    assert judged >= 340 and exact >= 295
