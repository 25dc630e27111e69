"""Uncertainty-weighted playouts (KataGo's useUncertainty) in the C search, on hand-fed trees,
and the short-term errors of KataGo nets that feed them.

The hand-fed tree: an empty 5x5 board, Black to move, the root's policy on A and B only.
Each of A and B gets two visits (root targets): A's own evaluation is confident and good for
Black, its child's uncertain and bad; B the other way round.  Unweighted, B has the higher Q;
weighted, A has, so PUCT (equal visits, equal priors) turns from B to A."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.core import BLACK, WHITE, EDGE_BYTES, NODE_BYTES, Game, Search, SearchParams
from engine.native import lib
from engine.nets import katanet, katawriter
from engine.nets.evaluator import RandomEvaluator, TorchEvaluator
from engine.play import searchopts

SIZE = 5
A, B, X = 6, 18, 12                 # compact points (row * 5 + col)
PASS = SIZE * SIZE
COEFF, MAX_WEIGHT = 0.25, 8.0


def policy(*moves: int) -> np.ndarray:
    """Logits: 10 on the given moves, -20 elsewhere."""
    out = np.full((1, PASS + 1), -20.0, np.float32)
    out[0, list(moves)] = 10.0
    return out


def step(tree: Search, logits: np.ndarray, value: float, error: float | None) -> np.ndarray:
    """Collects one leaf and backs it up with short-term win/loss error ``error`` (None: no
    errors); returns the leaf's stone planes (both colours)."""
    assert tree.collect(1) == 1
    stones = tree.planes[0][:2].sum(axis=0).ravel().copy()
    unc = None if error is None else np.array([[error, 0.0]], np.float32)
    tree.backup(logits, np.array([value], np.float32), uncertainty=unc)
    return stones


def weight(error: float) -> float:
    return COEFF / (error + COEFF / MAX_WEIGHT)


# (Black's value, win/loss error) of the two visits of each root child: its own evaluation,
# then its child's
VISITS = {A: [(0.6, 0.0), (-0.2, 0.25)], B: [(0.5, 0.25), (0.1, 0.0)]}
ROOT = (0.05, 0.1)


def hand_fed(use: float, errors: bool = True) -> Search:
    tree = Search(Game(SIZE), SearchParams(use_uncertainty=use, uncertainty_coeff=COEFF,
                                           uncertainty_max_weight=MAX_WEIGHT), max_batch=1, seed=1)
    step(tree, policy(A, B), ROOT[0], ROOT[1] if errors else None)   # Black to move
    for move, ((v0, e0), (v1, e1)) in VISITS.items():
        tree.set_root_targets({move: 2})
        assert step(tree, policy(X), -v0, e0 if errors else None)[move] == 1   # White to move
        stones = step(tree, policy(X), v1, e1 if errors else None)           # Black to move
        assert stones[move] == 1 and stones[X] == 1
    tree.set_root_targets(None)
    assert tree.check() == 0
    return tree


def by_hand(use: bool) -> tuple[dict[int, float], dict[int, float], float, float]:
    """Q and weight of A and B, the root's weight and its value (Black's view)."""
    w = (lambda e: weight(e)) if use else (lambda e: 1.0)
    q = {m: sum(v * w(e) for v, e in vs) / sum(w(e) for _, e in vs) for m, vs in VISITS.items()}
    n = {m: sum(w(e) for _, e in vs) for m, vs in VISITS.items()}
    root_w = w(ROOT[1]) + sum(n.values())
    root_v = (ROOT[0] * w(ROOT[1]) + sum(q[m] * n[m] for m in VISITS)) / root_w
    return q, n, root_w, root_v


def puct_pick(tree: Search, q: dict[int, float], n: dict[int, float], root_w: float) -> int:
    """The root child PUCT picks from Q, weights and priors (search.h's formula)."""
    p = tree.params
    cp = p.c_puct + p.c_puct_factor * math.log((root_w + p.c_puct_base + 1.0) / p.c_puct_base)
    scale = cp * math.sqrt(root_w)
    priors = {c.move: c.prior for c in tree.children(with_pv=False)}
    scores = {m: q[m] + scale * priors[m] / (1.0 + n[m]) for m in VISITS}
    return max(scores, key=scores.get)


