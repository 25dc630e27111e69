"""A KataGo net plays with KataGo's search settings (``searchopts.KATAGO_GTP``), in the GTP
engine, the analysis engine and in-process match players; ours with those of them they can use
(``searchopts.OUR_NETS``), with tactical playouts at the leaves up to 9x9; Leela Zero's and test evaluators keep C's defaults; ``--search``
overrides any."""
from __future__ import annotations

import dataclasses
import io
import json
import sys

import pytest

from engine.core import SearchParams
from engine.nets import katawriter, weights
from engine.nets.network import NetConfig
from engine.play import searchopts


def test_the_table_is_katagos_and_in_range():
    assert searchopts.net_defaults("kata7") == searchopts.KATAGO_GTP == searchopts.net_defaults("kata7s")
    assert searchopts.net_defaults("lz18") == {} and searchopts.net_defaults(None) == {}
    # ours: every one of them our nets can use (no uncertainty or optimism heads)
    assert searchopts.net_defaults("rich") == searchopts.OUR_NETS == {
        k: v for k, v in searchopts.KATAGO_GTP.items()
        if k not in ("use_uncertainty", "policy_optimism", "root_policy_optimism")}
    # with tactical playouts at the leaves on boards up to 9x9 (measured there), not beyond
    assert searchopts.net_defaults("rich", 9) == {**searchopts.OUR_NETS, "rollout_weight": 0.5, "rollout_policy": 1.0}
    assert searchopts.net_defaults("rich", 5) == searchopts.net_defaults("rich", 9)
    assert searchopts.net_defaults("rich", 13) == searchopts.OUR_NETS == searchopts.net_defaults("rich", 19)
    assert searchopts.net_defaults("kata7", 9) == searchopts.KATAGO_GTP and searchopts.net_defaults("lz18", 9) == {}
    base = SearchParams()
    for name, value in searchopts.KATAGO_GTP.items():
        low, high = searchopts.RANGES[name]
        assert low <= value <= high and getattr(base, name) != value, name
    # spelled as KataGo's own config would set them
    assert searchopts.parse_options("valueWeightExponent=0.25,useNoisePruning=true,cpuctExplorationBase=500,"
                                    "subtreeValueBiasFactor=0.45,useUncertainty=true") == {
        k: searchopts.KATAGO_GTP[k] for k in ("value_weight_exponent", "noise_pruning", "c_puct_base",
                                              "subtree_bias_factor", "use_uncertainty")}


@pytest.fixture()
def nets(tmp_path):
    kata = tmp_path / "tiny-kata.bin.gz"
    katawriter.write_model(kata, katawriter.random_model(("ordinary", "gpool"), channels=8, seed=3))
    ours = tmp_path / "tiny.pt"
    weights.save(ours, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"board_sizes": [9], "step": 0, "parent": None})
    return kata, ours


def gtp(monkeypatch, capsys, argv, commands):
    from engine import __main__ as cli

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((commands + "quit\n").encode())))
    rc = cli.main(argv + ["--seed", "1", "--size", "9", "--threads", "1", "--precision", "fp32"])
    out, err = capsys.readouterr()
    assert rc == 0
    return [b[2:] for b in out.strip().split("\n\n")], err


def test_gtp_engine(monkeypatch, capsys, nets):
    kata, ours = nets
    ask = "kata-get-param valueWeightExponent\nkata-get-param cpuctExplorationBase\n"
    replies, err = gtp(monkeypatch, capsys, ["--weights", str(kata)], ask)
    assert replies[:2] == ["0.25", "500"] and "KataGo net: KataGo's search settings" in err
    replies, _ = gtp(monkeypatch, capsys, ["--weights", str(kata), "--search", "valueWeightExponent=0"], ask)
    assert replies[:2] == ["0", "500"]
    replies, err = gtp(monkeypatch, capsys, ["--weights", str(ours)],
                       ask + "kata-get-param useUncertainty\nkata-get-param rollout_weight\n")
    assert replies[:4] == ["0.25", "500", "0", "0.5"]
    assert "our net: KataGo's search settings and tactical playouts at the leaves" in err
    replies, _ = gtp(monkeypatch, capsys, ["--weights", str(ours), "--search", "rollout_weight=0"],
                     "kata-get-param rollout_weight\n")
    assert replies[:1] == ["0"]
    replies, err = gtp(monkeypatch, capsys, ["--weights", "uniform"], ask)
    assert replies[:2] == ["0", "19652"] and "search settings" not in err     # a test evaluator: C's


