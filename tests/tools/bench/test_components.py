"""tools.bench: the benchmarks run through the engine's normal API (a short run of each cheap
one; the figures themselves are not checked)."""
from __future__ import annotations

import json

import pytest

from tools.bench import components as bench


def run(capsys, *argv: str) -> dict:
    assert bench.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_board_and_search_benches(capsys):
    board = run(capsys, "board", "--sizes", "5", "--seconds", "0.05")
    assert board["bench"] == "board" and board["5x5"]["playouts_per_s"] > 0
    assert board["5x5"]["tactical_playouts_per_s"] > 0
    assert board["5x5"]["pattern_playouts_per_s"] > 0
    search = run(capsys, "search", "--sizes", "5", "--seconds", "0.05", "--batch", "4")
    assert search["5x5"]["visits_per_s"] > 0


def test_raw_benchmark_counts_forward_passes():
    torch = pytest.importorskip("torch")
    from engine.nets.network import NetConfig, Network

    torch.manual_seed(0)
    net = Network(NetConfig(blocks=1, filters=8))
    assert bench.raw_benchmark(net, size=9, batch=4, seconds=0.05, device="cpu") > 0
