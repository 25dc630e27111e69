"""Tests for tools.bench.leelaz (``python -m tools.bench vs-leelaz``).

The end-to-end test runs the benchmark on a tiny random net (2 blocks x 16 filters, 64 visits)
and checks the structure of what it returns and prints; it is skipped when the leelaz binary
(Debian package leela-zero) is missing. The rest needs no leelaz.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tools.bench import leelaz as lz_bench

LEELAZ = os.environ.get("LEELAZ") or shutil.which("leelaz") or "/usr/games/leelaz"
HAVE_LEELAZ = Path(LEELAZ).is_file() and os.access(LEELAZ, os.X_OK)

STDERR_SAMPLE = """\
Thinking at most 27.3 seconds...
NN eval=0.748006

 D14 ->      45 (V: 46.88%) (LCB: 25.08%) (N:  8.22%) PV: D14 D10 Q10
2.3 average depth, 4 max depth
5 non leaf nodes, 79.80 average children
400 visits, 143921 nodes, 399 playouts, 187 n/s

batch stats: 0 0
"""


def test_parse_leelaz_stats():
    stats = lz_bench.parse_leelaz_stats(STDERR_SAMPLE)
    assert stats == {"visits": 400, "nodes": 143921, "playouts": 399, "nps": 187.0}
    # The last such line wins (one per genmove).
    two = STDERR_SAMPLE + "1600 visits, 9 nodes, 1599 playouts, 93.5 n/s\n"
    assert lz_bench.parse_leelaz_stats(two)["nps"] == 93.5
    with pytest.raises(ValueError):
        lz_bench.parse_leelaz_stats("no statistics here\n")


def test_variants():
    assert lz_bench._variants(["fp32", "bf16"], 1, "all") == [
        ("fp32", "fp32", "threads", False), ("bf16", "bf16", "threads", False)]
    assert lz_bench._variants(["fp32"], 2, "all") == [
        ("fp32", "fp32", "threads", False), ("fp32-split", "fp32", "split", False),
        ("fp32-intra", "fp32", "intra", False)]
    assert lz_bench._variants(["fp32"], 2, "intra") == [("fp32", "fp32", "intra", False)]
    assert lz_bench._variants(["fp32", "bf16"], 2, "split", compiled=True)[-1] == (
        "fp32-compiled", "fp32", "split", True)
    assert lz_bench._dtypes("auto") == ["fp32", "bf16"]
    assert lz_bench._dtypes("float32") == ["fp32"]
    assert lz_bench._dtypes("fp32-nchw") == ["fp32-nchw"]
    with pytest.raises(ValueError):
        lz_bench._dtypes("engine")          # needs the model
    with pytest.raises(ValueError):
        lz_bench._dtypes("int8")


@pytest.fixture(scope="module")
def tiny_net(tmp_path_factory):
    from engine.nets.lzweights import write_random
    path = tmp_path_factory.mktemp("lzbench") / "tiny.txt"
    write_random(path, 2, 16, seed=3)
    return path


def test_split_evaluator_matches_whole_batch(tiny_net):
    """Slices evaluated on two threads give exactly the whole batch's outputs, in order."""
    from engine.nets.evaluator import TorchEvaluator
    model = lz_bench._load_model(tiny_net)
    x = lz_bench._sample_positions(7, seed=5)
    ev = TorchEvaluator(model, device="cpu", dtype="fp32", symmetries="none", cache_size=0)  # a CPU test: CUDA batches differ in rounding
    whole = ev.evaluate(x)
    split = lz_bench.SplitEvaluator(ev, 2)
    try:
        parts = split.evaluate(x, keys=np.arange(7, dtype=np.uint64))
        assert parts.policy.shape == whole.policy.shape == (7, 362)
        np.testing.assert_allclose(parts.policy, whole.policy, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(parts.value, whole.value, rtol=1e-5, atol=1e-5)
        assert parts.ownership is None and parts.score is None
        one = split.evaluate(x[:1])                 # too small to split
        np.testing.assert_allclose(one.policy, whole.policy[:1], rtol=1e-5, atol=1e-5)
    finally:
        split.close()


def test_run_ours_structure(tiny_net):
    model = lz_bench._load_model(tiny_net)
    for threads, parallel, dtype in [(1, "threads", "fp32"), (2, "threads", "fp32-nchw"),
                                     (2, "split", "fp32")]:
        r = lz_bench.run_ours(model, threads, 48, 8, dtype, parallel=parallel)
        assert r["playouts"] == 48 and r["visits"] >= 48
        assert r["visits_per_s"] > 0 and r["seconds"] > 0
        assert r["evals"] >= 40          # every playout on the empty board reaches a new leaf
        assert isinstance(r["move"], str)
    with pytest.raises(ValueError):
        lz_bench.run_ours(model, 1, 8, 8, "fp32", parallel="nope")


@pytest.mark.slow          # runs Leela Zero
@pytest.mark.skipif(not HAVE_LEELAZ, reason="leelaz not installed (Debian package leela-zero)")
def test_vs_leelaz_tiny(capsys):
    args = argparse.Namespace(nets=["2x16"], visits=64, threads=[1], batch=16, dtype="auto",
                              leelaz=LEELAZ, repeats=1)
    out = lz_bench.run_vs_leelaz(args)
    json.dumps(out)                      # the bench prints it as JSON
    assert out["bench"] == "vs-leelaz" and out["visits"] == 64 and out["batch"] == 16
    (row,) = out["results"]
    assert row["net"] == "2x16" and row["threads"] == 1
    lz = row["leelaz"]
    assert lz["nps"] > 0 and lz["wall_playouts_per_s"] > 0
    (run,) = lz["runs"]
    assert 60 <= run["playouts"] <= 64 and 63 <= run["visits"] <= 65
    assert set(row["ours"]) == {"fp32", "bf16"}
    for label, o in row["ours"].items():
        assert o["visits_per_s"] > 0 and o["ratio"] > 0
        assert o["runs"][0]["playouts"] == 64
    assert "max_diff_vs_fp32" in row["ours"]["bf16"]
    assert row["best"] in row["ours"]
    assert row["ratio"] == row["ours"][row["best"]]["ratio"]
    assert "target" not in out           # no 2-thread row
    printed = capsys.readouterr().out
    assert "leelaz" in printed and "ratio" in printed and "2x16 t1" in printed


@pytest.mark.slow          # runs Leela Zero
@pytest.mark.skipif(not HAVE_LEELAZ, reason="leelaz not installed (Debian package leela-zero)")
def test_vs_leelaz_engine_defaults(monkeypatch, tmp_path):
    """The default: the engine's measured precision and search threads."""
    from engine.nets import precision as prec

    monkeypatch.setattr(prec, "default_timer", lambda p, forward, rows, seconds: 2.0 if p.label == "fp32" else 1.0)
    args = argparse.Namespace(nets=["2x16"], visits=32, threads=[2], batch=8, dtype="engine",
                              leelaz=LEELAZ, repeats=1)
    out = lz_bench.run_vs_leelaz(args)
    (row,) = out["results"]
    assert set(row["ours"]) == {"fp32"} and row["ours"]["fp32"]["parallel"] == "threads"
    assert row["ours"]["fp32"]["runs"][0]["playouts"] == 32
    assert "target" in out


def test_missing_leelaz(tmp_path):
    args = argparse.Namespace(nets=["2x16"], visits=8, threads=[1], batch=8, dtype="fp32",
                              leelaz=str(tmp_path / "no-leelaz"))
    with pytest.raises(FileNotFoundError):
        lz_bench.run_vs_leelaz(args)
