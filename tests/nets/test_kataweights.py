"""KataGo model files: the reader/writer round trip, errors that name the offset and layer, the
torch model's internal consistency, and loading through load_any / the evaluator.

The identity test against KataGo itself is tests/nets/test_kata_identity.py."""

import gzip

import numpy as np
import pytest
import torch

from engine.nets import kataweights as kw
from engine.nets import weights
from engine.nets.evaluator import TorchEvaluator
from engine.nets.katanet import PLANES, KataNet

ALL_KINDS = ("ordinary", "gpool", "nested", "attention", "attention_learned", "ffn")


def _arrays(obj, prefix=""):
    """Every numpy array inside a KataModel (dataclasses and lists), by path."""
    out = {}
    if isinstance(obj, np.ndarray):
        out[prefix] = obj
    elif isinstance(obj, list):
        for i, o in enumerate(obj):
            out.update(_arrays(o, f"{prefix}[{i}]"))
    elif hasattr(obj, "__dataclass_fields__"):
        for f in obj.__dataclass_fields__:
            out.update(_arrays(getattr(obj, f), f"{prefix}.{f}"))
    return out


def _planes(size, seed, komi=7.0):
    """Plausible kata7 inputs: on-board plane, random stones and liberties, komi, parity."""
    rng = np.random.default_rng(seed)
    x = np.zeros((2, PLANES, size, size), np.float32)
    x[:, 0] = 1
    stones = rng.choice(3, size=(2, size, size), p=[0.6, 0.2, 0.2])
    x[:, 1] = stones == 1
    x[:, 2] = stones == 2
    for p in range(3, 22):
        x[:, p] = (rng.random((2, size, size)) < 0.05) * (stones > 0 if p < 6 else 1)
    x[:, 22 + 5] = -komi / 20
    x[1, 22 + 5] = komi / 20
    x[:, 22 + 6] = 1.0        # positional superko: no-result suppressed
    x[:, 22 + 7] = 0.5
    x[:, 22 + 18] = 0.5
    return torch.from_numpy(x)


@pytest.mark.parametrize("version", [8, 10, 11, 14, 15, 16, 17])
def test_round_trip_every_block_kind(tmp_path, version):
    kinds = ALL_KINDS if version >= 15 else ("ordinary", "gpool", "nested")
    model = kw.random_model(kinds, channels=12, version=version, seed=version)
    assert set(model.block_kinds()) >= {"ordinary_block", "gpool_block", "nested_bottleneck_block"}
    for name, binary in [("m.bin.gz", True), ("m.bin", True), ("m.txt.gz", False), ("m.txt", False)]:
        path = tmp_path / name
        kw.write_model(path, model)
        back = kw.read_model(path)
        assert back.version == version and back.name == model.name
        assert back.block_kinds() == model.block_kinds()
        a, b = _arrays(model), _arrays(back)
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        assert kw.model_bytes(back, binary) == kw.model_bytes(model, binary)


def test_transformer_kinds_are_read(tmp_path):
    model = kw.random_model(ALL_KINDS, version=15)
    kinds = model.block_kinds()
    assert kinds.count("transformer_attention_block") == 2
    assert "transformer_ffn_block" in kinds and "gpool_block" in kinds
    path = tmp_path / "t.bin.gz"
    kw.write_model(path, model)
    back = kw.read_model(path)
    att = [b for b in back.trunk.blocks if isinstance(b, kw.AttentionBlock)]
    assert att[0].rope and not att[0].learnable_rope and att[0].rope_theta == 100.0
    assert att[1].learnable_rope and att[1].rope_freqs.shape == (1, 2, 2)
    assert back.trunk.norm_kind == 1 and back.trunk.tip_rms is not None


