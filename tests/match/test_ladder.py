"""The strength ladder (train.match.ladder): a tiny run directory with two checkpoints, fake GTP
opponents standing in for GNU Go levels, ratings anchored at level 1, CPU-hours from the
metrics, and the PNG."""
import json
import math
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.nets import weights
from engine.nets.network import NetConfig
from train.match import ladder
from train.rundir import RunDir

FAKE = Path(__file__).resolve().parents[1] / "fake_engines" / "fake_engine.py"


def make_run(tmp_path: Path) -> RunDir:
    rd = RunDir(tmp_path / "run").create()
    rd.write_config({"board_size": 5, "komi": 7.0, "rules": "chinese"})
    for step, seed in ((0, 1), (100, 2)):
        net = weights.new_model(NetConfig(blocks=1, filters=8), seed=seed)
        weights.save(rd.model_path(step), net, {"step": step, "board_sizes": [5]})
    return rd


def test_cpu_hours_sum_processes_and_sessions():
    recs = [
        {"time": 100.0, "source": "selfplay", "pid": 1, "cpu_s": 360.0},
        {"time": 100.0, "source": "trainer", "pid": 2, "cpu_s": 720.0},
        {"time": 200.0, "source": "selfplay", "pid": 1, "cpu_s": 1800.0},   # same process: latest
        {"time": 300.0, "source": "selfplay", "pid": 3, "cpu_s": 1800.0},   # a resumed session
        {"time": 900.0, "source": "selfplay", "pid": 3, "cpu_s": 9000.0},   # after `when`
    ]
    assert ladder.cpu_hours_at(recs, 350.0) == pytest.approx((1800 + 720 + 1800) / 3600)
    # records without CPU seconds count wall-clock time x threads
    old = [{"time": 0.0, "source": "selfplay"}, {"time": 60.0, "source": "selfplay"}]
    assert ladder.cpu_hours_at(old, 100.0, threads=2) == pytest.approx(120 / 3600)


def test_choose_checkpoints_keeps_first_and_newest(tmp_path):
    rd = RunDir(tmp_path / "r").create()
    for step in range(0, 1100, 100):
        rd.model_path(step).write_bytes(b"x")
    steps = [s for s, _ in ladder.choose_checkpoints(rd, ladder.LadderConfig(checkpoints=3))]
    assert steps == [0, 500, 1000]
    steps = [s for s, _ in ladder.choose_checkpoints(rd, ladder.LadderConfig(every_steps=400))]
    assert steps == [0, 400, 800, 1000]


@pytest.mark.slow          # a ladder run: matches between checkpoints and the plot
def test_tiny_ladder_run_rates_checkpoints_and_draws_the_png(tmp_path):
    rd = make_run(tmp_path)
    # a run continued from another net: its cost from zero is added to this run's own
    rd.write_config({"board_size": 5, "komi": 7.0, "rules": "chinese",
                     "init_cpu_hours": 9.0, "init_games": 1000})
    t0 = rd.list_models()[0][1].stat().st_mtime
    rd.append_metrics({"time": 0.0, "source": "trainer", "games": 12})
    gnugo = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} --name level{{level}}"
    code = ladder.main([str(rd.root), "--levels", "1", "5", "--games", "2", "--pair-games", "2",
                        "--visits", "4", "--gnugo", gnugo, "--referee", "none", "--nice", "0",
                        "--skip-below", "0"])
    assert code == 0
    doc = json.loads((rd.root / "ladder" / "ladder.json").read_text())
    names = {p["name"]: p for p in doc["players"]}
    assert doc["anchor"] == "gnugo-L1" and names["gnugo-L1"]["elo"] == 0.0
    assert {"model-0000000", "model-0000100", "gnugo-L5"} <= set(names)
    # 2 checkpoints x 2 levels x 2 games + 2 games between the checkpoints
    assert doc["games"] == 10
    for m in ("model-0000000", "model-0000100"):
        assert names[m]["model"] and 9.0 <= names[m]["cpu_hours"] < 9.5
        assert names[m]["selfplay_games"] == 1012
        assert math.isfinite(names[m]["elo"]) and names[m]["stderr"] > 0
    sgfs = list((rd.root / "ladder").glob("*/*.sgf"))
    assert len(sgfs) == 10
    png = rd.plots / "ladder.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Finished matches are not replayed: a second call plays nothing new.
    before = sorted(p.stat().st_mtime_ns for p in sgfs)
    assert ladder.main([str(rd.root), "--levels", "1", "5", "--games", "2", "--pair-games", "2",
                        "--visits", "4", "--gnugo", gnugo, "--referee", "none", "--nice", "0",
                        "--skip-below", "0"]) == 0
    assert sorted(p.stat().st_mtime_ns for p in (rd.root / "ladder").glob("*/*.sgf")) == before
    assert t0 > 0


def test_report_compares_ladders(tmp_path):
    from train.report import plot_ladder
    doc = {"anchor": "gnugo-L1", "games": 4, "run_dir": "a", "players": [
        {"name": "model-0000000", "model": True, "step": 0, "cpu_hours": 0.0, "selfplay_games": 0,
         "elo": -300.0, "stderr": 80.0, "games": 4},
        {"name": "model-0000100", "model": True, "step": 100, "cpu_hours": 0.5, "selfplay_games": 900,
         "elo": -100.0, "stderr": 60.0, "games": 4},
        {"name": "gnugo-L1", "model": False, "elo": 0.0, "stderr": 0.0, "games": 4}]}
    out = plot_ladder(doc, tmp_path / "cmp.png", others=[("b", doc)])
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_plot_draws_gnugo_and_pachi_anchors():
    from train.report import anchor_lines
    players = [{"name": "model-0000100", "model": True, "elo": 5.0},
               {"name": "gnugo-L10", "model": False, "elo": 40.0},
               {"name": "pachi-1000", "model": False, "elo": 250.0},
               {"name": "someone", "model": False, "elo": 1.0}]
    assert [label for label, _ in anchor_lines(players)] == ["GNU Go level 10", "Pachi 1000 playouts"]


