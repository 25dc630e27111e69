"""engine.nets.precision: the measured choice of dtype and layout, its cache, and the engine's
--precision option.  Timing is injected (no test spends time measuring) and the nets are tiny."""
from __future__ import annotations

import argparse
import json

import pytest
import torch

from engine.nets import precision as prec
from engine.nets.network import NetConfig, Network
from engine.nets.precision import Precision, choose_precision

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return Network(NetConfig(blocks=1, filters=8)).eval()


def fake_timer(rates, calls=None):
    """A timer that reports ``rates[label]`` evals/s without running anything."""
    def timer(p, forward, rows, seconds):
        if calls is not None:
            calls.append(p.label)
        return rates.get(p.label, 1.0)     # Winograd: slow unless a test says otherwise
    return timer


def no_timer(p, forward, rows, seconds):
    raise AssertionError("nothing should be measured")


def exact(p):
    return {"policy": 0.0, "value": 0.0}


def test_fastest_accurate_candidate_is_measured_and_cached(net, tmp_path):
    cache = tmp_path / "p.json"
    calls = []
    rates = {"fp32-nchw": 100.0, "fp32": 150.0, "bf16": 300.0}
    c = choose_precision(net, "cpu", 9, 8, cache=cache, timer=fake_timer(rates, calls))
    assert c.source == "measured" and c.precision == Precision("bf16", True)
    assert set(calls) == {"fp32-nchw", "fp32", "fp32-wino", "bf16"}
    data = json.loads(cache.read_text())
    (key, entry), = data["entries"].items()
    assert entry["choice"] == "bf16" and key == c.key
    assert key.startswith(prec.machine_key("cpu")) and key.endswith(prec.net_key(net, 9))
    # Second start: read from the cache, nothing timed.
    again = choose_precision(net, "cpu", 9, 8, cache=cache, timer=no_timer)
    assert again.source == "cached" and again.precision == c.precision
    assert "bf16" in again.describe() and "cached" in again.describe()
    # Another board size is another net shape: measured again.
    other = choose_precision(net, "cpu", 7, 8, cache=cache, timer=fake_timer({**rates, "fp32": 999.0}))
    assert other.source == "measured" and other.precision == Precision("fp32")
    assert len(json.loads(cache.read_text())["entries"]) == 2


def test_real_accuracy_check_of_a_tiny_net(net, tmp_path):
    """Without an injected accuracy the candidates are compared with fp32 on sample positions."""
    c = choose_precision(net, "cpu", 5, 4, cache=tmp_path / "p.json",
                         timer=fake_timer({"fp32-nchw": 1.0, "fp32": 2.0, "bf16": 3.0}))
    assert c.diffs["fp32-nchw"] == {"policy": 0.0, "value": 0.0}
    assert c.diffs["fp32"]["policy"] < 1e-4
    assert 0.0 <= c.diffs["bf16"]["policy"] <= prec.TOLERANCE["policy"]
    assert c.precision == Precision("bf16")


def test_forced_precision_wins(net, tmp_path):
    cache = tmp_path / "p.json"
    choose_precision(net, "cpu", 9, 8, cache=cache, timer=fake_timer({"fp32-nchw": 1, "fp32": 2, "bf16": 9}))
    before = cache.read_text()
    for option, want in [("fp32", Precision("fp32")), ("BF16", Precision("bf16")),
                         ("fp32-nchw", Precision("fp32", False)), ("fp16", Precision("fp16"))]:
        c = choose_precision(net, "cpu", 9, 8, option, cache=cache, timer=no_timer)
        assert c.source == "forced" and c.precision == want
        assert "forced" in c.describe()
    assert cache.read_text() == before               # a forced choice neither reads nor writes
    with pytest.raises(ValueError):
        choose_precision(net, "cpu", 9, 8, "int8", cache=cache)


@pytest.mark.parametrize("garbage", [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"version": 99, "entries": {}}',
                                     b'{"version": 1, "entries": []}', b""])
def test_corrupt_cache_is_ignored_and_rewritten(net, tmp_path, garbage):
    cache = tmp_path / "sub" / "p.json"
    cache.parent.mkdir()
    cache.write_bytes(garbage)
    c = choose_precision(net, "cpu", 9, 8, cache=cache, accuracy=exact,
                         timer=fake_timer({"fp32-nchw": 5, "fp32": 6, "bf16": 4}))
    assert c.source == "measured" and c.precision == Precision("fp32")
    entries, ok = prec.load_cache(cache)
    assert ok and entries[c.key]["choice"] == "fp32"


