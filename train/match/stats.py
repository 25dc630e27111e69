"""Match statistics: Elo differences, SPRT, and Bradley-Terry ratings.

Pure functions of game counts or game lists; no I/O, no globals. Shared by
``train.match`` (engine-vs-engine matches) and the gating code.

Conventions
-----------
* A *score* is the fraction of points a player took: win = 1, draw = 1/2, loss = 0.
* Elo uses the logistic model: a player ``d`` Elo stronger scores
  ``1 / (1 + 10 ** (-d / 400))`` on average. ``elo_from_score`` and
  ``score_from_elo`` are the two directions of that map.
* "Nats" below are natural-log odds units: ``elo = nats * 400 / ln(10)``.

Functions
---------
``elo_difference(wins, losses, draws)``
    Elo of the first player relative to the second, with a confidence
    interval from the score's standard error (the fishtest / cutechess method).
``sprt(wins, losses, draws, elo0, elo1, alpha, beta)``
    The generalized sequential probability ratio test fishtest uses (and the
    test Leela Zero's gating is patterned on): H0 "elo = elo0" against
    H1 "elo = elo1", log-likelihood ratio of the trinomial (win/draw/loss)
    model, Wald's bounds.
``bradley_terry(games)``
    Maximum-likelihood (with a weak, documented prior) ratings for any number
    of players from a list of ``(player_a, player_b, score_a)`` games, with
    standard errors, one player anchored at 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

# The SPRT's defaults (Leela Zero's gating test): H0 elo 0, H1 elo 35, error rates 5% each.
SPRT_ELO0, SPRT_ELO1, SPRT_ALPHA, SPRT_BETA = 0.0, 35.0, 0.05, 0.05

#: Elo points per natural-log odds unit: ``400 / ln(10)`` (about 173.7).
ELO_PER_NAT = 400.0 / math.log(10.0)

#: fishtest replaces outcome counts of zero by this pseudo-count before the
#: SPRT maximum-likelihood step, so every outcome has non-zero probability
#: (otherwise the LLR is undefined after e.g. only wins).
SPRT_ZERO_COUNT = 1e-3


def score_from_elo(elo: float) -> float:
    """Expected score of a player ``elo`` points stronger than its opponent."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def elo_from_score(score: float) -> float:
    """Elo difference that gives the expected ``score`` (inverse of ``score_from_elo``).

    Returns ``-inf`` for a score <= 0 and ``+inf`` for a score >= 1.
    """
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0) + 0.0  # + 0.0 turns -0.0 into 0.0


