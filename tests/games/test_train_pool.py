"""The in-process game runner (train.games.pool), records and resignation calibration, with
hand-made evaluators (no network)."""
import math

import numpy as np
import pytest

from engine.core import BLACK, WHITE, Game, Rules, Search, SearchParams, winrate_of
from engine.nets.evaluator import Evaluation, RandomEvaluator
from train.games.pool import Agent, GamePool, GameSpec, PlaySettings
from train.config import SELFPLAY_SEARCH
from train.games.records import (MoveInfo, build_record, positions, read_npz, read_sgf_moves, replay,
                           to_sgf_bytes, write_npz)
from train.selfplay import ResignCalibrator

RULES = Rules.preset("chinese", 0.5)
BLACK_TO_MOVE_PLANE = 14


class Counting:
    """Wraps an evaluator and counts its calls and batch sizes."""

    def __init__(self, inner):
        self.inner = inner
        self.feature_set = inner.feature_set
        self.planes = inner.planes
        self.calls = []

    def evaluate(self, planes, keys=None):
        self.calls.append(len(planes))
        return self.inner.evaluate(planes, keys)


class BlackWinsEvaluator:
    """Uniform policy; value +0.95 when Black is to move, -0.95 when White is."""

    feature_set = "rich"
    planes = 20

    def evaluate(self, planes, keys=None):
        n, size = len(planes), planes.shape[-1]
        black = planes[:, BLACK_TO_MOVE_PLANE, 0, 0] > 0.5
        return Evaluation(np.zeros((n, size * size + 1), np.float32),
                          np.where(black, 0.95, -0.95).astype(np.float32), None, None)


def games_of(specs):
    """A next_game callback handing out ``specs`` one by one."""
    it = iter(specs)
    return lambda slot: next(it, None)


def test_one_forward_pass_per_evaluator_per_step():
    a, b = Counting(RandomEvaluator(1)), Counting(RandomEvaluator(2))
    A, B = Agent("net-a", a, SELFPLAY_SEARCH), Agent("net-b", b, SELFPLAY_SEARCH)   # noise, opening temperature
    settings = PlaySettings(visits=16, temperature_moves=4)
    specs = [GameSpec(5, RULES, A if i % 2 == 0 else B, B if i % 2 == 0 else A, settings, seed=i)
             for i in range(6)]
    pool = GamePool(6, games_of(specs), batch=48, max_leaves_per_search=8)
    steps, finished = 0, []
    while not pool.idle or steps == 0:
        calls_before = len(a.calls), len(b.calls)
        finished += pool.step()
        steps += 1
        assert len(a.calls) - calls_before[0] <= 1 and len(b.calls) - calls_before[1] <= 1
    assert len(finished) == 6
    assert max(a.calls) > 8                     # batched over games, not one tree at a time
    for fg in finished:
        rec = fg.record()
        models = rec.player_models()
        assert models[BLACK] == [fg.spec.black.model_id] and models[WHITE] == [fg.spec.white.model_id]
        assert rec.reason in ("passes", "move cap")
        assert replay(rec).result_string() == rec.result_string()


def test_switch_mid_game_records_both_models():
    old, new = Agent("old", RandomEvaluator(1)), Agent("new", RandomEvaluator(2))
    pool = GamePool(2, games_of([GameSpec(5, RULES, old, old, PlaySettings(visits=8), seed=s)
                                 for s in range(2)]), batch=16)
    while min(len(s.moves) for s in pool.slots) < 4:
        assert not pool.step()
    lengths = [len(s.moves) for s in pool.slots]
    assert pool.apply_new_model(new, "switch") == 2
    finished = []
    while not pool.idle:
        finished += pool.step()
    assert len(finished) == 2
    for fg in finished:
        rec = fg.record()
        assert rec.model_ids == ["old", "new"]
        n_old = lengths[fg.slot]
        assert [rec.model_of_move(t) for t in range(rec.length)] == ["old"] * n_old + ["new"] * (rec.length - n_old)
        assert b"model new" in to_sgf_bytes(rec)