def test_shipped_nets_too(monkeypatch, capsys, nets, tmp_path):
    """Without --weights (the engine as shipped) the options follow the shipped net of the
    starting size, in the GTP engine and the analysis engine."""
    from engine.analysis import engine as analysis
    from engine.nets import loading

    kata, ours = nets
    ask = "kata-get-param valueWeightExponent\nkata-get-param useUncertainty\n"
    for net, kind, uncertainty in ((kata, "KataGo net", "1"), (ours, "our net", "0")):
        shipped = tmp_path / f"shipped-{net.stem}"
        shipped.mkdir()
        (shipped / net.name).write_bytes(net.read_bytes())
        (shipped / "manifest.json").write_text(json.dumps({"sizes": {"9": net.name}, "default": net.name}))
        monkeypatch.setattr(loading, "WEIGHTS_DIR", shipped)
        replies, err = gtp(monkeypatch, capsys, [], ask)
        assert replies[:2] == ["0.25", uncertainty] and f"{kind}: KataGo's search settings" in err
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
        assert analysis.main(["--threads", "1", "--precision", "fp32"]) == 0
        assert f"{kind}: KataGo's search settings" in capsys.readouterr().err


def test_analysis_engine(monkeypatch, capsys, nets):
    from engine.analysis import engine as analysis

    seen = []
    real = analysis.AnalysisEngine.__init__

    def spy(self, factory, config, **kw):
        seen.append(config.defaults.search)
        real(self, factory, config, **kw)

    monkeypatch.setattr(analysis.AnalysisEngine, "__init__", spy)
    kata, ours = nets
    query = json.dumps({"id": "a", "moves": [], "rules": "chinese", "komi": 7, "boardXSize": 9,
                        "boardYSize": 9, "maxVisits": 4}) + "\n"
    for path in (kata, ours):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(query.encode())))
        assert analysis.main(["--weights", str(path), "--threads", "1", "--precision", "fp32"]) == 0
        assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["id"] == "a"
    assert seen[0].value_weight_exponent == 0.25 and seen[0].static_score_utility == pytest.approx(0.1)
    assert seen[1] == searchopts.with_options(SearchParams(), searchopts.OUR_NETS)


def test_in_process_match_players(nets, tmp_path):
    """``train.match``'s ``inproc:`` players: a KataGo net starts from KATAGO_GTP like the GTP
    engine, ours from OUR_NETS, and the spec's own options override either."""
    from train.match.config import EngineSpec, GameSettings, MatchConfig
    from train.match.schedule import MatchPlayers

    kata, ours = nets
    engines = (EngineSpec("K", f"inproc:{kata}"), EngineSpec("V", f"inproc:{kata}:valueWeightExponent=0"),
               EngineSpec("O", f"inproc:{ours}"))
    config = MatchConfig(engines, 2, GameSettings(size=9), tmp_path / "sgf", tmp_path / "results.json")
    players = MatchPlayers(config, {e.label: e.label for e in engines})
    k, v, o = (players.player(0, e.label).params for e in engines)
    assert searchopts.with_options(SearchParams(), searchopts.KATAGO_GTP) == k
    assert v == dataclasses.replace(k, value_weight_exponent=0.0)
    assert o == searchopts.with_options(SearchParams(), {**searchopts.OUR_NETS, **searchopts.ROLLOUTS})
