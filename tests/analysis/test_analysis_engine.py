"""``python -m engine analysis``: KataGo's JSON analysis protocol (engine/analysis/engine.py).

In-process through :class:`AnalysisEngine` (queries in, scheduler rounds stepped by hand, lines
out) with the uniform and the pseudo-random evaluators and budgets in visits: field names and
types as KataGo 1.15 documents them, turn numbering, the perspective of reportAnalysisWinratesAs,
the order of moveInfos, KataGo's error and warning objects, priority with one position at a time,
terminate, reports during the search on a fake clock.  Then the real process: the command of
issue 30 on the shipped 9x9 net, bad lines among good ones, a tiny KataGo-format net.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.analysis.engine import AnalysisConfig, AnalysisEngine
from engine.analysis.query import QueryDefaults
from engine.analysis.report import implied_score_stdev
from engine.nets.evaluator import RandomEvaluator, UniformEvaluator

ROOT = Path(__file__).resolve().parents[2]

MOVE_INFO_FIELDS = {
    "move": str, "visits": int, "edgeVisits": int, "weight": float, "edgeWeight": float,
    "winrate": float, "lcb": float, "utility": float, "utilityLcb": float, "prior": float,
    "order": int, "pv": list, "scoreLead": float, "scoreMean": float, "scoreSelfplay": float,
    "scoreStdev": float,
}
ROOT_INFO_FIELDS = {
    "visits": int, "weight": float, "winrate": float, "scoreLead": float, "scoreSelfplay": float,
    "scoreStdev": float, "utility": float, "rawWinrate": float, "rawLead": float,
    "currentPlayer": str, "thisHash": str, "symHash": str,
}


class Harness:
    """An AnalysisEngine whose output lines are collected and parsed."""

    def __init__(self, evaluator=None, **config):
        self.lines: list[str] = []
        self.evaluator = evaluator if evaluator is not None else RandomEvaluator(seed=5)
        config.setdefault("seed", 1)
        self.engine = AnalysisEngine(lambda size: self.evaluator, AnalysisConfig(**config),
                                     write=self.lines.append)
        self.read = 0

    def send(self, obj) -> None:
        self.engine.submit_line(obj if isinstance(obj, str) else json.dumps(obj))

    def run(self) -> None:
        """Scheduler rounds until every queued and running turn is answered."""
        while self.engine.step():
            pass

    def new(self) -> list[dict]:
        out = [json.loads(x) for x in self.lines[self.read:]]
        self.read = len(self.lines)
        return out

    def exchange(self, obj) -> list[dict]:
        self.send(obj)
        self.run()
        return self.new()


def query(**fields) -> dict:
    q = {"id": "q", "moves": [], "rules": "chinese", "komi": 7, "boardXSize": 9, "boardYSize": 9,
         "maxVisits": 16}
    q.update(fields)
    return q


GAME = [["B", "E5"], ["W", "C3"], ["B", "G7"], ["W", "G3"]]


# -- responses -------------------------------------------------------------------------------

def test_fields_types_and_turn_numbering():
    h = Harness()
    out = h.exchange(query(moves=GAME, analyzeTurns=[0, 2, 4], includeOwnership=True,
                           includePolicy=True, includeMovesOwnership=True))
    out.sort(key=lambda r: r["turnNumber"])      # searched together: any order
    assert [r["turnNumber"] for r in out] == [0, 2, 4]
    for r in out:
        assert set(r) == {"id", "turnNumber", "isDuringSearch", "moveInfos", "rootInfo",
                          "ownership", "policy"}
        assert r["id"] == "q" and r["isDuringSearch"] is False
        assert r["rootInfo"]["visits"] == 16
        assert r["rootInfo"]["currentPlayer"] == ("B" if r["turnNumber"] % 2 == 0 else "W")
        for name, kind in ROOT_INFO_FIELDS.items():
            assert isinstance(r["rootInfo"][name], kind), name
        assert len(r["rootInfo"]["thisHash"]) == 32
        assert r["moveInfos"]
        for m in r["moveInfos"]:
            for name, kind in MOVE_INFO_FIELDS.items():
                assert isinstance(m[name], kind), name
            assert m["pv"][0] == m["move"] and 0 <= m["prior"] <= 1 and 0 <= m["winrate"] <= 1
            assert len(m["ownership"]) == 81
        assert sum(m["visits"] for m in r["moveInfos"]) == 15      # the root's own visit aside
        assert len(r["ownership"]) == 81 and all(-1 <= v <= 1 for v in r["ownership"])
        assert len(r["policy"]) == 82
        legal = [p for p in r["policy"] if p != -1]
        assert abs(sum(legal) - 1) < 1e-5
    # occupied points are illegal in the policy: -1 (E5 is point 4*9+4; turn 2 has it)
    assert out[1]["policy"][40] == -1 and out[0]["policy"][40] > 0


def test_default_turn_is_the_last_and_options_leave_fields_out():
    h = Harness()
    (r,) = h.exchange(query(moves=GAME[:3]))
    assert r["turnNumber"] == 3
    assert "ownership" not in r and "policy" not in r
    assert all("ownership" not in m for m in r["moveInfos"])


def test_order_of_move_infos():
    h = Harness(seed=2)
    (r,) = h.exchange(query(maxVisits=60))
    infos = r["moveInfos"]
    assert [m["order"] for m in infos] == list(range(len(infos)))
    rest = infos[1:]
    assert all((a["visits"], a["prior"]) >= (b["visits"], b["prior"]) for a, b in zip(rest, rest[1:]))
    assert infos[0]["visits"] >= 0.1 * max(m["visits"] for m in infos)   # the LCB choice is well searched


def test_one_visit_reports_the_top_prior_move():
    h = Harness()
    (r,) = h.exchange(query(maxVisits=1))
    assert r["rootInfo"]["visits"] == 1
    assert len(r["moveInfos"]) == 1 and r["moveInfos"][0]["visits"] == 0


@pytest.mark.parametrize("turn", [0, 1])
def test_perspective(turn):
    """BLACK, WHITE and SIDETOMOVE report the same search: winrates complement each other,
    scores and ownership change sign, SIDETOMOVE is the side to move's."""
    seen = {}
    for view in ("BLACK", "WHITE", "SIDETOMOVE"):
        h = Harness()
        (seen[view],) = h.exchange(query(moves=GAME[:1], analyzeTurns=[turn], includeOwnership=True,
                                         overrideSettings={"reportAnalysisWinratesAs": view}))
    b, w, s = seen["BLACK"], seen["WHITE"], seen["SIDETOMOVE"]
    assert [m["move"] for m in b["moveInfos"]] == [m["move"] for m in w["moveInfos"]]
    for key in ("winrate", "rawWinrate"):
        assert b["rootInfo"][key] == pytest.approx(1 - w["rootInfo"][key], abs=1e-7)
    for key in ("scoreLead", "rawLead"):
        assert b["rootInfo"][key] == pytest.approx(-w["rootInfo"][key], abs=1e-6)
    for mb, mw in zip(b["moveInfos"], w["moveInfos"]):
        assert mb["winrate"] == pytest.approx(1 - mw["winrate"], abs=1e-7)
        assert mb["lcb"] == pytest.approx(1 - mw["lcb"], abs=1e-7)
        assert mb["scoreLead"] == pytest.approx(-mw["scoreLead"], abs=1e-6)
        assert mb["utility"] == pytest.approx(-mw["utility"], abs=1e-6)
    assert b["ownership"] == pytest.approx([-x for x in w["ownership"]], abs=1e-7)
    assert s == (b if turn == 0 else w)