def test_discard_and_finish():
    old, new = Agent("old", RandomEvaluator(1)), Agent("new", RandomEvaluator(2))
    current = [old]
    pool = GamePool(3, lambda slot: GameSpec(5, RULES, current[0], current[0], PlaySettings(visits=8)), batch=16)
    for _ in range(5):
        pool.step()
    current[0] = new
    assert pool.apply_new_model(new, "finish") == 3          # they go on with the old model
    assert all(s.agent is old for s in pool.slots)
    finished = []
    for _ in range(5000):                                     # a budget in steps, not seconds
        finished += pool.step()
        if sum(fg.spec.black is old for fg in finished) >= 3:
            break
    # The three games in flight finished with the old model (a game started after the switch,
    # with the new one, may finish first: a 4-move game ends on two passes).
    assert sum(fg.spec.black is old for fg in finished) == 3
    assert all(fg.spec.white is fg.spec.black for fg in finished)
    assert all(s.agent is new for s in pool.slots)
    # Freshly started games use the new model; a discard drops old ones.
    pool.slots[0].set_agent(BLACK, old)
    pool.slots[0].set_agent(WHITE, old)
    assert pool.apply_new_model(new, "discard") == 1
    assert pool.stats.abandoned == 1
    pool.accepting = False
    while not pool.idle:
        for fg in pool.step():
            assert fg.record().model_ids == ["new"]


def test_resignation_and_no_resign_games():
    agent = Agent("m", BlackWinsEvaluator())
    s = PlaySettings(visits=8, resign=0.05)
    specs = [GameSpec(5, RULES, agent, agent, s, seed=1, allow_resign=True),
             GameSpec(5, RULES, agent, agent, PlaySettings(visits=8, resign=0.05, max_moves=12),
                      seed=2, allow_resign=False)]
    pool = GamePool(2, games_of(specs), batch=16)
    finished = {fg.spec.seed: fg for fg in pool.run()}
    resigned, played = finished[1].record(), finished[2].record()
    assert resigned.reason == "resign" and resigned.winner == BLACK and resigned.result_string() == "B+R"
    # White resigned at its first move the rule allows (engine.play.movepolicy.should_resign: never in
    # the first quarter of the board's points, 6 moves on 5x5): move 8 of the game.
    assert resigned.length == 7 and not resigned.scored
    assert played.no_resign and played.reason == "move cap" and played.length == 12
    assert resigned.resign_winrate == np.float32(0.05) and np.isnan(played.resign_winrate)   # winrates
    # In the no-resign game White's values stayed below the threshold: it would have resigned first.
    assert (played.values[played.colors == WHITE] < -0.9).all()
    below = np.flatnonzero(played.values.astype(np.float32) < -0.9)
    assert int(played.colors[below[0]]) == WHITE


def test_playout_cap_randomisation_records_only_full_searches():
    agent = Agent("m", RandomEvaluator(3), SELFPLAY_SEARCH)
    s = PlaySettings(visits=24, cheap_visits=4, full_search_prob=0.3, max_moves=30)
    pool = GamePool(1, games_of([GameSpec(5, RULES, agent, agent, s, seed=5)]), batch=16)
    (fg,) = list(pool.run())
    rec = fg.record()
    assert 0 < rec.num_positions < rec.length
    for t in range(rec.length):
        target = rec.policy_target(t)
        assert (target.sum() == pytest.approx(1.0, abs=1e-2)) == bool(rec.full[t])
        assert rec.visits[t] >= (24 if rec.full[t] else 4)


