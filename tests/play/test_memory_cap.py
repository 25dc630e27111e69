"""The search tree's memory cap reaches every search: the engine (--max-memory, tested in
test_gtp_main), self-play and gating (train.loop --max-memory) and in-process match players
(inproc:...:max_memory=SIZE)."""
import pytest

from engine.nets import weights
from engine.core import SearchParams
from engine.nets.network import NetConfig
from train.config import RunConfig
from train.match.inproc import parse_inproc
from train.selfplay import make_agent


def test_run_config_cap_reaches_selfplay_and_gating_agents(tmp_path):
    path = tmp_path / "model-0000000.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"step": 0, "board_sizes": [5]})
    cfg = RunConfig.from_dict({"board_size": 5, "max_memory": "64M", "inference_dtype": "fp32"}).check()
    assert cfg.to_dict()["max_memory"] == "64M"
    gating = make_agent(path, cfg, seed=1, device="cpu", params=cfg.gate_search_params())
    selfplay = make_agent(path, cfg, seed=1, device="cpu", params=cfg.search_params())
    assert gating.params.max_memory == selfplay.params.max_memory == 64 << 20
    run = RunConfig(board_size=5, inference_dtype="fp32")
    default = make_agent(path, run, seed=1, device="cpu", params=run.gate_search_params())
    assert default.params.max_memory == SearchParams().max_memory
    assert RunConfig().to_dict()["max_memory"] == ""                  # C's default, as configs have saved it


@pytest.mark.parametrize("bad", ["lots", "0", "1.5G", "-3M"])
def test_a_bad_cap_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="--max-memory"):
        RunConfig.from_dict({"max_memory": bad})
    with pytest.raises(ValueError, match="max_memory"):
        parse_inproc(f"inproc:net.pt:max_memory={bad}")


def test_inproc_spec_takes_a_cap():
    spec = parse_inproc("inproc:net.pt:visits=50,max_memory=256M")
    assert spec.max_memory == 256 << 20 and spec.visits == 50
    assert parse_inproc("inproc:net.pt").max_memory is None


def test_engine_cap_holds_with_the_score_sums():
    """A node carries the score utility's sums beside win/loss (72 bytes with the value-bias and
    playout-weight fields and the net's own value and lead); the engine's --max-memory cap
    (EngineConfig.search.max_memory) still bounds the tree with the score utility, the scaled
    exploration, the value-bias correction and the recomputed nodes on."""
    import io

    from tests.play.test_search_utility import HashEvaluator

    from engine.core import EDGE_BYTES, NODE_BYTES
    from engine.gtp import EngineConfig, GTPEngine, engine_play

    assert NODE_BYTES == 72
    cap = 64 * (NODE_BYTES + 362 * EDGE_BYTES) + 4000     # just over the smallest cap C allows
    eng = GTPEngine(lambda n: HashEvaluator(), EngineConfig(size=5, play=engine_play(1500), seed=1, quiet=True,
                                                              search=SearchParams(max_memory=cap)),
                    stdout=io.StringIO(), stderr=io.StringIO())
    for name, value in (("staticScoreUtilityFactor", 0.1), ("dynamicScoreUtilityFactor", 0.3),
                        ("cpuctUtilityStdevScale", 0.85), ("subtreeValueBiasFactor", 0.45),
                        ("valueWeightExponent", 0.25), ("useNoisePruning", "true")):
        assert eng.command(f"kata-set-param {name} {value}") == ""
    eng.command("genmove b")
    tree = eng.player.search_tree
    assert tree.params.static_score_utility == pytest.approx(0.1) and tree.params.max_memory == cap
    assert tree.visits >= 1500 and tree.full_events > 0
    assert tree.memory_bytes <= cap
