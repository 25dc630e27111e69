"""CUDA: the evaluator, self-play and training on a GPU.  Every test here needs a CUDA device and
is skipped with the reason where there is none (the CPU is tested everywhere else)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.nets import flops
from engine.core import Rules
from engine.nets.evaluator import TorchEvaluator
from engine.nets.network import GoNet, NetConfig
from engine.nets.precision import TOLERANCE, output_diff
from train.config import SELFPLAY_SEARCH
from train.games.pool import Agent, GamePool, GameSpec, PlaySettings
from train.learn.step import Trainer, TrainSettings

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
    agent = Agent("cuda-net", ev, SELFPLAY_SEARCH)
    settings = PlaySettings(visits=16, temperature_moves=4)
    rules = Rules.preset("chinese", 7.0)
    specs = iter([GameSpec(7, rules, agent, agent, settings, seed=i) for i in range(8)])
    pool = GamePool(8, lambda slot: next(specs, None), batch=128, max_leaves_per_search=8)
    before = flops.COUNTER.total
    finished = list(pool.run())
    assert len(finished) == 8
    assert all(len(fg.record().moves) > 0 for fg in finished)
    assert flops.COUNTER.total - before >= ev.positions_evaluated * flops.forward_flops(net, 7)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cuda_graphs_give_the_eager_outputs_for_every_batch(dtype):
    """Replayed graphs (padded batches: 5 rides in 16, 17 in 32) against the eager forward."""
    net = _net()
    eager = TorchEvaluator(net, device="cuda", dtype=dtype, symmetries="none", cache_size=0)
    graphs = TorchEvaluator(net, device="cuda", dtype=dtype, symmetries="none", cache_size=0, cuda_graphs=True)
    for b in (5, 16, 17, 5):
        x = _planes(net, b)
        want, got = eager.evaluate(x), graphs.evaluate(x)
        np.testing.assert_allclose(got.value, want.value, atol=1e-2 if dtype == "bf16" else 1e-4)
        np.testing.assert_allclose(got.policy, want.policy, atol=5e-2 if dtype == "bf16" else 1e-3)
    assert graphs._graphs.captures == 2                 # buckets 16 and 32, each captured once


def test_two_lanes_with_cuda_graphs_play_self_play_games():
    net = _net()
    ev = TorchEvaluator(net, device="cuda", symmetries="random", seed=3, cuda_graphs=True)
    agent = Agent("cuda-net", ev, SELFPLAY_SEARCH)
    settings = PlaySettings(visits=16, temperature_moves=4)
    rules = Rules.preset("chinese", 7.0)
    specs = iter([GameSpec(7, rules, agent, agent, settings, seed=i) for i in range(8)])
    pool = GamePool(8, lambda slot: next(specs, None), batch=64, max_leaves_per_search=8, lanes=2)
    finished = list(pool.run())
    assert len(finished) == 8 and pool.stats.leaves == ev.positions_evaluated + ev.cache_hits


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


# -- Leela Zero's and KataGo's nets on CUDA against the CPU -------------------------------------

# fp32 on CUDA runs its convolutions in TF32 (torch's default for cuDNN): close to the CPU, not
# equal.  bf16 and fp16 must stay within the tolerance the precision choice applies
# (engine.nets.precision.TOLERANCE: policy probabilities and values).
FP32_TOLERANCE = {"policy": 5e-3, "value": 5e-3, "ownership": 1e-2, "score": 0.1}
HALF_AUX_TOLERANCE = {"ownership": 0.1, "score": 1.0}


def _lz_net():
    from engine.nets import lzweights
    return lzweights.build_model(lzweights.random_weights(2, 16, seed=11))          # 19x19 only


def _kata_net():
    from engine.nets import kataweights as kw
    from engine.nets.katanet import KataNet
    return KataNet(kw.random_model(("ordinary", "gpool", "nested", "attention", "ffn"), version=15,
                                   seed=5)).eval()


def _compare_on_cuda(net, size: int, dtype: str) -> None:
    from engine.nets.evaluator import _model_io
    from engine.nets.precision import sample_planes

    feature_set, planes = _model_io(net)
    x = sample_planes(feature_set, planes, size, 24)          # legal positions from our C core
    ref = TorchEvaluator(net, device="cpu", dtype="fp32", symmetries="none", cache_size=0).evaluate(x)
    got = TorchEvaluator(net, device="cuda", dtype=dtype, symmetries="none", cache_size=0).evaluate(x)
    diffs = output_diff(ref, got)
    limits = FP32_TOLERANCE if dtype == "fp32" else {**TOLERANCE, **HALF_AUX_TOLERANCE}
    for key in ("policy", "value"):
        assert diffs[key] <= limits[key], (dtype, key, diffs)
    if ref.ownership is not None:
        assert float(np.abs(got.ownership - ref.ownership).max()) <= limits["ownership"], dtype
        assert float(np.abs(got.score - ref.score).max()) <= limits["score"], dtype


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_leela_zero_net_on_cuda_matches_the_cpu(dtype):
    if dtype == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    _compare_on_cuda(_lz_net(), 19, dtype)


@pytest.mark.parametrize("size", [9, 19])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_katago_net_on_cuda_matches_the_cpu(dtype, size):
    if dtype == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    _compare_on_cuda(_kata_net(), size, dtype)


# -- GTP transcripts on CUDA --------------------------------------------------------------------

def _golden():
    from tests.gtp import test_gtp_golden
    return test_gtp_golden


def _run_transcript(case: str, extra: list) -> tuple:
    """tests/gtp/CASE.gtp through ``python -m engine --device cuda`` with the shipped 9x9 net in
    place of --weights uniform/random: (exit status, stdout, stderr)."""
    import os
    import subprocess
    import sys

    g = _golden()
    args = g.engine_args(g.GOLDEN / f"{case}.gtp")
    i = args.index("--weights")
    args[i + 1] = str(g.ROOT / "weights" / "9x9.pt")
    env = dict(os.environ, PYTHONPATH=str(g.ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "engine", "--quiet", *args, "--device", "cuda", *extra],
                       input=(g.GOLDEN / f"{case}.gtp").read_bytes(), capture_output=True, cwd=g.GOLDEN,
                       env=env, timeout=300)
    return r.returncode, r.stdout.decode(), r.stderr.decode(errors="replace")


def test_golden_sgf_transcript_on_cuda_is_byte_exact():
    """sgf.gtp (loadsgf, showboard, printsgf: no search, so no floating-point detail reaches the
    output) with a real net on CUDA gives exactly tests/gtp/sgf.out.  Its command line fixes
    --threads 1 but not --batch, so the engine measures its GPU batch first (engine.nets.gpu_settings)."""
    g = _golden()
    rc, out, err = _run_transcript("sgf", [])
    assert rc == 0, err[-2000:]
    assert g.mask_volatile(out, g.volatile_ids(g.GOLDEN / "sgf.gtp")) == (g.GOLDEN / "sgf.out").read_text()
    assert "gpu settings: 1 search thread, batch" in err, err[-2000:]


def test_golden_genmove_transcript_on_cuda_has_the_golden_structure():
    """genmove.gtp with the shipped 9x9 net on CUDA, compared by structure (the moves depend on
    the net and on CUDA's rounding): the same replies with the same ids and success or failure,
    every genmove answered with a vertex, the boards with the same number of stones of each
    colour and the same captions, the SGF with the same move colours."""
    import re

    g = _golden()
    rc, out, err = _run_transcript("genmove", ["--resign", "0"])
    assert rc == 0, err[-2000:]
    got = g.mask_volatile(out, g.volatile_ids(g.GOLDEN / "genmove.gtp"))[:-2].split("\n\n")
    want = (g.GOLDEN / "genmove.out").read_text()[:-2].split("\n\n")
    assert len(got) == len(want), out
    vertex = re.compile(r"([A-HJ-T](1[0-9]|[1-9])|pass)")
    for a, b in zip(got, want):
        head_a, head_b = a.split(" ", 1)[0], b.split(" ", 1)[0]
        assert head_a == head_b, (a, b)
        body_a, body_b = a[len(head_a) + 1:], b[len(head_b) + 1:]
        if "(;" in body_b:                                        # printsgf
            colours = lambda s: re.findall(r";([BW])\[", s)      # noqa: E731
            assert colours(body_a) == colours(body_b), (body_a, body_b)
        elif "\n" in body_b:                                      # showboard
            for stone in "XO":
                assert body_a.count(stone) == body_b.count(stone), (body_a, body_b)
            assert body_a.splitlines()[-2:] == body_b.splitlines()[-2:]
        elif vertex.fullmatch(body_b):                            # a genmove
            assert vertex.fullmatch(body_a), (a, b)
        else:
            assert body_a == body_b, (a, b)


def test_gpu_settings_measure_the_engine_search_on_cuda():
    from engine.nets import gpu_settings as gs

    s = gs.measure(_net(), "cuda", 9, [(2, 16), (4, 32)], evaluator_kwargs={"dtype": "fp32"},
                   seconds=0.5, rounds=1)
    assert set(s.rates) == {"2x16", "4x32"} and all(r > 0 for r in s.rates.values())


# -- a tiny training run on CUDA ----------------------------------------------------------------

@pytest.mark.slow          # a training run
def test_a_tiny_train_loop_runs_on_cuda(tmp_path):
    """``python -m train.loop --device cuda`` with tests/helpers/training.py's tiny settings:
    self-play and training both on the GPU, to the game budget, with checkpoints."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from train.rundir import RunDir

    from tests.helpers.training import REPO, TINY

    root = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "train.loop", "--run-dir", str(root), "--budget", "6g",
                        "--device", "cuda", *TINY], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    run = RunDir(root)
    assert len(run.list_games()) == 6
    assert json.loads(run.state_path.read_text())["last_exit"] == "game budget reached"
    assert len(run.list_models()) >= 2 and run.read_config()["device"] == "cuda"
    logs = {p.name: p.read_text() for p in Path(root, "logs").glob("*.log")}
    assert "device cuda" in logs["selfplay-w00.log"] and "device cuda" in logs["trainer.log"], logs
