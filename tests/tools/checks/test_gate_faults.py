"""tools.checks.gate_faults: simulated gates through the real GateCoordinator and GateRule, with a known
true win rate and gating clients killed at random moments (fixed seeds, counts not seconds).

What holds (60-game matches, 4 clients x 2 games, 3 kills per gate, 200 gates):
- counting in return order favours the short games: its promotion rate is above the
  number-order one even with no client killed;
- when wins are shorter than losses, the games a kill takes lean towards losses, so skipping
  them (the count before replays) raises the counted win rate and the promotion rate, and so
  does a replay that stands in for the lost game whatever its length;
- the shipped count (a lost game played again under its number, a replay counting only if it
  outlasts the lost attempt) keeps the promotion rate with kills at the one without, within
  its interval, whether a replay repeats the lost game or is a new one;
- when a game's length does not depend on its result, nothing is biased, skipped or not."""
import pytest

from tools.checks.gate_faults import measure, simulate_gate, wilson
from train.gating import GateRule

RULE = GateRule(max_games=60)


def _rows(win_length: float, counts: tuple[str, ...]) -> dict:
    return measure(200, 0.55, 3, seed=5, workers=4, slots=2, win_length=win_length, rule=RULE,
                   counts=counts)["rows"]


def test_wilson_interval():
    lo, hi = wilson(50, 100)
    assert abs(lo - 0.4038) < 1e-3 and abs(hi - 0.5962) < 1e-3


@pytest.mark.slow          # hundreds of simulated gates
def test_replays_keep_the_promotion_rate_and_skipping_lost_games_does_not():
    rows = _rows(0.6, ("replay (same game)", "replay (new game)", "replay (new game), no length rule",
                       "skip lost"))
    ref = rows["no kills, start order"]
    assert abs(ref["counted_win_rate"] - 0.55) < 0.01
    assert rows["no kills, return order"]["diff_vs_no_kills"] > 0.05      # short games first
    for name in ("replay (same game)", "replay (new game)"):
        r = rows[f"kills, {name}"]
        assert r["lost_games_per_gate"] > 3 and r["replays_per_gate"] > 3         # played again
        lo, hi = r["diff_ci95"]
        assert lo <= 0 <= hi and abs(r["diff_vs_no_kills"]) < 0.03          # same promotion rate
        assert abs(r["counted_win_rate"] - ref["counted_win_rate"]) < 0.002
        assert r["void"] <= 4                                               # a game lost 3 times: rare
    assert rows["kills, replay (same game)"]["short_per_gate"] == 0           # a repeat outlasts its loss
    assert rows["kills, replay (new game)"]["short_per_gate"] > 1             # a new game may not
    for name in ("skip lost", "replay (new game), no length rule"):
        r = rows[f"kills, {name}"]
        assert r["lost_games_per_gate"] > 3 and r["void"] == 0
        assert r["counted_win_rate"] > ref["counted_win_rate"] + 0.007       # lost games lean long: losses
        assert r["diff_vs_no_kills"] > 0.04                                  # the bias replays remove


@pytest.mark.slow          # hundreds of simulated gates
def test_nothing_is_biased_when_length_is_independent_of_the_result():
    rows = _rows(1.0, ("replay (new game)", "skip lost"))
    for name in ("kills, replay (new game)", "kills, skip lost"):
        r = rows[name]
        assert r["lost_games_per_gate"] > 3
        lo, hi = r["diff_ci95"]
        assert lo <= 0 <= hi
        assert abs(r["counted_win_rate"] - 0.55) < 0.01


def test_a_gate_with_kills_counts_the_numbers_of_the_gate_without():
    """Replays repeating the lost games: a gate with kills decides on exactly the games of
    the same gate without kills (the set of counted games does not depend on who died)."""
    for g in range(20):
        quiet = simulate_gate([9, g], RULE, 0.55, 4, 2, 0, 0.6, 1.0, "replay (same game)")
        killed = simulate_gate([9, g], RULE, 0.55, 4, 2, 3, 0.6, 1.0, "replay (same game)")
        if killed.verdict != "void":
            assert (killed.verdict, killed.counted, killed.counted_wins) == \
                (quiet.verdict, quiet.counted, quiet.counted_wins)
