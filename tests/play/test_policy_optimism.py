"""KataGo's policy optimism: the search blends an optimistic policy head's logits into the
priors, by root_policy_optimism at the root and policy_optimism below it (hand-fed trees), and
KataGo nets with two policy channels (model version >= 12) deliver that head."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.core import BLACK, Game, Search, SearchParams
from engine.nets import katawriter
from engine.nets.katanet import KataNet

SIZE = 5
A = SIZE * SIZE + 1


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def logits(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 1.5, (1, A)).astype(np.float32)


def root_priors(tree: Search) -> np.ndarray:
    """Priors of the root's children by compact move (every move is legal here)."""
    moves, _, _, priors = tree.root_arrays()
    out = np.zeros(A)
    out[moves] = priors
    return out


@pytest.mark.parametrize("root_opt,opt", [(0.0, 0.0), (0.2, 1.0), (1.0, 0.5)])
def test_priors_blend_by_hand(root_opt, opt):
    """Root and a child are given plain and optimistic logits; their priors are the softmax of
    plain + (optimistic - plain) * the optimism of their depth, computed by hand."""
    p0, q0, p1, q1 = logits(1), logits(2), logits(3), logits(4)
    tree = Search(Game(SIZE), SearchParams(policy_optimism=opt, root_policy_optimism=root_opt),
                  max_batch=1, seed=0)
    assert tree.collect(1) == 1
    tree.backup(p0, np.zeros(1, np.float32), policy_opt=q0)
    np.testing.assert_allclose(root_priors(tree), softmax(p0[0] + (q0[0] - p0[0]) * root_opt), atol=1e-6)
    first = int(np.argmax(root_priors(tree)))
    tree.set_root_targets({first: 2})
    assert tree.collect(1) == 1                        # the child reached by `first`
    tree.backup(p1, np.zeros(1, np.float32), policy_opt=q1)
    tree.set_root_targets(None)
    tree.advance(first, BLACK)                         # the child becomes the root, priors kept
    legal = np.ones(A, bool)
    legal[first] = False                               # occupied now
    want = softmax(np.where(legal, p1[0] + (q1[0] - p1[0]) * opt, -np.inf))
    np.testing.assert_allclose(root_priors(tree), want, atol=1e-6)


def test_without_an_optimistic_head_nothing_changes():
    """policy_opt None, or both optimisms 0: the priors are the plain policy's."""
    p, q = logits(5), logits(6)
    for params, opt in ((SearchParams(policy_optimism=1.0, root_policy_optimism=1.0), None),
                        (SearchParams(), q)):
        tree = Search(Game(SIZE), params, max_batch=1)
        tree.collect(1)
        tree.backup(p, np.zeros(1, np.float32), policy_opt=opt)
        np.testing.assert_allclose(root_priors(tree), softmax(p[0]), atol=1e-6)


def test_bad_shape_is_a_clear_error():
    tree = Search(Game(SIZE), SearchParams(policy_optimism=1.0), max_batch=1)
    tree.collect(1)
    with pytest.raises(ValueError, match="policy_opt"):
        tree.backup(logits(1), np.zeros(1, np.float32), policy_opt=np.zeros((1, 3), np.float32))


@pytest.mark.parametrize("version,has_opt", [(11, False), (12, True), (15, True)])
def test_kata_nets_deliver_the_optimistic_channel(version, has_opt):
    """Two-channel policy heads (version >= 12) give channel 1 as policy_opt, with its pass
    logit; one-channel heads give none."""
    net = KataNet(katawriter.random_model(("ordinary", "gpool"), channels=8, version=version, seed=7))
    game = Game(7)
    x = torch.from_numpy(np.stack([game.features("kata7")]))
    out = net(x)
    raw = net.forward_raw(x)
    if not has_opt:
        assert out.policy_opt is None
        return
    assert out.policy_opt.shape == (1, 50)
    want = torch.cat([raw["policy"][:, 1], raw["policy_pass"][:, 1:2]], dim=1)
    torch.testing.assert_close(out.policy_opt, want.float())
    assert not torch.allclose(out.policy_opt, out.policy)


@pytest.mark.parametrize("symmetries", ["none", "random", "all"])
def test_the_evaluator_carries_it_through_symmetries_and_the_cache(symmetries):
    """The optimistic policy goes through the same symmetry as the policy: for "random" the
    symmetry whose policy the evaluator returned also gives its optimistic policy; for "all"
    both are the mean over the eight of the log-probabilities mapped back.  A cached repeat
    serves the same rows."""
    from engine.nets import symmetry
    from engine.nets.evaluator import TorchEvaluator

    net = KataNet(katawriter.random_model(("ordinary", "gpool"), channels=8, version=15, seed=9))
    ev = TorchEvaluator(net, "cpu", symmetries=symmetries, seed=1)
    game = Game(7)
    game.play(3, BLACK)
    x = np.stack([game.features("kata7")])
    out = ev.evaluate(x, keys=[11])

    def logp(t: np.ndarray) -> np.ndarray:
        return t - np.log(np.exp(t - t.max()).sum()) - t.max()

    per_k = []
    with torch.no_grad():
        for k in range(symmetry.NUM_SYMMETRIES):
            o = net(symmetry.apply_symmetry(torch.from_numpy(x), k))
            per_k.append(tuple(symmetry.inverse_policy_symmetry(torch.log_softmax(t, dim=1), k).numpy()[0]
                               for t in (o.policy, o.policy_opt)))
    got = (logp(out.policy[0]), logp(out.policy_opt[0]))
    if symmetries == "all":
        want = tuple(np.log(np.mean([np.exp(p[i]) for p in per_k], axis=0)) for i in range(2))
    else:
        ks = [0] if symmetries == "none" else range(symmetry.NUM_SYMMETRIES)
        k = min(ks, key=lambda k: np.abs(per_k[k][0] - got[0]).max())
        assert symmetries == "none" or k != 0      # seed 1 draws a symmetry that moves points
        want = per_k[k]
    np.testing.assert_allclose(got[0], want[0], atol=2e-4)
    np.testing.assert_allclose(got[1], want[1], atol=2e-4)
    again = ev.evaluate(np.concatenate([x, x]), keys=[11, 11])
    np.testing.assert_array_equal(again.policy_opt[0], out.policy_opt[0])
    np.testing.assert_array_equal(again.policy_opt[1], out.policy_opt[0])
