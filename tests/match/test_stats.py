"""Tests for train.match.stats: Elo intervals, SPRT and Bradley-Terry, against hand-computed values."""

import math

import pytest

from train.match.stats import (
    ELO_PER_NAT,
    bradley_terry,
    elo_difference,
    elo_from_score,
    score_from_elo,
    sprt,
    sprt_llr,
)

Z95 = 1.959963984540054


def hand_elo(p: float) -> float:
    return -400.0 * math.log10(1.0 / p - 1.0)


# ------------------------------------------------------------------------ Elo


def test_elo_score_round_trip():
    for elo in (-600.0, -35.0, 0.0, 70.0, 400.0):
        assert elo_from_score(score_from_elo(elo)) == pytest.approx(elo)
    assert score_from_elo(400.0) == pytest.approx(10.0 / 11.0)
    assert elo_from_score(0.0) == -math.inf
    assert elo_from_score(1.0) == math.inf


def test_elo_60_40():
    # p = 0.6, per-game variance 0.6 * 0.4 = 0.24, se = sqrt(0.24 / 100) = 0.04899
    est = elo_difference(60, 40)
    assert est.elo == pytest.approx(70.437, abs=1e-3)
    assert est.score == pytest.approx(0.6)
    assert est.stderr == pytest.approx(math.sqrt(0.24 / 100))
    se = math.sqrt(0.24 / 100)
    assert est.lower == pytest.approx(hand_elo(0.6 - Z95 * se))
    assert est.upper == pytest.approx(hand_elo(0.6 + Z95 * se))
    assert est.lower == pytest.approx(2.77, abs=0.01)
    assert est.upper == pytest.approx(143.9, abs=0.1)
    assert str(est) == "+70.4 [+2.8, +143.9] (95%)"


def test_elo_with_draws_uses_trinomial_variance():
    # 30 W, 40 D, 30 L: p = 0.5, variance = (30*.25 + 40*0 + 30*.25) / 100 = 0.15
    est = elo_difference(30, 30, 40)
    assert est.elo == 0.0
    se = math.sqrt(0.15 / 100)
    assert est.stderr == pytest.approx(se)
    assert est.upper == pytest.approx(hand_elo(0.5 + Z95 * se))
    assert est.lower == pytest.approx(-est.upper)


def test_elo_clean_sweeps_use_wilson_bound():
    sweep = elo_difference(10, 0)
    assert sweep.elo == math.inf and sweep.upper == math.inf
    assert sweep.lower == pytest.approx(hand_elo(10 / (10 + Z95**2)))
    wiped = elo_difference(0, 10)
    assert wiped.elo == -math.inf and wiped.lower == -math.inf
    assert wiped.upper == pytest.approx(-sweep.lower)
    draws = elo_difference(0, 0, 8)
    assert draws.elo == 0.0 and draws.lower < 0.0 < draws.upper


def test_elo_no_games_and_bad_input():
    empty = elo_difference(0, 0)
    assert math.isnan(empty.elo) and empty.games == 0
    assert str(empty) == "n/a (no games)"
    with pytest.raises(ValueError):
        elo_difference(-1, 3)
    with pytest.raises(ValueError):
        elo_difference(1, 3, confidence=1.5)


# ----------------------------------------------------------------------- SPRT


def test_sprt_llr_binomial_by_hand():
    # Without draws the GSPRT is the binomial LLR W log(s1/s0) + L log((1-s1)/(1-s0));
    # fishtest's 0.001 pseudo-count for the empty draw cell moves it by < 1e-3.
    s0, s1 = 0.5, 1.0 / (1.0 + 10.0 ** (-35.0 / 400.0))
    assert s1 == pytest.approx(0.55020, abs=1e-5)
    hand = 60 * math.log(s1 / s0) + 40 * math.log((1 - s1) / (1 - s0))
    assert hand == pytest.approx(1.5082, abs=1e-4)
    assert sprt_llr(60, 40, 0, 0.0, 35.0) == pytest.approx(hand, abs=1e-3)


def brute_force_llr(w: int, l: int, d: int, elo0: float, elo1: float) -> float:
    """Independent check: maximise the constrained trinomial likelihood by ternary search.

    With mean score s fixed, q_w = s - q_d/2 and q_l = 1 - s - q_d/2 leave one free
    parameter q_d in [0, 2 min(s, 1-s)]; the log-likelihood is concave in it.
    """

    def best(s: float) -> tuple[float, float, float]:
        def loglik(qd: float) -> float:
            qw, ql = s - qd / 2, 1 - s - qd / 2
            return w * math.log(qw) + l * math.log(ql) + d * math.log(qd)

        lo, hi = 1e-12, 2 * min(s, 1 - s) - 1e-12
        for _ in range(300):
            m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            if loglik(m1) < loglik(m2):
                lo = m1
            else:
                hi = m2
        qd = (lo + hi) / 2
        return s - qd / 2, qd, 1 - s - qd / 2

    (w0, d0, l0), (w1, d1, l1) = best(score_from_elo(elo0)), best(score_from_elo(elo1))
    return w * math.log(w1 / w0) + d * math.log(d1 / d0) + l * math.log(l1 / l0)


@pytest.mark.parametrize("w,l,d", [(60, 40, 20), (35, 50, 15), (120, 100, 80)])
def test_sprt_llr_trinomial_matches_brute_force(w, l, d):
    for elo0, elo1 in ((0.0, 35.0), (-10.0, 5.0)):
        expected = brute_force_llr(w, l, d, elo0, elo1)
        assert sprt_llr(w, l, d, elo0, elo1) == pytest.approx(expected, abs=1e-6)


