"""Replay window, loaders and the trainer on tiny hand-made games (CPU, fixed seeds)."""
import math

import numpy as np
import pytest
import torch

from engine.nets import weights
from engine.core import Game, Rules
from engine.nets.network import GoNet, NetConfig
from train.config import RunConfig
from train.games.records import MoveInfo, build_record, write_npz
from train.replay import BatchLoader, ReplayWindow, make_batch
from train.rundir import GameName, RunDir
from train.trainer import allowed_steps
from train.learn.step import Trainer, TrainSettings, lr_at

from tests.helpers.training import SIZE, write_game


@pytest.fixture
def rd(tmp_path):
    rd = RunDir(tmp_path / "run").create()
    for seq in range(10):
        write_game(rd, seq, length=4 + seq, seed=seq)
    return rd


def test_window_keeps_the_most_recent_games(rd):
    w = ReplayWindow(rd, capacity=4)
    assert w.refresh() == 10
    assert w.games == 4 and w.positions == sum(4 + s for s in range(6, 10))
    write_game(rd, 10, length=3, seed=99)
    (rd.games / "g00000011-w00.npz").write_bytes(b"not a zip")     # a foreign file is skipped
    assert w.refresh() == 12
    assert w.games == 3 and w.positions == (4 + 8) + (4 + 9) + 3
    assert any("g00000011" in b for b in w.bad_files)


def test_sampling_is_uniform_over_positions(rd):
    w = ReplayWindow(rd, capacity=10)
    w.refresh()
    counts = {}
    for rec, idx in w.sample(40000, np.random.default_rng(0)):
        counts[rec.model_ids[0]] = counts.get(rec.model_ids[0], 0) + len(idx)
        assert rec.full[idx].all()                   # only positions with a policy target
    total = w.positions
    for seq in range(10):
        expected = 40000 * (4 + seq) / total         # a game's share = its share of positions
        assert abs(counts[f"m{seq}"] - expected) < 5 * np.sqrt(expected)


def test_thread_loader_delivers_and_measures(rd):
    w = ReplayWindow(rd, capacity=10)
    w.refresh()
    loader = BatchLoader(w, batch=32, feature_set="rich", seed=1)
    try:
        for _ in range(3):
            b = loader.next(timeout=10)
            assert b["planes"].shape == (32, 20, SIZE, SIZE) and b["policy"].shape == (32, SIZE * SIZE + 1)
        assert loader.positions_per_s > 0
    finally:
        loader.close()


def test_worker_process_loader(rd):
    w = ReplayWindow(rd, capacity=10)
    loader = BatchLoader(w, batch=16, feature_set="rich", seed=1, workers=1, refresh_s=0.5)
    b = loader.next()
    assert b["planes"].shape == (16, 20, SIZE, SIZE) and isinstance(b["value"], np.ndarray)
    assert loader.positions_per_s > 0


def test_lr_schedule():
    drops = [(100, 0.1), (200, 0.01)]
    assert lr_at(0, 0.1, warmup=10) == pytest.approx(0.01)
    assert lr_at(9, 0.1, warmup=10) == pytest.approx(0.1)
    assert lr_at(50, 0.1, 10, drops) == pytest.approx(0.1)
    assert lr_at(150, 0.1, 10, drops) == pytest.approx(0.01)
    assert lr_at(250, 0.1, 10, drops) == pytest.approx(0.001)


def test_allowed_steps_balance_selfplay_and_training():
    cfg = RunConfig(min_games=10, steps_per_game=0.5, train_batch=64)
    assert allowed_steps(cfg, 9, 40.0) == 0
    assert allowed_steps(cfg, 20, 40.0) == 10
    cfg.samples_per_position = 4.0
    assert allowed_steps(cfg, 20, 40.0) == int(4 * 20 * 40 / 64)


def test_trainer_learns_a_fixed_batch_and_checkpoints(rd):
    torch.manual_seed(0)
    w = ReplayWindow(rd, capacity=10)
    w.refresh()
    batch = make_batch(w, 64, "rich", np.random.default_rng(0))
    model = GoNet(NetConfig(blocks=1, filters=16))
    t = Trainer(model, TrainSettings(lr=0.05, lr_warmup=0), device="cpu")
    first = t.train_step(batch)
    for _ in range(30):
        last = t.train_step(batch)
    assert set(first) == {"loss", "policy", "value", "ownership", "score"}
    assert last["loss"] < 0.7 * first["loss"] and last["policy"] < first["policy"]
    name = t.save(rd, parent="model-0000000.pt", board_sizes=[SIZE])
    assert name == "model-0000031.pt"
    net, meta = weights.load(rd.models / name)
    assert meta["step"] == 31 and meta["parent"] == "model-0000000.pt"
    # The optimiser state comes back only for the matching step.
    again = Trainer(net, TrainSettings(), device="cpu", step=31)
    assert again.load_state(rd)
    assert not Trainer(GoNet(NetConfig(blocks=1, filters=16)), TrainSettings(), "cpu", step=5).load_state(rd)


def test_resigned_games_mask_ownership_and_score(tmp_path):
    rd = RunDir(tmp_path / "resign").create()
    game = Game(SIZE, Rules.preset("chinese", 0.5))
    infos = []
    for p in (6, 18):
        color = game.to_move
        game.play(p, color)
        target = np.zeros(SIZE * SIZE + 1, np.float32)
        target[p] = 1
        infos.append(MoveInfo(color, p, "m", 10, -0.99, target))
    rec = build_record(game, infos, reason="resign", winner=1)
    write_npz(rd.game_paths(GameName(0, 0))[0], rec)
    w = ReplayWindow(rd, capacity=1)
    w.refresh()
    b = make_batch(w, 8, "rich", np.random.default_rng(0))
    assert (b["aux_weight"] == 0).all() and set(b["value"]) <= {-1.0, 1.0}


def test_a_batch_with_a_non_finite_loss_is_skipped_and_changes_nothing(rd):
    torch.manual_seed(0)
    w = ReplayWindow(rd, capacity=10)
    w.refresh()
    batch = make_batch(w, 16, "rich", np.random.default_rng(0))
    model = GoNet(NetConfig(blocks=1, filters=8))
    t = Trainer(model, TrainSettings(lr=0.05, lr_warmup=0), device="cpu")
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    bad = dict(batch, value=np.full_like(batch["value"], np.nan))
    out = t.train_step(bad)
    assert out["skipped"] == 1.0 and t.skipped_steps == 1 and t.step == 0
    assert all(torch.equal(before[k], v) for k, v in model.named_parameters())
    assert all(torch.isfinite(b).all() for b in model.buffers())      # batch-norm statistics
    out = t.train_step(batch)                   # the next good batch trains as usual
    assert "skipped" not in out and t.step == 1 and math.isfinite(out["loss"])
