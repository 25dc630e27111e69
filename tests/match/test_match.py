"""Tests for train.games.gtp_client and train.match: the GTP client, one game through the game runner
(train.match.schedule.play_game over train.games.pool.GamePool), and ``python -m train.match`` end to end
with fake engines and GNU Go."""

from __future__ import annotations

import json
import random
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sgfmill import sgf

from train.games.gtp_client import EngineDied, EngineTimeout, GTPClient, GTPError

ROOT = Path(__file__).resolve().parents[2]
FAKES = Path(__file__).resolve().parents[1] / "fake_engines"
try:
    import engine.core  # noqa: F401  (the C extension; built by pip install -e .)

    HAS_CORE = True
except ImportError:
    HAS_CORE = False
needs_core = pytest.mark.skipif(not HAS_CORE, reason="engine.core (the C extension) is not built")
GNUGO = shutil.which("gnugo") or (
    "/usr/games/gnugo" if Path("/usr/games/gnugo").exists() else None
)
needs_gnugo = pytest.mark.skipif(
    GNUGO is None, reason="GNU Go is not installed (apt install gnugo)"
)


def fake(script: str = "fake_engine.py", *options: str) -> str:
    """Command line for one of the fake engines in tests/fake_engines."""
    return shlex.join([sys.executable, str(FAKES / script), *options])


# ------------------------------------------------------------------ GTP client


def test_client_replies_ids_multiline_and_errors():
    with GTPClient(fake(), default_timeout=10) as client:
        assert client.send("name") == "FakeEngine"
        assert client.send("protocol_version") == "2"
        assert client.send("fake-multiline") == "line one\nline two\nline three"
        assert client.knows("genmove") and not client.knows("kata-analyze")
        with pytest.raises(GTPError) as info:
            client.send("fake-fail")
        assert info.value.message == "failing as asked"
        assert info.value.command == "fake-fail"
        with pytest.raises(GTPError, match="unknown command"):
            client.send("no_such_command")
        assert client.send("  boardsize   9 ") == ""  # whitespace collapsed, engine still fine
        assert client.alive


def test_client_tolerates_engines_without_ids_and_chatter():
    with GTPClient(fake("fake_engine.py", "--no-ids", "--chatter"), default_timeout=10) as client:
        assert client.send("name") == "FakeEngine"
        assert client.send("fake-multiline").splitlines()[-1] == "line three"
        with pytest.raises(GTPError):
            client.send("fake-fail")


def test_client_timeout_kills_and_restart_recovers():
    client = GTPClient(fake(), default_timeout=10)
    try:
        started = time.monotonic()
        with pytest.raises(EngineTimeout):
            client.send("fake-sleep 30", timeout=0.3)
        assert time.monotonic() - started < 5
        assert not client.alive
        with pytest.raises(EngineDied):
            client.send("name")
        old_pid = client.pid
        client.restart()
        assert client.alive and client.pid != old_pid
        assert client.send("name") == "FakeEngine"
    finally:
        client.close()


def test_client_detects_exit_with_code_and_stderr():
    client = GTPClient(fake("crashing_engine.py", "--crash-after", "1"), default_timeout=10)
    try:
        client.send("boardsize 9")
        with pytest.raises(EngineDied) as info:
            client.send("genmove b")
        assert info.value.returncode == 3
        assert "crashing as asked" in str(info.value)
        assert not client.alive
    finally:
        client.close()


def test_client_start_failure_and_clean_quit(tmp_path):
    with pytest.raises(EngineDied):
        GTPClient(str(tmp_path / "no-such-engine"))
    client = GTPClient(fake(), default_timeout=10)
    assert client.close() == 0
    assert client.close() == 0  # idempotent


# ------------------------------------------------------------------ game runner


