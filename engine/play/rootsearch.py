"""Root-level search for self-play: Gumbel sequential halving and forced-playout pruning.

Both sit on top of the C tree (:class:`engine.core.Search`), which stays a plain PUCT tree below
the root.  They change only which root children get the simulations, which move is played and
what the policy training target is.

**Gumbel root search** (Danihelka, Guez, Schrittwieser, Silver, "Policy improvement by planning
with Gumbel", ICLR 2022), for searches of a few dozen simulations:

- sample ``g(a) ~ Gumbel(0, 1)`` per legal move and keep the ``m`` moves with the largest
  ``g(a) + logits(a)`` (Gumbel-top-k: sampling ``m`` moves without replacement from the policy);
- spend the ``n`` simulations by sequential halving: in each phase every surviving move gets
  ``max(1, floor(n / (ceil(log2 m) * survivors)))`` more visits, then the better half by
  ``g + logits + sigma(q)`` survives (never fewer than two), until the budget is spent
  (:func:`halving_schedule`; the schedule of the paper's reference implementation, mctx);
- play ``argmax g + logits + sigma(q)`` among the moves of the last phase: the Gumbel noise is
  the exploration, so self-play needs neither Dirichlet noise nor a move temperature;
- train the policy on ``softmax(logits + sigma(completed_q))`` (:func:`improved_policy`), where
  unvisited moves take the value ``v_mix`` that mixes the network's value with the visited
  moves' Q (:func:`completed_q`) and ``sigma(q) = (c_visit + max_b N(b)) * c_scale * q`` for
  ``q`` in [0, 1] (c_visit = 50, c_scale = 1 as in the paper).

The C side only keeps per-child visit targets (``Search.set_root_targets``); this module decides
them, phase by phase, in :class:`GumbelRoot`.

**Forced playouts with policy-target pruning** (Wu, "Accelerating Self-Play Learning in Go",
2019, KataGo): with ``SearchParams.forced_playouts_k = k`` the C root gives every visited child
at least ``sqrt(k * P(c) * N)`` visits, so moves the noise made interesting get looked at.
Those extra visits must not teach the policy that the moves were good:
:func:`pruned_visits` removes from every child but the most visited as many of its forced
visits as possible without its PUCT value rising above the best child's, and drops children left
with a single visit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.core import Search, SearchParams

C_VISIT = 50.0
C_SCALE = 1.0


# ---------------------------------------------------------------------------------------------
# Gumbel: the pure formulas (hand-testable)


def halving_schedule(n: int, m: int) -> list[tuple[int, int]]:
    """Sequential halving over ``n`` simulations and ``m`` considered moves: one entry per phase,
    ``(survivors, visits each survivor gets in this phase)``; the last phase may be cut short
    (its visits go to the best-ranked survivors first), and the visits add up to ``n``.

    >>> halving_schedule(16, 4)
    [(4, 2), (2, 4)]
    """
    if n <= 0 or m <= 0:
        return []
    if m == 1:
        return [(1, n)]
    log2m = math.ceil(math.log2(m))
    out: list[tuple[int, int]] = []
    left, k = n, m
    while left > 0:
        extra = max(1, n // (log2m * k))
        if extra * k > left:            # the last phase: as far as the budget goes
            extra = math.ceil(left / k)
        out.append((k, extra))
        left -= min(left, extra * k)
        k = max(2, k // 2)
    return out


def phase_visits(n: int, m: int) -> list[list[int]]:
    """Per phase, the visits each survivor (best-ranked first) gets: :func:`halving_schedule`
    with the cut-short last phase spelled out; everything sums to ``n``."""
    out = []
    left = n
    for k, extra in halving_schedule(n, m):
        row = []
        for _ in range(extra):                  # rounds of one visit per survivor, best first
            for j in range(k):
                if left == 0:
                    break
                if len(row) <= j:
                    row.append(0)
                row[j] += 1
                left -= 1
        row += [0] * (k - len(row))
        out.append(row)
    return out


def sigma(q01: np.ndarray, max_visits: int, c_visit: float = C_VISIT, c_scale: float = C_SCALE) -> np.ndarray:
    """The paper's monotone transform of Q values in [0, 1]."""
    return (c_visit + float(max_visits)) * c_scale * np.asarray(q01, np.float64)


