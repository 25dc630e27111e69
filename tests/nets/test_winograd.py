"""Winograd 3x3 convolutions (engine/nets/winograd.py, src_c/winograd.c) against torch's conv2d."""
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from engine.nets import winograd as wg
from engine.nets.evaluator import TorchEvaluator
from engine.nets.network import GoNet, NetConfig
from engine.nets.precision import Precision, candidates


def _conv(c_in, c_out, seed, bias=True):
    torch.manual_seed(seed)
    conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=bias)
    with torch.no_grad():
        conv.weight.normal_(0, 0.2)
        if bias:
            conv.bias.normal_(0, 0.5)
    return conv


@pytest.mark.parametrize("m", range(1, wg.MAX_TILE + 1))
def test_transform_matrices_compute_the_1d_correlation(m):
    at, g, bt = wg.transform_matrices(m)
    assert at.shape == (m, m + 2) and g.shape == (m + 2, 3) and bt.shape == (m + 2, m + 2)
    rng = np.random.default_rng(m)
    for _ in range(20):
        d = rng.integers(-9, 10, m + 2).astype(np.float64)
        k = rng.integers(-9, 10, 3).astype(np.float64)
        want = [sum(k[j] * d[i + j] for j in range(3)) for i in range(m)]
        got = at @ ((g @ k) * (bt @ d))
        np.testing.assert_allclose(got, want, atol=1e-9)


def test_transform_matrices_reject_a_bad_tile():
    for m in (0, wg.MAX_TILE + 1):
        with pytest.raises(ValueError):
            wg.transform_matrices(m)


def test_best_tile_covers_the_board_with_fewest_products():
    assert wg.best_tile(9) == 3            # 9 tiles of 3x3: 225 products per channel pair
    assert wg.best_tile(19) == 4           # 25 tiles of 4x4: 900
    assert wg.best_tile(5) == 3


# (input channels, output channels): the fused kernel (multiples of 8 / 16), an input padded to
# eights (a stem's 20 planes), and shapes the C kernel refuses (48, 12 outputs: torch's conv).
SHAPES = [(64, 64), (20, 32), (16, 48), (8, 12), (3, 16)]


@pytest.mark.parametrize("size", [5, 7, 9, 13, 19])
@pytest.mark.parametrize("tile", [2, 3, 4])
def test_equals_conv2d_at_every_size_and_tile(size, tile):
    for i, (c_in, c_out) in enumerate(SHAPES):
        conv = _conv(c_in, c_out, seed=size * 10 + tile + i, bias=i % 2 == 0)
        w = wg.WinogradConv3x3(conv, tile=tile)
        x = torch.randn(3, c_in, size, size)
        with torch.no_grad():
            ref = conv(x)
            res = torch.randn_like(ref)
            np.testing.assert_allclose(w(x).numpy(), ref.numpy(), atol=2e-4, rtol=1e-4)
            np.testing.assert_allclose(w(x, residual=res, relu=True).numpy(), F.relu(ref + res).numpy(),
                                       atol=2e-4, rtol=1e-4)


@pytest.mark.parametrize("threads", [2, 3, 64])
def test_the_tiles_split_between_threads(threads):
    conv = _conv(16, 32, seed=5)
    w = wg.WinogradConv3x3(conv)
    x = torch.randn(7, 16, 19, 19)
    res = torch.randn(7, 32, 19, 19)
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            got = w(x, residual=res, relu=True)
    finally:
        torch.set_num_threads(old)
    with torch.no_grad():
        np.testing.assert_allclose(got.numpy(), F.relu(conv(x) + res).numpy(), atol=2e-4, rtol=1e-4)


def test_a_rectangular_board_and_a_batch_of_one():
    conv = _conv(16, 16, seed=3)
    w = wg.WinogradConv3x3(conv)
    x = torch.randn(1, 16, 7, 11)
    with torch.no_grad():
        np.testing.assert_allclose(w(x).numpy(), conv(x).numpy(), atol=2e-4, rtol=1e-4)


def test_bad_inputs_are_refused():
    w = wg.WinogradConv3x3(_conv(16, 16, seed=4))
    with pytest.raises(ValueError, match="expected"):
        w(torch.randn(2, 8, 9, 9))
    with pytest.raises(ValueError, match="residual"):
        w(torch.randn(2, 16, 9, 9), residual=torch.randn(2, 16, 7, 7))
    with pytest.raises(ValueError, match="3x3"):
        wg.WinogradConv3x3(nn.Conv2d(4, 4, 1))
    with pytest.raises(ValueError, match="3x3"):
        wg.WinogradConv3x3(nn.Conv2d(4, 4, 3, padding=1, stride=2))
    # The C functions check their arguments too.
    from engine._core import ffi, lib
    buf = torch.zeros(64)
    p = wg._ptr(buf, "const float *")
    assert lib.wino_conv3x3(p, 0, 9, 9, 8, 16, 3, p, p, p, ffi.NULL, ffi.NULL, 0, 1, wg._ptr(buf)) == -1
    assert lib.wino_conv3x3(p, 1, 9, 9, 8, 16, 3, p, p, p, ffi.NULL, ffi.NULL, 0, 1, ffi.cast("float *", p)) == -1
    assert lib.wino_conv3x3(p, 1, 9, 9, 8, 16, 7, p, p, p, ffi.NULL, ffi.NULL, 0, 1, wg._ptr(buf)) == -1