class ScriptedPlayer:
    """In-process turn agent: plays a fixed list of GTP vertices, then passes; each answer comes
    ``delay`` seconds after the genmove started (polled, never blocking)."""

    def __init__(self, name: str, moves: list[str] | None = None, delay: float = 0.0):
        self.model_id = name
        self.script = list(moves or [])
        self.delay = delay
        self.received: list[tuple[int, int]] = []
        self.size = 0
        self.asked = 0.0

    def new_game(self, size: int, rules) -> None:
        from engine import coords

        self.size = size
        self.moves = [m if m == "resign" else coords.from_gtp(m, size) for m in self.script]
        self.received = []

    def play(self, color: int, point: int) -> None:
        self.received.append((color, point))

    def start_genmove(self, color: int, seconds: float | None) -> None:
        self.asked = time.monotonic()

    def poll_genmove(self) -> int | str | None:
        if time.monotonic() - self.asked < self.delay:
            return None
        return self.moves.pop(0) if self.moves else self.size * self.size


def moves_of(record) -> list[tuple[int, int]]:
    return [(int(c), int(p)) for c, p in zip(record.colors, record.moves)]


@needs_core
def test_run_game_two_passes_scored_by_core():
    from engine import coords
    from engine.core import BLACK, WHITE, Game, Rules
    from engine.rules import Rules
    from train.match.config import GameSettings
    from train.match.schedule import play_game as run_game

    settings = GameSettings(size=5, rules=Rules.preset("chinese", 0.5))
    black = ScriptedPlayer("B", ["C3", "B2"])
    white = ScriptedPlayer("W", ["D4"])
    record = run_game(black, white, settings)
    assert record.reason == "passes" and record.referee_score is None
    c3, d4, b2 = (coords.from_gtp(v, 5) for v in ("C3", "D4", "B2"))
    assert moves_of(record) == [(BLACK, c3), (WHITE, d4), (BLACK, b2), (WHITE, 25), (BLACK, 25)]
    replay = Game(5, Rules.preset("chinese", 0.5))
    for color, point in moves_of(record):
        replay.play(point, color)
    assert record.final_score == replay.score()
    assert record.result_string() == replay.result_string()
    assert record.winner == (BLACK if replay.score() > 0 else WHITE)
    # each side was told the other's moves
    assert [p for _, p in black.received] == [p for c, p in moves_of(record) if c == WHITE]
    assert [p for _, p in white.received] == [p for c, p in moves_of(record) if c == BLACK]


@needs_core
def test_run_game_resign_illegal_and_move_limit():
    from engine.core import BLACK, WHITE
    from engine.rules import Rules
    from train.match.config import GameSettings, inproc_play
    from train.match.schedule import play_game as run_game

    settings = GameSettings(size=5, rules=Rules(komi=7.5))
    record = run_game(ScriptedPlayer("B", ["C3"]), ScriptedPlayer("W", ["resign"]), settings)
    assert (record.winner, record.reason, record.result_string()) == (BLACK, "resign", "B+R")

    record = run_game(ScriptedPlayer("B", ["C3"]), ScriptedPlayer("W", ["C3"]), settings)
    assert (record.winner, record.reason, record.result_string()) == (BLACK, "illegal", "B+F")
    assert "occupied" in record.detail

    black = ScriptedPlayer("B", ["A1", "B1", "C1"])
    white = ScriptedPlayer("W", ["A5", "B5", "C5"])
    record = run_game(black, white, GameSettings(size=5, rules=Rules(komi=0.5), play=inproc_play(max_moves=4)))
    assert record.reason == "move cap" and len(record.moves) == 4
    assert record.result_string() in ("B+0.5", "W+0.5")
    assert record.winner in (BLACK, WHITE)


class RefusingPlayer(ScriptedPlayer):
    """Fails ``new_game`` (a GTP engine refusing its set-up): it forfeits before any move."""

    def new_game(self, size: int, rules) -> None:
        raise GTPError("boardsize 5", "unacceptable size")


@needs_core
def test_games_that_end_before_a_move_name_both_players():
    from engine.core import BLACK, WHITE
    from engine.rules import Rules
    from train.match.config import GameSettings
    from train.games.records import to_sgf_bytes as game_to_sgf
    from train.match.schedule import play_game as run_game

    settings = GameSettings(size=5, rules=Rules(komi=7.5))
    resigned = run_game(ScriptedPlayer("Black engine", ["C3"]), ScriptedPlayer("White engine", ["resign"]),
                        settings)
    forfeit = run_game(ScriptedPlayer("Black engine"), RefusingPlayer("White engine"), settings)
    assert (resigned.reason, resigned.winner, len(resigned.moves)) == ("resign", BLACK, 1)
    assert (forfeit.reason, forfeit.winner, moves_of(forfeit)) == ("error", BLACK, [])
    for record in (resigned, forfeit):
        root = sgf.Sgf_game.from_bytes(game_to_sgf(record)).get_root()
        assert (root.get("PB"), root.get("PW")) == ("Black engine", "White engine")
    assert forfeit.result_string() == "B+F" and "White (White engine)" in forfeit.detail
    assert WHITE not in {c for c, _ in moves_of(resigned)}


