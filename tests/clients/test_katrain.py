"""The real KaTrain drives ``python -m engine analysis`` as its engine.

KaTrain (``pip install katrain``) speaks KataGo's JSON analysis protocol to its engine; its
config lets the user replace KataGo by any command (``altcommand``).  Here KaTrain's own engine
class (``katrain.core.engine.KataGoEngine``) starts our engine headless, and KaTrain's own game
nodes (``GameNode.analyze``, the call its GUI makes for every move of a game) ask for the analysis
of a short 9x9 game played by the shipped net: every turn must come back complete with a
winrate, a score, the best moves (KaTrain's ``candidate_moves``) and the ownership and policy
maps, parsed by KaTrain's code, with no error in its log.  Then KaTrain's pondering: an endless
query (10,000,000 visits, partial reports every 0.25 s) that KaTrain stops with ``terminate``.

Skipped, with the reason, when KaTrain (or its Kivy) cannot be imported.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow          # KaTrain drives the analysis engine

ROOT = Path(__file__).resolve().parents[2]

# Kivy (imported by KaTrain's modules) must not read pytest's command line, log to the console,
# or write into the user's ~/.kivy.
os.environ.setdefault("KIVY_NO_ARGS", "1")
os.environ.setdefault("KIVY_NO_CONSOLELOG", "1")
os.environ.setdefault("KIVY_NO_FILELOG", "1")
os.environ.setdefault("KIVY_HOME", str(Path(os.environ.get("XDG_CACHE_HOME", "/tmp")) / "kivy-test-home"))

try:
    from katrain.core.constants import OUTPUT_ERROR
    from katrain.core.engine import KataGoEngine
    from katrain.core.game import KaTrainSGF
except Exception as exc:  # noqa: BLE001 - ImportError, or Kivy failing to start
    pytest.skip(f"KaTrain cannot be imported ({type(exc).__name__}: {exc}); "
                "pip install katrain", allow_module_level=True)

# A game of the shipped 9x9 net against itself (komi 7, Chinese rules), 14 moves.
GAME_SGF = ("(;GM[1]FF[4]SZ[9]KM[7]RU[Chinese];B[ee];W[gc];B[cg];W[gg];B[cc];W[eg];B[ce];"
            "W[dc];B[db];W[ec];B[gf];W[fg];B[hg];W[hh])")
TIMEOUT = 600


class HeadlessKaTrain:
    """What KataGoEngine needs from KaTrain's app object: ``log`` and a call for popups."""

    def __init__(self):
        self.logs: list[tuple[int, str]] = []

    def log(self, message, level=0):
        self.logs.append((level, str(message)))

    def __call__(self, *args, **kwargs):          # engine_recovery_popup and friends
        self.logs.append((OUTPUT_ERROR, f"popup {args}"))

    def errors(self) -> list[str]:
        return [m for level, m in self.logs if level == OUTPUT_ERROR]


@pytest.fixture
def katrain_engine(tmp_path):
    app = HeadlessKaTrain()
    app.engine_log = tmp_path / "engine.log"
    # KaTrain runs altcommand through a shell; exec makes the engine the process KaTrain stops
    command = (f"exec env PYTHONPATH={ROOT} {sys.executable} -m engine analysis --threads 1 "
               f"--seed 1 --quiet --log {app.engine_log}")
    config = {"altcommand": command, "max_visits": 24, "fast_visits": 8, "max_time": 120.0,
              "wide_root_noise": 0.0, "_enable_ownership": True}
    engine = KataGoEngine(app, config)
    yield app, engine
    engine.shutdown(finish=False)


def _wait(app: HeadlessKaTrain, condition, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            log = app.engine_log.read_text()[-3000:] if app.engine_log.exists() else ""
            raise AssertionError(f"KaTrain did not get {what} within {TIMEOUT} s; KaTrain's log: "
                                 f"{app.logs[-10:]}; the engine's traffic: {log}")
        time.sleep(0.1)


def _nodes():
    root = KaTrainSGF.parse_sgf(GAME_SGF)
    nodes = [root]
    while nodes[-1].children:
        nodes.append(nodes[-1].children[0])
    return nodes


def test_katrain_analyses_a_game_on_every_turn(katrain_engine):
    app, engine = katrain_engine
    nodes = _nodes()
    assert len(nodes) == 15
    for node in nodes:
        node.analyze(engine)
    _wait(app, lambda: all(n.analysis_complete for n in nodes) or app.errors(), "every turn's analysis")
    assert app.errors() == []
    for node in nodes:
        assert node.analysis_complete
        assert 0.0 <= node.winrate <= 1.0
        assert isinstance(node.score, float)
        assert node.root_visits >= 24
        best = node.candidate_moves
        assert best and best[0]["order"] == 0 and isinstance(best[0]["move"], str)
        assert all(isinstance(m["scoreLead"], float) and isinstance(m["pointsLost"], float)
                   for m in best)
        assert best[0]["pv"][0] == best[0]["move"]
        assert len(node.ownership) == 81 and all(-1.0 <= v <= 1.0 for v in node.ownership)
        assert len(node.policy) == 82
        if node.parent is not None:
            assert isinstance(node.points_lost, float)
    # KaTrain asks for Black's view (reportAnalysisWinratesAs BLACK): after 14 moves the
    # ownership under Black's stones is Black's, under White's White's.
    last = nodes[-1]
    board = {m.coords: m.player for n in nodes for m in n.moves}
    own = {(x, y): last.ownership[(8 - y) * 9 + x] for x, y in board}
    assert sum(own[p] for p, who in board.items() if who == "B") > 0
    assert sum(own[p] for p, who in board.items() if who == "W") < 0


def test_katrain_pondering_is_terminated(katrain_engine):
    app, engine = katrain_engine
    node = _nodes()[3]
    node.analyze(engine, ponder=True)
    _wait(app, lambda: node.analysis_exists or app.errors(), "a partial report while pondering")
    assert app.errors() == []
    assert not node.analysis_complete             # only partial reports so far
    engine.stop_pondering()                       # KaTrain's terminate action
    _wait(app, lambda: node.analysis_complete or app.errors(), "the final report after terminate")
    assert app.errors() == []
    assert node.root_visits < 10_000_000 and node.candidate_moves
    _wait(app, engine.is_idle, "an idle engine")


def test_katrain_at_its_defaults_plays_japanese_rules_without_a_warning(katrain_engine):
    """KaTrain's defaults (a record without SZ, KM or RU: 19x19, komi 6.5, Japanese rules, as
    its config.json starts every game): the queries say ``"rules": "japanese"`` and our engine
    analyses them by territory without a warning."""
    app, engine = katrain_engine
    root = KaTrainSGF.parse_sgf("(;GM[1]FF[4];B[pd];W[dp];B[pp];W[dd])")
    nodes = [root]
    while nodes[-1].children:
        nodes.append(nodes[-1].children[0])
    assert (root.board_size, root.komi, root.ruleset) == ((19, 19), 6.5, "japanese")
    for node in nodes:
        node.analyze(engine)
    _wait(app, lambda: all(n.analysis_complete for n in nodes) or app.errors(), "every turn's analysis")
    assert app.errors() == []
    assert not [m for _, m in app.logs if "'field': 'rules'" in m]   # warnings come back as dicts
    traffic = app.engine_log.read_text()
    assert '"rules": "japanese"' in traffic or '"rules":"japanese"' in traffic
    assert '"field":"rules"' not in traffic.replace(" ", "")
    for node in nodes:
        assert node.analysis_complete and isinstance(node.score, float)
        assert len(node.ownership) == 361