def _z_value(confidence: float) -> float:
    """Two-sided standard-normal quantile: 1.96 for ``confidence=0.95``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


@dataclass(frozen=True)
class EloEstimate:
    """An Elo difference with a confidence interval.

    ``elo`` is the point estimate (``nan`` when no games were played,
    +-inf after a clean sweep); ``lower``/``upper`` bound the interval;
    ``score`` is the observed score fraction and ``stderr`` its standard error;
    ``games`` the number of games it rests on; ``confidence`` the interval's level.
    """

    elo: float
    lower: float
    upper: float
    score: float
    stderr: float
    games: int
    confidence: float = 0.95

    def __str__(self) -> str:
        if self.games == 0:
            return "n/a (no games)"
        level = f"{100 * self.confidence:g}%"
        return f"{_fmt_elo(self.elo)} [{_fmt_elo(self.lower)}, {_fmt_elo(self.upper)}] ({level})"


def _fmt_elo(value: float) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value:+.1f}"


def _score_moments(wins: float, losses: float, draws: float) -> tuple[float, float, float]:
    """Return (games, mean score, per-game score variance) of a result triple."""
    n = wins + losses + draws
    p = (wins + 0.5 * draws) / n
    var = (wins * (1.0 - p) ** 2 + draws * (0.5 - p) ** 2 + losses * p**2) / n
    return n, p, var


def elo_difference(
    wins: int, losses: int, draws: int = 0, confidence: float = 0.95
) -> EloEstimate:
    """Elo of the first player over the second from its wins, losses and draws.

    The point estimate is ``elo_from_score(p)`` with ``p = (wins + draws/2) / n``.
    The interval maps ``p +- z * se`` through the same function, where ``se`` is
    the standard error of the mean per-game score (the sample variance over the
    three outcomes, divided by ``n``), as fishtest and cutechess report it.
    For example 60 wins and 40 losses give +70.4 Elo, interval [+2.8, +143.9].

    When every game had the same result the sample variance is zero and that
    interval would collapse to a point; the Wilson score interval (which stays
    honest at 0% and 100%) is used instead. A 10-0 sweep is then
    ``+inf`` with a finite lower bound of ``elo_from_score(10 / (10 + z**2))``.

    Raises ValueError for negative counts or a confidence outside (0, 1).
    """
    if min(wins, losses, draws) < 0:
        raise ValueError(f"negative game count: {wins=}, {losses=}, {draws=}")
    z = _z_value(confidence)
    if wins + losses + draws == 0:
        return EloEstimate(math.nan, -math.inf, math.inf, math.nan, math.nan, 0, confidence)
    n, p, var = _score_moments(wins, losses, draws)
    se = math.sqrt(var / n)
    if var > 0.0:
        lo, hi = p - z * se, p + z * se
    else:
        # Wilson score interval for a binomial proportion p observed in n trials.
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z / denom * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
        lo, hi = centre - half, centre + half
        if p == 0.0:
            lo = 0.0  # exact; the formula leaves rounding noise
        if p == 1.0:
            hi = 1.0
    return EloEstimate(
        elo=elo_from_score(p),
        lower=elo_from_score(lo),
        upper=elo_from_score(hi),
        score=p,
        stderr=se,
        games=int(n),
        confidence=confidence,
    )


# --------------------------------------------------------------------------- SPRT


@dataclass(frozen=True)
class SprtResult:
    """Outcome of a sequential probability ratio test.

    ``llr`` is the log-likelihood ratio of H1 (elo = elo1) over H0 (elo = elo0);
    ``lower = log(beta / (1 - alpha))`` and ``upper = log((1 - beta) / alpha)``
    are Wald's stopping bounds; ``verdict`` is ``"accept"`` (H1 accepted:
    llr >= upper, the first player is at least elo1 stronger, e.g. a candidate
    network passes), ``"reject"`` (H0 accepted: llr <= lower) or ``"continue"``.
    """

    llr: float
    lower: float
    upper: float
    verdict: str
    elo0: float = SPRT_ELO0
    elo1: float = SPRT_ELO1
    alpha: float = SPRT_ALPHA
    beta: float = SPRT_BETA

    def __str__(self) -> str:
        return (
            f"SPRT(elo0={self.elo0:g}, elo1={self.elo1:g}, alpha={self.alpha:g}, "
            f"beta={self.beta:g}): LLR {self.llr:.2f} [{self.lower:.2f}, {self.upper:.2f}] "
            f"-> {self.verdict}"
        )


def _constrained_mle(pdf: list[tuple[float, float]], s: float) -> list[float]:
    """Maximum-likelihood distribution on the same outcomes with mean ``s``.

    ``pdf`` is the empirical distribution as (outcome value, probability) pairs,
    every probability > 0, values spanning ``s``. The maximiser has the form
    ``q_i = p_i / (1 + x (a_i - s))`` where ``x`` solves
    ``sum_i p_i (a_i - s) / (1 + x (a_i - s)) = 0`` (the "secular equation";
    Van den Bergh, support_MLE_multinomial, Proposition 1.1). The left side is
    decreasing in ``x`` on ``(-1/(a_max - s), 1/(s - a_min))``, so bisection
    finds the root.
    """
    a_min = min(a for a, _ in pdf)
    a_max = max(a for a, _ in pdf)
    if not a_min < s < a_max:
        raise ValueError(f"expected score {s} outside the outcome range ({a_min}, {a_max})")

    def secular(x: float) -> float:
        return sum(p * (a - s) / (1.0 + x * (a - s)) for a, p in pdf)

    lo = -1.0 / (a_max - s)
    hi = 1.0 / (s - a_min)
    # Shrink the open interval a hair so 1 + x (a - s) stays positive.
    width = hi - lo
    lo += 1e-12 * width
    hi -= 1e-12 * width
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if secular(mid) > 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(1.0, abs(mid)):
            break
    x = 0.5 * (lo + hi)
    q = [p / (1.0 + x * (a - s)) for a, p in pdf]
    total = sum(q)
    return [v / total for v in q]


def sprt_llr(wins: float, losses: float, draws: float, elo0: float, elo1: float) -> float:
    """Generalized log-likelihood ratio of elo1 over elo0 for a win/draw/loss sample.

    This is fishtest's ``LLR_logistic``: each hypothesis fixes the expected
    score (``score_from_elo(elo0)`` and ``score_from_elo(elo1)``); under each the
    trinomial outcome probabilities are fitted by maximum likelihood subject to
    that expectation, and the LLR is ``sum_i n_i log(q1_i / q0_i)``. Outcome
    counts of zero are replaced by ``SPRT_ZERO_COUNT`` first (as fishtest does)
    so that the fit exists after one-sided samples. Without draws this is the
    binomial LLR ``W log(s1/s0) + L log((1-s1)/(1-s0))`` up to that
    regularisation. Returns 0.0 for an empty sample.
    """
    if min(wins, losses, draws) < 0:
        raise ValueError(f"negative game count: {wins=}, {losses=}, {draws=}")
    if wins + losses + draws == 0:
        return 0.0
    counts = [max(SPRT_ZERO_COUNT, float(c)) for c in (losses, draws, wins)]
    n = sum(counts)
    pdf = [(value, c / n) for value, c in zip((0.0, 0.5, 1.0), counts)]
    s0, s1 = score_from_elo(elo0), score_from_elo(elo1)
    q0 = _constrained_mle(pdf, s0)
    q1 = _constrained_mle(pdf, s1)
    return n * sum(p * math.log(b / a) for (_, p), a, b in zip(pdf, q0, q1))


def sprt(
    wins: int,
    losses: int,
    draws: int = 0,
    elo0: float = SPRT_ELO0,
    elo1: float = SPRT_ELO1,
    alpha: float = SPRT_ALPHA,
    beta: float = SPRT_BETA,
) -> SprtResult:
    """Sequential probability ratio test of "elo = elo1" (H1) against "elo = elo0" (H0).

    ``alpha`` is the false-accept rate (accepting H1 when H0 holds), ``beta``
    the false-reject rate. Stop with ``"accept"`` when the LLR (``sprt_llr``)
    reaches ``log((1 - beta) / alpha)``, with ``"reject"`` when it falls to
    ``log(beta / (1 - alpha))``; otherwise ``"continue"`` playing.

    Raises ValueError unless ``elo0 < elo1`` and ``0 < alpha, beta < 1``.
    """
    if not elo0 < elo1:
        raise ValueError(f"need elo0 < elo1, got {elo0}, {elo1}")
    if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0):
        raise ValueError(f"alpha and beta must be in (0, 1), got {alpha}, {beta}")
    lower = math.log(beta / (1.0 - alpha))
    upper = math.log((1.0 - beta) / alpha)
    llr = sprt_llr(wins, losses, draws, elo0, elo1)
    if llr >= upper:
        verdict = "accept"
    elif llr <= lower:
        verdict = "reject"
    else:
        verdict = "continue"
    return SprtResult(llr, lower, upper, verdict, elo0, elo1, alpha, beta)


# ------------------------------------------------------------------ Bradley-Terry


@dataclass(frozen=True)
class Rating:
    """One player's fitted rating.

    ``elo`` is relative to the anchor player (whose ``elo`` is 0 and ``stderr``
    0); ``stderr`` is the standard error of that difference in Elo; ``games``
    and ``points`` count real games played and points scored.
    """

    name: str
    elo: float
    stderr: float
    games: int
    points: float


def bradley_terry(
    games: Iterable[tuple[str, str, float]],
    anchor: str | None = None,
    prior_draws: float = 1.0,
    max_iterations: int = 100,
    tolerance: float = 1e-10,
) -> dict[str, Rating]:
    """Fit Bradley-Terry (logistic Elo) ratings to a list of games.

    ``games`` holds ``(player_a, player_b, score_a)`` with ``score_a`` in
    [0, 1] (1 win, 0.5 draw, 0 loss for ``player_a``). A draw counts as half a
    win for each side. The model is ``P(a beats b) = 1 / (1 + exp(r_b - r_a))``.

    Prior: with pure maximum likelihood, a player who won (or lost) every game
    has no finite rating. Each player therefore also plays ``prior_draws``
    virtual drawn games against one virtual opponent whose rating is fitted
    along with the others. This pulls ratings gently towards each other (its
    weight is that of one real game by default, negligible after a few dozen),
    keeps every rating finite, joins otherwise disconnected groups of players,
    and is invariant to shifting all ratings. ``prior_draws=0`` gives the plain
    maximum-likelihood fit.

    The log-posterior is concave; it is maximised by Newton's method (with
    step halving) with ``anchor`` (default: the first player seen) fixed at 0.
    Standard errors come from the inverse of the negative Hessian at the
    optimum (the observed information, prior included).

    Returns ratings keyed by name, ordered from strongest to weakest.
    Raises ValueError for a bad score, an unknown anchor, or (with
    ``prior_draws=0``) data that has no finite maximum, such as a player who
    won every game or players with no games linking them to the anchor.
    """
    if prior_draws < 0:
        raise ValueError(f"prior_draws must be >= 0, got {prior_draws}")
    # Aggregate per unordered pair: games played and points of the first name.
    pair_games: dict[tuple[int, int], float] = defaultdict(float)
    pair_points: dict[tuple[int, int], float] = defaultdict(float)
    index: dict[str, int] = {}
    n_games: dict[str, int] = defaultdict(int)
    points: dict[str, float] = defaultdict(float)
    for a, b, score in games:
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"score must be in [0, 1], got {score!r} for {a} vs {b}")
        if a == b:
            raise ValueError(f"player {a!r} cannot play itself")
        for name in (a, b):
            index.setdefault(name, len(index))
        ia, ib = index[a], index[b]
        key = (ia, ib) if ia < ib else (ib, ia)
        pair_games[key] += 1.0
        pair_points[key] += score if ia < ib else 1.0 - score
        n_games[a] += 1
        n_games[b] += 1
        points[a] += score
        points[b] += 1.0 - score
    if not index:
        return {}
    if anchor is None:
        anchor = next(iter(index))
    if anchor not in index:
        raise ValueError(f"anchor {anchor!r} played no games")

    n_players = len(index)
    if prior_draws > 0:
        virtual = n_players  # the virtual opponent takes the last slot
        for i in range(n_players):
            pair_games[(i, virtual)] += prior_draws
            pair_points[(i, virtual)] += 0.5 * prior_draws
        n_params = n_players + 1
    else:
        n_params = n_players
    pairs = list(pair_games)
    first = np.array([i for i, _ in pairs], dtype=np.int64)
    second = np.array([j for _, j in pairs], dtype=np.int64)
    count = np.array([pair_games[p] for p in pairs])
    won = np.array([pair_points[p] for p in pairs])

    anchor_index = index[anchor]
    free = np.array([i for i in range(n_params) if i != anchor_index], dtype=np.int64)
    ratings = np.zeros(n_params)  # in nats

    def log_likelihood(r: np.ndarray) -> float:
        d = r[first] - r[second]
        # log sigmoid(d) = -logaddexp(0, -d), numerically stable
        return float(np.sum(-won * np.logaddexp(0.0, -d) - (count - won) * np.logaddexp(0.0, d)))

    def gradient_and_hessian(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = r[first] - r[second]
        expected = 1.0 / (1.0 + np.exp(-d))
        g_pair = won - count * expected
        w_pair = count * expected * (1.0 - expected)
        grad = np.zeros(n_params)
        np.add.at(grad, first, g_pair)
        np.add.at(grad, second, -g_pair)
        hess = np.zeros((n_params, n_params))
        np.add.at(hess, (first, first), -w_pair)
        np.add.at(hess, (second, second), -w_pair)
        np.add.at(hess, (first, second), w_pair)
        np.add.at(hess, (second, first), w_pair)
        return grad, hess

    divergence_nats = 50.0  # ~8,700 Elo: no real fit gets here
    current = log_likelihood(ratings)
    for _ in range(max_iterations):
        grad, hess = gradient_and_hessian(ratings)
        g = grad[free]
        h = hess[np.ix_(free, free)]
        try:
            step = np.linalg.solve(-h, g)
        except np.linalg.LinAlgError:
            raise ValueError(
                "ratings are not determined: some players have no games linking them "
                "to the anchor (use prior_draws > 0)"
            ) from None
        scale = 1.0
        while True:
            trial = ratings.copy()
            trial[free] += scale * step
            value = log_likelihood(trial)
            if value >= current - 1e-12 or scale < 1e-6:
                break
            scale *= 0.5
        ratings, current = trial, value
        if np.max(np.abs(ratings)) > divergence_nats:
            raise ValueError(
                "no finite maximum-likelihood ratings: some player won or lost all its "
                "games (use prior_draws > 0)"
            )
        if np.max(np.abs(scale * step)) < tolerance:
            break

    _, hess = gradient_and_hessian(ratings)
    h = hess[np.ix_(free, free)]
    try:
        covariance = np.linalg.inv(-h)
    except np.linalg.LinAlgError:
        raise ValueError("ratings are not determined (singular information matrix)") from None
    stderr = np.zeros(n_params)
    stderr[free] = np.sqrt(np.clip(np.diag(covariance), 0.0, None))

    result = [
        Rating(
            name=name,
            elo=float(ratings[i] * ELO_PER_NAT),
            stderr=float(stderr[i] * ELO_PER_NAT),
            games=n_games[name],
            points=points[name],
        )
        for name, i in index.items()
    ]
    result.sort(key=lambda r: -r.elo)
    return {r.name: r for r in result}
