"""The pipelines experiment's pieces (tools.experiments.pipelines) and the async shares of the machine
(train.stage.stage_cpus), without running the six loops."""
import argparse

import pytest
import torch

from engine.nets import weights
from engine.nets.network import NetConfig
from engine.play.settings import PlaySettings
from engine.rules import Rules
from train.config import RunConfig
from train.stage import stage_cpus, stage_threads
from tools.experiments.pipelines import BASELINE, COMBOS, build_rows, format_rows, passthrough_args, round_robin, write_chart
from train.match.stats import bradley_terry


def test_combinations():
    assert COMBOS == ["sync-discard", "sync-finish", "sync-switch", "async-discard", "async-finish", "async-switch"]


@pytest.mark.parametrize("n,mode,expected", [
    (1, "agz", ([0], [0], [0])),
    (2, "agz", ([0], [1], [1])),
    (4, "agz", ([0, 1], [2], [3])),
    (8, "agz", ([0, 1, 2, 3], [4, 5], [6, 7])),
    (2, "az", ([0], [1], None)),
    (8, "az", ([0, 1, 2, 3], [4, 5, 6, 7], None)),
])
def test_pinned_shares(n, mode, expected):
    cfg = RunConfig(mode=mode, pin_cpus=True)
    cores = list(range(n))
    got = tuple(stage_cpus(cfg, s, cores) for s in ("selfplay", "train", "gate"))
    assert got[:2] == expected[:2]
    if expected[2] is not None:
        assert got[2] == expected[2]
    assert stage_cpus(RunConfig(mode=mode), "selfplay", cores) is None                    # not pinned
    assert stage_cpus(RunConfig(mode=mode, pin_cpus=True, pipeline="sync"), "train", cores) is None


def test_thread_defaults():
    assert stage_threads(RunConfig(threads=3), "gate") == 3
    assert stage_threads(RunConfig(gate_threads=2, threads=3), "gate") == 2


def test_passthrough_args():
    ns = argparse.Namespace(board_size=7, allow_resign=False, device="cuda", mode="agz", pipeline="sync",
                            on_new_model="finish", budget="3m", komi=2.5, visits=8, forced_playouts=2.0)
    args = passthrough_args(ns)
    assert args == ["--no-allow-resign", "--board-size", "7", "--device", "cuda", "--forced-playouts", "2.0",
                    "--komi", "2.5", "--mode", "agz", "--visits", "8"]


def test_round_robin_and_ratings(tmp_path):
    torch.set_num_threads(1)
    paths = {}
    for name, seed in (("initial", 1), ("a", 2), ("b", 3)):
        paths[name] = tmp_path / f"{name}.pt"
        weights.save(paths[name], weights.new_model(NetConfig(blocks=1, filters=8), seed=seed),
                     {"step": 0, "parent": None, "board_sizes": [5]})
    cfg = RunConfig(board_size=5, rules=Rules(komi=2.5), net=NetConfig(blocks=1, filters=8), play=PlaySettings(visits=4, temperature_moves=None), batch=16,
                    cache_size=1000)
    games = round_robin(paths, cfg, games_per_pair=4, parallel=8, seed=1)
    assert len(games) == 12
    pairs = {}
    for black, white, score in games:
        assert score in (0.0, 0.5, 1.0)
        pairs.setdefault(frozenset((black, white)), []).append(black)
    for blacks in pairs.values():                    # colours alternate within every pair
        assert len(blacks) == 4 and len(set(blacks)) == 2 and blacks.count(blacks[0]) == 2
    ratings = bradley_terry(games, anchor="initial")
    assert ratings["initial"].elo == 0.0 and set(ratings) == {"initial", "a", "b"}


def fake_summary(games_h, evals, wasted, wait, lag=None, promotions=0, decisions=0):
    return {"seconds": 100.0, "games_per_hour": games_h, "positions_per_hour": 20 * games_h,
            "evals": evals, "evals_per_s": evals / 100.0, "wasted_evals": wasted, "wasted_share": wasted / evals,
            "selfplay_wait_share": wait, "eval_lag_mean_s": lag, "adopt_lag_mean_s": lag,
            "promotions": promotions, "decisions": decisions, "gating_games": 10 * decisions,
            "final_model": "model-0000000.pt"}


def test_table_and_chart(tmp_path):
    summaries = {"sync-discard": fake_summary(100, 10_000, 1_000, 0.6, 30.0, 1, 3),
                 "async-switch": fake_summary(300, 38_000, 38, 0.0, 12.0, 2, 4),
                 BASELINE: fake_summary(320, 40_000, 0, 0.0)}

    class R:
        def __init__(self, elo, stderr):
            self.elo, self.stderr = elo, stderr

    rows = build_rows(summaries, {"sync-discard": R(50.0, 20.0), "async-switch": R(80.0, 21.0)})
    assert [r["run"] for r in rows] == ["sync-discard", "async-switch", BASELINE]
    by = {r["run"]: r for r in rows}
    assert by["async-switch"]["vs_alone"] == pytest.approx((38_000 - 38) / 40_000)
    assert by["sync-discard"]["vs_alone"] == pytest.approx(9_000 / 40_000)
    text = format_rows(rows)
    assert "async-switch" in text and "+80 +-21" in text and "2/4" in text and "10.0%" in text
    assert by["async-switch"]["net0_vs_alone"] is None
    write_chart(rows, tmp_path / "chart.png")
    assert (tmp_path / "chart.png").stat().st_size > 5000


def test_summary_over_seeds_gives_means_and_intervals(tmp_path):
    import json
    from tools.experiments import cli, pipelines

    def row(run, games, evals):
        return {"run": run, "games_per_hour": games, "positions_per_hour": games * 40.0,
                "evals_per_s": evals, "vs_alone": evals / 1000.0, "net0_vs_alone": None,
                "wasted_share": 0.01, "wait_share": 0.0, "eval_lag_s": 5.0}
    dirs = []
    for i, (g, e) in enumerate([(100.0, 900.0), (110.0, 950.0), (120.0, 1000.0)]):
        d = tmp_path / f"s{i}"
        d.mkdir()
        (d / "pipelines.json").write_text(json.dumps({"rows": [row("async-finish", g, e),
                                                               row(BASELINE, 130.0, 1000.0)]}))
        dirs.append(str(d))
    assert pipelines.mean_interval([100.0, 110.0, 120.0]) == pytest.approx((110.0, 4.303 * 10 / 3 ** 0.5))
    assert cli.main(["summary", *dirs, "--out", str(tmp_path / "out")]) == 0
    doc = json.loads((tmp_path / "out" / "pipelines-summary.json").read_text())
    fin = next(r for r in doc["rows"] if r["run"] == "async-finish")
    assert fin["repeats"] == 3 and fin["positions_per_game"][0] == pytest.approx(40.0)
    assert fin["net0_vs_alone"] is None
    assert (tmp_path / "out" / "pipelines-summary.png").read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["summary", str(tmp_path / "nothing")]) == 1     # a clear error
