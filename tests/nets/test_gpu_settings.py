"""engine.nets.gpu_settings: the engine's search threads and batch on CUDA, chosen by measurement and
cached as the precision is.  Everything runs on the CPU: the timer is injected (no search runs)
and so is "this is CUDA" (``on_cuda``), except one short real measurement on a tiny net."""
from __future__ import annotations

import argparse
import io
import json
import sys

import pytest
import torch

from engine.nets import gpu_settings as gs
from engine.nets import precision as prec
from engine.nets.network import NetConfig, Network

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return Network(NetConfig(blocks=1, filters=8)).eval()


def fake_timer(rates, calls=None, default=100.0):
    """Reports ``rates["TxB"]`` visits/s without running a search."""
    def timer(threads, batch, search):
        if calls is not None:
            calls.append(gs.label(threads, batch))
        return rates.get(gs.label(threads, batch), default)
    return timer


def no_timer(threads, batch, search):
    raise AssertionError("nothing should be measured")


def test_candidates_follow_the_cores():
    assert gs.candidates(16) == [(t, b) for t in (2, 4, 8, 16) for b in (16, 32, 64, 128)]
    assert [t for t, _ in gs.candidates(6)][::4] == [2, 4, 6]
    assert [t for t, _ in gs.candidates(2)][::4] == [2]
    assert [t for t, _ in gs.candidates(64)][::4] == [2, 4, 8, 16]
    assert gs.candidates(16, batch=48) == [(2, 48), (4, 48), (8, 48), (16, 48)]
    assert gs.candidates(16, threads=3) == [(3, 16), (3, 32), (3, 64), (3, 128)]
    assert gs.visits_for(2, 16) == gs.MIN_VISITS and gs.visits_for(16, 128) == 8 * 16 * 128


def test_the_fastest_setting_is_measured_then_cached(net, tmp_path):
    cache = tmp_path / "gpu.json"
    calls = []
    rates = {"2x16": 5600.0, "8x64": 14000.0, "16x128": 12000.0}
    s = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=cache, cores=16,
                               timer=fake_timer(rates, calls))
    assert s.source == "measured" and (s.threads, s.batch) == (8, 64)
    assert set(calls) == {gs.label(t, b) for t, b in gs.candidates(16)}
    assert calls.count("8x64") == 2 and calls.count("2x32") == 1   # second round: the close ones
    assert s.rates["8x64"] == 14000.0 and "8 search threads, batch 64 (measured" in s.describe()
    data = json.loads(cache.read_text())
    (key, entry), = data["entries"].items()
    assert key == s.key and (entry["threads"], entry["batch"]) == (8, 64) and entry["precision"] == "fp32"
    assert key.startswith(prec.machine_key("cpu")) and prec.net_key(net, 9) in key and "|cores 16|" in key
    # The next start reads the cache and measures nothing.
    again = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=cache, cores=16, timer=no_timer)
    assert again.source == "cached" and (again.threads, again.batch) == (8, 64)
    assert "measured earlier, cached" in again.describe() and "8x64 14,000" in again.describe()
    # Another board size, other cores or a given batch: other keys, measured again.
    other = gs.choose_gpu_settings(net, "cpu", 19, precision="fp32", cache=cache, cores=16,
                                   timer=fake_timer({"16x128": 2000.0}))
    assert other.source == "measured" and (other.threads, other.batch) == (16, 128)
    fewer = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=cache, cores=4,
                                   timer=fake_timer({"4x32": 900.0}))
    assert (fewer.threads, fewer.batch) == (4, 32)
    calls.clear()
    given = gs.choose_gpu_settings(net, "cpu", 9, batch=64, precision="fp32", cache=cache, cores=16,
                                   timer=fake_timer({"4x64": 900.0}, calls))
    assert (given.threads, given.batch) == (4, 64) and set(calls) == {"2x64", "4x64", "8x64", "16x64"}
    assert len(json.loads(cache.read_text())["entries"]) == 4
    # refresh measures again
    fresh = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=cache, cores=16, refresh=True,
                                   timer=fake_timer({"2x16": 9000.0}))
    assert fresh.source == "measured" and (fresh.threads, fresh.batch) == (2, 16)


def test_noise_does_not_pick_a_wide_setting(net, tmp_path):
    """Within MARGIN of the fastest, the setting with the fewest leaves in flight wins."""
    rates = {"4x32": 10000.0, "16x128": 10300.0, "8x64": 9000.0}
    s = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=tmp_path / "g.json", cores=16,
                               timer=fake_timer(rates, default=10.0))
    assert (s.threads, s.batch) == (4, 32)


def test_a_spent_budget_stops_the_measurement(net, tmp_path):
    lines, calls = [], []
    s = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=tmp_path / "g.json", cores=16,
                               timer=fake_timer({}, calls), budget=0.0, log=lines.append)
    assert calls == ["2x16"] and (s.threads, s.batch) == (2, 16)
    assert any("budget" in line and "15 of 16" in line for line in lines)