def test_winrate_is_the_searchs_value_for_black():
    """A position Black has won: the uniform net says nothing, the search's exact counts decide
    after passes, and BLACK's view reports a winning root."""
    h = Harness(UniformEvaluator())
    moves = [["B", "E5"], ["W", "pass"], ["B", "pass"]]
    (r,) = h.exchange(query(moves=moves, maxVisits=8, komi=0))
    assert r["rootInfo"]["currentPlayer"] == "W"
    assert r["rootInfo"]["winrate"] > 0.5        # every line ends with Black owning the board


def test_implied_score_stdev():
    assert implied_score_stdev(0.8413447, 5.0, 19) == pytest.approx(5.0, rel=1e-4)   # z = 1
    assert implied_score_stdev(0.5, 0.0, 9) == 40.5           # undetermined: the bound
    assert implied_score_stdev(0.3, 2.0, 9) == 40.5           # lead and winrate disagree
    assert implied_score_stdev(0.999, 0.1, 9) == 1.0


# -- errors and warnings -----------------------------------------------------------------------

BAD = [
    ("{not json", {"error"}),
    ("[1, 2]", {"error"}),
    (json.dumps({"moves": []}), {"error"}),
    (json.dumps(query(maxVisits=2 ** 51)), {"error", "field", "id"}),
    (json.dumps(query(maxVisits=0)), {"error", "field", "id"}),
    (json.dumps(query(maxVisits=10.0)), {"error", "field", "id"}),
    (json.dumps(query(boardXSize=25, boardYSize=25)), {"error", "field", "id"}),
    (json.dumps(query(boardXSize=1, boardYSize=1)), {"error", "field", "id"}),
    (json.dumps(query(boardYSize=13)), {"error", "field", "id"}),
    (json.dumps(query(moves=[["B", "E5"], ["W", "E5"]])), {"error", "field", "id"}),
    (json.dumps(query(moves=[["B", "Z9"]])), {"error", "field", "id"}),
    (json.dumps(query(moves=[["X", "E5"]])), {"error", "field", "id"}),
    (json.dumps(query(moves="E5")), {"error", "field", "id"}),
    (json.dumps(query(analyzeTurns=[3])), {"error", "field", "id"}),
    (json.dumps(query(rules="martian")), {"error", "field", "id"}),
    (json.dumps(query(komi=7.25)), {"error", "field", "id"}),
    (json.dumps(query(includeOwnership="yes")), {"error", "field", "id"}),
    (json.dumps(query(overrideSettings={"reportAnalysisWinratesAs": "RED"})), {"error", "field", "id"}),
    (json.dumps({"id": "t", "action": "terminate"}), {"error", "field", "id"}),
    (json.dumps({"id": "t", "action": "explode"}), {"error", "field", "id"}),
    ('{"id": "q", "komi": NaN}', {"error"}),
]