@needs_core
def test_run_game_time_limit_for_in_process_players():
    from engine.core import WHITE
    from train.match.config import GameSettings
    from train.match.schedule import play_game as run_game

    settings = GameSettings(size=5, move_time_limit=0.05)
    record = run_game(ScriptedPlayer("B", ["C3"], delay=0.2), ScriptedPlayer("W"), settings)
    assert (record.winner, record.reason, record.result_string()) == (WHITE, "time", "W+T")


@needs_core
def test_run_game_handicap_opening_and_referee():
    from engine import coords
    from engine.core import BLACK, WHITE
    from engine.rules import Rules
    from train.match.config import GameSettings
    from train.match.schedule import play_game as run_game

    class Referee:
        def __init__(self, value):
            self.value = value

        def score(self, game):
            if isinstance(self.value, Exception):
                raise self.value
            return self.value

        def close(self):
            pass

    settings = GameSettings(size=9, rules=Rules(komi=0.5), handicap=2)
    black, white = ScriptedPlayer("B"), ScriptedPlayer("W")
    opening = [coords.from_gtp("E5", 9), coords.from_gtp("D5", 9)]
    record = run_game(black, white, settings, opening=opening, referee=Referee(-3.5))
    stones = coords.fixed_handicap(9, 2)
    assert [int(p) for p in record.setup] == stones
    # White moves first after the handicap; the opening is played into both players
    assert moves_of(record)[:2] == [(WHITE, opening[0]), (BLACK, opening[1])]
    assert record.opening_moves == 2
    assert black.received[:4] == [(BLACK, stones[0]), (BLACK, stones[1]),
                                  (WHITE, opening[0]), (BLACK, opening[1])]
    assert (record.referee_score, record.final_score, record.result_string()) == (-3.5, -3.5, "W+3.5")
    assert "counted by referee" in record.comment()

    record = run_game(ScriptedPlayer("B"), ScriptedPlayer("W"), settings, opening=opening,
                      referee=Referee(GTPError("final_score", "cannot score")))
    assert record.referee_score is None and "Referee failed" in record.detail

    with pytest.raises(ValueError):
        run_game(ScriptedPlayer("B"), ScriptedPlayer("W"), settings, opening=[stones[0]])


@needs_core
def test_random_opening_is_legal_and_reproducible():
    from engine.core import BLACK, WHITE, Game, Rules
    from engine import coords
    from engine.rules import Rules
    from train.match.config import GameSettings
    from train.match.schedule import random_opening

    settings = GameSettings(size=7, rules=Rules(komi=7.5), handicap=2)
    first = random_opening(settings, 10, random.Random("seed"))
    assert first == random_opening(settings, 10, random.Random("seed"))
    assert len(first) == 10 and 49 not in first
    game = Game(7, Rules.preset("chinese", 7.5))
    for p in coords.fixed_handicap(7, 2):
        game.play(p, BLACK)
    game.set_to_move(WHITE)
    for p in first:
        game.play(p)  # raises if illegal


def test_parse_final_score():
    if not HAS_CORE:
        pytest.skip("engine.core (the C extension) is not built")
    from train.match.referee import parse_final_score

    assert parse_final_score("B+3.5") == 3.5
    assert parse_final_score("W+0.5") == -0.5
    assert parse_final_score("w+12") == -12.0
    assert parse_final_score("0") == 0.0
    for bad in ("B+R", "", "Black wins"):
        with pytest.raises(ValueError):
            parse_final_score(bad)


