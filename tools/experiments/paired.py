"""The seed experiment's pre-registered analysis: contrasts between designs, estimated per seed.

Every seed starts all designs from the same initial net, so the unit of analysis is the seed:
for each contrast (a linear combination of design ratings, :data:`CONTRASTS`) and each seed that
has every design the contrast needs, the contrast's value is taken on that seed's nets; the
estimate is the mean over seeds, its 95% interval Student's t with n - 1 degrees of freedom, its
p-value the two-sided one-sample t-test against 0, and the p-values of the set are adjusted by
Holm's step-down method (:func:`holm`).  Ratings come from fixed anchors (``tools.experiments.anchors``), so
a net's Elo does not depend on which other runs exist, and the seed-to-seed spread carries both
the training noise and the rating noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

#: name -> {design: weight}: the contrasts, fixed before any data (docs/seed-experiment.md).
CONTRASTS: dict[str, dict[str, float]] = {
    "gating at V (agz-async-finish - az)": {"agz-async-finish": 1.0, "az": -1.0},
    "gating at 2V (agz-async-finish-2v - az-2v)": {"agz-async-finish-2v": 1.0, "az-2v": -1.0},
    "visits, 2V - V (mean over gating)": {"az-2v": 0.5, "agz-async-finish-2v": 0.5,
                                          "az": -0.5, "agz-async-finish": -0.5},
    "gating x visits interaction": {"agz-async-finish-2v": 1.0, "agz-async-finish": -1.0,
                                    "az-2v": -1.0, "az": 1.0},
    "pipeline: sync-discard - async-finish": {"agz-sync-discard": 1.0, "agz-async-finish": -1.0},
    "pipeline: async-switch - async-finish": {"agz-async-switch": 1.0, "agz-async-finish": -1.0},
    "keep - drop old games": {"agz-async-finish": 1.0, "agz-async-finish-drop": -1.0},
}


@dataclass
class Contrast:
    name: str
    estimate: float
    ci95: tuple[float, float]
    p: float
    seeds: int
    per_seed: dict[int, float]
    p_holm: float = math.nan

    def as_json(self) -> dict:
        return {"name": self.name, "estimate": round(self.estimate, 1),
                "ci95": [round(self.ci95[0], 1), round(self.ci95[1], 1)],
                "p": round(self.p, 4), "p_holm": round(self.p_holm, 4), "seeds": self.seeds,
                "per_seed": {str(k): round(v, 1) for k, v in sorted(self.per_seed.items())}}


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: int) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_quantile(q: float, df: int) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (bisection)."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1.0 - t_sf(mid, df) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def t_test(values: Sequence[float]) -> tuple[float, tuple[float, float], float]:
    """(mean, 95% t interval, two-sided p against 0) of ``values`` (at least 2)."""
    n = len(values)
    if n < 2:
        raise ValueError("a t interval needs at least 2 seeds")
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    se = sd / math.sqrt(n)
    if se == 0:
        return mean, (mean, mean), 0.0 if mean != 0 else 1.0
    half = t_quantile(0.975, n - 1) * se
    p = min(1.0, 2 * t_sf(abs(mean / se), n - 1))
    return mean, (mean - half, mean + half), p


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest of m is
    multiplied by m - k + 1, then made monotone, and capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def contrasts(elo: Mapping[tuple[str, int], float],
              definitions: Mapping[str, Mapping[str, float]] = CONTRASTS,
              min_seeds: int = 2) -> list[Contrast]:
    """The contrasts of ``definitions`` on ``elo`` ((design, seed) -> Elo of that run's net):
    each estimated on the seeds that have every design it weighs (at least ``min_seeds``;
    others are left out), then Holm-adjusted over those estimated."""
    seeds = sorted({s for _, s in elo})
    out: list[Contrast] = []
    for name, weights in definitions.items():
        per_seed = {s: sum(w * elo[(d, s)] for d, w in weights.items()) for s in seeds
                    if all((d, s) in elo for d in weights)}
        if len(per_seed) < min_seeds:
            continue
        est, ci, p = t_test(list(per_seed.values()))
        out.append(Contrast(name, est, ci, p, len(per_seed), per_seed))
    for c, adj in zip(out, holm([c.p for c in out])):
        c.p_holm = adj
    return out


def design_means(elo: Mapping[tuple[str, int], float]) -> dict[str, dict]:
    """Per design: runs, mean Elo and its 95% t interval over seeds (unpaired: for the table;
    comparisons between designs go through :func:`contrasts`)."""
    out: dict[str, dict] = {}
    for d in dict.fromkeys(d for d, _ in elo):
        values = [v for (dd, _), v in elo.items() if dd == d]
        if len(values) >= 2:
            mean, ci, _ = t_test(values)
        else:
            mean, ci = values[0], (math.nan, math.nan)
        out[d] = {"runs": len(values), "elo": round(mean, 1), "elo_ci95": [round(ci[0], 1), round(ci[1], 1)]}
    return out