def test_bad_input_answers_error_objects_and_the_engine_keeps_serving():
    h = Harness()
    for line, keys in BAD:
        h.send(line)
        out = h.new()
        assert len(out) == 1, (line, out)
        assert set(out[0]) == keys, (line, out)
        h.run()
        assert h.new() == [], line          # nothing was queued
    (r,) = h.exchange(query(id="after"))
    assert r["id"] == "after" and r["rootInfo"]["visits"] == 16


def test_error_messages_as_katago_writes_them():
    h = Harness()
    h.send(query(maxVisits=2 ** 51))
    h.send(query(boardXSize=20, boardYSize=20))
    h.send(query(moves=[["B", "E5"], ["W", "D4"], ["B", "D4"]]))
    h.send('{"id": 3}')
    assert h.new() == [
        {"error": "Must be an integer from 1 to 2^50", "field": "maxVisits", "id": "q"},
        {"error": "Must provide an integer from 2 to 19", "field": "boardXSize", "id": "q"},
        {"error": "Illegal move 2: D4", "field": "moves", "id": "q"},
        {"error": 'Request must have a string "id" field'},
    ]


def test_warnings_and_the_query_still_runs():
    h = Harness(defaults=QueryDefaults(visits_cap=20))
    out = h.exchange(query(colour="red", maxVisits=10 ** 9, rules="aga",
                           overrideSettings={"wideRootNoise": 0.04, "noSuchSetting": 1}))
    warnings = [m for m in out if "warning" in m]
    assert {(m["field"], m["id"]) for m in warnings} == {
        ("colour", "q"), ("maxVisits", "q"), ("rules", "q"), ("overrideSettings", "q")}
    assert any("Unknown config params: noSuchSetting" == m["warning"] for m in warnings)
    assert any("situational superko is played as positional" in m["warning"] for m in warnings)
    (r,) = [m for m in out if "moveInfos" in m]
    assert r["rootInfo"]["visits"] == 20          # clamped to the engine's cap


def test_avoid_moves_keep_the_players_moves_out_until_their_depth():
    h = Harness(seed=3)
    (free,) = h.exchange(query(moves=GAME[:1], maxVisits=60))
    top = [m["move"] for m in free["moveInfos"][:3]]
    (r,) = h.exchange(query(moves=GAME[:1], maxVisits=60,
                            avoidMoves=[{"player": "W", "moves": top, "untilDepth": 1}]))
    assert r["rootInfo"]["visits"] == 60
    assert not {m["move"] for m in r["moveInfos"]} & set(top)
    # untilDepth 1 is the root only: White may still play them deeper in the pv
    # Black's moves avoided for 3 moves: never Black's first reply in any pv (depth 1)
    (r,) = h.exchange(query(moves=GAME[:1], maxVisits=60,
                            avoidMoves=[{"player": "B", "moves": top, "untilDepth": 3}]))
    assert all(m["pv"][1] not in top for m in r["moveInfos"] if len(m["pv"]) > 1)
    assert any(len(m["pv"]) > 1 for m in r["moveInfos"])


