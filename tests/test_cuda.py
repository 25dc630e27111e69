"""CUDA: the evaluator, self-play and training on a GPU.  Every test here needs a CUDA device and
is skipped with the reason where there is none (the CPU is tested everywhere else)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engine import flops
from engine.core import Rules
from engine.evaluator import TorchEvaluator
from engine.network import GoNet, NetConfig
from engine.precision import TOLERANCE, output_diff
from train.pool import Agent, GamePool, GameSpec, PlaySettings
from train.trainer import Trainer, TrainSettings

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device (torch.cuda.is_available() is False)")


def _net(seed: int = 0) -> GoNet:
    torch.manual_seed(seed)
    return GoNet(NetConfig(blocks=2, filters=32)).eval()


def _planes(net: GoNet, n: int, size: int = 9) -> np.ndarray:
    return (np.random.default_rng(1).random((n, net.config.in_planes, size, size)) < 0.3).astype(np.float32)


def test_fp32_on_cuda_matches_the_cpu():
    net = _net()
    x = _planes(net, 16)
    cpu = TorchEvaluator(net, device="cpu", dtype="fp32", symmetries="none", cache_size=0).evaluate(x)
    gpu = TorchEvaluator(net, device="cuda", dtype="fp32", symmetries="none", cache_size=0).evaluate(x)
    np.testing.assert_allclose(gpu.value, cpu.value, atol=1e-3)
    np.testing.assert_allclose(gpu.policy, cpu.policy, atol=1e-3)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_half_precision_on_cuda_stays_within_the_precision_tolerance(dtype):
    net = _net()
    x = _planes(net, 64)
    ref = TorchEvaluator(net, device="cpu", dtype="fp32", symmetries="none", cache_size=0).evaluate(x)
    half = TorchEvaluator(net, device="cuda", dtype=dtype, symmetries="none", cache_size=0).evaluate(x)
    diffs = output_diff(ref, half)
    for key, limit in TOLERANCE.items():
        if key in diffs:
            assert diffs[key] <= limit, (dtype, key, diffs)


def test_batch_size_does_not_change_a_position_beyond_rounding():
    """On CUDA a position's outputs may differ with the batch it rides in (other kernels), but
    only by rounding: batch 1 against batch 7."""
    net = _net()
    x = _planes(net, 7)
    ev = TorchEvaluator(net, device="cuda", dtype="fp32", symmetries="none", cache_size=0)
    whole = ev.evaluate(x)
    one = ev.evaluate(x[:1])
    np.testing.assert_allclose(one.value, whole.value[:1], atol=1e-3)


def test_self_play_games_on_cuda_finish_and_count_their_flops():
    net = _net()
    ev = TorchEvaluator(net, device="cuda", symmetries="random", seed=3)
    agent = Agent("cuda-net", ev)
    settings = PlaySettings(visits=16, temperature_moves=4)
    rules = Rules.preset("chinese", 7.0)
    specs = iter([GameSpec(7, rules, agent, agent, settings, seed=i) for i in range(8)])
    pool = GamePool(8, lambda slot: next(specs, None), batch=128, max_leaves_per_search=8)
    before = flops.COUNTER.total
    finished = list(pool.run())
    assert len(finished) == 8
    assert all(len(fg.record().moves) > 0 for fg in finished)
    assert flops.COUNTER.total - before >= ev.positions_evaluated * flops.forward_flops(net, 7)


def test_a_training_step_on_cuda_learns():
    torch.manual_seed(0)
    net = GoNet(NetConfig(blocks=1, filters=16))
    t = Trainer(net, TrainSettings(lr=0.05, lr_warmup=0), device="cuda")
    size, n = 7, 64
    rng = np.random.default_rng(0)
    batch = {
        "planes": (rng.random((n, net.config.in_planes, size, size)) < 0.3).astype(np.float32),
        "policy": np.full((n, size * size + 1), 1.0 / (size * size + 1), np.float32),
        "value": rng.choice([-1.0, 1.0], n).astype(np.float32),
        "ownership": rng.choice([-1.0, 1.0], (n, size * size)).astype(np.float32),
        "score": rng.normal(0, 5, n).astype(np.float32),
        "aux_weight": np.ones(n, np.float32),
    }
    first = t.train_step(batch)
    for _ in range(20):
        last = t.train_step(batch)
    assert next(t.model.parameters()).is_cuda
    assert last["loss"] < first["loss"]
