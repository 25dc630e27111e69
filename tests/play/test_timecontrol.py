"""Per-move budgets under every clock: never more than the clock allows minus the lag buffer."""
import pytest

from engine.core import BLACK, WHITE
from engine.play.timecontrol import ABSOLUTE, BYOYOMI, CANADIAN, NONE, TimeControl


def test_no_limit():
    tc = TimeControl()
    assert tc.budget(BLACK, 19, 0) is None
    tc.set_gtp(0, 30, 0)                      # byo-yomi time with 0 stones: no limit (GTP)
    assert tc.system == NONE and tc.budget(BLACK, 19, 10) is None


def test_absolute_spreads_time_and_never_runs_out():
    tc = TimeControl(lag=1.0)
    tc.set_gtp(600, 0, 0)
    assert tc.system == ABSOLUTE
    first = tc.budget(BLACK, 19, 0)
    assert 2.0 < first < 600 / 100
    left, moves = 600.0, 0
    while moves < 250:                        # a long game: the clock decays, never hits 0
        b = tc.budget(BLACK, 19, 2 * moves)
        left -= b + 0.5                       # the controller also charges real lag
        tc.time_left(BLACK, left, 0)
        moves += 1
    assert left > 0


def test_japanese_byoyomi_uses_the_period_minus_lag():
    tc = TimeControl(lag=1.0)
    tc.set_kgs("byoyomi", [60, 10, 5])
    assert tc.system == BYOYOMI
    main_budget = tc.budget(WHITE, 9, 0)
    assert main_budget <= 60 + 10 - 1
    tc.time_left(WHITE, 10, 5)                # in byo-yomi: 10 s left in the period, 5 periods
    assert tc.budget(WHITE, 9, 40) == pytest.approx(9.0)
    tc.time_left(WHITE, 0.5, 1)               # last period nearly gone: minimum budget
    assert tc.budget(WHITE, 9, 40) == pytest.approx(tc.min_seconds)


def test_canadian_shares_the_block():
    tc = TimeControl(lag=0.5)
    tc.set_gtp(0, 300, 25)
    assert tc.system == CANADIAN
    assert tc.budget(BLACK, 19, 100) == pytest.approx(300 / 25 - 0.5)
    tc.time_left(BLACK, 20, 4)
    assert tc.budget(BLACK, 19, 120) == pytest.approx(20 / 4 - 0.5)
    tc.set_kgs("canadian", [0, 60, 1])
    assert tc.budget(BLACK, 19, 0) == pytest.approx(59.5)


def test_own_estimate_without_time_left():
    tc = TimeControl(lag=0.0)
    tc.set_gtp(10, 5, 2)                      # 10 s main, then 2 stones per 5 s
    tc.charge(BLACK, 8)
    assert tc.clocks[BLACK].main == pytest.approx(2)
    tc.charge(BLACK, 3)                       # main gone, 1 s into the block
    c = tc.clocks[BLACK]
    assert c.main == 0 and c.period == pytest.approx(4) and c.stones == 1
    tc.charge(BLACK, 2)                       # block done: a fresh one
    assert c.period == pytest.approx(5) and c.stones == 2
    assert tc.clocks[WHITE].main == 10
    tc.reset()
    assert tc.clocks[BLACK].main == 10


@pytest.mark.parametrize("call", [
    lambda tc: tc.set_gtp(-1, 0, 0), lambda tc: tc.set_kgs("fischer", [1]),
    lambda tc: tc.set_kgs("byoyomi", [1, 2]), lambda tc: tc.time_left(BLACK, float("nan"), 0),
])
def test_bad_settings_raise(call):
    with pytest.raises(ValueError):
        call(TimeControl())
