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
    cfg = RunConfig(board_size=5, max_memory="64M", inference_dtype="fp32").check()
    agent = make_agent(path, cfg, seed=1, device="cpu")
    assert agent.params.max_memory == 64 << 20
    default = make_agent(path, RunConfig(board_size=5, inference_dtype="fp32"), seed=1, device="cpu")
    assert default.params.max_memory == SearchParams().max_memory


@pytest.mark.parametrize("bad", ["lots", "0", "1.5G", "-3M"])
def test_a_bad_cap_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="--max-memory"):
        RunConfig(max_memory=bad).check()
    with pytest.raises(ValueError, match="max_memory"):
        parse_inproc(f"inproc:net.pt:max_memory={bad}")


def test_inproc_spec_takes_a_cap():
    spec = parse_inproc("inproc:net.pt:visits=50,max_memory=256M")
    assert spec.max_memory == 256 << 20 and spec.visits == 50
    assert parse_inproc("inproc:net.pt").max_memory is None