def completed_q(q01: np.ndarray, visits: np.ndarray, prior: np.ndarray, raw_value01: float) -> np.ndarray:
    """Q in [0, 1] of every move, unvisited moves completed with ``v_mix`` (paper, eq. 33):
    ``(v + sum N / sum_{N(b)>0} pi(b) * sum_{N(b)>0} pi(b) q(b)) / (1 + sum N)``."""
    q01 = np.asarray(q01, np.float64)
    visits = np.asarray(visits, np.float64)
    prior = np.asarray(prior, np.float64)
    seen = visits > 0
    total = visits.sum()
    if seen.any():
        p_seen = prior[seen].sum()
        mixed = (prior[seen] * q01[seen]).sum() / p_seen if p_seen > 0 else q01[seen].mean()
        v_mix = (raw_value01 + total * mixed) / (1.0 + total)
    else:
        v_mix = raw_value01
    return np.where(seen, q01, v_mix)


def improved_policy(logits: np.ndarray, q01: np.ndarray, visits: np.ndarray, prior: np.ndarray,
                    raw_value01: float, c_visit: float = C_VISIT, c_scale: float = C_SCALE) -> np.ndarray:
    """``softmax(logits + sigma(completed_q))`` over the given moves."""
    cq = completed_q(q01, visits, prior, raw_value01)
    z = np.asarray(logits, np.float64) + sigma(cq, int(np.max(visits)) if len(visits) else 0, c_visit, c_scale)
    z -= z.max()
    e = np.exp(z)
    return e / e.sum()


def log_priors(prior: np.ndarray) -> np.ndarray:
    """Logits (up to a constant) of softmax priors; a zero prior becomes a very low logit."""
    return np.log(np.maximum(np.asarray(prior, np.float64), 1e-30))


# ---------------------------------------------------------------------------------------------
# Gumbel: driving a tree


@dataclass
class GumbelSettings:
    considered: int = 16            # m: moves sampled without replacement at the root
    c_visit: float = C_VISIT
    c_scale: float = C_SCALE


class GumbelRoot:
    """The Gumbel root search of one move on one tree.

    Call :meth:`update` before each collect: it starts the search once the root is expanded,
    moves to the next phase when the current one is complete and returns True when the budget
    is spent.  Then :attr:`move` is the move to play and :meth:`policy_target` the training
    target over ``N*N+1`` points."""

    def __init__(self, tree: Search, budget: int, rng: np.random.Generator,
                 settings: GumbelSettings | None = None):
        self.tree = tree
        self.budget = int(budget)
        self.rng = rng
        self.settings = settings or GumbelSettings()
        self.started = False
        self.done = False
        self.move: int | None = None
        self._phases: list[list[int]] = []
        self._phase = -1
        self.spent_by_phase: list[int] = []

    # -- the state machine --------------------------------------------------------------------
    def update(self) -> bool:
        if self.done:
            return True
        if not self.started:
            if self.tree.visits == 0 or len(self.tree.root_arrays()[0]) == 0:
                return False              # the root's own evaluation comes first (PUCT collect)
            self._start()
        moves, visits, _, _ = self.tree.root_arrays()
        got = dict(zip(moves.tolist(), visits.tolist()))
        while all(got.get(mv, 0) >= t for mv, t in self._targets.items()):
            if self._phase + 1 >= len(self._phases):
                self._finish()
                return True
            self._next_phase()
        return False

    def _start(self) -> None:
        moves, visits, q, prior = self.tree.root_arrays()
        self.moves = moves.astype(np.int64)
        self.logits = log_priors(prior)
        self.gumbel = self.rng.gumbel(size=len(moves))
        m = max(1, min(self.settings.considered, len(moves), self.budget))
        order = np.argsort(-(self.gumbel + self.logits), kind="stable")
        self.survivors = [int(i) for i in order[:m]]          # indices into self.moves, ranked
        self.base = visits.astype(np.int64).copy()             # visits from a reused subtree
        self._phases = phase_visits(self.budget, m) if self.budget > 0 else []
        self._phase = -1
        self._targets: dict[int, int] = {}
        self.started = True
        self._given = np.zeros(len(moves), np.int64)
        self._next_phase(first=True)

    def _scores(self, idx: list[int]) -> np.ndarray:
        _, visits, q, _ = self.tree.root_arrays()
        q01 = (q.astype(np.float64) + 1.0) / 2.0
        s = self.settings
        return self.gumbel[idx] + self.logits[idx] + sigma(q01[idx], int(visits.max()), s.c_visit, s.c_scale)

    def _next_phase(self, first: bool = False) -> None:
        if not first:
            keep = len(self._phases[self._phase + 1])
            scores = self._scores(self.survivors)
            order = np.argsort(-scores, kind="stable")
            self.survivors = [self.survivors[i] for i in order[:keep]]
        self._phase += 1
        if self._phase >= len(self._phases):
            self._targets = {}
            return
        row = self._phases[self._phase]
        for rank, i in enumerate(self.survivors):
            self._given[i] += row[rank]
        self.spent_by_phase.append(int(sum(row)))
        self._targets = {int(self.moves[i]): int(self.base[i] + self._given[i]) for i in self.survivors}
        self.tree.set_root_targets(self._targets)

    def _finish(self) -> None:
        self.tree.set_root_targets(None)
        if self.survivors:
            scores = self._scores(self.survivors)
            self.move = int(self.moves[self.survivors[int(np.argmax(scores))]])
        self.done = True

    # -- results ----------------------------------------------------------------------------
    def raw_value01(self) -> float:
        """The network's value of the root position in [0, 1]: the root's value sum minus its
        children's (every visit but the root's own evaluation went through a child)."""
        _, visits, q, _ = self.tree.root_arrays()
        total = self.tree.value * self.tree.visits - float((q.astype(np.float64) * visits).sum())
        return (min(1.0, max(-1.0, total)) + 1.0) / 2.0

    def policy_target(self) -> np.ndarray:
        """``softmax(logits + sigma(completed_q))`` as a float32 [N*N+1] distribution."""
        _, visits, q, prior = self.tree.root_arrays()
        s = self.settings
        pi = improved_policy(self.logits, (q.astype(np.float64) + 1.0) / 2.0, visits, prior,
                             self.raw_value01(), s.c_visit, s.c_scale)
        out = np.zeros(self.tree.size * self.tree.size + 1, np.float32)
        out[self.moves] = pi
        return out


