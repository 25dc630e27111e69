"""KataGo's search improvements in the C search, on hand-fed trees: the score utility beside
win/loss (static and dynamic factors), exploration scaled by the spread of utilities, and the
options by name (engine.play.searchopts, GTP kata-set-param, in-process match specs)."""
from __future__ import annotations

import io
import math
import re

import numpy as np
import pytest

from engine.play import searchopts
from engine.core import EDGE_BYTES, NODE_BYTES, Game, Search, SearchParams
from engine.nets.evaluator import Evaluation
from engine.gtp import EngineConfig, GTPEngine, engine_play
from engine.native import lib
from train.match.inproc import parse_inproc

SIZE = 5


def stones(planes: np.ndarray) -> tuple[int, int]:
    """(stones on the board, the first move or -1) of a leaf reached from the empty board
    without passes or captures within four moves (rich planes 9-12: the last four moves, most
    recent first): Black is to move when the count is even."""
    count = int(round(float(planes[:2].sum())))
    pts = np.flatnonzero(planes[8 + count].ravel() > 0.5) if 1 <= count <= 4 else []
    return count, int(pts[0]) if len(pts) == 1 else -1


class HashEvaluator:
    """Uniform policy with pass ruled out; value and score a fixed pseudo-random function of the
    position (or ``value_fn`` of whether Black is to move); every evaluation is recorded as
    (stones, first move, Black to move, value, score), value and score for the side to move."""

    feature_set = "rich"

    def __init__(self, value_fn=None, score_spread: float = 12.0):
        self.value_fn = value_fn
        self.spread = score_spread
        self.log: list[tuple[int, int, float, float]] = []

    def evaluate(self, planes, keys=None):
        n = len(planes)
        policy = np.zeros((n, planes.shape[-1] ** 2 + 1), np.float32)
        policy[:, -1] = -30.0
        values, scores = np.zeros(n, np.float32), np.zeros(n, np.float32)
        for i, p in enumerate(planes):
            seed = int.from_bytes(np.packbits(p[:2].astype(bool)).tobytes()[:8].ljust(8, b"\0"), "little")
            rng = np.random.default_rng(seed)
            count, first = stones(p)
            black = bool(p[14, 0, 0] > 0.5)           # rich plane 14: Black to move
            values[i] = self.value_fn(black) if self.value_fn else rng.uniform(-0.8, 0.8)
            scores[i] = rng.normal(2.0, self.spread)
            self.log.append((count, first, black, float(values[i]), float(scores[i])))
        return Evaluation(policy, values, None, scores)


def run(tree: Search, ev: HashEvaluator, visits: int) -> None:
    while tree.visits < visits:
        n = tree.collect()
        out = ev.evaluate(tree.planes[:n])
        tree.backup(out.policy, out.value, scores=out.score)


def f(x: float, centre: float, scale: float) -> float:
    return 2.0 / math.pi * math.atan((x - centre) / (scale * SIZE))


def black_utility(p: SearchParams, black_lead: float, centre: float) -> float:
    return (p.static_score_utility * f(black_lead, 0.0, 2.0)
            + p.dynamic_score_utility * f(black_lead, centre, p.dynamic_score_scale))


def expected_centre(p: SearchParams, root_lead: float) -> float:
    c = root_lead * (1.0 - p.score_centre_zero_weight)
    cap = p.dynamic_score_scale * SIZE
    return min(max(c, root_lead - cap), root_lead + cap)