def test_regenerated_planes_equal_the_search_planes():
    """Training replays moves through the C core: its planes are what the search fed the net."""
    agent = Agent("m", RandomEvaluator(4))
    pool = GamePool(1, games_of([GameSpec(6, RULES, agent, agent, PlaySettings(visits=8), seed=9)]), batch=8)
    (fg,) = list(pool.run())
    rec = fg.record()
    game = Game(6, RULES)
    ts = list(range(0, rec.length, 3))
    ex = positions(rec, ts)
    for t in range(rec.length):
        if t in ts:
            tree = Search(game, SearchParams(), max_batch=1)
            assert tree.collect(1) == 1
            np.testing.assert_array_equal(tree.planes[0], ex.planes[ts.index(t)])
        game.play(int(rec.moves[t]), int(rec.colors[t]))


def test_records_round_trip(tmp_path):
    agent = Agent("model-0000100", RandomEvaluator(5), SELFPLAY_SEARCH)
    pool = GamePool(1, games_of([GameSpec(5, Rules.preset("tromp-taylor", 7.5), agent, agent,
                                          PlaySettings(visits=8, temperature_moves=3), seed=3)]), batch=8)
    (fg,) = list(pool.run())
    rec = fg.record()
    write_npz(tmp_path / "g.npz", rec)
    back = read_npz(tmp_path / "g.npz")
    for k in ("moves", "colors", "full", "visits", "values", "policy_offsets", "policy_points",
              "policy_probs", "move_model", "ownership"):
        np.testing.assert_array_equal(getattr(back, k), getattr(rec, k))
    assert (back.winner, back.score, back.rules, back.model_ids) == \
        (rec.winner, rec.score, Rules.preset("tromp-taylor", 7.5), ["model-0000100"])
    size, komi, moves, props = read_sgf_moves(to_sgf_bytes(rec))
    assert (size, komi) == (5, 7.5) and props["RU"] == "Tromp-Taylor" and props["PB"] == "model-0000100"
    assert moves == [(int(c), int(p)) for c, p in zip(rec.colors, rec.moves)]
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="bad.npz"):
        read_npz(tmp_path / "bad.npz")


def _no_resign_record(values, colors, winner, threshold=math.nan):
    """A stand-in GameRecord with just what the calibrator reads."""
    class R:
        no_resign = True
    r = R()
    r.values, r.colors, r.winner, r.resign_winrate = (np.array(values, np.float16), np.array(colors, np.int8),
                                                       winner, threshold)
    return r


def rates_one_at_a_time(cal, threshold):
    """The calibration's rates at one threshold, game by game and move by move: the oracle."""
    winner_below = resigns = false = 0
    for winrates, colors, winner, _ in cal.games:
        below = winrates < threshold
        if winner in (BLACK, WHITE):
            winner_below += bool(below[colors == winner].any())
        else:
            winner_below += bool(below.any())
        first = np.flatnonzero(below)
        if len(first):
            resigns += 1
            false += int(colors[first[0]]) == winner or winner not in (BLACK, WHITE)
    return winner_below / max(1, len(cal.games)), (false / resigns if resigns else 0.0), resigns


def test_the_calibration_rates_every_threshold_at_once_as_one_at_a_time():
    """rates_at over the grid (what calibrate uses) against the oracle, threshold by threshold,
    on random games with wins of both colours, draws and an empty game."""
    cal = ResignCalibrator(window=200, min_games=1, cap=0.5)
    rng = np.random.default_rng(5)
    for i in range(120):
        n = int(rng.integers(0, 30)) if i else 0
        values = np.clip(rng.normal(0.0, 0.6, n), -1, 1)
        cal.add(_no_resign_record(values, [1 + (k % 2) for k in range(n)], int(rng.choice([0, BLACK, WHITE]))),
                calibrate=False)
    fp_games, fp_resigns, resigns = cal.rates_at(cal.grid)
    for k, t in enumerate(cal.grid):
        assert (fp_games[k], fp_resigns[k], resigns[k]) == pytest.approx(rates_one_at_a_time(cal, float(t))), t
        assert cal.rates(float(t)) == pytest.approx(rates_one_at_a_time(cal, float(t))), t
    cal.calibrate()
    slow = [float(t) for t in cal.grid if all(r <= cal.fp_target for r in rates_one_at_a_time(cal, float(t))[:2])]
    assert cal.threshold == (slow[-1] if slow else None)