def test_allow_moves_keep_everything_else_out_pass_included():
    h = Harness(seed=3)
    (r,) = h.exchange(query(moves=GAME[:1], maxVisits=30,
                            allowMoves=[{"player": "W", "moves": ["A1", "J9"], "untilDepth": 1}]))
    assert {m["move"] for m in r["moveInfos"]} == {"A1", "J9"}
    assert sum(m["visits"] for m in r["moveInfos"]) == 29
    assert not [m for m in h.new() if "warning" in m]


@pytest.mark.parametrize("field,entries,message", [
    ("allowMoves", [{"player": "W", "moves": ["A1"], "untilDepth": 1},
                    {"player": "W", "moves": ["B1"], "untilDepth": 1}],
     "Cannot specify allowMoves more than once for the same player"),
    ("avoidMoves", [{"player": "X", "moves": ["A1"], "untilDepth": 1}], 'Could not parse player: "X"'),
    ("avoidMoves", [{"player": "B", "moves": ["Z9"], "untilDepth": 1}],
     'Could not parse board location: "Z9"'),
    ("avoidMoves", [{"player": "B", "moves": ["A1"], "untilDepth": 0}],
     "untilDepth: Must be a positive integer"),
    ("avoidMoves", [{"player": "B", "moves": ["A1"]}],
     "Must be a list of dicts with subfields 'player', 'moves', 'untilDepth'"),
])
def test_bad_avoid_entries_are_errors_and_the_engine_keeps_serving(field, entries, message):
    h = Harness()
    assert h.exchange(query(**{field: entries})) == [{"error": message, "field": field, "id": "q"}]
    (r,) = h.exchange(query(id="after"))
    assert r["rootInfo"]["visits"] == 16


def test_override_settings_that_apply():
    h = Harness()
    q = query(overrideSettings={"maxVisits": 7, "analysisPVLen": 1, "cpuctExploration": 2.0})
    del q["maxVisits"]
    (r,) = h.exchange(q)
    assert r["rootInfo"]["visits"] == 7
    (r,) = h.exchange(dict(q, maxVisits=9))          # the query's own field comes last, as in KataGo
    assert r["rootInfo"]["visits"] == 9
    assert all(len(m["pv"]) <= 2 for m in r["moveInfos"])


def test_initial_stones_and_initial_player():
    h = Harness()
    stones = [["B", "C3"], ["B", "G7"]]
    warning, r = h.exchange(query(initialStones=stones))     # two black stones: a handicap
    assert r["rootInfo"]["currentPlayer"] == "W"
    assert warning["field"] == "rules" and "handicap bonus N" in warning["warning"]
    (r,) = h.exchange(query(initialStones=stones, initialPlayer="B", rules="tromp-taylor"))
    assert r["rootInfo"]["currentPlayer"] == "B"
    out = h.exchange(query(initialStones=[["B", "C3"], ["W", "C3"]]))
    assert out == [{"error": "Illegal initial stone: C3", "field": "initialStones", "id": "q"}]


def test_actions():
    h = Harness()
    h.send({"id": "v", "action": "query_version"})
    h.send({"id": "c", "action": "clear_cache"})
    h.send({"id": "m", "action": "query_models"})
    v, c, m = h.new()
    assert v["id"] == "v" and v["action"] == "query_version" and isinstance(v["version"], str)
    assert "git_hash" in v
    assert c == {"id": "c", "action": "clear_cache"}
    assert m["id"] == "m" and isinstance(m["models"], list)


# -- scheduling ----------------------------------------------------------------------------------

def test_priority_overtakes_queued_queries_with_one_position_at_a_time():
    h = Harness(positions=1)
    h.send(query(id="first", maxVisits=32))
    assert h.engine.step()                     # "first" is being searched
    h.send(query(id="low", maxVisits=8))
    h.send(query(id="high", maxVisits=8, priority=5))
    h.send(query(id="low2", maxVisits=8, priority=-1))
    h.run()
    assert [r["id"] for r in h.new()] == ["first", "high", "low", "low2"]


def test_priorities_per_turn():
    h = Harness(positions=1)
    out = h.exchange(query(moves=GAME, analyzeTurns=[0, 1, 2], priorities=[1, 3, 2], maxVisits=4))
    assert [r["turnNumber"] for r in out] == [1, 2, 0]