@pytest.mark.parametrize("static,dynamic,zero_weight", [(0.3, 0.0, 0.2), (0.1, 0.5, 0.2), (0.0, 0.6, 0.0)])
def test_selection_utility_is_value_plus_score_utility_by_hand(static, dynamic, zero_weight):
    p = SearchParams(static_score_utility=static, dynamic_score_utility=dynamic,
                     score_centre_zero_weight=zero_weight, dynamic_score_scale=0.6, fpu_reduction=0.0,
                     c_puct=4.0)                # a wide tree: every leaf within four moves
    tree = Search(Game(SIZE), p, max_batch=4, seed=5)
    ev = HashEvaluator()
    run(tree, ev, 100)
    root = ev.log[0]
    assert root[0] == 0                       # the root is evaluated first, on its own
    centre = expected_centre(p, root[4])      # Black to move at the root: its lead is Black's
    assert float(lib.search_score_centre(tree._ptr)) == pytest.approx(centre, abs=1e-5)
    by_move: dict[int, list[tuple[float, float]]] = {}
    for _, first, black, value, score in ev.log[1:]:
        sign = 1.0 if black else -1.0                      # Black's view
        by_move.setdefault(first, []).append((sign * value, black_utility(p, sign * score, centre)))
    assert -1 not in by_move                  # every leaf is 1-4 moves deep
    checked = 0
    for c in tree.children(with_pv=False):
        if c.visits == 0:
            assert tree.child_utility(c.move) == -2.0
            continue
        leaves = by_move[c.move]
        assert len(leaves) == c.visits
        win = sum(v for v, _ in leaves) / len(leaves)
        util = win + sum(u for _, u in leaves) / len(leaves)
        assert tree.child_utility(c.move) == pytest.approx(util, abs=2e-5)
        assert c.q == pytest.approx(win, abs=2e-5)       # the winrate reads win/loss alone
        checked += 1
    assert checked >= 20
    assert tree.check() == 0


def test_score_utility_changes_visits_but_not_value():
    """Same evaluations: the score term moves visits to high-scoring moves; the root value and
    each child's Q still average win/loss values only."""
    trees = {}
    for static in (0.0, 0.5):
        tree = Search(Game(SIZE), SearchParams(static_score_utility=static), max_batch=1, seed=1)
        run(tree, HashEvaluator(score_spread=20.0), 200)
        trees[static] = tree
    off, on = trees[0.0], trees[0.5]
    assert [c.visits for c in off.children(False)] != [c.visits for c in on.children(False)]
    best_score = max(on.children(False), key=lambda c: c.visits)
    assert on.child_utility(best_score.move) > best_score.q      # its scores pulled it up
    for tree in trees.values():
        kids = [c for c in tree.children(False) if c.visits]
        root_wl = tree.value
        # The root's value is its own evaluation plus every child's Q (negated for the root's view).
        assert root_wl == pytest.approx(
            (sum(c.q * c.visits for c in kids) + HashEvaluator().evaluate(
                Game(SIZE).features()[None]).value[0]) / tree.visits, abs=1e-5)


def test_without_scores_the_score_options_change_nothing():
    def visits(params):
        tree = Search(Game(SIZE), params, max_batch=2, seed=3)
        ev = HashEvaluator()
        while tree.visits < 150:
            n = tree.collect()
            out = ev.evaluate(tree.planes[:n])
            tree.backup(out.policy, out.value)          # no score head
        return [(c.move, c.visits, c.q) for c in tree.children(False)]

    assert visits(SearchParams()) == visits(SearchParams(static_score_utility=0.5, dynamic_score_utility=0.5))


def constant_black_value(black_to_move: bool) -> float:
    """Black's value is 0.3 at every leaf (side to move's: +0.3 with Black to move)."""
    return 0.3 if black_to_move else -0.3


@pytest.mark.parametrize("kind", ["lz", "kata"])
def test_analysis_winrate_ignores_the_score_term(kind):
    """Every leaf gives Black a value of 0.3 and a random score: whatever the score utility does
    to the visits, each move's winrate is 65%."""
    shown = {}
    for on in (False, True):
        out = io.StringIO()
        eng = GTPEngine(lambda n: HashEvaluator(constant_black_value, 25.0),
                        EngineConfig(size=SIZE, play=engine_play(120), seed=1, quiet=True),
                        stdout=out, stderr=io.StringIO())
        if on:
            assert eng.command("kata-set-param staticScoreUtilityFactor 0.5") == ""
            assert eng.command("kata-set-param dynamic_score_utility 0.5") == ""
            assert eng.command("kata-get-param dynamicScoreUtilityFactor") == "0.5"
        eng.command(f"{kind}-genmove_analyze b interval 1")
        text = out.getvalue().strip().splitlines()[-1]
        entries = re.findall(r"info move (\S+) visits (\d+) winrate (\S+)", text)
        assert len(entries) >= 10
        for _, _, wr in entries:
            assert float(wr) == (pytest.approx(6500, abs=1) if kind == "lz" else pytest.approx(0.65, abs=1e-4))
        shown[on] = [(m, int(v)) for m, v, _ in entries]
    assert shown[True] != shown[False]        # the score term did change the search