@pytest.mark.parametrize("use", [0.0, 1.0])
def test_weighted_q_and_the_puct_choice_by_hand(use):
    tree = hand_fed(use)
    q, n, root_w, root_v = by_hand(bool(use))
    got = {c.move: c for c in tree.children(with_pv=False)}
    for m in VISITS:
        assert got[m].visits == 2                                 # counts stay counts
        assert got[m].q == pytest.approx(q[m], abs=1e-6)
        assert tree.child_utility(m) == pytest.approx(q[m], abs=1e-6)
    assert tree.visits == 5 and tree.weight == pytest.approx(root_w, rel=1e-6)
    assert tree.value == pytest.approx(root_v, abs=1e-6)
    want = puct_pick(tree, q, n, root_w)
    assert want == (A if use else B)                              # the weights turn the choice
    assert tree.collect(1) == 1
    assert tree.planes[0][:2].sum(axis=0).ravel()[want] == 1
    tree.cancel()


def test_weights_and_q_by_hand_values():
    q, n, _, _ = by_hand(True)
    assert n[A] == pytest.approx(8.0 + 0.25 / 0.28125)            # the cap: a zero error weighs 8
    assert q[A] == pytest.approx((0.6 * 8.0 - 0.2 * 0.25 / 0.28125) / n[A])
    assert q[A] > q[B] and by_hand(False)[0][B] > by_hand(False)[0][A]


def slope(x: float, centre: float, scale: float, n: int) -> float:
    k = scale * n
    return 2.0 / math.pi * k / (k * k + (x - centre) ** 2)


@pytest.mark.parametrize("wl,se,lead,exponent", [
    (0.0, 0.0, 0.0, 1.0), (0.1, 2.0, 3.0, 1.0), (0.3, 10.0, -12.0, 1.0), (0.05, 1.0, 25.0, 0.5),
    (0.2, 4.0, 5.0, 2.0), (0.0, 0.0, 7.0, 0.5)])
def test_the_weight_formula(wl, se, lead, exponent):
    p = SearchParams(use_uncertainty=1.0, static_score_utility=0.1, dynamic_score_utility=0.3,
                     dynamic_score_scale=0.75, uncertainty_exponent=exponent)
    tree = Search(Game(9), p)                                     # centre 0 before any backup
    u = wl + se * (0.1 * slope(lead, 0.0, 2.0, 9) + 0.3 * slope(lead, 0.0, 0.75, 9))
    want = 0.25 / (u ** exponent + 0.25 / 8.0)
    assert tree.playout_weight(wl, se, lead) == pytest.approx(want, rel=1e-5)
    assert tree.playout_weight(wl, se, lead) <= 8.0 + 1e-5
    off = Search(Game(9), SearchParams(static_score_utility=0.1, dynamic_score_utility=0.3))
    assert off.playout_weight(wl, se, lead) == 1.0


def test_the_weight_reads_the_dynamic_centre_and_tames_bad_errors():
    p = SearchParams(use_uncertainty=1.0, dynamic_score_utility=0.3)
    tree = Search(Game(9), p, max_batch=1)
    tree.collect(1)
    tree.backup(np.zeros((1, 82), np.float32), np.zeros(1, np.float32), scores=np.array([4.0], np.float32))
    centre = 4.0 * (1.0 - p.score_centre_zero_weight)             # Black's lead, Black to move
    for color, c in ((BLACK, centre), (WHITE, -centre)):
        u = 0.1 + 3.0 * 0.3 * slope(1.0, c, p.dynamic_score_scale, 9)
        assert tree.playout_weight(0.1, 3.0, 1.0, color) == pytest.approx(0.25 / (u + 0.25 / 8.0), rel=1e-5)
    assert tree.playout_weight(float("nan"), 1.0, 0.0) == 1.0     # no information
    assert tree.playout_weight(-1.0, -5.0, 0.0) == pytest.approx(8.0)   # clamped to 0: the cap


