"""Conservative pass (KataGo's ``conservativePass``, on by default; ``SearchParams.
conservative_pass``): after the opponent's pass, our pass from the root is not the end of the
game counted Tromp-Taylor with dead stones on the board, but a position the net judges with
the opponent to move, searched on below (where a pass does end the game).  Hand-fed trees on the
5x5 position of tests/play/test_search.py, and the 9x9 case that cost games against Pachi."""
from __future__ import annotations

import numpy as np
import pytest

from engine.core import BLACK, WHITE, Rules, Search, SearchParams, board_from_ascii
from engine.coords import from_gtp
from train.config import RunConfig

from tests.play.test_search import ONE_EYE, FixedEvaluator, run

# A game ending in the tree is counted as it stands here (terminal_judge 0), so these trees see
# conservative pass alone; tests/play/test_terminal_judge.py has the judged count.
ON, OFF = SearchParams(terminal_judge=0.0), SearchParams(conservative_pass=0.0, terminal_judge=0.0)


def after_white_pass(komi: float):
    game = board_from_ascii(ONE_EYE, Rules.preset("chinese", komi))
    game.play(game.pass_point, WHITE)
    assert game.to_move == BLACK and game.passes == 1
    return game


def pass_child(tree, game):
    return {c.move: c for c in tree.children()}[game.pass_point]


def test_on_by_default_and_off_in_self_play():
    assert ON.conservative_pass == 1.0
    assert RunConfig().search_params().conservative_pass == 0.0
    assert RunConfig(search_options="conservativePass=true").search_params().conservative_pass == 1.0


@pytest.mark.parametrize("komi", [5.5, 10.5])
def test_the_root_pass_is_judged_by_the_net_not_the_count(komi):
    """Off, the pass child is the exact count: +1 at komi 5.5, -1 at 10.5, one terminal node.
    On, it is the net's value of White to move (0 here) and White's replies below it, among them
    White's pass, which ends the game: its value is the count."""
    game = after_white_pass(komi)
    ev = FixedEvaluator(np.zeros(26, np.float32))
    off = Search(game, OFF, max_batch=1, seed=4)
    run(off, ev, 300)
    count = 1.0 if komi < 8 else -1.0           # Black 17 - 9 = +8 by Tromp-Taylor
    assert pass_child(off, game).q == count
    on = Search(game, ON, max_batch=1, seed=4)
    run(on, ev, 300)
    kid = pass_child(on, game)
    assert kid.visits >= 2 and kid.q != count and -1.0 < kid.q < 1.0
    assert len(kid.pv) >= 2                     # searched on below our pass
    on.advance(game.pass_point, BLACK)          # the game goes on: White to move after two passes
    white = {c.move: c for c in on.children()}
    assert white[game.pass_point].q == -count   # a third pass ends it: the exact count for White
    assert on.visits == kid.visits


def test_a_root_where_a_pass_ends_the_game_clears_the_tree():
    """Below the old root, the pass after a pass was terminal; at a root where a pass ends the
    game it must not be, so advancing there starts afresh (KataGo clears its search too)."""
    game = board_from_ascii(ONE_EYE, Rules.preset("chinese", 5.5))
    assert game.to_move == BLACK and game.passes == 0
    ev = FixedEvaluator(np.zeros(26, np.float32))
    for params, kept in ((ON, False), (OFF, True)):
        tree = Search(game, params, max_batch=1, seed=4)
        run(tree, ev, 300)
        black_pass = pass_child(tree, game)
        assert black_pass.visits > 1
        tree.advance(game.pass_point, BLACK)
        assert tree.game.passes == 1
        assert tree.visits == (black_pass.visits if kept else 0)
    # and switching it on at such a root drops the terminal pass child
    tree = Search(after_white_pass(5.5), OFF, max_batch=1, seed=4)
    run(tree, ev, 100)
    assert tree.visits > 1
    tree.set_params(ON)
    assert tree.visits == 0


def test_the_pachi_game_plays_on():
    """Game 8 of the 2026-12-05 match against Pachi: Pachi (Black) passed at move 39 with White
    stones dead in its area.  The raw count is W+20, so passing back 'wins' and the search off
    pours every visit into that terminal pass; a referee takes the dead stones off and Black
    wins by 2.  A net that judges White behind (here: -0.5 for White everywhere) makes the
    search on look at playing on."""
    rows = """
. O . . . . . . .
O O O . . . . . .
O X O . . . . O .
X X X O O O . . .
. X . X X X O O O
X . . X . . X X O
X . X O . X . X X
. X X . . . . . .
. . . . . . . . .
"""
    game = board_from_ascii(rows, Rules.preset("chinese", 7.0), to_move=WHITE)
    game.play(game.pass_point, BLACK)
    assert game.to_move == WHITE and game.passes == 1 and game.score() == -20.0

    def value(planes):        # rich features: plane 17 is ones when Black is to move
        return 0.5 if planes[17, 0, 0] == 1 else -0.5

    ev = FixedEvaluator(np.zeros(82, np.float32), value)
    off = Search(game, OFF, max_batch=1, seed=4)
    run(off, ev, 200)
    assert off.choose() == game.pass_point and pass_child(off, game).q == 1.0
    on = Search(game, ON, max_batch=1, seed=4)
    run(on, ev, 200)
    assert pass_child(on, game).q < 0.0
    assert on.choose() != game.pass_point


@pytest.mark.parametrize("feature_set", ["kata7", "kata7s"])
def test_a_katago_net_at_such_a_root_sees_no_history_and_no_game_end(feature_set):
    """KataGo's conservativePassAndIsRoot: at a root where a pass would end the game and the
    search goes on past it, the net is shown no history (globals 0-4 for passes, planes 9-13
    for moves) and no 'a pass ends the game' (global 14).  Off, it sees White's pass and that
    flag, as KataGo's net does without conservative pass.  Below the root nothing changes."""
    from engine.core import Game
    game = Game(9, Rules.preset("chinese", 7.0))
    for vertex, color in (("E5", BLACK), ("C3", WHITE), ("G7", BLACK)):
        game.play(from_gtp(vertex, 9), color)
    game.play(game.pass_point, WHITE)
    spatial = 22

    def root_planes(params):
        tree = Search(game, params, feature_set=feature_set, max_batch=1, seed=1)
        assert tree.collect() == 1 and tree.visits == 0       # the root is the first leaf
        return np.array(tree.planes[0])

    on, off = root_planes(ON), root_planes(OFF)
    assert off[spatial + 0].max() == 1.0 and off[spatial + 14].max() == 1.0   # White passed; a pass ends it
    assert off[10].sum() == off[11].sum() == off[12].sum() == 1.0             # G7, C3, E5 before it
    assert on[spatial + 0].max() == 0.0 and on[spatial + 14].max() == 0.0
    assert on[9:14].sum() == 0.0 and on[spatial:spatial + 5].sum() == 0.0
    same = [k for k in range(on.shape[0]) if not (9 <= k < 14 or spatial <= k < spatial + 5 or k == spatial + 14)]
    assert np.array_equal(on[same], off[same])                                # the rest as before
