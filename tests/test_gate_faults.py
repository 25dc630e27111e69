"""tools.gate_faults: simulated gates through the real GateCoordinator and GateRule, with a known
true win rate and gating clients killed at random moments (fixed seeds, counts not seconds).

What holds, and what the measurement found:
- counting in return order favours the short games (a win that comes back early decides the
  match): its promotion rate is above the start-order one even with no client killed;
- when a game's length does not depend on its result, killed clients leave the start-order
  promotion rate where it is (within its interval);
- when wins are shorter than losses, the games lost with a killed client lean towards long
  ones (losses) and the counted win rate rises above the true one: a residual bias, smaller
  than the return-order one, that the test pins so that a change to it is seen."""
from tools.gate_faults import measure, wilson
from train.gating import GateRule

RULE = GateRule(max_games=60)


def _rows(win_length: float) -> dict:
    return measure(200, 0.55, 3, seed=5, workers=4, slots=2, win_length=win_length, rule=RULE)["rows"]


def test_wilson_interval():
    lo, hi = wilson(50, 100)
    assert abs(lo - 0.4038) < 1e-3 and abs(hi - 0.5962) < 1e-3


def test_kills_unbiased_when_length_is_independent_of_the_result():
    rows = _rows(1.0)
    killed = rows["kills, start order"]
    assert killed["lost_games_per_gate"] > 1                 # clients did die mid-match
    lo, hi = killed["diff_ci95"]
    assert lo <= 0 <= hi                                      # same promotion rate as without kills
    assert abs(killed["counted_win_rate"] - 0.55) < 0.02


def test_return_order_favours_short_games_and_kills_leave_a_smaller_bias():
    rows = _rows(0.6)
    ref = rows["no kills, start order"]
    assert abs(ref["counted_win_rate"] - 0.55) < 0.02
    naive = rows["no kills, return order"]
    assert naive["diff_vs_no_kills"] > 0.05                   # the bias start order removes (fixed seed)
    killed = rows["kills, start order"]
    assert killed["lost_games_per_gate"] > 1
    assert killed["counted_win_rate"] > ref["counted_win_rate"]   # lost games lean long: the residual
    assert killed["diff_vs_no_kills"] < rows["kills, return order"]["diff_vs_no_kills"]