def test_resign_calibration_keeps_false_positives_under_target():
    cal = ResignCalibrator(fp_target=0.05, window=200, min_games=20, cap=0.25)
    rng = np.random.default_rng(0)
    winner_mins = []
    for i in range(100):
        # The winner (Black) dips to a random low value once; the loser sinks to -0.98.
        wmin = float(rng.uniform(-0.97, -0.2))
        winner_mins.append(wmin)
        values = [0.0, 0.0, wmin, -0.3, 0.5, -0.98]
        cal.add(_no_resign_record(values, [1, 2, 1, 2, 1, 2], BLACK))
        if i < 19:
            assert cal.threshold is None
    t = cal.threshold                      # a winrate
    assert t is not None and 0.0 < t <= 0.25
    fp_games, fp_resigns, _ = cal.rates(t)
    assert fp_games <= 0.05 and fp_resigns <= 0.05
    assert np.mean(winrate_of(np.array(winner_mins, np.float16)) < t) <= 0.05
    # One grid step higher would break the target.
    assert cal.rates(round(t + 0.005, 3))[0] > 0.05 or t >= 0.25
    # Measured rate against the winrate that was in force.
    cal.add(_no_resign_record([0.0, -0.99], [1, 2], WHITE, threshold=0.2))
    rate, n = cal.measured_fp_rate()
    assert n == 1 and rate == 1.0          # White, the eventual winner, fell below 0.2 in force


class ValueForEvaluator:
    """Uniform policy; value ``black`` when Black is to move, ``-black`` when White is."""

    feature_set = "rich"
    planes = 20

    def __init__(self, black):
        self.black = black

    def evaluate(self, planes, keys=None):
        n, size = len(planes), planes.shape[-1]
        to_move_black = planes[:, BLACK_TO_MOVE_PLANE, 0, 0] > 0.5
        return Evaluation(np.zeros((n, size * size + 1), np.float32),
                          np.where(to_move_black, self.black, -self.black).astype(np.float32), None, None)


def _players_everywhere(rec, tmp_path):
    """(PB, PW) of the SGF, the npz record's players read back, and the SGF's models comment."""
    write_npz(tmp_path / "g.npz", rec)
    back = read_npz(tmp_path / "g.npz")
    _, _, _, props = read_sgf_moves(to_sgf_bytes(rec))
    return (props["PB"], props["PW"]), back.player_models(), props["C"].splitlines()[0]


class Resigner:
    """A turn agent that resigns at its first genmove."""

    def __init__(self, model_id):
        self.model_id = model_id

    def new_game(self, size, rules):
        pass

    def play(self, color, point):
        pass

    def start_genmove(self, color, seconds):
        pass

    def poll_genmove(self):
        return "resign"


@pytest.mark.parametrize("black_resigns,moves", [(False, 1), (True, 0)])
def test_a_game_that_ends_before_a_colour_moves_names_both_players(tmp_path, black_resigns, moves):
    """White resigns before its first move (1 move), or Black resigns at once, so the game ends
    before that colour moves: the players come from the set-up, not the moves."""
    evaluator = ValueForEvaluator(0.95)
    cand = Resigner("model-0000008") if black_resigns else Agent("model-0000008", evaluator)
    best = Agent("model-0000000", evaluator) if black_resigns else Resigner("model-0000000")
    s = PlaySettings(visits=8, resign=0.05)
    pool = GamePool(1, games_of([GameSpec(5, RULES, cand, best, s, seed=1)]), batch=16)
    (fg,) = list(pool.run())
    rec = fg.record()
    assert rec.reason == "resign" and rec.length == moves
    assert rec.winner == (WHITE if black_resigns else BLACK)
    sgf_players, npz_players, comment = _players_everywhere(rec, tmp_path)
    assert sgf_players == ("model-0000008", "model-0000000")
    assert npz_players == {BLACK: ["model-0000008"], WHITE: ["model-0000000"]}
    assert comment == "models: black model-0000008; white model-0000000"


