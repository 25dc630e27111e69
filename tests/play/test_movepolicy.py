"""The one resignation rule (engine.play.movepolicy.should_resign) as a table."""
from __future__ import annotations

import pytest

from engine.play.movepolicy import should_resign

# (winrate, move_number, board_size, threshold, visits, handicap, white) -> resigns
CASES = [
    ((0.01, 0, 9, 0.05, 100, 0, False), False),     # move 0: too early
    ((0.01, 19, 9, 0.05, 100, 0, False), False),    # 19 < 81 // 4
    ((0.01, 20, 9, 0.05, 100, 0, False), True),     # a quarter of the points played
    ((0.049, 24, 9, 0.05, 100, 0, True), True),
    ((0.05, 24, 9, 0.05, 100, 0, True), False),     # strictly below the threshold
    ((0.0, 200, 19, 0.0, 100, 0, False), False),    # threshold 0: never
    ((0.0, 200, 19, -0.5, 100, 0, False), False),
    ((0.0, 200, 19, 0.05, 1, 0, False), False),     # one visit: no search behind the winrate
    # White with 4 handicap stones at move 24 on 9x9: threshold 0.05 * (b + (1 - b) / 5),
    # b = 24 / 48.6, so about 0.0297.
    ((0.035, 24, 9, 0.05, 100, 4, True), False),
    ((0.025, 24, 9, 0.05, 100, 4, True), True),
    ((0.035, 24, 9, 0.05, 100, 4, False), True),    # Black in the same game: the plain threshold
    ((0.049, 49, 9, 0.05, 100, 4, True), True),     # from move 0.6 * 81 on: the plain threshold
]


@pytest.mark.parametrize("args,expected", CASES)
def test_should_resign_table(args, expected):
    winrate, move_number, size, threshold, visits, handicap, white = args
    assert should_resign(winrate, move_number, size, threshold, visits=visits, handicap=handicap,
                         white=white) is expected
