"""Network, symmetries, weights files and evaluators. CPU only, fixed seeds, small nets."""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.nets import symmetry
from engine.nets.evaluator import (
    Evaluation,
    RandomEvaluator,
    TorchEvaluator,
    UniformEvaluator,
)
from engine.nets.network import GoNet, NetConfig
from engine.nets.weights import WeightsError, load, load_any, main, new_model, save

PLANES = 7  # any plane count works; tests do not depend on the C feature encoder
SIZES = (2, 5, 9, 19)


@pytest.fixture(scope="module")
def net() -> GoNet:
    return new_model(NetConfig(blocks=3, filters=16, in_planes=PLANES, gpool_every=2), seed=1)


def random_planes(batch: int, size: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((batch, PLANES, size, size)) < 0.35).astype(np.float32)


# -- network ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_one_net_every_board_size(net: GoNet, size: int) -> None:
    with torch.inference_mode():
        out = net(torch.from_numpy(random_planes(3, size)))
    assert out.policy.shape == (3, size * size + 1)
    assert out.value.shape == (3,)
    assert out.ownership.shape == (3, size * size)
    assert out.score.shape == (3,)
    assert all(t.dtype == torch.float32 and bool(torch.isfinite(t).all()) for t in out)
    assert bool((out.value.abs() <= 1).all()) and bool((out.ownership.abs() <= 1).all())


def test_forward_rejects_wrong_planes(net: GoNet) -> None:
    with pytest.raises(ValueError, match="expected input"):
        net(torch.zeros(1, PLANES + 1, 9, 9))