@needs_core
def test_schedule_alternates_colours():
    from train.match.config import EngineSpec
    from train.match.schedule import make_schedule

    two = make_schedule([EngineSpec("A", "a"), EngineSpec("B", "b")], 4)
    assert [(g.black, g.white) for g in two] == [("A", "B"), ("B", "A")] * 2
    three = make_schedule([EngineSpec(x, x) for x in "XYZ"], 2)
    assert len(three) == 6 and [g.index for g in three] == list(range(6))
    assert {(g.black, g.white) for g in three} == {
        ("X", "Y"), ("X", "Z"), ("Y", "Z"), ("Y", "X"), ("Z", "X"), ("Z", "Y")}


# ---------------------------------------------------------- match end to end


def load_sgf(path: Path) -> sgf.Sgf_game:
    return sgf.Sgf_game.from_bytes(path.read_bytes())


def run_cli(tmp_path: Path, *args: str) -> dict:
    from train.match.cli import main

    status = main([*args, "--sgf-dir", str(tmp_path / "sgf"),
                   "--results", str(tmp_path / "results.json"), "--no-progress"])
    assert status == 0
    return json.loads((tmp_path / "results.json").read_text())


@needs_core
def test_crashing_engine_forfeits_and_match_finishes(tmp_path):
    results = run_cli(tmp_path, "--black", fake(), "--white", fake("crashing_engine.py"),
                      "--games", "2", "--size", "7", "--komi", "7.5")
    games = results["games"]
    assert results["complete"] and len(games) == 2
    assert [g["reason"] for g in games] == ["crash", "crash"]
    assert [g["winner"] for g in games] == ["A", "A"]
    assert [g["result"] for g in games] == ["B+F", "W+F"]
    pair = results["pairs"][0]
    assert (pair["a_wins"], pair["b_wins"]) == (2, 0)
    assert pair["a_as_black"]["wins"] == 1 and pair["a_as_white"]["wins"] == 1
    for entry in games:
        root = load_sgf(Path(entry["sgf"])).get_root()
        assert root.get("RE") == entry["result"]
        assert "crashed" in root.get("GC")
    assert load_sgf(Path(games[0]["sgf"])).get_root().get("PW") == "CrashingEngine 0.1"


@needs_core
def test_hanging_engine_loses_on_time(tmp_path):
    started = time.monotonic()
    results = run_cli(tmp_path, "--black", fake("hanging_engine.py"), "--white", fake(),
                      "--games", "2", "--size", "7", "--move-time", "1", "--time-margin", "0.5")
    assert time.monotonic() - started < 30
    games = results["games"]
    assert [g["reason"] for g in games] == ["time", "time"]
    assert [g["result"] for g in games] == ["W+T", "B+T"]
    assert results["settings"]["move_time_limit"] == 1.5


@needs_core
def test_illegal_move_and_handicap(tmp_path):
    cheat = fake("fake_engine.py", "--illegal-after", "2")
    results = run_cli(tmp_path, "--black", fake(), "--white", cheat,
                      "--games", "1", "--size", "9", "--handicap", "2")
    (game,) = results["games"]
    assert (game["reason"], game["result"], game["handicap"]) == ("illegal", "B+F", 2)
    root = load_sgf(Path(game["sgf"])).get_root()
    assert root.get("HA") == 2 and len(root.get_setup_stones()[0]) == 2


@needs_core
def test_round_robin_ratings(tmp_path):
    results = run_cli(
        tmp_path,
        "--engine", f"X={fake()}",
        "--engine", f"Y={fake('fake_engine.py', '--resign-after', '1', '--name', 'Resigner')}",
        "--engine", f"Z={fake('fake_engine.py', '--always-pass', '--name', 'Passer')}",
        "--games", "2", "--size", "5", "--komi", "0.5", "--parallel", "2",
    )
    assert results["games_played"] == 6 and len(results["pairs"]) == 3
    assert list(results["ratings"]) == ["X", "Z", "Y"]
    assert results["ratings"]["X"]["elo"] == 0.0  # first engine is the anchor
    points = {k: v["points"] for k, v in results["ratings"].items()}
    assert points == {"X": 4.0, "Z": 2.0, "Y": 0.0}
    assert len(list((tmp_path / "sgf").glob("*.sgf"))) == 6