def drive(params: SearchParams, errors: str, visits: int = 300) -> Search:
    """A search on a 7x7 board with a seeded pseudo-random net; ``errors``: "none" (not
    passed), "random" (per-leaf errors from the planes' digest)."""
    ev = RandomEvaluator(seed=5)
    tree = Search(Game(7), params, max_batch=8, seed=9)
    while tree.visits < visits:
        n = tree.collect()
        out = ev.evaluate(tree.planes[:n])
        unc = None
        if errors == "random":
            unc = np.stack([np.abs(out.value) * 0.3, np.abs(out.score) * 0.5], axis=1).astype(np.float32)
        tree.backup(out.policy, out.value, scores=out.score, uncertainty=unc)
    assert tree.check() == 0
    return tree


def snapshot(tree: Search):
    moves, visits, q, prior = tree.root_arrays()
    return moves.tolist(), visits.tolist(), q.tolist(), tree.value, tree.score


def test_without_errors_the_tree_is_the_unweighted_one():
    base = SearchParams(static_score_utility=0.1, dynamic_score_utility=0.3, cpuct_stdev_scale=0.85,
                        subtree_bias_factor=0.45)
    on = SearchParams(**{**base.__dict__, "use_uncertainty": 1.0})
    want = snapshot(drive(base, "none"))
    assert snapshot(drive(on, "none")) == want                    # no errors: every weight 1
    assert snapshot(drive(base, "random")) == want                # switched off: errors ignored
    weighted = drive(on, "random")
    assert snapshot(weighted) != want                              # (the test can tell)
    assert weighted.weight != weighted.visits


def test_node_size_and_the_memory_cap_with_weights():
    assert NODE_BYTES == 72 and EDGE_BYTES == 12
    cap = 64 * (NODE_BYTES + 362 * EDGE_BYTES) + 4000             # just over the smallest cap C allows
    p = SearchParams(max_memory=cap, use_uncertainty=1.0, static_score_utility=0.3,
                     dynamic_score_utility=0.3, cpuct_stdev_scale=0.85, subtree_bias_factor=0.45)
    tree = Search(Game(SIZE), p, max_batch=8, seed=4)
    ev = RandomEvaluator(seed=2)
    rng = np.random.default_rng(3)
    while tree.visits < 1500:
        n = tree.collect()
        out = ev.evaluate(tree.planes[:n])
        unc = rng.uniform(0.0, [0.4, 8.0], size=(n, 2)).astype(np.float32)
        tree.backup(out.policy, out.value, scores=out.score, uncertainty=unc)
    assert tree.memory_bytes <= cap and tree.full_events > 0
    assert lib.search_bias_entries(tree._ptr) > 0
    assert tree.check() == 0 and math.isfinite(tree.value) and math.isfinite(tree.weight)


def test_bad_uncertainty_shapes_are_refused():
    tree = Search(Game(SIZE), SearchParams(use_uncertainty=1.0), max_batch=2)
    n = tree.collect(2)
    with pytest.raises(ValueError, match="uncertainty"):
        tree.backup(np.zeros((n, PASS + 1), np.float32), np.zeros(n, np.float32),
                    uncertainty=np.zeros((n, 3), np.float32))


def test_options_by_katago_name():
    got = searchopts.parse_options("useUncertainty=true,uncertaintyCoeff=0.25,uncertaintyExponent=1,"
                                   "uncertaintyMaxWeight=8")
    assert got == {"use_uncertainty": 1.0, "uncertainty_coeff": 0.25, "uncertainty_exponent": 1.0,
                   "uncertainty_max_weight": 8.0}
    for bad in ("uncertaintyCoeff=0", "uncertaintyMaxWeight=0.5", "uncertaintyExponent=3"):
        with pytest.raises(ValueError, match="outside"):
            searchopts.parse_options(bad)


# -- the KataGo net's short-term errors ------------------------------------------------------


def kata_net(version: int) -> katanet.KataNet:
    return katanet.KataNet(katawriter.random_model(("ordinary", "gpool"), version=version, seed=7))