def test_gtp_rejects_bad_options():
    eng = GTPEngine(lambda n: HashEvaluator(), EngineConfig(size=SIZE, play=engine_play(8), seed=1, quiet=True),
                    stdout=io.StringIO(), stderr=io.StringIO())
    for cmd in ("kata-set-param staticScoreUtilityFactor 2", "kata-set-param noSuchParam 1",
                "kata-set-param cpuctUtilityStdevScale x", "kata-get-param lcb_z"):
        with pytest.raises(Exception, match="syntax error"):
            eng.command(cmd)
    assert eng.command("goengine-param cpuct_stdev_scale 0.85") == ""
    assert "[string] cpuct_stdev_scale 0.85" in eng.command("goengine-param")


def explore_by_hand(p: SearchParams, n: int, util_sum: float, util_sq: float) -> float:
    prior = p.cpuct_stdev_prior
    if n <= 1:
        sd = prior
    else:
        m = util_sum / n
        sq = max(util_sq / n, m * m)
        w = p.cpuct_stdev_prior_weight
        sd = math.sqrt(max(0.0, ((m * m + prior * prior) * w + sq * n) / (w + n - 1) - m * m))
    return 1.0 + p.cpuct_stdev_scale * (sd / prior - 1.0)


def test_variance_scaled_cpuct_factor_by_hand():
    p = SearchParams(cpuct_stdev_scale=0.85, static_score_utility=0.2)
    tree = Search(Game(SIZE), p, max_batch=1, seed=2)
    ev = HashEvaluator()
    assert float(lib.search_root_explore_factor(tree._ptr)) == pytest.approx(1 - 0.85 * 0)  # prior: 1
    run(tree, ev, 40)
    centre = expected_centre(p, ev.log[0][4])
    us = []
    for _, _, black, value, score in ev.log:
        sign = 1.0 if black else -1.0
        us.append(sign * value + black_utility(p, sign * score, centre))
    want = explore_by_hand(p, len(us), sum(us), sum(u * u for u in us))
    assert float(lib.search_root_explore_factor(tree._ptr)) == pytest.approx(want, rel=1e-4)
    assert SearchParams().cpuct_stdev_scale == 0.0   # off by default: factor exactly 1


def test_variance_scaled_cpuct_picks_the_child_computed_by_hand():
    """Root with two children, A (prior 0.6, Q 0.1 after 1 visit) and B (prior 0.4, Q 0.5 after
    1 visit) and its own evaluation 0.9: the utilities spread far wider than the prior's 0.1, so
    the scaled exploration prefers the prior (A) where plain PUCT prefers the value (B)."""
    logits = np.full(SIZE * SIZE + 1, -30.0, np.float32)
    a, b = 12, 6
    logits[a], logits[b] = math.log(0.6), math.log(0.4)
    root_value = 0.9             # Black to move; the children's leaves have White to move
    picks = {}
    for scale in (0.0, 1.0):
        p = SearchParams(cpuct_stdev_scale=scale, cpuct_stdev_prior=0.1, cpuct_stdev_prior_weight=1.0,
                         fpu_reduction=0.0, fpu_reduction_root=0.0, c_puct_factor=0.0, c_puct=1.0)
        tree = Search(Game(SIZE), p, max_batch=1, seed=1)
        for value in (root_value, None, None):
            n = tree.collect(1)
            planes = tree.planes[0]
            count, black = stones(planes)
            v = value if value is not None else (-0.1 if black == a else -0.5)   # White's view
            tree.backup(np.tile(logits, (n, 1)), np.array([v], np.float32))
        q = {c.move: c.q for c in tree.children(False) if c.visits}
        assert q == {a: pytest.approx(0.1), b: pytest.approx(0.5)}
        # By hand: the root's 3 visits have utilities 0.9, 0.1 and 0.5 (Black's view).
        us = [0.9, 0.1, 0.5]
        factor = explore_by_hand(p, 3, sum(us), sum(u * u for u in us))
        assert factor == pytest.approx(1.0 if scale == 0 else 4.397, abs=1e-3)
        assert float(lib.search_root_explore_factor(tree._ptr)) == pytest.approx(factor, rel=1e-5)
        scale_term = p.c_puct * math.sqrt(3) * factor
        score = {m: q[m] + scale_term * pr / 2 for m, pr in ((a, 0.6), (b, 0.4))}
        want = max(score, key=score.get)
        tree.collect(1)
        count, black = stones(tree.planes[0])
        assert count == 2 and black == want
        picks[scale] = black
        tree.cancel()
    assert picks == {0.0: b, 1.0: a}


