"""``python -m engine`` in-process: options, weights selection (ours, Leela Zero, the shipped
default, the untrained fallback), the log file."""
from __future__ import annotations

import io
import json
import sys

import pytest

from engine import __main__ as cli
from engine.nets import loading


def run_main(monkeypatch, capsys, argv, stdin: str):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for option in ("--weights", "--visits", "--playouts", "--time", "--threads", "--batch",
                   "--rules", "--resign", "--ponder", "--no-ponder", "--log", "--seed", "--size",
                   "--komi", "--lag-buffer", "--max-memory"):
        assert option in text, option


@pytest.mark.parametrize("argv", [["--resign", "1"], ["--size", "x"], ["--time", "0"],
                                  ["--visits", "0"], ["--rules", "aga"], ["--max-memory", "0"],
                                  ["--max-memory", "1.5G"], ["--max-memory", "lots"],
                                  ["--max-memory", "9" * 5000]])
def test_bad_options_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2


@pytest.mark.parametrize("option,shown", [(None, "2G"), ("512M", "512M"), ("2g", "2G"),
                                          ("1GiB", "1G"), ("3000000", "3000000"), ("64K", "64K")])
def test_max_memory_option_reaches_the_search(monkeypatch, capsys, option, shown):
    argv = ["--weights", "uniform", "--seed", "1", "--size", "9", "--quiet"]
    if option is not None:
        argv += ["--max-memory", option]
    rc, out, _ = run_main(monkeypatch, capsys, argv,
                          "1 goengine-param\n2 goengine-param max_memory 256M\n3 goengine-param\n")
    assert rc == 0
    first, second, third = out.split("\n\n")[:3]
    assert f"[string] max_memory {shown}\n" in first
    assert second == "=2 "
    assert "[string] max_memory 256M\n" in third


def test_uniform_engine_and_log_file(monkeypatch, capsys, tmp_path):
    log = tmp_path / "engine.log"
    rc, out, _ = run_main(monkeypatch, capsys,
                          ["--weights", "uniform", "--seed", "1", "--size", "9", "--visits", "8",
                           "--log", str(log), "--quiet"], "1 name\n2 genmove b\nquit\n")
    assert rc == 0
    assert out.startswith("=1 goengine\n\n=2 ")
    text = log.read_text()
    assert "<< 1 name" in text and ">> =1 goengine" in text and "## B " in text


def test_our_weights_file(monkeypatch, capsys, tmp_path):
    from engine.nets import weights
    from engine.nets.network import NetConfig

    path = tmp_path / "tiny.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"board_sizes": [9], "step": 0, "parent": None})
    rc, out, _ = run_main(monkeypatch, capsys,
                          ["--weights", str(path), "--seed", "1", "--size", "9", "--visits", "8",
                           "--quiet"],
                          "genmove b\nboardsize 13\ngenmove w\ngoengine-param analysis_min_visits 8\n"
                          "kata-analyze b 1000 ownership true\nquit\n")
    assert rc == 0
    blocks = out[:-2].split("\n\n")
    assert blocks[0].startswith("= ") and blocks[1] == "= " and blocks[2].startswith("= ")
    assert blocks[4].startswith("= \ninfo move") and " ownership " in blocks[4]


def test_leela_zero_weights_play_19x19_only(monkeypatch, capsys, tmp_path):
    from engine.nets import lzweights

    path = tmp_path / "lz.txt"
    lzweights.write_random(path, blocks=1, filters=8, seed=1)
    rc, out, _ = run_main(monkeypatch, capsys, ["--weights", str(path), "--seed", "1", "--visits", "4",
                                                "--quiet"], "genmove b\nboardsize 9\nquit\n")
    assert rc == 0
    blocks = out[:-2].split("\n\n")
    assert blocks[0].startswith("= ") and blocks[1] == "? unacceptable size"
    # the net loads in the background: the first command that needs it fails, and the engine ends
    rc, out, err = run_main(monkeypatch, capsys, ["--weights", str(path), "--size", "9"], "name\ngenmove b\nquit\n")
    assert rc == 1 and "19x19" in err and out.startswith("= goengine\n\n? error:") and "19x19" in out


def test_missing_weights_file_is_a_clear_error(monkeypatch, capsys, tmp_path):
    rc, _, err = run_main(monkeypatch, capsys, ["--weights", str(tmp_path / "none.pt")], "quit\n")
    assert rc == 2 and "none.pt" in err


def test_default_weights_lookup(tmp_path):
    assert cli.default_weights_path(9, tmp_path) is None
    (tmp_path / "any-net.pt").write_bytes(b"")
    assert cli.default_weights_path(9, tmp_path).name == "any-net.pt"
    (tmp_path / "9x9-a.pt").write_bytes(b"")
    (tmp_path / "9x9-b.pt").write_bytes(b"")
    assert cli.default_weights_path(9, tmp_path).name == "9x9-b.pt"
    (tmp_path / "best-19.pt").write_bytes(b"")
    (tmp_path / "manifest.json").write_text(json.dumps({"19": "best-19.pt", "default": "any-net.pt"}))
    assert cli.default_weights_path(19, tmp_path).name == "best-19.pt"
    assert cli.default_weights_path(13, tmp_path).name == "any-net.pt"


def test_no_shipped_net_plays_an_untrained_one_with_a_warning(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(loading, "default_weights_path", lambda size, directory=None: None)
    rc, out, err = run_main(monkeypatch, capsys, ["--seed", "1", "--size", "9", "--visits", "4",
                                                  "--quiet"], "genmove b\nquit\n")
    assert rc == 0 and out.startswith("= ")
    assert "UNTRAINED" in err


def test_a_net_trained_for_one_size_starts_on_it(monkeypatch, capsys, tmp_path):
    from engine.nets import weights
    from engine.nets.network import NetConfig

    path = tmp_path / "nine.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=1),
                 {"board_sizes": [9], "step": 0, "parent": None})
    rc, out, err = run_main(monkeypatch, capsys, ["--weights", str(path), "--visits", "4"],
                            "showboard\nboardsize 13\nquit\n")
    assert rc == 0
    assert " 9 . . . . . . . . .  9" in out and "10 " not in out.split("\n\n")[0]
    assert "was trained on 9x9; it was not trained for 19x19" not in err
    assert "was trained on 9x9; it was not trained for 13x13" in err     # asked for: warned
