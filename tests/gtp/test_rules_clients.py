"""The rules round trip through every client: GTP (``kata-set-rules``, ``kata-get-rules``,
``kata-set-rule``, ``kgs-rules``, ``--rules``), SGF (``RU`` read by ``loadsgf``, written by
``printsgf``) and KataGo's analysis protocol (``rules`` as a name or a JSON object); and what a
net that knows area scoring only says when a tax cannot become a komi."""
from __future__ import annotations

import io
import json

import pytest

from engine import sgf
from engine.analysis.query import QueryDefaults, parse_query
from engine.core import Rules
from engine.gtp import EngineConfig, GTPEngine, GTPError, engine_play
from engine.nets.evaluator import UniformEvaluator
from engine.rules import kata_rules, rules_from_kata
from tests.analysis.test_analysis_engine import Harness, query
from tests.gtp.test_gtp_engine import make_engine, setup_walls

JAPANESE_JSON = {"friendlyPassOk": False, "hasButton": False, "ko": "SIMPLE", "scoring": "TERRITORY",
                 "suicide": False, "tax": "SEKI", "whiteHandicapBonus": "0"}


def test_gtp_kata_set_rules_and_get_rules():
    eng = make_engine()
    eng.command("komi 6.5")
    eng.command("play b e5")
    eng.command("kata-set-rules japanese")
    assert eng.game.rules == Rules.preset("japanese", 6.5) and len(eng.game.moves) == 1
    assert json.loads(eng.command("kata-get-rules")) == JAPANESE_JSON
    eng.command("kata-set-rules chinese")
    assert eng.game.rules == Rules.preset("chinese", 6.5)
    eng.command("kata-set-rules " + json.dumps(dict(JAPANESE_JSON, komi=0.5)))
    assert eng.game.rules == Rules.preset("japanese", 0.5)
    eng.command("kata-set-rule tax NONE")
    assert eng.game.rules == Rules("simple", False, 0.5, "territory", "none")
    eng.command("kgs-rules japanese")
    assert eng.game.rules.name == "japanese"


@pytest.mark.parametrize("rules", ["aga", "new-zealand", '{"hasButton": true, "scoring": "AREA"}',
                                   "stone-scoring", "go-rules"])
def test_gtp_refuses_rules_it_cannot_play_exactly(rules):
    eng = make_engine()
    before = eng.game.rules
    with pytest.raises(GTPError):
        eng.command(f"kata-set-rules {rules}")
    assert eng.game.rules == before


def test_japanese_final_score_counts_territory_and_prisoners():
    """Walls on columns E (Black) and F (White) with a dead stone inside each side: Black has 36
    points and a prisoner, White 27 and a prisoner; komi 6.5 (area scoring: B+1.5 at 7.5)."""
    eng = make_engine()
    eng.command("kata-set-rules japanese")
    eng.command("komi 6.5")
    setup_walls(eng)
    assert eng.command("final_status_list dead").split() == ["B7", "H3"]
    assert eng.command("final_score") == "B+2.5"
    eng.command("play b pass")
    eng.command("play w pass")
    assert eng.command("final_score") == "B+2.5"


def test_sgf_round_trip_of_the_rules(tmp_path):
    eng = make_engine()
    eng.command("kata-set-rules japanese")
    eng.command("komi 6.5")
    eng.command("play b e5")
    text = eng.command("printsgf")
    assert "RU[Japanese]" in text and "KM[6.5]" in text
    path = tmp_path / "j.sgf"
    path.write_text(text)
    other = make_engine()
    other.command(f"loadsgf {path}")
    assert other.game.rules == Rules.preset("japanese", 6.5)
    assert json.loads(other.command("kata-get-rules"))["scoring"] == "TERRITORY"
    assert sgf.read_game(b"(;GM[1]FF[4]SZ[9]RU[Korean]KM[6.5])").rules == "korean"


def test_command_line_rules_japanese_with_its_komi():
    from engine.options import build_parser
    args = build_parser().parse_args(["--rules", "japanese"])
    assert Rules.preset(args.rules, args.komi) == Rules.preset("japanese", 6.5)
    args = build_parser().parse_args([])
    assert Rules.preset(args.rules, args.komi) == Rules.preset("chinese", 7.5)


@pytest.mark.parametrize("rules", ["japanese", "korean", JAPANESE_JSON, dict(JAPANESE_JSON, friendlyPassOk=True)])
def test_analysis_query_plays_japanese_rules_without_a_warning(rules):
    line = json.dumps(query(rules=rules, komi=6.5, boardXSize=19, boardYSize=19,
                            moves=[["B", "D4"], ["W", "Q16"]]))
    parsed = parse_query(line, QueryDefaults(), 0)
    assert parsed.messages == []
    assert parsed.requests[0].game.rules == Rules.preset("japanese", 6.5)
    h = Harness()
    out = h.exchange(json.loads(line))
    assert [m for m in out if "warning" in m or "error" in m] == []
    assert out[-1]["rootInfo"]["visits"] >= 1


def test_analysis_rules_json_parts_are_honoured():
    rules, notes = rules_from_kata(kata_rules({"ko": "POSITIONAL", "scoring": "TERRITORY", "tax": "NONE",
                                               "suicide": True}), 0.5, False)
    assert notes == [] and rules == Rules("positional", True, 0.5, "territory", "none")
    _, notes = rules_from_kata(kata_rules({"scoring": "AREA", "tax": "SEKI"}), 7.5, False)
    assert notes == ["tax SEKI under area scoring is not applied"]


def test_a_tax_on_every_group_is_said_to_be_played_as_area_scoring_by_our_nets():
    """Our nets know area scoring: under territory scoring with tax all no komi converts one
    count into the other, so the analysis warns (KataGo's nets take the tax as an input)."""
    h = Harness()
    out = h.exchange(query(rules={"scoring": "TERRITORY", "tax": "ALL", "ko": "SIMPLE", "suicide": False}))
    (w,) = [m for m in out if "warning" in m]
    assert w["field"] == "rules" and "area scoring" in w["warning"]
    err = io.StringIO()
    eng = GTPEngine(lambda n: UniformEvaluator(), EngineConfig(size=9, play=engine_play(8), seed=1),
                    stdout=io.StringIO(), stderr=err)
    eng.command("kata-set-rules japanese")
    assert "area scoring" not in err.getvalue()
    eng.command("kata-set-rule tax ALL")
    assert "knows area scoring only" in err.getvalue()