def _corrupt(tmp_path, data, name="bad.bin"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_truncated_file_names_offset_and_layer(tmp_path):
    data = kw.model_bytes(kw.random_model(ALL_KINDS, version=15))
    cut = data.index(b"blocks.3") + 200           # inside the attention block's weights
    with pytest.raises(kw.KataWeightsError) as exc:
        kw.read_model(_corrupt(tmp_path, data[:cut]))
    msg = str(exc.value)
    assert "offset" in msg and "blocks.3" in msg and "truncated" in msg


def test_unknown_block_kind_and_version(tmp_path):
    data = kw.model_bytes(kw.random_model(("ordinary", "gpool"), version=15))
    bad = data.replace(b"gpool_block\n", b"fancy_block\n", 1)
    with pytest.raises(kw.KataWeightsError, match=r"offset \d+: trunk: unknown block kind 'fancy_block'"):
        kw.read_model(_corrupt(tmp_path, bad))
    bad = data.replace(b"\n15\n", b"\n99\n", 1)
    with pytest.raises(kw.KataWeightsError, match="model version 99 is not supported"):
        kw.read_model(_corrupt(tmp_path, bad))
    with pytest.raises(kw.KataWeightsError, match="corrupt gzip"):
        kw.read_model(_corrupt(tmp_path, gzip.compress(data)[:100], "x.bin.gz"))


def test_nan_weight_and_shape_mismatch(tmp_path):
    model = kw.random_model(("ordinary",), version=15)
    model.trunk.blocks[0].conv1.weight[0, 0, 0, 0] = np.nan
    with pytest.raises(kw.KataWeightsError, match=r"blocks.0.conv1: conv weights: value \d+ is NaN"):
        kw.read_model(_corrupt(tmp_path, kw.model_bytes(model)))
    model = kw.random_model(("ordinary",), version=15)
    model.trunk.blocks[0].mid_bn.mean = np.zeros(3, np.float32)
    model.trunk.blocks[0].mid_bn.var = np.ones(3, np.float32)
    model.trunk.blocks[0].mid_bn.scale = None
    model.trunk.blocks[0].mid_bn.bias = None
    with pytest.raises(kw.KataWeightsError, match="blocks.0: channel counts"):
        kw.read_model(_corrupt(tmp_path, kw.model_bytes(model)))


@pytest.mark.parametrize("kinds", [ALL_KINDS, ("ordinary", "gpool")])
def test_padding_matches_exact_board(kinds):
    """KataGo evaluates small boards inside a larger masked tensor; the model gives the same
    outputs either way (masked batch norms, pooling, attention)."""
    net = KataNet(kw.random_model(kinds, version=15, seed=3))
    x = _planes(7, 1)
    big = torch.zeros(2, PLANES, 10, 10)
    big[:, :, :7, :7] = x
    big[:, 22:] = x[:, 22:, :1, :1]               # globals are read at (0, 0)
    small, padded = net.forward_raw(x), net.forward_raw(big)
    pol = padded["policy"].reshape(2, -1, 10, 10)[:, :, :7, :7].reshape(2, -1, 49)
    torch.testing.assert_close(pol, small["policy"], atol=2e-5, rtol=1e-4)
    for key in ("policy_pass", "value", "score"):
        torch.testing.assert_close(padded[key], small[key], atol=2e-5, rtol=1e-4)


def test_outputs_and_postprocessing():
    net = KataNet(kw.random_model(ALL_KINDS, version=15, seed=5))
    x = _planes(9, 2)
    out = net(x)
    assert out.policy.shape == (2, 82) and out.ownership.shape == (2, 81)
    raw = net.forward_raw(x)
    post = net.postprocess_raw(raw)
    assert torch.all(post["no_result"] == 0)      # positional superko + area: no "no result"
    torch.testing.assert_close(out.value, (post["win"] - post["loss"]).float())
    torch.testing.assert_close(out.score, (raw["score"][:, 2] * 20.0).float())
    x[:, 22 + 6] = 0                              # simple ko: no-result allowed
    post = net.postprocess_raw(net.forward_raw(x))
    assert torch.all(post["no_result"] > 0)


def test_load_any_and_evaluator(tmp_path):
    path = tmp_path / "net.bin.gz"
    kw.write_model(path, kw.random_model(ALL_KINDS, version=15, seed=9))
    model, meta = weights.load_any(path)
    assert isinstance(model, KataNet)
    assert meta["feature_set"] == "kata7" and meta["version"] == 15 and 19 in meta["board_sizes"]
    ev = TorchEvaluator(model, device="cpu", symmetries="none", cache_size=0)
    assert ev.feature_set == "kata7" and ev.planes == PLANES
    res = ev.evaluate(_planes(9, 3).numpy())
    assert res.policy.shape == (2, 82) and res.ownership.shape == (2, 81) and res.score.shape == (2,)
    assert np.all(np.abs(res.value) <= 1)
    bad = tmp_path / "bad.bin.gz"
    bad.write_bytes(gzip.compress(kw.model_bytes(kw.random_model(("ordinary",)))[:3000]))
    with pytest.raises(weights.WeightsError, match="offset"):
        weights.load_any(bad)


def test_prefer_pass_alive_suicide_selects_feature_set(tmp_path):
    model = kw.random_model(("ordinary",), version=15, prefer_pass_alive_suicide=True)
    path = tmp_path / "s.bin"
    kw.write_model(path, model)
    assert kw.read_model(path).meta()["feature_set"] == "kata7s"


def test_final_score_uses_kata_ownership(tmp_path):
    """With a KataGo net, dead stones are judged by the net's ownership alone."""
    from engine import scoring
    from engine.core import Game, Rules
    path = tmp_path / "net.bin.gz"
    kw.write_model(path, kw.random_model(ALL_KINDS, version=15, seed=2))
    model, _ = weights.load_any(path)
    ev = TorchEvaluator(model, device="cpu", symmetries="none", cache_size=0)
    game = Game(7, Rules.preset("chinese", komi=7))
    for p in (24, 16, 10, 30):
        game.play(p)
    verdict = scoring.judge(game, ev)
    np.testing.assert_allclose(verdict.ownership, scoring.net_ownership(game, ev), atol=1e-6)