def test_ladder_refuses_a_folder_that_is_no_run(tmp_path, capsys):
    assert ladder.main([str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_a_level_lost_entirely_skips_every_stronger_level(tmp_path, monkeypatch):
    rd = make_run(tmp_path)
    played = []

    def fake_play(rd_, cfg, me, opponent, games, size):
        played.append((me[0], opponent[0]))
        return {"lost": True}

    monkeypatch.setattr(ladder, "play", fake_play)
    monkeypatch.setattr(ladder, "_results", lambda path: {"lost": True})
    monkeypatch.setattr(ladder, "_score_of", lambda doc, name: (0.0, 4))
    cfg = ladder.LadderConfig(levels=[1, 5, 10], games=4, pair_games=0, skip_below=0.05)
    ladder.run_ladder(rd, cfg, log=lambda *a: None)
    assert played == [("model-0000000", "gnugo-L1"), ("model-0000100", "gnugo-L1")]


def test_a_level_that_won_every_game_is_not_rated():
    games = [("model-0000000", "gnugo-L1", 0.0), ("gnugo-L10", "model-0000000", 1.0),
             ("model-0000100", "gnugo-L1", 1.0), ("model-0000100", "model-0000000", 1.0)]
    kept, unrated = ladder._drop_unbounded_opponents(games, {"model-0000000", "model-0000100"})
    assert set(unrated) == {"gnugo-L10"} and "won all its 1 games" in unrated["gnugo-L10"]
    assert kept == [games[0], games[2], games[3]]


def test_a_run_from_init_weights_inherits_the_nets_lineage(tmp_path, capsys):
    """weights stamp records what produced a net; train.loop --init-weights takes it as
    --init-cpu-hours / --init-games unless they are given; bad values are refused."""
    from train.config import RunConfig
    from train.loop import prepare_run
    path = tmp_path / "net.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=3),
                 {"step": 700, "board_sizes": [5]})
    assert weights.main(["stamp", str(path), "--cpu-hours", "9.5", "--games", "13009"]) == 0
    _, meta = weights.load(path)
    assert (meta["step"], meta["cpu_hours"], meta["games"]) == (700, 9.5, 13009)
    assert "13009" in capsys.readouterr().out
    cfg = prepare_run(RunDir(tmp_path / "a"), RunConfig(board_size=5, init_weights=str(path)).check(),
                      resume=False)
    assert (cfg.init_cpu_hours, cfg.init_games) == (9.5, 13009)
    assert json.loads((tmp_path / "a" / "config.json").read_text())["init_games"] == 13009
    given = RunConfig(board_size=5, init_weights=str(path), init_cpu_hours=2.0, init_games=5).check()
    cfg = prepare_run(RunDir(tmp_path / "b"), given, resume=False)
    assert (cfg.init_cpu_hours, cfg.init_games) == (2.0, 5)
    with pytest.raises(ValueError, match="negative"):
        RunConfig(init_games=-1).check()
    assert weights.main(["stamp", str(path), "--cpu-hours", "-1", "--games", "3"]) == 1
    assert "cpu_hours" in capsys.readouterr().err
    assert weights.load(path)[1]["games"] == 13009          # the refused stamp changed nothing


def test_brier_score_of_a_nets_winrate_on_sgf_games(tmp_path):
    """brier_of_games: the mean squared error of the raw net's Black winrate before every move
    against the winner, computed by hand here; undecided, empty and unreadable games are left out."""
    from engine import sgf
    from engine.core import BLACK, WHITE, Game, Rules
    from engine.nets.evaluator import TorchEvaluator
    path = tmp_path / "net.pt"
    net = weights.new_model(NetConfig(blocks=1, filters=8), seed=4)
    weights.save(path, net, {"step": 1, "board_sizes": [5]})
    moves = [(BLACK, 12), (WHITE, 7), (BLACK, 13)]
    files = []
    for name, result in (("b.sgf", "B+3.5"), ("w.sgf", "W+R"), ("draw.sgf", "0"), ("none.sgf", None)):
        files.append(tmp_path / name)
        files[-1].write_bytes(sgf.write_game(5, 7.0, "chinese", moves, result=result))
    files.append(tmp_path / "bad.sgf")
    files[-1].write_bytes(b"(;GM[1]SZ[5];B[zz")
    files.append(tmp_path / "empty.sgf")
    files[-1].write_bytes(sgf.write_game(5, 7.0, "chinese", [], result="B+7"))

    game = Game(5, Rules.preset("chinese", 7.0))
    planes, movers = [], []
    for color, point in moves:
        planes.append(game.features(net.feature_set))
        movers.append(game.to_move)
        game.play(point, color)
    model, _ = weights.load(path)
    ev = TorchEvaluator(model, symmetries="random", seed=0)     # as brier_of_games: game by game

    def p_black():
        values = ev.evaluate(np.stack(planes)).value
        return [(float(v) + 1) / 2 if m == BLACK else (1 - float(v)) / 2 for v, m in zip(values, movers)]
    want = (sum((p - 1) ** 2 for p in p_black()) + sum(p ** 2 for p in p_black())) / 6

    got = ladder.brier_of_games(path, files)
    assert (got["games"], got["positions"], got["constant"]) == (2, 6, 0.25)
    assert got["brier"] == pytest.approx(want, abs=1e-6)
    assert ladder.brier_of_games(path, files[2:4]) is None