# ---------------------------------------------------------------------------------------------
# Forced playouts: the pruned policy target


def puct_scale(params: SearchParams, parent_visits: float) -> float:
    """``c(N) * sqrt(N)`` of the C search's PUCT formula at a node with ``parent_visits``."""
    cp = params.c_puct + params.c_puct_factor * math.log((parent_visits + params.c_puct_base + 1.0)
                                                          / params.c_puct_base)
    return cp * math.sqrt(max(parent_visits, 1.0))


def pruned_visits(visits: np.ndarray, q: np.ndarray, prior: np.ndarray, params: SearchParams) -> np.ndarray:
    """Root visit counts with forced playouts pruned (KataGo): every child but the most visited
    loses up to ``floor(sqrt(k * P * N))`` visits, no more than keeps its PUCT value
    ``Q + scale * P / (1 + n)`` at or below the best child's; children left with one visit or
    fewer are dropped.  ``q`` in the mover's view (-1..1), ``N`` the sum of child visits."""
    visits = np.asarray(visits, np.float64)
    out = visits.copy()
    if len(visits) == 0 or params.forced_playouts_k <= 0:
        return out
    total = visits.sum()
    best = int(np.argmax(visits))
    scale = puct_scale(params, total)
    best_puct = q[best] + scale * prior[best] / (1.0 + visits[best])
    for i in range(len(visits)):
        if i == best or visits[i] <= 0:
            continue
        forced = math.floor(math.sqrt(params.forced_playouts_k * prior[i] * total))
        n = visits[i]
        floor_n = max(0.0, n - forced)
        while n > floor_n and q[i] + scale * prior[i] / n <= best_puct:   # puct at n - 1 visits
            n -= 1
        out[i] = 0.0 if n <= 1 else n
    return out


def pruned_distribution(tree: Search, params: SearchParams) -> np.ndarray:
    """The policy target of a forced-playout search: :func:`pruned_visits`, normalised, over
    ``N*N+1`` points."""
    moves, visits, q, prior = tree.root_arrays()
    kept = pruned_visits(visits, q, prior, params)
    out = np.zeros(tree.size * tree.size + 1, np.float32)
    out[moves] = kept
    s = out.sum()
    return out / s if s > 0 else tree.visit_distribution()