def test_fused_copy_matches_and_bf16_channels_last_runs(net: GoNet) -> None:
    x = torch.from_numpy(random_planes(4, 9))
    with torch.inference_mode():
        ref = net(x)
        fused = net.fused()(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            low = net(x.contiguous(memory_format=torch.channels_last))
    for a, b in zip(ref, fused):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    for a, b in zip(ref, low):
        assert b.dtype == torch.float32
        torch.testing.assert_close(a, b, atol=0.1, rtol=0.1)


def test_config_from_dict_and_known_feature_sets() -> None:
    assert GoNet(NetConfig(blocks=0, filters=4, feature_set="lz18")).in_planes == 18
    with pytest.raises(ValueError, match="unknown network config keys"):
        NetConfig.from_dict({"blocks": 1, "colour": "blue"})
    with pytest.raises(ValueError):
        NetConfig(blocks=-1)
    config = NetConfig(blocks=2, filters=8, in_planes=3).resolved()
    assert NetConfig.from_dict(config.to_dict()) == config


# -- symmetries ---------------------------------------------------------------------------

# (row, col) -> image of (1, 0) on a 4x4 board, per symmetry index, as tabled in the docstring.
SYMMETRY_TABLE = {0: (1, 0), 1: (3, 1), 2: (2, 3), 3: (0, 2), 4: (0, 1), 5: (2, 0), 6: (3, 2), 7: (1, 3)}


def test_symmetry_table_matches_docstring() -> None:
    for k, (r, c) in SYMMETRY_TABLE.items():
        assert symmetry.transform_point(1 * 4 + 0, k, 4) == r * 4 + c, k


@pytest.mark.parametrize("size", (2, 5, 19))
@pytest.mark.parametrize("k", range(8))
def test_plane_point_and_policy_mappings_agree(size: int, k: int) -> None:
    rng = np.random.default_rng(k)
    for point in rng.choice(size * size, size=min(5, size * size), replace=False):
        image = symmetry.transform_point(int(point), k, size)
        plane = np.zeros((size, size), np.float32)
        plane.flat[point] = 1
        assert np.flatnonzero(symmetry.apply_symmetry(plane, k)).tolist() == [image]
        policy = np.zeros(size * size + 1, np.float32)
        policy[point] = 1
        assert np.flatnonzero(symmetry.apply_policy_symmetry(policy, k)).tolist() == [image]
        assert np.flatnonzero(symmetry.apply_policy_symmetry(policy[:-1], k, size)).tolist() == [image]
    pass_only = np.zeros(size * size + 1, np.float32)
    pass_only[-1] = 1
    assert np.array_equal(symmetry.apply_policy_symmetry(pass_only, k), pass_only)
    assert symmetry.transform_point(size * size, k, size) == size * size


@pytest.mark.parametrize("k", range(8))
def test_symmetry_inverse_is_identity_numpy_and_torch(k: int) -> None:
    x = random_planes(2, 5, seed=k)
    t = torch.from_numpy(x)
    y = symmetry.apply_symmetry(x, k)
    assert np.array_equal(symmetry.inverse_apply_symmetry(y, k), x)
    assert np.array_equal(symmetry.apply_symmetry(t, k).numpy(), y)
    assert torch.equal(symmetry.inverse_apply_symmetry(symmetry.apply_symmetry(t, k), k), t)
    p = np.random.default_rng(k).standard_normal((3, 26)).astype(np.float32)
    q = symmetry.apply_policy_symmetry(p, k)
    assert np.array_equal(symmetry.inverse_policy_symmetry(q, k), p)
    assert np.array_equal(symmetry.apply_policy_symmetry(torch.from_numpy(p), k).numpy(), q)
    assert symmetry.compose(k, symmetry.INVERSE[k]) == symmetry.IDENTITY
    # flat layout agrees with plane layout
    assert np.array_equal(symmetry.apply_policy_symmetry(x.reshape(2, PLANES, 25), k), y.reshape(2, PLANES, 25))


def test_per_item_symmetries() -> None:
    x = random_planes(8, 5)
    ks = np.arange(8)[::-1]
    out = symmetry.apply_symmetries(x, ks)
    for i, k in enumerate(ks):
        assert np.array_equal(out[i], symmetry.apply_symmetry(x[i], int(k)))
    assert torch.equal(symmetry.apply_symmetries(torch.from_numpy(x), ks), torch.from_numpy(out))
    with pytest.raises(ValueError):
        symmetry.apply_symmetries(x, [0, 1])


# -- evaluators ---------------------------------------------------------------------------


def test_uniform_evaluator_shapes() -> None:
    ev = UniformEvaluator("rich", PLANES)
    out = ev.evaluate(random_planes(3, 7))
    assert isinstance(out, Evaluation)
    assert out.policy.shape == (3, 50) and not out.policy.any()
    assert out.value.shape == (3,) and out.ownership.shape == (3, 49) and out.score.shape == (3,)
    assert out.policy.dtype == np.float32
    with pytest.raises(ValueError):
        ev.evaluate(np.zeros((1, PLANES + 1, 7, 7), np.float32))


def test_random_evaluator_is_deterministic_per_position() -> None:
    x = random_planes(4, 9)
    a = RandomEvaluator(seed=3, planes=PLANES).evaluate(x)
    b = RandomEvaluator(seed=3, planes=PLANES).evaluate(x[::-1])
    c = RandomEvaluator(seed=4, planes=PLANES).evaluate(x)
    assert np.array_equal(a.policy, b.policy[::-1]) and np.array_equal(a.value, b.value[::-1])
    assert not np.array_equal(a.policy, c.policy)
    assert a.policy.shape == (4, 82) and np.all(np.abs(a.value) <= 1)


def test_all_symmetries_output_is_invariant(net: GoNet) -> None:
    ev = TorchEvaluator(net, device="cpu", symmetries="all", cache_size=0)
    x = random_planes(2, 7, seed=5)
    base = ev.evaluate(x)
    for k in range(8):
        out = ev.evaluate(symmetry.apply_symmetry(x, k))
        np.testing.assert_allclose(out.policy, symmetry.apply_policy_symmetry(base.policy, k), atol=1e-4)
        np.testing.assert_allclose(out.ownership, symmetry.apply_policy_symmetry(base.ownership, k), atol=1e-4)
        np.testing.assert_allclose(out.value, base.value, atol=1e-5)
        np.testing.assert_allclose(out.score, base.score, atol=1e-3)
    # log of the mean probabilities: a normalised distribution
    np.testing.assert_allclose(np.exp(base.policy).sum(axis=1), 1.0, atol=1e-5)


def test_random_symmetry_undoes_its_transform(net: GoNet) -> None:
    x = random_planes(6, 5, seed=2)
    plain = TorchEvaluator(net, device="cpu", symmetries="none", cache_size=0)
    # per symmetry k: the net's view of the transformed board, mapped back to the original one
    candidates = []
    for k in range(8):
        out = plain.evaluate(symmetry.apply_symmetry(x, k))
        candidates.append(symmetry.inverse_policy_symmetry(out.policy, k))
    rnd = TorchEvaluator(net, device="cpu", symmetries="random", seed=7, cache_size=0).evaluate(x)
    for i in range(6):
        assert any(np.allclose(rnd.policy[i], c[i], atol=1e-4) for c in candidates), i
    with torch.inference_mode():
        ref = net(torch.from_numpy(x))
    np.testing.assert_allclose(plain.evaluate(x).policy, ref.policy.numpy(), atol=1e-4)


def test_cache_serves_identical_results_and_counts(net: GoNet) -> None:
    ev = TorchEvaluator(net, device="cpu", symmetries="random", seed=1, cache_size=3)
    x = random_planes(3, 9, seed=9)
    keys = np.array([11, 22, 33], np.uint64)
    first = ev.evaluate(x, keys)
    assert (ev.cache_hits, ev.cache_misses, ev.positions_evaluated) == (0, 3, 3)
    again = ev.evaluate(x[::-1], keys[::-1])
    assert (ev.cache_hits, ev.cache_misses, ev.positions_evaluated) == (3, 3, 3)
    for a, b in zip(first, again):
        if a is None:                   # outputs our nets do not have (KataGo's heads)
            assert b is None
            continue
        assert np.array_equal(a, b[::-1])
    # repeats inside one batch go through the net once; the LRU order is now 33, 22, 11, so
    # adding 44 evicts 33
    dup = ev.evaluate(np.stack([x[0], x[0], x[1]]), np.array([44, 44, 11], np.uint64))
    assert np.array_equal(dup.policy[0], dup.policy[1])
    assert np.array_equal(dup.policy[2], first.policy[0])  # key 11 is x[0]'s entry
    assert (ev.cache_hits, ev.cache_misses, ev.positions_evaluated) == (5, 4, 4)
    ev.evaluate(x[1:2], np.array([22], np.uint64))
    assert ev.cache_misses == 4
    ev.evaluate(x[2:3], np.array([33], np.uint64))
    assert ev.cache_misses == 5
    with pytest.raises(ValueError, match="keys"):
        ev.evaluate(x, keys[:2])


def test_evaluator_bf16_and_benchmark(net: GoNet) -> None:
    x = random_planes(4, 9)
    ref = TorchEvaluator(net, device="cpu", symmetries="none").evaluate(x)
    low = TorchEvaluator(net, device="cpu", dtype="bf16", symmetries="none").evaluate(x)
    np.testing.assert_allclose(low.policy, ref.policy, atol=0.1)
    np.testing.assert_allclose(low.value, ref.value, atol=0.05)
    empty = TorchEvaluator(net, device="cpu").evaluate(np.zeros((0, PLANES, 9, 9), np.float32))
    assert empty.policy.shape == (0, 82)


# -- weights files ------------------------------------------------------------------------


def test_weights_round_trip_is_bit_exact(net: GoNet, tmp_path: Path) -> None:
    path = tmp_path / "net.pt"
    save(path, net, {"board_sizes": [9, 19], "step": 1234, "parent": "000001.pt"})
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    payload = torch.load(path, weights_only=True, map_location="cpu")
    assert payload["format"] == "goengine-weights" and payload["version"] == 1
    model, meta = load(path)
    assert (meta["step"], meta["parent"], meta["board_sizes"]) == (1234, "000001.pt", [9, 19])
    assert meta["feature_set"] == "rich" and meta["config"]["filters"] == 16 and meta["created"]
    original, loaded = net.state_dict(), model.state_dict()
    assert original.keys() == loaded.keys()
    assert all(torch.equal(original[k], loaded[k]) for k in original)
    x = torch.from_numpy(random_planes(2, 9))
    with torch.inference_mode():
        for a, b in zip(net.eval()(x), model(x)):
            assert torch.equal(a, b)
    assert load_any(path)[1]["step"] == 1234


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


class _Exploit:
    def __reduce__(self):  # would create a file if unpickled without weights_only
        return (open, (os.path.join(os.path.dirname(__file__), "..", "PWNED_BY_PICKLE"), "w"))


def test_corrupt_and_foreign_files_raise_weights_error(net: GoNet, tmp_path: Path) -> None:
    good = tmp_path / "good.pt"
    save(good, net, {"step": 1})
    data = good.read_bytes()
    payload = torch.load(good, weights_only=True)
    bad_shape = dict(payload, config=dict(payload["config"], filters=8))
    nan = dict(payload, tensors=dict(payload["tensors"]))
    nan["tensors"]["stem.conv.weight"] = torch.full_like(nan["tensors"]["stem.conv.weight"], float("nan"))
    missing = dict(payload, tensors={k: v for k, v in payload["tensors"].items() if "stem" not in k})
    cases = {
        "empty.pt": _write(tmp_path / "empty.pt", b""),
        "half.pt": _write(tmp_path / "half.pt", data[: len(data) // 2]),
        "head.pt": _write(tmp_path / "head.pt", data[:100]),
        "noise.pt": _write(tmp_path / "noise.pt", np.random.default_rng(0).bytes(5000)),
        "zipnoise.pt": _write(tmp_path / "zipnoise.pt", b"PK\x03\x04" + np.random.default_rng(1).bytes(3000)),
        "pickle.pt": _write(tmp_path / "pickle.pt", pickle.dumps([1, 2, {"a": 3}])),
        "exploit.pt": _write(tmp_path / "exploit.pt", pickle.dumps(_Exploit())),
    }
    for name, obj in {
        "tensor.pt": torch.zeros(3),
        "dict.pt": {"a": torch.zeros(3)},
        "version.pt": dict(payload, version=99),
        "shape.pt": bad_shape,
        "nan.pt": nan,
        "missing.pt": missing,
        "config.pt": dict(payload, config={"blocks": "many"}),
    }.items():
        torch.save(obj, tmp_path / name)
        cases[name] = tmp_path / name
    # a zip archive that is not torch's
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("hello.txt", "hi")
    cases["other.zip"] = tmp_path / "other.zip"
    cases["absent.pt"] = tmp_path / "absent.pt"

    for name, path in cases.items():
        with pytest.raises(WeightsError, match=name.replace(".", r"\.")):
            load(path)
        with pytest.raises(WeightsError, match=name.replace(".", r"\.")):
            load_any(path)
    assert not (tmp_path.parent / "PWNED_BY_PICKLE").exists()
    assert not Path(os.path.join(os.path.dirname(__file__), "..", "PWNED_BY_PICKLE")).exists()
    assert issubclass(WeightsError, ValueError)


def test_save_rejects_fused_copy_and_bad_meta(net: GoNet, tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        save(tmp_path / "x.pt", net.fused())
    with pytest.raises(ValueError):
        save(tmp_path / "x.pt", net, {"step": -1})
    with pytest.raises(ValueError):
        save(tmp_path / "x.pt", net, {"colour": "blue"})
    assert not list(tmp_path.iterdir())


def test_cli_new_and_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    args = ["new", "--blocks", "2", "--filters", "8", "--in-planes", str(PLANES), "--seed", "1"]
    assert main([*args, "-o", str(a)]) == 0
    assert main([*args, "-o", str(b)]) == 0
    ma, mb = load(a)[0].state_dict(), load(b)[0].state_dict()
    assert all(torch.equal(ma[k], mb[k]) for k in ma)
    capsys.readouterr()
    assert main(["info", str(a)]) == 0
    out = capsys.readouterr().out
    assert "goengine-weights" in out and "config.blocks" in out and "parameters" in out
    assert main(["info", str(tmp_path / "missing.pt")]) == 1