@pytest.mark.parametrize("entry", [
    {"choice": "bf16"},                                                    # no diffs recorded
    {"choice": "bf16", "diffs": {"bf16": {"policy": 0.5, "value": 0.0}}},  # outside tolerance
    {"choice": "bf16", "diffs": {"bf16": {"policy": "x", "value": 0.0}}},
    {"choice": "int4", "diffs": {"int4": {"policy": 0.0, "value": 0.0}}},  # not a candidate
    {"choice": "fp16", "diffs": {"fp16": {"policy": 0.0, "value": 0.0}}},  # not on a CPU
    "bf16",
])
def test_bad_cache_entries_are_measured_again(net, tmp_path, entry):
    cache = tmp_path / "p.json"
    key = f"{prec.machine_key('cpu')}|{prec.net_key(net, 9)}"
    prec.save_cache(cache, {key: entry, "other": {"choice": "fp32"}})
    c = choose_precision(net, "cpu", 9, 8, cache=cache, accuracy=exact,
                         timer=fake_timer({"fp32-nchw": 5, "fp32": 6, "bf16": 4}))
    assert c.source == "measured" and c.precision == Precision("fp32")
    entries, _ = prec.load_cache(cache)
    assert entries[key]["choice"] == "fp32" and "other" in entries   # other entries kept


def test_choice_outside_tolerance_is_never_taken(net, tmp_path):
    calls = []

    def accuracy(p):
        return {"policy": 0.3, "value": 0.0} if p.dtype == "bf16" else {"policy": 0.0, "value": 0.001}

    c = choose_precision(net, "cpu", 9, 8, cache=tmp_path / "p.json", accuracy=accuracy,
                         timer=fake_timer({"fp32-nchw": 10, "fp32": 11, "bf16": 1000}, calls))
    assert c.precision == Precision("fp32") and c.rejected == ["bf16"]
    assert "bf16" not in calls                      # not even timed
    assert "outside tolerance: bf16" in c.describe()
    # A tighter tolerance rejects what a looser one accepts; the value counts too.
    c = choose_precision(net, "cpu", 9, 8, cache=tmp_path / "q.json", refresh=True,
                         accuracy=lambda p: {"policy": 0.01, "value": 0.0 if p.dtype == "fp32" else 0.06},
                         timer=fake_timer({"fp32-nchw": 10, "fp32": 11, "bf16": 1000}))
    assert c.precision == Precision("fp32")
    # A cached choice recorded outside the tolerance now asked for is measured again.
    cache = tmp_path / "r.json"
    choose_precision(net, "cpu", 9, 8, cache=cache, accuracy=lambda p: {"policy": 0.015, "value": 0.0},
                     timer=fake_timer({"fp32-nchw": 1, "fp32": 2, "bf16": 9}))
    c = choose_precision(net, "cpu", 9, 8, cache=cache, tolerance={"policy": 0.01, "value": 0.05},
                         accuracy=lambda p: {"policy": 0.015 if p.dtype == "bf16" else 0.0, "value": 0.0},
                         timer=fake_timer({"fp32-nchw": 1, "fp32": 2, "bf16": 9}))
    assert c.source == "measured" and c.precision == Precision("fp32")


