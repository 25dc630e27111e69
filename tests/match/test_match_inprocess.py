"""Tests for in-process players in train.match: the ``inproc:`` syntax, a match between two tiny
random nets batched through train.games.pool.GamePool, the same with a random opening, and an
in-process net against GNU Go over GTP in the same pool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sgfmill import sgf

from engine import coords
from engine.core import BLACK, WHITE, Game, Rules
from engine.nets.network import NetConfig
from engine.nets.weights import new_model, save
from train.match.inproc import InProcessSpec, parse_inproc
from train.match.cli import main

GNUGO = shutil.which("gnugo") or ("/usr/games/gnugo" if Path("/usr/games/gnugo").exists() else None)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny nets run fastest on one thread, and several threads crawl on a busy machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def nets(tmp_path_factory) -> tuple[Path, Path]:
    """Two tiny random nets (different seeds)."""
    folder = tmp_path_factory.mktemp("nets")
    paths = []
    for seed, name in ((1, "model-0000100.pt"), (2, "model-0000200.pt")):
        path = folder / name
        save(path, new_model(NetConfig(blocks=1, filters=8), seed=seed), {"step": seed * 100})
        paths.append(path)
    return paths[0], paths[1]


def run_cli(tmp_path: Path, *args: str) -> dict:
    status = main([*args, "--sgf-dir", str(tmp_path / "sgf"), "--results",
                   str(tmp_path / "results.json"), "--no-progress"])
    assert status == 0
    return json.loads((tmp_path / "results.json").read_text())


@pytest.mark.parametrize("command, spec", [
    ("inproc:a.pt", InProcessSpec("a.pt")),
    ("inproc:runs/x/model-0000200.pt:visits=50",
     InProcessSpec("runs/x/model-0000200.pt", visits=50)),
    ("inproc:a.pt:visits=8,device=cpu,name=small", InProcessSpec("a.pt", 8, "cpu", "small")),
    ("inproc:a.pt:visits=8:name=small", InProcessSpec("a.pt", 8, None, "small")),
    ("inproc:C:/nets/a.gz", InProcessSpec("C:/nets/a.gz")),     # a colon in the path is kept
    ("gnugo --mode gtp", None),
])
def test_parse_inproc(command, spec):
    assert parse_inproc(command) == spec


@pytest.mark.parametrize("command, message", [
    ("inproc:", "no weights file"),
    ("inproc:a.pt:visits=0", "visits must be"),
    ("inproc:a.pt:visits=many", "visits must be"),
    ("inproc:a.pt:colour=red", "unknown in-process option"),
    ("inproc:a.pt:visits=1,visits=2", "given twice"),
])
def test_parse_inproc_errors(command, message):
    with pytest.raises(ValueError, match=message):
        parse_inproc(command)


def test_display_names():
    assert InProcessSpec("runs/r/models/model-0001000.pt").display_name == "model-0001000"
    assert InProcessSpec("/tmp/lz6x64.gz").display_name == "lz6x64"
    assert InProcessSpec("a.pt", name="mine").display_name == "mine"


def check_games(results: dict, names: dict[str, str], size: int, komi: float) -> None:
    """Colours alternate; every SGF has both names, the result and the reason; counted games
    replay through the core to the recorded score."""
    games = results["games"]
    assert [g["index"] for g in games] == list(range(len(games)))
    assert [g["black"] for g in games] == ["A" if i % 2 == 0 else "B" for i in range(len(games))]
    for g in games:
        assert g["reason"] in ("resign", "passes", "move cap")
        root = sgf.Sgf_game.from_bytes(Path(g["sgf"]).read_bytes())
        props = root.get_root()
        assert props.get("PB") == names[g["black"]] and props.get("PW") == names[g["white"]]
        assert props.get("RE") == g["result"]
        moves = [node.get_move() for node in root.get_main_sequence()[1:]]
        assert len(moves) == g["moves"]
        # Every move of a match gets its full visits: none is marked as a cheap self-play search.
        comments = [n.get("C") for n in root.get_main_sequence()[1:] if n.has_property("C")]
        assert comments and not any(c.split(" model")[0].endswith(" fast") for c in comments)
        replay = Game(size, Rules.preset("chinese", komi))
        for colour, move in moves:
            point = size * size if move is None else coords.from_sgfmill(move, size)
            replay.play(point, BLACK if colour == "b" else WHITE)
        if g["reason"] == "resign":
            assert g["result"].endswith("+R") and "resigned" in props.get("GC")
        else:
            assert g["score"] == replay.score() and g["scored_by"] == "core"
            assert g["result"] == replay.result_string()
            assert "counted by core" in props.get("GC")


def test_two_nets_in_a_game_pool(tmp_path, nets):
    a, b = nets
    results = run_cli(tmp_path, "--black", f"inproc:{a}", "--white", f"inproc:{b}:visits=12",
                      "--visits", "12", "--games", "2", "--size", "5", "--komi", "0.5",
                      "--parallel", "2", "--seed", "5")
    assert results["complete"] and results["games_played"] == 2
    assert results["settings"]["runner"] == "pool"
    engines = results["engines"]
    assert engines["A"]["name"] == "model-0000100" and engines["B"]["name"] == "model-0000200"
    assert engines["A"]["in_process"] and engines["B"]["step"] == 200
    assert engines["A"]["moves"] > 0 and engines["A"]["seconds_per_move"] > 0
    check_games(results, {"A": "model-0000100", "B": "model-0000200"}, 5, 0.5)
    pair = results["pairs"][0]
    assert pair["games"] == 2 and pair["a_wins"] + pair["b_wins"] + pair["draws"] == 2
    assert "elo" in pair and results["ratings"]["A"]["elo"] == 0.0
    assert len(list((tmp_path / "sgf").glob("*.sgf"))) == 2


def test_in_process_players_with_a_random_opening(tmp_path, nets):
    """A random opening and per-engine visits: still one pool, both nets batched agents."""
    a, b = nets
    results = run_cli(tmp_path, "--engine", f"x=inproc:{a}:name=x", "--engine",
                      f"y=inproc:{b}:name=y", "--visits", "8", "--games", "2", "--size", "5",
                      "--komi", "0.5", "--random-moves", "2", "--parallel", "2", "--seed", "3")
    assert results["complete"] and results["settings"]["runner"] == "pool"
    assert [g["opening_moves"] for g in results["games"]] == [2, 2]
    assert [g["black"] for g in results["games"]] == ["x", "y"]


def test_leela_zero_net_needs_19x19(tmp_path, capsys):
    from engine.nets import lzweights

    lz = tmp_path / "lz.gz"
    lzweights.write_random(lz, blocks=1, filters=8, seed=1)
    status = main(["--black", f"inproc:{lz}", "--white", f"inproc:{lz}", "--size", "9",
                   "--sgf-dir", str(tmp_path / "sgf"), "--no-progress"])
    assert status == 2
    assert "19x19 only" in capsys.readouterr().err


@pytest.mark.slow          # a match against GNU Go
@pytest.mark.skipif(GNUGO is None, reason="GNU Go is not installed")
def test_in_process_net_against_gnugo(tmp_path, nets):
    a, _ = nets
    results = run_cli(tmp_path, "--black", f"inproc:{a}", "--white",
                      f"{GNUGO} --mode gtp --level 1", "--visits", "8", "--games", "2",
                      "--size", "5", "--komi", "0.5", "--parallel", "2")
    assert results["complete"] and results["settings"]["runner"] == "pool"
    assert results["engines"]["B"]["name"].startswith("GNU Go")
    check_games(results, {"A": "model-0000100", "B": results["engines"]["B"]["name"]}, 5, 0.5)
