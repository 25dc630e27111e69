"""Thousands of seeded random and malformed lines: the engine never crashes or hangs, and every
line that holds a command gets exactly one reply, in order, echoing its id.

A line holds a command when, after dropping ASCII control characters other than tab and
everything from ``#`` on, it has a character other than space and tab (GTP's preprocessing,
GTP.md: other Unicode spaces such as U+00A0 are ordinary characters).  Lines are separated by
``\\n`` only; ``\\r`` is a control character.  Ids are echoed as digits without leading zeros."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.checks.gtp_fuzz import ROOT, check_replies, random_lines, run_engine

LINES = 3000


@pytest.mark.slow          # a fuzz run against the engine's process
@pytest.mark.parametrize("seed", [1, 2])
def test_random_lines_get_exactly_one_reply_each(tmp_path, seed):
    lines = random_lines(seed, LINES // 2)
    res = run_engine(lines, tmp_path, timeout=300)
    assert not res["hang"], "the engine hung"
    assert res["returncode"] == 0 and not res["crash"], res["stderr"][-3000:]
    assert res["violations"] == [], res["violations"][:5]
    assert res["stdout"].endswith("= \n\n")                       # quit answered last


def test_the_checker_catches_a_missing_and_a_wrong_reply():
    lines = [b"1 name", b"# comment", b"2 version", b"quit"]
    assert check_replies(lines, "=1 goengine\n\n=2 1.0\n\n=\n\n") == []
    assert check_replies(lines, "=1 goengine\n\n=\n\n") != []
    assert check_replies(lines, "=1 goengine\n\n=3 1.0\n\n=\n\n") != []


@pytest.mark.slow          # a fuzz run against the engine's process
def test_fuzz_command_reports_a_json_line(tmp_path, monkeypatch, capsys):
    from tools.checks import gtp_fuzz
    monkeypatch.chdir(tmp_path)
    assert gtp_fuzz.main(["--lines", "200", "--chunk", "100", "--seed", "3"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    doc = __import__("json").loads(out[-1])
    assert doc["bench"] == "gtp-fuzz" and doc["crashes"] == doc["hangs"] == doc["violations"] == 0
    assert doc["commands"] == doc["answered"] > 100


# -- the defects of issue 16, one line each: (input line, the reply it must get; None: no reply) --

LONG_ID = "9" * 4301
N = "9" * 4301
MIB = 1 << 20
DEFECT_LINES = [
    (LONG_ID + " name", f"={LONG_ID} goengine"),
    ("0" * 5000 + "42 name", "=42 goengine"),
    ("0000 name", "=0 goengine"),
    (LONG_ID, f"?{LONG_ID} unknown command"),                  # an id only: no command name
    ("boardsize " + N, "? syntax error"),
    ("7 gg-undo " + N, "?7 syntax error"),
    ("kata-analyze B " + N, "? syntax error"),
    ("lz-analyze b 1" + "0" * 400, "? syntax error"),
    ("loadsgf nokm.sgf " + N, "? syntax error"),
    ("time_left B 10 " + N, "? syntax error"),
    ("time_left B 10 1" + "0" * 400, "? syntax error"),
    ("komi " + N, "? syntax error"),
    ("komi 1e999", "? syntax error"),
    ("\xa0", "? unknown command"),                             # not GTP whitespace: a command
    ("\u3000", "? unknown command"),
    ("\x85", "? unknown command"),
    ("5 \xa0", "?5 unknown command"),
    (" \t \r", None),                                          # GTP whitespace only: ignored
    ("8 name " + "x" * (MIB + MIB // 2), "?8 line too long"),  # one reply, the rest discarded
    ("9 name" + " " * (2 * MIB) + "x", "?9 line too long"),
    ("1" * (MIB + 10) + " name", "? line too long"),           # the id itself was cut
    ("# " + "y" * (MIB + MIB // 2), None),                     # a comment, however long
    ("komi 6.5", "= "),
    ("loadsgf nokm.sgf", "= black"),                           # no KM: the komi stays 6.5
    ("printsgf", "KM[6.5]"),                                   # (a substring of the reply)
    ("goengine-param max_memory 512M", "= "),
    ("goengine-param", "[string] max_memory 512M"),
    ("goengine-param max_memory 1.5G", "? syntax error"),
    ("10 name", "=10 goengine"),
]


def test_defect_lines_get_their_one_reply(tmp_path):
    (tmp_path / "nokm.sgf").write_text("(;GM[1]FF[4]SZ[9];B[ee];W[cc])")
    lines = [line for line, _ in DEFECT_LINES] + ["quit"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "engine", "--weights", "uniform", "--seed", "1",
                           "--threads", "1", "--visits", "4", "--size", "9", "--quiet"],
                          input="\n".join(lines).encode() + b"\n", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd=tmp_path, env=env, timeout=600)   # a hang guard
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")[-3000:]
    blocks = proc.stdout.decode()[:-2].split("\n\n")
    expected = [(line, reply) for line, reply in DEFECT_LINES if reply is not None]
    assert len(blocks) == len(expected) + 1, [b[:60] for b in blocks]
    for block, (line, reply) in zip(blocks, expected):
        if reply.startswith(("=", "?")):
            assert block == reply, (line[:60], block[:200])
        else:
            assert block.startswith("=") and reply in block, (line[:60], block[:200])
    assert blocks[-1] == "= "
