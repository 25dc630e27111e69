"""The one game runner with every kind of player: GTP programs (turn agents, polled) beside
batched self-play, game specs with handicap and opening moves, forfeits by time, crash and
illegal move, and the one GameRecord naming both players of a game without moves."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from sgfmill import sgf

from engine import coords
from engine.core import BLACK, WHITE, Rules
from engine.nets.evaluator import RandomEvaluator
from train.match.gtp_agent import GTPAgent
from train.games.pool import Agent, GamePool, GameSpec, MoveLimit, PlaySettings
from train.games.records import positions, read_npz, replay, to_sgf_bytes, write_npz

FAKES = Path(__file__).resolve().parents[1] / "fake_engines"
RULES = Rules.preset("chinese", 0.5)
SETTINGS = PlaySettings(visits=8, max_moves=30, record_policy=False)


def fake(script: str = "fake_engine.py", *options: str) -> str:
    return shlex.join([sys.executable, str(FAKES / script), *options])


def play_all(specs, slots=None, **pool_args):
    """Plays ``specs`` (tag = index) in one pool; returns (finished games by index, the pool)."""
    todo = iter(enumerate(specs))

    def next_game(slot):
        item = next(todo, None)
        if item is None:
            return None
        item[1].tag = item[0]
        return item[1]

    pool = GamePool(slots or len(specs), next_game, **pool_args)
    done = {g.spec.tag: g for g in pool.run()}
    return done, pool


class Recorder:
    """An in-process turn agent that plays a script (then passes) and records what it is told."""

    def __init__(self, name, script=()):
        self.model_id = name
        self.script = list(script)
        self.told = []
        self.size = 0
        self.answer = None

    def new_game(self, size, rules):
        self.size, self.told = size, []

    def play(self, color, point):
        self.told.append((color, point))

    def start_genmove(self, color, seconds):
        self.answer = coords.from_gtp(self.script.pop(0), self.size) if self.script else self.size * self.size

    def poll_genmove(self):
        return self.answer


def test_gtp_engine_is_polled_while_selfplay_games_batch():
    """A slow GTP engine (0.2 s per genmove) plays in one slot; two self-play games share the
    pool and keep getting forward passes while it thinks."""
    net = Agent("net", RandomEvaluator(3))
    gtp = GTPAgent(fake("fake_engine.py", "--move-delay", "0.2"), label="fake")
    specs = [GameSpec(5, RULES, gtp, net, SETTINGS, seed=1),
             GameSpec(5, RULES, net, net, SETTINGS, seed=2), GameSpec(5, RULES, net, net, SETTINGS, seed=3)]
    todo = iter(enumerate(specs))

    def next_game(slot):
        item = next(todo, None)
        if item is not None:
            item[1].tag = item[0]
        return None if item is None else item[1]

    pool = GamePool(3, next_game, batch=16)
    passes_while_waiting = 0
    done = {}
    try:
        while not pool.idle or not done:
            waiting = any(s.spec is not None and s.spec.tag == 0 and s.turn_based for s in pool.playing())
            before = pool.stats.forward_passes
            for g in pool.step():
                done[g.spec.tag] = g
            if waiting:
                passes_while_waiting += pool.stats.forward_passes - before
    finally:
        gtp.close()
    assert sorted(done) == [0, 1, 2]
    assert passes_while_waiting > 10
    rec = done[0].record()
    assert rec.player_models() == {BLACK: ["FakeEngine 0.1"], WHITE: ["net"]}
    black = [t for t in range(rec.length) if rec.colors[t] == BLACK]
    assert black and all(rec.model_of_move(t) == "FakeEngine 0.1" for t in black)
    assert all(rec.seconds[t] >= 0.2 for t in black if rec.moves[t] != 25)   # its thinking time
    assert replay(rec).moves == done[0].game.moves


def test_handicap_and_opening_moves_from_the_spec(tmp_path):
    black, white = Recorder("B"), Recorder("W", ["A1"])
    opening = [coords.from_gtp("E5", 9), coords.from_gtp("D5", 9)]
    spec = GameSpec(9, RULES, black, white, SETTINGS, handicap=2, opening=opening)
    done, _ = play_all([spec])
    game = done[0]
    stones = coords.fixed_handicap(9, 2)
    rec = game.record()
    assert [int(p) for p in rec.setup] == stones
    # White moves first after the handicap; the opening is played into both players
    assert [(int(c), int(p)) for c, p in zip(rec.colors[:3], rec.moves[:3])] == [
        (WHITE, opening[0]), (BLACK, opening[1]), (WHITE, coords.from_gtp("A1", 9))]
    assert rec.opening_moves == 2 and not rec.full[:2].any()
    assert black.told[:4] == [(BLACK, stones[0]), (BLACK, stones[1]), (WHITE, opening[0]), (BLACK, opening[1])]
    assert white.told[:4] == black.told[:4]
    assert rec.reason == "passes" and rec.result_string() == replay(rec).result_string()
    write_npz(tmp_path / "g.npz", rec)
    back = read_npz(tmp_path / "g.npz")
    assert [int(p) for p in back.setup] == stones and back.opening_moves == 2
    assert replay(back).moves == game.game.moves                 # handicap stones included
    pos = positions(back, [0])
    assert pos.value.shape == (1,)
    root = sgf.Sgf_game.from_bytes(to_sgf_bytes(back)).get_root()
    assert root.get("HA") == 2 and len(root.get_setup_stones()[0]) == 2
    assert "random opening" in root.get("GC")


def test_gtp_forfeits_by_illegal_move_crash_and_time():
    net = Agent("net", RandomEvaluator(5))
    cheat = GTPAgent(fake("fake_engine.py", "--illegal-after", "2"), label="cheat")
    crash = GTPAgent(fake("crashing_engine.py", "--crash-after", "1"), label="crash")
    hang = GTPAgent(fake("hanging_engine.py", "--hang-after", "1"), label="hang")
    specs = [GameSpec(5, RULES, net, cheat, SETTINGS), GameSpec(5, RULES, crash, net, SETTINGS),
             GameSpec(5, RULES, net, hang, SETTINGS, white_limit=MoveLimit(seconds=0.5))]
    try:
        done, _ = play_all(specs, batch=16)
    finally:
        for a in (cheat, crash, hang):
            a.close()
    illegal, crashed, timed = (done[i].record() for i in range(3))
    assert (illegal.reason, illegal.winner, illegal.result_string()) == ("illegal", BLACK, "B+F")
    assert "White (FakeEngine 0.1): illegal move" in illegal.detail and "occupied" in illegal.detail
    assert (crashed.reason, crashed.winner, crashed.result_string()) == ("crash", WHITE, "W+F")
    assert crashed.length == 0 and "Black (CrashingEngine 0.1): genmove" in crashed.detail
    assert (timed.reason, timed.winner, timed.result_string()) == ("time", BLACK, "B+T")
    assert timed.length == 1 and "lost on time" in timed.comment()


class Refusing(Recorder):
    def new_game(self, size, rules):
        from train.games.gtp_client import GTPError
        raise GTPError("boardsize 5", "unacceptable size")


def test_a_game_without_moves_names_both_players(tmp_path):
    net = Agent("model-0000100", RandomEvaluator(1))
    done, _ = play_all([GameSpec(5, RULES, Refusing("Black engine"), net, SETTINGS),
                        GameSpec(5, RULES, net, Refusing("White engine"), SETTINGS)])
    for game, loser, name, result in ((done[0], BLACK, "Black engine", "W+F"),
                                      (done[1], WHITE, "White engine", "B+F")):
        rec = game.record()
        assert (rec.length, rec.reason, rec.winner) == (0, "error", 3 - loser)
        write_npz(tmp_path / "g.npz", rec)
        back = read_npz(tmp_path / "g.npz")
        names = back.player_models()
        assert names[loser] == [name] and names[3 - loser] == ["model-0000100"]
        root = sgf.Sgf_game.from_bytes(to_sgf_bytes(back)).get_root()
        assert (root.get("PB"), root.get("PW")) == (names[BLACK][0], names[WHITE][0])
        assert root.get("RE") == back.result_string() == result
        assert f"{'Black' if loser == BLACK else 'White'} ({name}): new game failed" in back.detail
        assert "unacceptable size" in back.detail and "forfeits" in root.get("GC")