def test_concurrent_queries_share_forward_passes():
    calls = []

    class Counting(RandomEvaluator):
        def evaluate(self, planes, keys=None):
            calls.append(len(planes))
            return super().evaluate(planes, keys)

    for ramp in (0, 8):
        h = Harness(Counting(seed=5), positions=4, batch=16, batch_ramp=ramp)
        for i in range(4):
            h.send(query(id=f"g{i}", moves=GAME[:i], maxVisits=33))
        calls.clear()
        h.run()
        out = h.new()
        assert sorted(r["id"] for r in out) == ["g0", "g1", "g2", "g3"]
        assert all(r["rootInfo"]["visits"] == 33 for r in out)
        search_calls = [n for n in calls if n > 3]        # the reports' own evaluations aside
        if ramp == 0:
            assert max(search_calls) == 16                # 4 leaves from each of 4 trees at once
            assert len(calls) < 4 * 33 / 4
        else:
            # one leaf per tree per call while the trees are small, still one call for all 4;
            # each tree's share then grows with its visits (8 visits a leaf), up to 4
            assert calls.count(4) >= 7 and max(calls) <= 16 and len(calls) < 4 * 33 / 2


def test_terminate_a_running_query_reports_what_it_has():
    h = Harness(positions=1)
    h.send(query(id="long", maxVisits=100_000))
    h.send(query(id="queued", maxVisits=8))
    for _ in range(3):
        h.engine.step()
    h.send({"id": "t1", "action": "terminate", "terminateId": "long"})
    assert h.new() == [{"id": "t1", "action": "terminate", "terminateId": "long"}]
    h.run()
    long_, queued = h.new()
    assert long_["id"] == "long" and long_["isDuringSearch"] is False
    assert 1 <= long_["rootInfo"]["visits"] < 100_000 and long_["moveInfos"]
    assert queued["id"] == "queued" and queued["rootInfo"]["visits"] == 8


def test_terminate_queued_turns_answers_no_results():
    h = Harness(positions=1)
    h.send(query(id="run", maxVisits=100_000))
    h.engine.step()
    h.send(query(id="wait", moves=GAME, analyzeTurns=[1, 2, 3], maxVisits=8))
    h.send({"id": "t", "action": "terminate", "terminateId": "wait", "turnNumbers": [1, 3]})
    assert h.new() == [
        {"id": "wait", "turnNumber": 1, "isDuringSearch": False, "noResults": True},
        {"id": "wait", "turnNumber": 3, "isDuringSearch": False, "noResults": True},
        {"id": "t", "action": "terminate", "terminateId": "wait", "turnNumbers": [1, 3]},
    ]
    h.send({"id": "all", "action": "terminate_all"})
    h.run()
    out = h.new()
    assert out[0]["id"] == "wait" and out[0]["noResults"] is True      # turn 2 was still queued
    assert out[1] == {"id": "all", "action": "terminate_all"}
    assert out[2]["id"] == "run" and "moveInfos" in out[2]
    assert not h.engine.pending()


def test_reports_during_search_on_a_fake_clock():
    ticks = iter(range(10 ** 6))
    h = Harness(positions=1, batch=4, clock=lambda: float(next(ticks)))
    out = h.exchange(query(maxVisits=41, reportDuringSearchEvery=3.0))
    during = [r for r in out if r["isDuringSearch"]]
    final = [r for r in out if not r["isDuringSearch"]]
    assert len(final) == 1 and final[0] is out[-1] and final[0]["rootInfo"]["visits"] == 41
    assert len(during) >= 2
    visits = [r["rootInfo"]["visits"] for r in during]
    assert visits == sorted(visits) and visits[-1] < 41


def test_max_time_stops_a_search_on_the_fake_clock():
    ticks = iter(range(10 ** 6))
    h = Harness(positions=1, batch=2, clock=lambda: float(next(ticks)))
    (r,) = h.exchange(query(maxVisits=10_000, overrideSettings={"maxTime": 5}))
    assert 1 <= r["rootInfo"]["visits"] < 20


def test_finished_game_position_is_answered():
    h = Harness(UniformEvaluator())
    moves = [["B", "E5"], ["W", "pass"], ["B", "pass"], ["W", "pass"]]
    (r,) = h.exchange(query(moves=moves, maxVisits=50))
    assert r["turnNumber"] == 4 and r["rootInfo"]["visits"] >= 1