def test_a_bad_cache_is_ignored_and_rewritten(net, tmp_path):
    cache = tmp_path / "g.json"
    cache.write_text("{not json")
    s = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=cache, cores=2,
                               timer=fake_timer({"2x64": 500.0}))
    assert s.source == "measured" and (s.threads, s.batch) == (2, 64)
    entry = json.loads(cache.read_text())["entries"][s.key]
    entry["threads"] = "eight"                                 # a malformed entry: measured again
    prec.save_cache(cache, {s.key: entry})
    again = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=cache, cores=2,
                                   timer=fake_timer({"2x128": 500.0}))
    assert again.source == "measured" and again.batch == 128
    blocked = tmp_path / "file"
    blocked.write_text("")
    lines = []
    c = gs.choose_gpu_settings(net, "cpu", 9, precision="fp32", cache=blocked / "g.json", cores=2,
                               timer=fake_timer({}), log=lines.append)
    assert c.cache_file is None and any("cannot write" in line for line in lines)


def test_a_real_measurement_on_a_tiny_net(net):
    """The default timer runs the engine's own search (briefly) and gives positive rates."""
    s = gs.measure(net, "cpu", 5, [(2, 4), (2, 8)], evaluator_kwargs={"dtype": "fp32"}, seconds=0.3,
                   rounds=1)
    assert s.source == "measured" and set(s.rates) == {"2x4", "2x8"}
    assert all(r > 0 for r in s.rates.values()) and (s.threads, s.batch) in [(2, 4), (2, 8)]


def test_settle_does_nothing_on_a_cpu(net, monkeypatch):
    monkeypatch.setattr(gs, "default_timer", no_timer)
    args = argparse.Namespace(device="cpu", threads=None, batch=None, precision="fp32")
    assert gs.settle(args, net, 9) is None and args.threads is None and args.batch is None
    both = argparse.Namespace(device="cuda", threads=3, batch=24, precision="fp32")
    assert gs.settle(both, net, 9) is None and (both.threads, both.batch) == (3, 24)


def test_the_precision_is_measured_again_at_another_batch_on_cuda(net, monkeypatch, tmp_path):
    """On CUDA a cached precision measured at batch 16 is measured again at the engine's batch;
    on a CPU the cached choice stands, whatever its batch (today's behaviour).  A cache of its
    own: other tests' engines cache choices for nets of this shape."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []

    def timer(p, forward, rows, seconds):
        calls.append(rows)
        return {"fp32": 2.0}.get(p.label, 1.0)

    monkeypatch.setattr(prec, "default_timer", timer)
    first = gs.precision_at_batch(net, "cpu", 9, 16)
    assert first.source == "measured" and set(calls) == {16}
    assert gs.precision_at_batch(net, "cpu", 9, 64).source == "cached"          # CPU: as before
    monkeypatch.setattr(gs, "on_cuda", lambda device: True)
    calls.clear()
    again = gs.precision_at_batch(net, "cpu", 9, 64)
    assert again.source == "measured" and set(calls) == {64}
    assert gs.precision_at_batch(net, "cpu", 9, 64).source == "cached"
    assert gs.precision_at_batch(net, "cpu", 9, 64, "bf16").source == "forced"


def _engine(monkeypatch, capsys, argv, stdin):
    from engine import __main__ as cli
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def tiny_weights(tmp_path, monkeypatch):
    from engine.nets import weights
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "tiny.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"board_sizes": [9], "step": 0, "parent": None})
    return path


def test_the_engine_keeps_its_cpu_defaults(tiny_weights, monkeypatch, capsys):
    monkeypatch.setattr(gs, "default_timer", no_timer)
    rc, out, err = _engine(monkeypatch, capsys, ["--weights", str(tiny_weights), "--size", "9", "--seed", "1",
                                                 "--precision", "fp32", "--device", "cpu", "--quiet"],
                           "1 goengine-param\n")
    assert rc == 0 and "[string] batch 16\n" in out and "gpu settings" not in err


def test_the_engine_measures_on_cuda_then_reads_the_cache(tiny_weights, monkeypatch, capsys):
    """python -m engine without --threads/--batch on "CUDA" (injected): the measured setting is
    played with and cached; the next start reads it; --threads and --batch skip it."""
    calls = []
    monkeypatch.setattr(gs, "on_cuda", lambda device: True)
    monkeypatch.setattr(gs, "usable_cores", lambda: 16)
    monkeypatch.setattr(gs, "default_timer", fake_timer({"4x64": 9000.0}, calls, default=1000.0))
    argv = ["--weights", str(tiny_weights), "--size", "9", "--seed", "1", "--precision", "fp32",
            "--device", "cpu", "--visits", "16", "--quiet"]
    rc, out, err = _engine(monkeypatch, capsys, argv, "1 goengine-param\n2 genmove b\n")
    assert rc == 0, err
    assert "[string] batch 64\n" in out and "\n=2 " in out
    assert "gpu settings: 4 search threads, batch 64 (measured" in err and calls
    calls.clear()
    rc, out, err = _engine(monkeypatch, capsys, argv, "1 goengine-param\n")
    assert rc == 0 and "[string] batch 64\n" in out and not calls
    assert "gpu settings: 4 search threads, batch 64 (measured earlier, cached" in err
    rc, out, err = _engine(monkeypatch, capsys, argv + ["--threads", "2", "--batch", "8"], "1 goengine-param\n")
    assert rc == 0 and "[string] batch 8\n" in out and not calls and "gpu settings" not in err