@pytest.mark.parametrize("recompute", [{}, {"value_weight_exponent": 0.25, "noise_pruning": 1.0}])
def test_node_size_and_the_memory_cap_with_the_score_sums(recompute):
    assert NODE_BYTES == 72 and EDGE_BYTES == 12
    cap = 64 * (NODE_BYTES + 362 * EDGE_BYTES) + 4000     # just over the smallest cap C allows
    tree = Search(Game(SIZE), SearchParams(max_memory=cap, static_score_utility=0.3,
                                           dynamic_score_utility=0.3, cpuct_stdev_scale=0.85,
                                           subtree_bias_factor=0.45, **recompute),
                  max_batch=8, seed=4)
    ev = HashEvaluator()
    run(tree, ev, 1500)
    assert tree.memory_bytes <= cap
    assert tree.full_events > 0 and tree.visits >= 1500
    assert lib.search_bias_entries(tree._ptr) > 0     # the value-bias table is in use too
    assert tree.check() == 0


def test_options_by_name():
    assert searchopts.option_field("cpuctUtilityStdevScale") == "cpuct_stdev_scale"
    assert searchopts.parse_options("cpuctExplorationBase=500,rootFpuReductionMax=0.1,cpuctExplorationLog=0.45") == {
        "c_puct_base": 500.0, "fpu_reduction_root": 0.1, "c_puct_factor": 0.45}
    with pytest.raises(ValueError):
        searchopts.parse_options("cpuctExplorationBase=5")        # KataGo's range: 10 .. 100000
    assert searchopts.parse_options("staticScoreUtilityFactor=0.1, dynamic_score_utility=0.3") == {
        "static_score_utility": 0.1, "dynamic_score_utility": 0.3}
    for bad in ("staticScoreUtilityFactor=1.5", "nope=1", "cpuct_stdev_scale", "dynamic_score_scale=nan"):
        with pytest.raises(ValueError):
            searchopts.parse_options(bad)
    spec = parse_inproc("inproc:net.pt:visits=64,staticScoreUtilityFactor=0.1,cpuct_stdev_scale=0.85")
    params = spec.search_params()
    assert (params.static_score_utility, params.cpuct_stdev_scale, spec.visits) == (0.1, 0.85, 64)
    assert searchopts.describe(params) == "static_score_utility=0.1,cpuct_stdev_scale=0.85"
    with pytest.raises(ValueError, match="outside"):
        parse_inproc("inproc:net.pt:cpuct_stdev_scale=3")


def test_search_ab_plays_a_variant_against_the_base(tmp_path, capsys):
    from engine.nets import weights
    from engine.nets.network import NetConfig
    from tools.experiments import search_ab

    net = tmp_path / "tiny.pt"
    weights.save(net, weights.new_model(NetConfig(blocks=1, filters=8), seed=1), {"step": 0, "board_sizes": [5]})
    assert search_ab.main(["--weights", str(net), "--size", "5", "--komi", "7", "--games", "2",
                           "--visits", "4", "--parallel", "2", "--random-moves", "1",
                           "--out", str(tmp_path / "ab"), "--variant",
                           "score=staticScoreUtilityFactor=0.1,dynamicScoreUtilityFactor=0.3"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| score |"))
    assert "static_score_utility=0.1,dynamic_score_utility=0.3 | 4 visits | 2 (" in row
    assert (tmp_path / "ab" / "score" / "results.json").exists()
    with pytest.raises(SystemExit):
        search_ab.main(["--variant", "x=staticScoreUtilityFactor=9"])