def test_evaluator_failure_fails_the_turn_not_the_engine():
    class Broken(RandomEvaluator):
        fail = True

        def evaluate(self, planes, keys=None):
            if self.fail:
                raise RuntimeError("the net fell over")
            return super().evaluate(planes, keys)

    ev = Broken(seed=1)
    h = Harness(ev)
    out = h.exchange(query(id="x"))
    assert out == [{"error": "Analysis failed: RuntimeError: the net fell over", "field": "moves", "id": "x"}]
    ev.fail = False
    (r,) = h.exchange(query(id="y"))
    assert r["id"] == "y"


# -- the process -------------------------------------------------------------------------------

def run_engine(args: list[str], lines: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "engine", "analysis", *args],
                          input="".join(x + "\n" for x in lines), capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT), env=env)


@pytest.mark.slow          # analyses on the shipped 9x9 net
def test_issue_command_on_the_shipped_9x9_net():
    line = ('{"id":"a","moves":[["B","E5"]],"rules":"chinese","komi":7,"boardXSize":9,'
            '"boardYSize":9,"maxVisits":50,"analyzeTurns":[0,1],"includeOwnership":true}')
    proc = run_engine(["--threads", "1", "--seed", "1"], [line])
    assert proc.returncode == 0, proc.stderr
    out = sorted((json.loads(x) for x in proc.stdout.splitlines()), key=lambda r: r["turnNumber"])
    assert [r["turnNumber"] for r in out] == [0, 1]
    for r in out:
        assert r["rootInfo"]["visits"] == 50 and len(r["ownership"]) == 81
        for name, kind in ROOT_INFO_FIELDS.items():
            assert isinstance(r["rootInfo"][name], kind), name
        for m in r["moveInfos"]:
            for name, kind in MOVE_INFO_FIELDS.items():
                assert isinstance(m[name], kind), name
    # the shipped net opens an empty 9x9 board near the centre (its central 5x5: C3-G7; step 5895
    # played E5, step 3040 plays F4), never on the edge lines
    top = out[0]["moveInfos"][0]["move"]
    assert top[0] in "CDEFG" and 3 <= int(top[1:]) <= 7, top
    assert out[0]["rootInfo"]["currentPlayer"] == "B" and out[1]["rootInfo"]["currentPlayer"] == "W"


def test_process_survives_bad_lines_and_exits_after_the_queries():
    lines = ["garbage", json.dumps(query(id="ok1", maxVisits=4)), "", "{}",
             json.dumps(query(id="bad", boardXSize=40)), json.dumps({"id": "v", "action": "query_version"}),
             json.dumps(query(id="ok2", maxVisits=4, moves=GAME))]
    proc = run_engine(["--weights", "uniform", "--seed", "1"], lines, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    ids = [r.get("id") for r in out]
    assert ids.count(None) == 2                                  # garbage, {}
    assert {"ok1", "ok2", "bad", "v"} <= set(ids)
    done = {r["id"]: r for r in out if "moveInfos" in r}
    assert set(done) == {"ok1", "ok2"} and done["ok2"]["turnNumber"] == 4


def test_a_katago_format_net(tmp_path):
    """`--weights NET.bin.gz` (a tiny random net in KataGo's format): KataGo's own inputs,
    rules and komi reach the net, and the responses have KataGo's fields."""
    from engine.nets import kataweights
    model = kataweights.random_model(("ordinary", "gpool"), channels=8, version=15, seed=3,
                                     activation="ACTIVATION_RELU")
    path = tmp_path / "tiny.bin.gz"
    kataweights.write_model(path, model)
    lines = [json.dumps(query(moves=GAME, analyzeTurns=[0, 4], maxVisits=12, includeOwnership=True,
                              includePolicy=True, rules="tromp-taylor", komi=6.5))]
    proc = run_engine(["--weights", str(path), "--threads", "1", "--seed", "1", "--precision", "fp32"],
                      lines)
    assert proc.returncode == 0, proc.stderr
    out = sorted((json.loads(x) for x in proc.stdout.splitlines()), key=lambda r: r["turnNumber"])
    assert [r["turnNumber"] for r in out] == [0, 4]
    for r in out:
        assert r["rootInfo"]["visits"] == 12 and len(r["ownership"]) == 81 and len(r["policy"]) == 82
        assert isinstance(r["rootInfo"]["scoreLead"], float)