def test_cache_lives_in_xdg_cache_home(net, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert prec.cache_dir() == tmp_path / "xdg" / "goengine"
    c = choose_precision(net, "cpu", 9, 8, accuracy=exact, timer=fake_timer({"fp32-nchw": 1, "fp32": 2, "bf16": 1}))
    assert (tmp_path / "xdg" / "goengine" / "precision.json").is_file()
    assert c.cache_file == str(tmp_path / "xdg" / "goengine" / "precision.json")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert prec.cache_dir() == tmp_path / "home" / ".cache" / "goengine"


def test_unwritable_cache_still_gives_a_choice(net, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    c = choose_precision(net, "cpu", 9, 8, cache=blocker / "p.json", accuracy=exact,
                         timer=fake_timer({"fp32-nchw": 1, "fp32": 2, "bf16": 1}), log=lambda s: None)
    assert c.precision == Precision("fp32") and c.cache_file is None


def test_real_timer_on_a_tiny_net(net, tmp_path):
    """The default timer runs (briefly) and gives positive rates."""
    c = choose_precision(net, "cpu", 5, 2, cache=tmp_path / "p.json", seconds=0.01, rounds=1)
    assert c.source == "measured" and all(r > 0 for r in c.rates.values())
    assert c.seconds < 30


def test_engine_prints_the_choice_and_honours_precision(net, tmp_path, monkeypatch):
    from engine import __main__ as cli
    from engine.nets import weights

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "tiny.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"board_sizes": [9], "step": 0, "parent": None})
    lines = []
    args = argparse.Namespace(weights=str(path), seed=1, device="cpu", size=9, batch=8, precision="bf16")
    ev = cli.make_evaluator_factory(args, lines.append)(9)
    assert ev.dtype == torch.bfloat16 and lines == ["precision: bf16 channels-last (forced by --precision)"]
    lines.clear()
    monkeypatch.setattr(prec, "default_timer", fake_timer({"fp32-nchw": 9, "fp32": 1, "bf16": 1}))
    args.precision = "auto"
    ev = cli.make_evaluator_factory(args, lines.append)(9)
    assert ev.dtype == torch.float32 and not ev.channels_last
    # The engine's quick probe, said first: the background measurement it starts may already
    # have said "precision: measuring ..." after it.
    assert lines[0].startswith("precision: fp32-nchw for now"), lines


def test_selfplay_auto_dtype_uses_the_measured_choice(tmp_path, monkeypatch):
    from engine.nets import weights
    from train.config import RunConfig
    from train.selfplay import make_agent

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(prec, "default_timer", fake_timer({"fp32-nchw": 1, "fp32": 1, "bf16": 9}))
    path = tmp_path / "model.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"board_sizes": [9], "step": 0, "parent": None})
    cfg = RunConfig(board_size=9)
    agent = make_agent(path, cfg, seed=1, device="cpu", params=cfg.search_params())
    assert agent.evaluator.dtype == torch.bfloat16
    cfg = RunConfig(board_size=9, inference_dtype="fp32")
    assert make_agent(path, cfg, seed=1, device="cpu", params=cfg.search_params()).evaluator.dtype == torch.float32


def test_noise_does_not_flip_the_default(net, tmp_path):
    """fp32 channels-last stays unless another candidate is clearly (MARGIN) faster."""
    c = choose_precision(net, "cpu", 9, 8, cache=tmp_path / "p.json", accuracy=exact,
                         timer=fake_timer({"fp32-nchw": 103.0, "fp32": 100.0, "bf16": 50.0}))
    assert c.precision == Precision("fp32")
    c = choose_precision(net, "cpu", 9, 8, cache=tmp_path / "p.json", accuracy=exact, refresh=True,
                         timer=fake_timer({"fp32-nchw": 110.0, "fp32": 100.0, "bf16": 50.0}))
    assert c.precision == Precision("fp32", False)


# -- the trainer's precision (engine.nets.precision.choose_train_amp) -------------------------------

def test_training_precision_is_measured_on_a_cpu_and_cached(net, tmp_path):
    choose_train_amp = prec.choose_train_amp
    cache = tmp_path / "train_amp.json"
    seen = []

    def faster_bf16(label, run_once):
        seen.append(label)
        run_once()                              # the passes themselves run (tiny net)
        return {"fp32": 100.0, "bf16": 250.0}[label]
    lines = []
    assert choose_train_amp(net, "cpu", 5, 8, cache=cache, timer=faster_bf16, log=lines.append) == "bf16"
    assert {"fp32", "bf16"} <= set(seen) and "bf16" in lines[0] and "250" in lines[0]
    entry = next(iter(json.loads(cache.read_text())["entries"].values()))
    assert entry["choice"] == "bf16" and entry["rates"] == {"fp32": 100.0, "bf16": 250.0}
    assert entry["diffs"]["bf16"]["policy"] < 0.02       # bf16 autocast really ran and was compared

    def never(label, run_once):
        raise AssertionError("the cached choice should be used")
    assert choose_train_amp(net, "cpu", 5, 8, cache=cache, timer=never) == "bf16"
    # another batch size is another entry; a margin under 10% keeps fp32
    assert choose_train_amp(net, "cpu", 5, 16, cache=cache,
                            timer=lambda label, f: {"fp32": 100.0, "bf16": 105.0}[label]) == "fp32"
    # forced choices and CUDA's own rule are not measured
    assert choose_train_amp(net, "cpu", 5, 8, "fp32", cache=cache, timer=never) == "fp32"
    assert choose_train_amp(net, "cuda", 5, 8, cache=cache, timer=never) == "auto"


def test_training_precision_ignores_a_corrupt_cache_and_refuses_inaccurate_bf16(net, tmp_path, monkeypatch):
    cache = tmp_path / "train_amp.json"
    cache.write_text("{not json")
    monkeypatch.setattr(prec, "measure_train_amp", lambda *a, **k: (
        {"fp32": 100.0, "bf16": 300.0}, {"fp32": {"policy": 0.0, "value": 0.0},
                                         "bf16": {"policy": 0.5, "value": 0.0}}))
    assert prec.choose_train_amp(net, "cpu", 5, 8, cache=cache) == "fp32"
    assert json.loads(cache.read_text())["version"] == prec.CACHE_VERSION      # rewritten
