"""engine.nets.loading.load_evaluator: the one way from a weights file to an evaluator (the engines,
self-play, gating, in-process matches and the ladder), with the board-size check and the
precision measurement."""
from __future__ import annotations

import pytest
import torch

from engine.nets import loading, lzweights, weights
from engine.nets.loading import check_board_size, load_evaluator
from engine.nets.network import NetConfig


@pytest.fixture
def ours(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "tiny.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"board_sizes": [9], "step": 0, "parent": None})
    return path


def test_a_leela_zero_net_plays_19x19_only(tmp_path):
    path = tmp_path / "lz.gz"
    lzweights.write_random(path, blocks=1, filters=8, seed=1)
    with pytest.raises(ValueError, match="is a Leela Zero net: it plays 19x19 only"):
        load_evaluator(path, "cpu", 9, precision=None)
    ev = load_evaluator(path, "cpu", 19, precision=None)
    assert ev.feature_set == "lz18"
    check_board_size(path, {"feature_set": "rich", "board_sizes": [9]}, 13)   # ours play any size


def test_precision_forced_measured_or_left_alone(ours, monkeypatch):
    monkeypatch.setattr(loading, "_LOGGED", set())     # earlier loads in this process logged too
    lines: list[str] = []
    forced = load_evaluator(ours, "cpu", 9, "bf16", batch=4, log=lines.append)
    assert forced.dtype == torch.bfloat16
    assert lines == ["precision: bf16 channels-last (forced by --precision)"]
    plain = load_evaluator(ours, "cpu", 9, None, log=lines.append, cache_size=7)
    assert plain.dtype == torch.float32 and len(lines) == 1        # nothing chosen, nothing said
    load_evaluator(ours, "cpu", 9, "fp32", batch=4, log=lines.append, log_once=True)
    load_evaluator(ours, "cpu", 9, "fp32", batch=4, log=lines.append, log_once=True)
    load_evaluator(ours, "cpu", 9, "bf16", batch=4, log=lines.append, log_once=True)
    assert len(lines) == 2 and "fp32" in lines[1]                   # log_once: once per process


def test_an_unreadable_file_names_itself(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a net")
    with pytest.raises(ValueError, match="bad.pt"):
        load_evaluator(bad, "cpu", 9)
