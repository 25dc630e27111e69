"""``--on-new-model``: what self-play does with its games in flight when a new model arrives, seen
in the SGFs it writes (PB/PW and the per-move "model ..." comments), on a tiny 5x5 run with a
1x8 net; and ``--keep-old-games`` (the replay window's model filter)."""
import numpy as np
import pytest
import torch

from engine.nets import weights
from engine.nets.network import NetConfig
from engine.play.settings import PlaySettings
from engine.rules import Rules
from train.config import RunConfig
from train.games.records import read_npz, read_sgf_moves
from train.replay import ReplayWindow
from train.rundir import RunDir
from train.selfplay import SelfPlayWorker

OLD, NEW = "model-0000000", "model-0000010"


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny nets on a shared machine: more threads only spin against each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def save_model(rd, step, seed):
    net = weights.new_model(NetConfig(blocks=1, filters=8, feature_set="rich"), seed=seed)
    weights.save(rd.model_path(step), net, {"step": step, "parent": None, "board_sizes": [5]})


def make_run(tmp_path, policy, mode="az"):
    rd = RunDir(tmp_path / "run").create()
    cfg = RunConfig(mode=mode, board_size=5, rules=Rules(komi=2.5), net=NetConfig(blocks=1, filters=8),
                    play=PlaySettings(visits=8, temperature_moves=4), parallel_games=4, batch=16, allow_resign=False, on_new_model=policy,
                    seed=3, cache_size=1000, metrics_every=1.0)
    rd.write_config(cfg.to_dict())
    save_model(rd, 0, seed=1)
    return rd, cfg


def play_until_switch(rd, cfg, max_games=12):
    """Plays until every game in flight has at least 3 moves, then writes model 10; returns the
    worker and {seed: moves played at that moment} of the games in flight."""
    w = SelfPlayWorker(rd, cfg, worker=0, max_games=max_games)
    while len(w.pool.active()) < 4 or min(len(s.moves) for s in w.pool.active()) < 3:
        for fg in w.pool.step():
            w.write(fg)
    in_flight = {s.spec.seed: len(s.moves) for s in w.pool.active()}
    assert len(in_flight) == 4
    save_model(rd, 10, seed=2)
    return w, in_flight


def finish_run(w):
    for fg in w.pool.run():          # steps (refilling idle slots) until the game budget is played
        w.write(fg)
    return w


def games(rd):
    """[(record, sgf root properties, per-move comments)] of every game written."""
    from sgfmill import sgf

    out = []
    for name, npz in rd.list_games():
        data = rd.game_paths(name)[1].read_bytes()
        _, _, moves, props = read_sgf_moves(data)
        comments = [node.get("C") if node.has_property("C") else ""
                    for node in sgf.Sgf_game.from_bytes(data).get_main_sequence()[1:]]
        rec = read_npz(npz)
        assert len(moves) == rec.length == len(comments)
        out.append((rec, props, comments))
    return out


def test_discard_abandons_the_games_in_flight(tmp_path):
    rd, cfg = make_run(tmp_path, "discard")
    w, in_flight = play_until_switch(rd, cfg)
    before = rd.count_games()
    assert w.poll_model() and w.agent.model_id == NEW
    assert w.pool.stats.discarded == 4 and w.pool.stats.discarded_leaves > 0
    finish_run(w)
    written = games(rd)
    assert len(written) == 12
    assert not {rec.seed for rec, _, _ in written} & set(in_flight)    # none of them was finished
    for rec, props, _ in written[before:]:
        assert rec.model_ids == [NEW] and props["PB"] == props["PW"] == NEW
    m = w.metrics(w.mark(), w.mark())
    assert m["session_discarded"] == 4 and m["session_discarded_leaves"] == w.pool.stats.discarded_leaves
    assert m["adoptions"] == 1 and m["adopt_lag_s"] >= 0


def test_finish_plays_the_games_in_flight_to_the_end_with_the_old_model(tmp_path):
    rd, cfg = make_run(tmp_path, "finish")
    w, in_flight = play_until_switch(rd, cfg)
    assert w.poll_model()
    assert w.pool.stats.discarded == 0 and all(s.agent.model_id == OLD for s in w.pool.active())
    finish_run(w)
    written = games(rd)
    old = [(rec, props) for rec, props, _ in written if rec.seed in in_flight]
    assert len(old) == 4                                                # all of them finished...
    for rec, props in old:                                              # ...with the old model only
        assert rec.model_ids == [OLD] and props["PB"] == props["PW"] == OLD
    later = [rec for rec, _, _ in written if rec.seed not in in_flight and rec.model_ids != [OLD]]
    assert later and all(rec.model_ids == [NEW] for rec in later)      # new games: the new model
    assert not any(len(rec.model_ids) > 1 for rec, _, _ in written)    # no game mixes models

    # --no-keep-old-games: the window samples only games whose last move the new model chose.
    window = ReplayWindow(rd, 100, 5)
    window.refresh()
    assert window.games == 12
    window.set_model_filter(NEW)
    assert window.games == len(later) and window.filtered_out == 12 - len(later)
    picks = window.sample(50, np.random.default_rng(0))
    assert all(rec.model_ids == [NEW] for rec, _ in picks)
    window.set_model_filter(None)
    assert window.games == 12 and window.filtered_out == 0


def test_switch_continues_the_same_games_with_the_new_model(tmp_path):
    rd, cfg = make_run(tmp_path, "switch")
    w, in_flight = play_until_switch(rd, cfg)
    assert w.poll_model()
    assert all(s.agent.model_id == NEW for s in w.pool.active()) and w.pool.stats.discarded == 0
    finish_run(w)
    switched = [(rec, props, comments) for rec, props, comments in games(rd) if rec.seed in in_flight]
    assert len(switched) == 4
    for rec, props, comments in switched:
        n_old = in_flight[rec.seed]
        assert rec.model_ids == [OLD, NEW]
        assert [rec.model_of_move(t) for t in range(rec.length)] == [OLD] * n_old + [NEW] * (rec.length - n_old)
        assert props["PB"] == props["PW"] == f"{OLD},{NEW}"
        assert f"model {OLD}" in comments[0] and f"model {NEW}" in comments[n_old]
        assert not any("model" in c for c in comments[1:n_old] + comments[n_old + 1:])


def test_agz_self_play_follows_the_best_not_the_latest(tmp_path):
    rd, cfg = make_run(tmp_path, "switch", mode="agz")
    rd.set_best(0)
    w, _ = play_until_switch(rd, cfg)
    assert not w.poll_model() and w.agent.model_id == OLD               # model 10 not promoted yet
    rd.set_best(10)
    assert w.poll_model() and w.agent.model_id == NEW
    assert all(s.agent.model_id == NEW for s in w.pool.active())


@pytest.mark.parametrize("policy", ["discard", "finish", "switch"])
def test_waste_accounting_per_policy(tmp_path, policy):
    rd, cfg = make_run(tmp_path, policy)
    w, _ = play_until_switch(rd, cfg, max_games=8)
    w.poll_model()
    finish_run(w)
    s = w.pool.stats
    if policy == "discard":
        assert s.discarded == 4 and s.discarded_leaves > 0 and s.switched_leaves == 0
    elif policy == "finish":
        assert s.discarded == 0 and s.discarded_leaves == 0 and s.switched_leaves == 0
    else:
        assert s.discarded == 0 and s.discarded_leaves == 0
    assert s.leaves >= s.discarded_leaves + s.switched_leaves