def test_players_of_a_record_without_moves_and_of_an_older_record(tmp_path):
    """build_record takes the players from the set-up; an npz written before the players fields
    existed (record version 1 without them) still reads, its players derived from the moves."""
    empty = build_record(Game(5, RULES), [], reason="resign", winner=WHITE,
                         players={BLACK: ["a"], WHITE: ["b"]})
    assert empty.length == 0 and empty.model_ids == []
    assert _players_everywhere(empty, tmp_path)[:2] == (("a", "b"), {BLACK: ["a"], WHITE: ["b"]})

    game = Game(5, RULES)
    infos = []
    for t, (color, point) in enumerate([(BLACK, 12), (WHITE, 6), (BLACK, 18)]):
        game.play(point, color)
        infos.append(MoveInfo(color, point, "old" if t < 2 else "new", 8, 0.0, None))
    # Set-up players first, then every model that chose a move for that colour (a switch).
    rec = build_record(game, infos, reason="resign", winner=BLACK, players={BLACK: ["old"], WHITE: ["old"]})
    assert rec.player_models() == {BLACK: ["old", "new"], WHITE: ["old"]}
    write_npz(tmp_path / "new.npz", rec)
    with np.load(tmp_path / "new.npz", allow_pickle=False) as z:
        old_fields = {k: z[k] for k in z.files if k not in ("players_black", "players_white")}
    np.savez_compressed(tmp_path / "old.npz", **old_fields)
    old = read_npz(tmp_path / "old.npz")
    assert old.players == {} and old.player_models() == {BLACK: ["old", "new"], WHITE: ["old"]}
    assert read_npz(tmp_path / "new.npz").player_models() == rec.player_models()


def test_a_switch_names_the_new_model_even_if_it_never_moves():
    """Black is switched to a new model after its only move; White's move ends the game (move
    cap 2): Black's players are both models, though "new" chose no move."""
    old, new = Agent("old", RandomEvaluator(1)), Agent("new", RandomEvaluator(2))
    pool = GamePool(1, games_of([GameSpec(5, RULES, old, old, PlaySettings(visits=8, max_moves=2), seed=1)]),
                    batch=16)
    while not pool.slots[0].moves:
        assert not pool.step()
    assert len(pool.slots[0].moves) == 1 and pool.slots[0].to_move == WHITE
    pool.slots[0].set_agent(BLACK, new)
    (fg,) = list(pool.run())
    rec = fg.record()
    assert rec.length == 2 and rec.model_ids == ["old"]
    assert rec.player_models() == {BLACK: ["old", "new"], WHITE: ["old"]}
    assert read_sgf_moves(to_sgf_bytes(rec))[3]["PB"] == "old,new"


def test_batch_ramp_grows_each_trees_leaves_in_one_forward_pass():
    """batch_ramp 4: a tree sends one leaf per call until it has 8 visits, then one per 4 of its
    visits, up to the pool's cap; trees of different sizes still share one forward pass."""
    def play(ramp, slots):
        ev = Counting(RandomEvaluator(3))
        agent = Agent("net", ev)
        specs = [GameSpec(5, RULES, agent, agent, PlaySettings(visits=32, max_moves=6), seed=i)
                 for i in range(slots)]
        pool = GamePool(slots, games_of(specs), batch=48, max_leaves_per_search=8, batch_ramp=ramp)
        done, steps = [], 0
        while not pool.idle or steps == 0:
            before = len(ev.calls)
            done += pool.step()
            steps += 1
            assert len(ev.calls) - before <= 1
        assert len(done) == slots
        return ev.calls
    ramped, plain = play(4, 1), play(0, 1)
    assert ramped[:8] == [1] * 8 and 1 < max(ramped) <= 8 and len(ramped) > len(plain)
    assert plain[1] == 8
    many = play(4, 3)
    assert many[0] == 3 and max(many) <= 24