def test_sprt_bounds_and_verdicts():
    result = sprt(60, 40)
    assert result.lower == pytest.approx(math.log(0.05 / 0.95))
    assert result.upper == pytest.approx(math.log(0.95 / 0.05))
    assert result.upper == pytest.approx(2.944, abs=1e-3)
    assert result.verdict == "continue"
    assert sprt(300, 200).verdict == "accept"
    assert sprt(200, 300).verdict == "reject"
    assert sprt(0, 0).llr == 0.0 and sprt(0, 0).verdict == "continue"
    # a clean sweep: each win adds about log(s1 / s0) = 0.0958, so 31 wins accept
    assert sprt(30, 0).verdict == "continue"
    assert sprt(31, 0).verdict == "accept"
    # over 400 games: 55% is not yet decisive (LLR about 2.0), 57.5% accepts, 45% rejects
    assert sprt(220, 180).llr == pytest.approx(2.0, abs=0.05)
    assert sprt(220, 180).verdict == "continue"
    assert sprt(230, 170).verdict == "accept"
    assert sprt(180, 220).verdict == "reject"
    assert sprt(220, 180, elo0=0, elo1=35, alpha=0.05, beta=0.05).elo1 == 35


def test_sprt_rejects_bad_parameters():
    with pytest.raises(ValueError):
        sprt(1, 1, elo0=35, elo1=0)
    with pytest.raises(ValueError):
        sprt(1, 1, alpha=0.0)


# -------------------------------------------------------------- Bradley-Terry


def test_bradley_terry_two_players_by_hand():
    # A scores 3 of 4: ML odds 3, so A - B = 400 log10(3) = 190.85 Elo; the
    # standard error is 1 / sqrt(n p (1 - p)) = 1 / sqrt(0.75) nats.
    games = [("A", "B", 1.0)] * 3 + [("B", "A", 1.0)]
    ratings = bradley_terry(games, anchor="B", prior_draws=0)
    assert ratings["B"].elo == 0.0 and ratings["B"].stderr == 0.0
    assert ratings["A"].elo == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert ratings["A"].elo == pytest.approx(190.85, abs=0.01)
    assert ratings["A"].stderr == pytest.approx(ELO_PER_NAT / math.sqrt(0.75), rel=1e-6)
    assert ratings["A"].games == 4 and ratings["A"].points == 3.0
    assert list(ratings) == ["A", "B"]  # strongest first


def test_bradley_terry_draws_count_half():
    games = [("A", "B", 1.0), ("A", "B", 0.5), ("A", "B", 0.5), ("A", "B", 0.0), ("A", "B", 1.0)]
    ratings = bradley_terry(games, anchor="B", prior_draws=0)
    # 3 points of 5: same as elo_difference's point estimate
    assert ratings["A"].elo == pytest.approx(elo_difference(2, 1, 2).elo, abs=1e-6)


def test_bradley_terry_three_players_transitive():
    # Strengths 9 : 3 : 1 reproduce these scores exactly (3/4, 3/4, 9/10), so the
    # ML fit is A = 400 log10 9 = 381.7, B = 400 log10 3 = 190.8 above C.
    games = (
        [("A", "B", 1.0)] * 3 + [("A", "B", 0.0)]
        + [("B", "C", 1.0)] * 3 + [("B", "C", 0.0)]
        + [("A", "C", 1.0)] * 9 + [("C", "A", 1.0)]
    )
    ratings = bradley_terry(games, anchor="C", prior_draws=0)
    assert list(ratings) == ["A", "B", "C"]
    assert ratings["A"].elo == pytest.approx(400 * math.log10(9), abs=1e-6)
    assert ratings["B"].elo == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert ratings["C"].elo == 0.0
    # anchoring elsewhere shifts every rating by the same amount
    shifted = bradley_terry(games, anchor="A", prior_draws=0)
    assert shifted["C"].elo == pytest.approx(-ratings["A"].elo, abs=1e-6)


def test_bradley_terry_prior_keeps_sweeps_finite():
    games = [("A", "B", 1.0)] * 5 + [("B", "C", 1.0)] * 5
    with pytest.raises(ValueError, match="prior_draws"):
        bradley_terry(games, prior_draws=0)
    ratings = bradley_terry(games)
    assert list(ratings) == ["A", "B", "C"]
    assert all(math.isfinite(r.elo) and math.isfinite(r.stderr) for r in ratings.values())
    assert ratings["A"].elo == 0.0  # first player seen is the default anchor
    # the prior is weak: with many games it barely moves a well-determined fit
    games = [("A", "B", 1.0)] * 300 + [("A", "B", 0.0)] * 100
    assert bradley_terry(games, anchor="B")["A"].elo == pytest.approx(190.85, abs=2.0)


def test_bradley_terry_errors_and_empty():
    assert bradley_terry([]) == {}
    with pytest.raises(ValueError):
        bradley_terry([("A", "B", 1.5)])
    with pytest.raises(ValueError):
        bradley_terry([("A", "A", 1.0)])
    with pytest.raises(ValueError):
        bradley_terry([("A", "B", 1.0)], anchor="Z")
    with pytest.raises(ValueError):  # two separate pairs: nothing links C to A
        bradley_terry([("A", "B", 1.0), ("A", "B", 0.0), ("C", "D", 1.0), ("C", "D", 0.0)],
                      prior_draws=0)