def _net_with_batch_norm_statistics(seed: int) -> GoNet:
    torch.manual_seed(seed)
    net = GoNet(NetConfig(blocks=3, filters=32, gpool_every=2)).eval()
    for mod in net.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
            mod.weight.data.uniform_(0.5, 1.5)
    return net


@pytest.mark.parametrize("size", [9, 19])
def test_a_whole_net_matches_its_fused_copy(size):
    net = _net_with_batch_norm_statistics(1)
    fused = net.fused()
    w = wg.winograd_model(fused)
    # Every 3x3 convolution went over: the stem, the two plain blocks (fused whole) and the
    # global-pooling block's three one by one.
    assert wg.count_winograd(w) == 1 + 2 * 2 + 3
    assert sum(isinstance(m, wg.WinogradResidual) for m in w.modules()) == 2
    assert not any(isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3) for m in w.modules())
    x = (torch.rand(5, net.in_planes, size, size) < 0.3).float()
    with torch.no_grad():
        ref, got = fused(x), w(x)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-4, rtol=1e-4)


def test_leela_zero_nets_run_by_winograd():
    from engine.nets import lzweights

    net = lzweights.build_model(lzweights.random_weights(2, 16, seed=3)).eval()
    w = wg.winograd_model(net)
    assert sum(isinstance(m, wg.WinogradResidual) for m in w.modules()) == 2
    x = (torch.rand(3, 18, 19, 19, generator=torch.Generator().manual_seed(7)) < 0.3).float()
    with torch.no_grad():
        ref, got = net(x), w(x)
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), atol=1e-4, rtol=1e-4)
    # the value passes through two fully connected layers and tanh: rounding of a different
    # summation order (the sanitized build has no FMA) reaches 1e-5 there
    np.testing.assert_allclose(got[1].numpy(), ref[1].numpy(), atol=1e-4)


def test_threads_share_one_model():
    net = _net_with_batch_norm_statistics(2)
    fused = net.fused()
    w = wg.winograd_model(fused)
    xs = [(torch.rand(4 + i, net.in_planes, 9 if i % 2 else 19, 9 if i % 2 else 19) < 0.3).float()
          for i in range(4)]
    with torch.no_grad():
        want = [fused(x).policy for x in xs]
    errors = []

    def work(i):
        with torch.no_grad():
            for _ in range(5):
                got = w(xs[i]).policy
                if not torch.allclose(got, want[i], atol=1e-4, rtol=1e-4):
                    errors.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_evaluator_and_the_precision_choice_offer_it():
    assert Precision.parse("fp32-wino") == Precision("fp32", True, True)
    assert Precision("fp32", True, True).label == "fp32-wino"
    with pytest.raises(ValueError):
        Precision.parse("bf16-wino")
    assert Precision("fp32", True, True) in candidates("cpu")
    net = _net_with_batch_norm_statistics(3)
    # a CPU test (the Winograd kernel is the CPU's), also on a machine with CUDA
    plain = TorchEvaluator(net, device="cpu", symmetries="none", cache_size=0)
    wino = TorchEvaluator(net, device="cpu", symmetries="none", cache_size=0, winograd=True)
    assert wg.count_winograd(wino.model) > 0 and wg.count_winograd(plain.model) == 0
    x = (np.random.default_rng(0).random((6, net.in_planes, 9, 9)) < 0.3).astype(np.float32)
    a, b = plain.evaluate(x), wino.evaluate(x)
    np.testing.assert_allclose(b.policy, a.policy, atol=1e-4)
    np.testing.assert_allclose(b.value, a.value, atol=1e-5)
    with pytest.raises(ValueError, match="fp32"):
        TorchEvaluator(net, device="cpu", winograd=True, dtype="bf16")


def test_kata_nets_run_their_3x3_convolutions_by_winograd():
    from engine.nets import kataweights as kw
    from engine.nets.katanet import KataNet

    net = KataNet(kw.random_model(("ordinary", "gpool", "nested", "ordinary"), channels=16, mid=8,
                                  version=15, seed=5)).eval()
    w = wg.winograd_model(net)
    kata_convs = sum(isinstance(m, wg.WinogradKataConv) for m in w.modules())
    assert kata_convs >= 6                 # two per ordinary block, in the nested one too
    x = torch.from_numpy(np.random.default_rng(1).random((3, net.in_planes, 9, 9)).round().astype(np.float32))
    with torch.no_grad():
        ref, got = net(x), w(x)
    for a, b in zip(ref, got):
        if a is not None:
            np.testing.assert_allclose(b.numpy(), a.numpy(), atol=2e-4, rtol=1e-4)
