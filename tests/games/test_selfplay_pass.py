"""Self-play, gating and in-process matches pass by the rule of games counted as the board
stands (:func:`engine.play.movepolicy.raw_pass_allowed`): no pass into a lost raw count, however
few visits the search had, unless the game is truly lost."""
import numpy as np
import pytest

from engine.core import BLACK, WHITE, Rules
from engine.nets.evaluator import Evaluation
from train.games.pool import Agent, GamePool, GameSpec, PlaySettings

BLACK_TO_MOVE_PLANE = 14


class PassLover:
    """Puts 90% of the policy on the pass; value ``value`` for the side to move."""

    feature_set = "rich"
    planes = 20

    def __init__(self, value: float = 0.0):
        self.value = value

    def evaluate(self, planes, keys=None):
        n, size = len(planes), planes.shape[-1]
        points = size * size
        policy = np.full((n, points + 1), np.log(0.1 / points), np.float32)
        policy[:, points] = np.log(0.9)
        return Evaluation(policy, np.full(n, self.value, np.float32), None, None)


def play(size, komi, visits, evaluator, games=4, resign=0.0):
    rules = Rules.preset("chinese", komi)
    agent = Agent("pass-lover", evaluator)
    settings = PlaySettings(visits=visits, resign=resign)
    specs = iter([GameSpec(size, rules, agent, agent, settings, seed=i) for i in range(games)])
    pool = GamePool(min(games, 4), lambda slot: next(specs, None), batch=16)
    finished = []
    while not pool.idle or not finished:
        finished += pool.step()
    return pool, finished


def passes_into_a_loss(fg):
    """Passes of a finished game made while the raw count lost for the passer."""
    from engine.core import Game
    game = Game(fg.spec.size, fg.spec.rules)
    bad = []
    for i, m in enumerate(fg.moves):
        if m.point == game.pass_point:
            score = game.score()
            if (score < 0 if m.color == BLACK else score > 0):
                bad.append(i)
        game.play(m.point, m.color)
    return bad


@pytest.mark.parametrize("size,komi", [(5, 0.5), (7, 9.0)])
@pytest.mark.parametrize("visits", [1, 2, 4, 16])
def test_no_pass_into_a_lost_count(size, komi, visits):
    pool, finished = play(size, komi, visits, PassLover())
    assert len(finished) == 4
    assert pool.stats.passes_refused > 0          # the net wanted to pass, and lost by the count
    for fg in finished:
        assert passes_into_a_loss(fg) == []
        assert len(fg.moves) > 4                  # no 2- or 4-move games by two passes
        if fg.reason == "passes":                 # whoever passed last did not lose by it
            assert fg.winner in (fg.moves[-1].color, 0)


def test_a_truly_lost_game_may_pass():
    """A real search that finds every move lost (value -0.99 for the side to move, resignation
    at 10%) may pass into the count: it concedes instead of filling the board."""
    pool, finished = play(5, 0.5, 16, PassLover(value=-0.99), games=2, resign=0.1)
    assert any(passes_into_a_loss(fg) for fg in finished) or all(fg.reason == "resign" for fg in finished)