@needs_core
def test_sprt_stops_early(tmp_path):
    resigner = fake("fake_engine.py", "--resign-after", "1")
    results = run_cli(tmp_path, "--black", fake(), "--white", resigner,
                      "--games", "200", "--size", "5", "--sprt", "0,35", "--parallel", "2")
    assert results["stopped_by_sprt"] and results["complete"]
    # each win adds about 0.096 to the LLR; 31 wins cross log(0.95 / 0.05) = 2.94.  Games the
    # two workers started before the verdict (a few, more on a loaded machine) still finish.
    assert 31 <= results["games_played"] <= 37
    assert results["pairs"][0]["sprt"]["verdict"] == "accept"


@pytest.mark.slow          # a match against GNU Go
@needs_core
@needs_gnugo
def test_gnugo_match_end_to_end(tmp_path):
    """GNU Go level 1 vs level 2, 7x7, via the real command line, with a GNU Go referee."""
    from engine import coords
    from engine.core import Game, Rules

    sgf_dir = tmp_path / "sgf"
    results_path = tmp_path / "results.json"
    cmd = [
        sys.executable, "-m", "train.match",
        "--black", f"{GNUGO} --mode gtp --level 1",
        "--white", f"{GNUGO} --mode gtp --level 2",
        "--games", "2", "--size", "7", "--komi", "9", "--rules", "chinese",
        "--random-moves", "2", "--seed", "3", "--parallel", "2", "--move-time", "5",
        "--referee", f"{GNUGO} --mode gtp --chinese-rules",
        "--sgf-dir", str(sgf_dir), "--results", str(results_path), "--sprt", "0,35",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Elo A - B" in done.stdout and "SPRT" in done.stdout
    assert "Average time per move" in done.stdout
    results = json.loads(results_path.read_text())
    assert results["complete"] and results["games_played"] == 2
    assert results["engines"]["A"]["gtp_name"] == "GNU Go"
    sgfs = sorted(sgf_dir.glob("*.sgf"))
    assert len(sgfs) == 2
    openings = []
    for entry, path in zip(results["games"], sgfs):
        assert Path(entry["sgf"]) == path
        game = load_sgf(path)
        root = game.get_root()
        assert root.get("PB").startswith("GNU Go 3") and root.get("PW").startswith("GNU Go 3")
        assert root.get("PB") != root.get("PW")  # "[A]" / "[B]" tell them apart
        assert root.get("RE") == entry["result"] and root.get("KM") == 9.0
        assert root.get("RU") == "Chinese"
        moves = [(c, coords.from_sgfmill(m, 7)) for c, m in
                 (node.get_move() for node in game.get_main_sequence()[1:])]
        assert len(moves) == entry["moves"]
        replay = Game(7, Rules.preset("chinese", 9))
        for colour, point in moves:
            replay.play(point, 1 if colour == "b" else 2)
        openings.append(moves[:2])
        assert entry["reason"] in ("passes", "resign", "move cap")
        if entry["reason"] == "passes":
            assert entry["scored_by"] == "referee"
    # both colours of the pair started from the same random opening
    assert openings[0] == openings[1]
    pair = results["pairs"][0]
    assert pair["a_wins"] + pair["b_wins"] + pair["draws"] == 2
    assert pair["sprt"]["verdict"] == "continue"


@needs_core
def test_repeated_games_are_counted_and_flagged(tmp_path, capsys):
    """Deterministic engines replay the same game: the report says how many were distinct (a
    KataGo match once showed 18-0 over what were 5 games), and random openings make them differ."""
    passer = fake("fake_engine.py", "--always-pass", "--name", "Passer")
    results = run_cli(tmp_path, "--black", fake(), "--white", passer, "--games", "4", "--size", "5")
    assert results["games_played"] == 4 and results["distinct_games"] == 2
    assert "only 2 distinct games among 4" in capsys.readouterr().out
    results = run_cli(tmp_path / "r", "--black", fake(), "--white", passer, "--games", "4",
                      "--size", "5", "--random-moves", "3", "--seed", "5")
    assert results["distinct_games"] == 4
    assert "distinct" not in capsys.readouterr().out
