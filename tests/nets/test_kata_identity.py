"""KataGo-format nets evaluate exactly as KataGo evaluates them: our features (C core, kata7)
plus engine.nets.katanet against KataGo's own code (tests/helpers/kata_oracle.py), on the positions of
kata_oracle.positions(): value, policy and ownership within 1e-3, score lead within 1e-3 points.

A tiny random net with every block kind KataGo's CPU backend runs (ordinary, global pooling,
nested bottleneck, attention with fixed and with learnable rotary positions, SwiGLU
feed-forward) is written in KataGo's format for the test; the real net (KaTrain's b10c384,
$KATAGO_NET) is compared when present.  Both need an oracle ($KATAGO or $KATAGO_RAWNN), built
from KataGo's public source (see tests/helpers/kata_oracle.py); without one the tests skip."""
import pytest

from tests.helpers import kata_oracle as ko  # noqa: E402

from engine.nets import kataweights  # noqa: E402

pytestmark = pytest.mark.slow          # KataGo's own evaluator as the oracle

TOLERANCE = {"value": 1e-3, "policy": 1e-3, "ownership": 1e-3, "lead": 1e-3}

ORACLE_MISSING = "no KataGo oracle: set $KATAGO (katago binary) or $KATAGO_RAWNN (see tests/helpers/kata_oracle.py)"


def _check(model_path, positions):
    oracle = ko.open_oracle(model_path)
    if oracle is None:
        pytest.skip(ORACLE_MISSING)
    net, _ = kataweights.load(model_path)
    worst = dict.fromkeys(TOLERANCE, 0.0)
    try:
        for pos in positions:
            diff = ko.compare(pos, oracle.evaluate(pos), ko.ours(pos, net))
            for key, value in diff.items():
                worst[key] = max(worst[key], value)
                assert value <= TOLERANCE[key], f"{pos.name}: {key} differs by {value:.2e}"
    finally:
        oracle.close()
    return worst


def test_random_net_every_block_kind(tmp_path):
    if ko.katago_path() is None and ko.rawnn_path() is None:
        pytest.skip(ORACLE_MISSING)
    model = kataweights.random_model(
        ("ordinary", "gpool", "nested", "attention", "attention_learned", "ffn"), channels=16,
        version=15, seed=17, activation="ACTIVATION_MISH", heads=2, kv_heads=2)
    path = tmp_path / "tiny.bin.gz"
    kataweights.write_model(path, model)
    positions = [p for p in ko.positions() if p.size <= 13][:16]
    _check(path, positions)


def test_random_relu_net_version_14(tmp_path):
    if ko.katago_path() is None and ko.rawnn_path() is None:
        pytest.skip(ORACLE_MISSING)
    model = kataweights.random_model(("ordinary", "gpool", "nested", "ordinary"), channels=12,
                                     version=14, seed=3, activation="ACTIVATION_RELU")
    path = tmp_path / "v14.bin.gz"
    kataweights.write_model(path, model)
    _check(path, [p for p in ko.positions() if p.size == 9][:8])


def test_random_net_japanese_rules_inputs(tmp_path):
    """The rules inputs (territory scoring, the seki tax, no area planes, no parity wave) reach
    the net as KataGo's own featurization gives them, on the Japanese-rules positions."""
    if ko.katago_path() is None and ko.rawnn_path() is None:
        pytest.skip(ORACLE_MISSING)
    model = kataweights.random_model(("ordinary", "gpool", "nested", "attention"), channels=16,
                                     version=15, seed=23, activation="ACTIVATION_MISH", heads=2, kv_heads=2)
    path = tmp_path / "japanese.bin.gz"
    kataweights.write_model(path, model)
    positions = [p for p in ko.positions() if p.rules == "japanese"]
    assert len(positions) >= 6 and {p.size for p in positions} >= {9, 19}
    _check(path, positions)


def test_real_net_all_positions():
    net = ko.real_net_path()
    if net is None:
        pytest.skip("KaTrain's b10c384h6nbttflrs.bin.gz not found ($KATAGO_NET)")
    positions = ko.positions()
    assert len(positions) >= 30
    assert {p.size for p in positions} >= {9, 13, 19}
    assert {p.rules for p in positions} == {"chinese", "tromp-taylor", "japanese"}
    assert len({p.komi for p in positions}) >= 4
    _check(net, positions)
