"""A network whose outputs are NaN or infinite (finite but huge weights, a diverged run) is
caught at the evaluator with a clear message: GTP answers it as an error reply and goes on,
and the engine refuses to start on such a net."""
import io
import subprocess
import sys

import pytest
import torch

from engine.nets import weights
from engine.core import Game, Rules
from engine.errors import NetworkOutputError
from engine.nets.evaluator import TorchEvaluator
from engine.gtp import EngineConfig, GTPEngine, engine_play
from engine.nets.network import NetConfig


def huge_net():
    net = weights.new_model(NetConfig(blocks=1, filters=8), seed=1)
    with torch.no_grad():
        for p in net.parameters():
            p.fill_(1e30)                    # finite weights, overflowing activations
    return net


def test_evaluator_raises_on_non_finite_outputs():
    ev = TorchEvaluator(huge_net(), dtype="fp32", symmetries="none", cache_size=0)
    planes = Game(9, Rules.preset("chinese", komi=7.5)).features("rich")[None]
    with pytest.raises(NetworkOutputError, match="not finite"):
        ev.evaluate(planes)


class FlakyEvaluator:
    """Uniform outputs until ``fail`` is set, then NaN values."""
    feature_set, planes = "rich", 20

    def __init__(self):
        self.inner = TorchEvaluator(weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                                    dtype="fp32", symmetries="none", cache_size=0)
        self.fail = False

    def evaluate(self, planes, keys=None):
        if self.fail:
            raise NetworkOutputError("network output is not finite (NaN or inf) for 1 of 1 positions")
        return self.inner.evaluate(planes, keys)


def test_gtp_answers_a_non_finite_network_with_an_error_and_goes_on():
    ev = FlakyEvaluator()
    gtp = GTPEngine(lambda n: ev, EngineConfig(size=9, play=engine_play(8), seed=1, quiet=True),
                    stdout=io.StringIO(), stderr=io.StringIO())
    ok, reply = gtp.execute(None, "genmove", ["b"])
    assert ok
    ev.fail = True
    ok, reply = gtp.execute(None, "genmove", ["w"])
    assert not ok and reply.startswith("network output is not finite") and "internal" not in reply
    ev.fail = False
    ok, _ = gtp.execute(None, "genmove", ["w"])
    assert ok


@pytest.mark.slow          # the engine's process, loading a net it refuses
def test_engine_refuses_to_play_with_such_a_net(tmp_path):
    """The identification commands are answered while the net loads (docs/startup.md); the
    first command that needs the net gets the load's failure as a GTP error, and the engine
    exits 1 with one line on stderr, never a traceback."""
    path = tmp_path / "huge.pt"
    weights.save(path, huge_net(), {"step": 0, "board_sizes": [9]})
    proc = subprocess.run([sys.executable, "-m", "engine", "--weights", str(path), "--precision", "fp32",
                           "--threads", "1"], input=b"name\ngenmove b\nquit\n", capture_output=True, timeout=300)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert proc.stdout.startswith(b"= goengine\n\n? ")
    assert b"network output is not finite" in proc.stderr
