"""The gating rule (train.gating.GateRule): SPRT verdicts on known result sequences against
log-likelihood ratios computed by hand, the early fail once 55% is out of reach, and promotion at
exactly the threshold."""
import math

import pytest

from train.gating import CONTINUE, PROMOTE, REJECT, GateCoordinator, GateRule
from train.match.stats import SPRT_ZERO_COUNT, score_from_elo, sprt

# Hand computation (no draws): H0 score s0 = 0.5, H1 score s1 = 1 / (1 + 10^(-35/400)) = 0.55020.
S0, S1 = 0.5, 1.0 / (1.0 + 10.0 ** (-35.0 / 400.0))
WIN_LLR = math.log(S1 / S0)                      # +0.09567 per win
LOSS_LLR = math.log((1.0 - S1) / (1.0 - S0))     # -0.10580 per loss
BOUND = math.log(0.95 / 0.05)                    # Wald's bounds +-2.944 for alpha = beta = 0.05


def hand_llr(wins, losses):
    return wins * WIN_LLR + losses * LOSS_LLR


def run_sequence(rule, results):
    """Feeds results (1, 0.5, 0) one by one; returns (games used, verdict, reason, llr trail)."""
    w = l = d = 0
    trail = []
    for n, r in enumerate(results, 1):
        w, l, d = w + (r == 1), l + (r == 0), d + (r == 0.5)
        verdict, reason, test = rule.decide(w, l, d)
        trail.append(test.llr)
        if verdict != CONTINUE:
            return n, verdict, reason, trail
    return len(results), CONTINUE, "", trail


def test_hand_constants():
    assert S1 == pytest.approx(score_from_elo(35.0))
    assert WIN_LLR == pytest.approx(0.09567, abs=1e-5)
    assert LOSS_LLR == pytest.approx(-0.10580, abs=1e-5)
    assert BOUND == pytest.approx(2.9444, abs=1e-4)


@pytest.mark.parametrize("wins,losses", [(1, 0), (0, 1), (10, 10), (60, 40), (31, 0), (0, 28), (150, 130)])
def test_llr_matches_hand_computation(wins, losses):
    # Without draws the trinomial LLR is the binomial one, up to fishtest's pseudo-count for the
    # empty draw cell (SPRT_ZERO_COUNT = 1e-3 games), which moves it by well under 0.01.
    got = sprt(wins, losses, 0).llr
    assert got == pytest.approx(hand_llr(wins, losses), abs=0.01 + 10 * SPRT_ZERO_COUNT)
    _, _, test = GateRule().decide(wins, losses, 0)
    assert test.llr == got and test.upper == pytest.approx(BOUND) and test.lower == pytest.approx(-BOUND)


def test_straight_wins_accept_at_31():
    # 30 * 0.09567 = 2.870 < 2.944 <= 31 * 0.09567 = 2.966
    n, verdict, reason, trail = run_sequence(GateRule(), [1] * 100)
    assert (n, verdict) == (31, PROMOTE) and reason.startswith("SPRT accept")
    assert trail[29] < BOUND <= trail[30]


def test_straight_losses_reject_at_28():
    # 27 * 0.10580 = 2.857 < 2.944 <= 28 * 0.10580 = 2.963
    n, verdict, reason, trail = run_sequence(GateRule(), [0] * 100)
    assert (n, verdict) == (28, REJECT) and reason.startswith("SPRT reject")
    assert trail[26] > -BOUND >= trail[27]


def test_known_sequence_continues_inside_the_bounds():
    # W L W L ... : the LLR drifts down by 0.0101 per pair and stays inside the bounds
    seq = [1, 0] * 50
    n, verdict, _, trail = run_sequence(GateRule(), seq)
    assert verdict == CONTINUE and n == 100
    assert trail[-1] == pytest.approx(hand_llr(50, 50), abs=0.02)
    assert all(-BOUND < x < BOUND for x in trail)


def test_early_fail_once_55_percent_is_out_of_reach():
    # Alternating W L over 400 games: the 181st loss (game 362) leaves at most 181 + 38 = 219
    # points of 400 < 220, long before SPRT would reject (it would need ~290 pairs).
    n, verdict, reason, trail = run_sequence(GateRule(), [1, 0] * 200)
    assert (n, verdict) == (362, REJECT) and "out of reach" in reason
    assert trail[-1] > -BOUND
    # With a small match the early fail comes first: 5 losses of 10 leave 5 < 5.5 points.
    n, verdict, reason, _ = run_sequence(GateRule(max_games=10), [0] * 10)
    assert (n, verdict) == (5, REJECT) and "out of reach" in reason


def _eleven_of_twenty():
    """11 wins and 9 losses per 20 games, spread so that SPRT never decides within 400."""
    block = [1, 0] * 9 + [1, 1]
    return block * 20


def test_promotion_at_exactly_the_threshold():
    seq = _eleven_of_twenty()
    assert sum(seq) == 220 and len(seq) == 400          # 55.0% exactly (0.55 * 400 is 220.00000000000003)
    n, verdict, reason, trail = run_sequence(GateRule(), seq)
    assert (n, verdict) == (400, PROMOTE) and "reach 55%" in reason
    assert max(trail) < BOUND                            # SPRT alone would not have promoted
    # One win fewer (the last game lost): 219 of 400 fails, as soon as the 181st loss is in.
    n, verdict, reason, _ = run_sequence(GateRule(), seq[:-1] + [0])
    assert (n, verdict) == (400, REJECT) and "out of reach" in reason


def test_promotion_as_soon_as_the_threshold_is_guaranteed():
    # 10 games at 55% need 5.5 points: 6 straight wins guarantee it (SPRT would need 31).
    n, verdict, reason, _ = run_sequence(GateRule(max_games=10), [1] * 10)
    assert (n, verdict) == (6, PROMOTE) and "reach 55%" in reason


def test_draws_count_half():
    rule = GateRule(max_games=4, threshold=0.5)
    assert rule.decide(1, 0, 2)[0] == PROMOTE            # 2 points of 4 reach 50%
    assert rule.decide(0, 2, 1)[0] == REJECT             # 0.5 points + 1 game left < 2
    assert rule.decide(0, 1, 2)[0] == CONTINUE           # 1 point + 1 game left can still make 2
    _, _, test = GateRule().decide(20, 10, 6)
    assert test.llr == pytest.approx(sprt(20, 10, 6).llr)


def test_coordinator_decides_like_the_rule_in_start_order():
    """Results fed in start order through the coordinator give the rule's verdict at the same game."""
    seq = [1, 0] * 200
    coord = GateCoordinator(GateRule())
    for i, r in enumerate(seq):
        if coord.decision is not None:
            break
        assert coord.claim(worker=0) == i
        coord.report(i, r)
    d = coord.decision
    assert d is not None and d.verdict == REJECT and d.counted == 362
    assert (d.wins, d.losses, d.lost, d.late) == (181, 181, 0, 0)
    assert coord.claim(0) is None                        # decided: no more games