def test_kata_output_carries_the_errors_by_version():
    games = [Game(9), Game(9)]
    games[1].play(40, BLACK)
    x = torch.from_numpy(np.stack([g.features("kata7") for g in games]))
    for version in (9, 10, 14, 15):
        net = kata_net(version)
        out = net(x)
        assert out.uncertainty is not None and out.uncertainty.shape == (2, 2)
        assert bool((out.uncertainty > 0).all())
        raw = net.forward_raw(x)["score"].double()
        pp = net.postprocess
        sp = torch.nn.functional.softplus
        if version >= 14:
            want = sp(raw[:, 4] * 0.5) * math.sqrt(pp["shortterm_value_error"])
        elif version >= 10:
            want = torch.sqrt(sp(raw[:, 4]) * pp["shortterm_value_error"])
        else:
            want = sp(raw[:, 4])
        assert torch.allclose(out.uncertainty[:, 0].double(), want, rtol=1e-5)
    assert kata_net(8)(x).uncertainty is None                      # no such heads before version 9


@pytest.mark.parametrize("mode", ["none", "random", "all"])
def test_the_evaluator_keeps_the_errors(mode):
    net = kata_net(15)
    ev = TorchEvaluator(net, device="cpu", symmetries=mode, seed=1, cache_size=16)
    games = [Game(9) for _ in range(3)]
    games[1].play(40, BLACK)
    games[2].play(10, BLACK)
    planes = np.stack([g.features("kata7") for g in games])
    keys = np.array([g.feature_key("kata7") for g in games], np.uint64)
    out = ev.evaluate(planes, keys=keys)
    assert out.uncertainty.shape == (3, 2) and (out.uncertainty > 0).all()
    if mode != "all":   # the errors are per position: no symmetry moves them
        with torch.inference_mode():
            direct = net(torch.from_numpy(planes)).uncertainty.numpy()
        if mode == "none":
            np.testing.assert_allclose(out.uncertainty, direct, rtol=1e-5)
    again = ev.evaluate(planes[[2, 0, 2]], keys=keys[[2, 0, 2]])  # cache hits and a repeat
    np.testing.assert_array_equal(again.uncertainty, out.uncertainty[[2, 0, 2]])
    assert ev.cache_hits >= 2
    assert RandomEvaluator(seed=0, feature_set="kata7").evaluate(planes).uncertainty is None


def _oracle():
    from tests.helpers import kata_oracle
    return kata_oracle


@pytest.mark.slow          # KataGo's own evaluator as the oracle
def test_errors_match_katago_kata_raw_nn():
    ko = _oracle()
    binary = next((p for p in (ko.katago_path(), Path("/work/katago/katago")) if p and p.is_file()), None)
    net_path = next((p for p in (ko.real_net_path(), Path("/work/katago/b10c384h6nbttflrs.bin.gz"))
                     if p and p.is_file()), None)
    if binary is None or net_path is None:
        pytest.skip("KataGo's binary or its b10c384 net is absent")
    from engine.nets import kataweights
    net, meta = kataweights.load(net_path)
    assert meta["version"] >= 9
    oracle = ko.KataGTP(binary, net_path)
    try:
        positions = [p for p in ko.positions() if p.size == 9][:5]
        assert len(positions) == 5
        for pos in positions:
            theirs, mine = oracle.evaluate(pos), ko.ours(pos, net)
            # kata-raw-nn prints three decimals
            assert abs(theirs.wl_error - mine.wl_error) <= 1e-3, pos.name
            assert abs(theirs.score_error - mine.score_error) <= 1e-3 + 1e-3 * theirs.score_error, pos.name
    finally:
        oracle.close()


def test_options_in_an_inproc_spec():
    from train.match.inproc import parse_inproc
    params = parse_inproc("inproc:net.pt:visits=64,useUncertainty=1,uncertaintyMaxWeight=6").search_params()
    assert (params.use_uncertainty, params.uncertainty_max_weight) == (1.0, 6.0)
    assert searchopts.describe(params) == "use_uncertainty=1,uncertainty_max_weight=6"
