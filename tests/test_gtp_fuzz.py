"""Thousands of seeded random and malformed lines: the engine never crashes or hangs, and every
line that holds a command gets exactly one reply, in order, echoing its id.

A line holds a command when, after dropping ASCII control characters other than tab and
everything from ``#`` on, it has a character other than space and tab (GTP's preprocessing,
GTP.md: other Unicode spaces such as U+00A0 are ordinary characters).  Lines are separated by
``\\n`` only; ``\\r`` is a control character.  Ids are echoed as digits without leading zeros."""
from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SGF = ROOT / "tests" / "gtp" / "data" / "game9.sgf"
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
LINES = 3000


def tokens(line: bytes) -> list[str]:
    text = CONTROL.sub("", line.decode("utf-8", "replace")).split("#", 1)[0].replace("\t", " ")
    return [t for t in text.split(" ") if t]


def holds_command(line: bytes) -> bool:
    return bool(tokens(line))


def command_id(line: bytes) -> str | None:
    first = tokens(line)[0]
    return (first.lstrip("0") or "0") if re.fullmatch(r"[0-9]+", first) else None


def random_lines(seed: int, count: int) -> list[bytes]:
    from engine.gtp import GTPEngine

    rng = random.Random(seed)
    names = [c for c in GTPEngine.COMMANDS if c not in ("quit", "goengine-param")]
    words = ["b", "w", "B", "W", "black", "White", "x", "pass", "PASS", "resign", "true", "false",
             "alive", "dead", "seki", "none", "absolute", "byoyomi", "canadian", "chinese",
             "japanese", "tromp-taylor", "interval", "minmoves", "maxmoves", "ownership", "ü", "∞",
             "D4", "d4", "q16", "T19", "t20", "A0", "I5", "Z9", "a1", "J9", "K10", "", "-", "+"]
    numbers = ["0", "1", "2", "3", "5", "7", "9", "13", "19", "25", "-1", "-7", "0.5", "6.5",
               "1e3", "nan", "inf", "-inf", "99999999999999999999", "007", "3.", ".5", "0x10",
               "9" * 4301, "-" + "1" * 5000, "1e999", "1" + "0" * 400]

    def arg() -> str:
        r = rng.random()
        if r < 0.45:
            return rng.choice(words)
        if r < 0.8:
            return rng.choice(numbers)
        if r < 0.95:
            return f"{rng.choice('ABCDEFGHJKLMNOPQRSTabcdefghjklmnopqrst')}{rng.randint(0, 21)}"
        return "".join(chr(rng.randint(33, 0x2FF)) for _ in range(rng.randint(1, 12)))

    lines = [b"goengine-param judge_playouts 8"]
    for _ in range(count):
        r = rng.random()
        if r < 0.55:
            name = rng.choice(names)
            if rng.random() < 0.05:
                name = name.upper()
            parts = [name] + [arg() for _ in range(rng.choice((0, 1, 1, 2, 2, 2, 3, 4)))]
            if name == "loadsgf" and rng.random() < 0.5:
                parts = [name, str(SGF), str(rng.randint(0, 30))]
            if name == "boardsize" and rng.random() < 0.7:
                parts = [name, str(rng.choice((2, 3, 5, 7, 9, 9, 9, 13, 19)))]
            if name.endswith("analyze") and rng.random() < 0.6:
                parts = [name, rng.choice("bw"), str(rng.randint(0, 3)),
                         *rng.choice([[], ["ownership", "true"], ["maxmoves", "2"], ["minmoves", "3"]])]
            if name in ("play", "genmove") and rng.random() < 0.6:
                parts = [name, rng.choice("bw"), f"{rng.choice('ABCDEFGHJ')}{rng.randint(1, 9)}"][: 2 if name == "genmove" else 3]
            text = " ".join(parts)
            if rng.random() < 0.3:
                text = f"{rng.choice([str(rng.randint(0, 10**6)), '9' * 4301, '0' * 5000 + '7'])} {text}"
            if rng.random() < 0.1:
                text += " # trailing comment"
            if rng.random() < 0.1:
                text = text.replace(" ", rng.choice(["\t", "  ", " \t "]))
            if rng.random() < 0.1:
                text += "\r"
            lines.append(text.encode())
        elif r < 0.58:
            lines.append(rng.choice([b"goengine-param ponder 1", b"goengine-param ponder 0",
                                     b"goengine-param visits 3", b"goengine-param resign 0.5",
                                     b"goengine-param rules tromp-taylor", b"goengine-param",
                                     b"goengine-param batch 2", b"goengine-param lcb_z 0",
                                     b"goengine-param time x", b"goengine-param visits -3"]))
        elif r < 0.65:
            lines.append(rng.choice([b"", b"   ", b"\t", b"\r", b"# comment", b"  # indented",
                                     b"# interrupt", b"#", b"42", b"0", b"=", b"?", b"= 3",
                                     "\xa0".encode(), "\u3000".encode(), "\x85".encode(),
                                     "\u2028".encode(), b"\x0b\x0c"]))
        elif r < 0.8:
            alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 \t#\r-_.+=?"
            lines.append(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
        else:
            raw = bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 60)))
            lines.append(raw.replace(b"\n", b" "))
    lines.append(b"quit")
    lines.append(b"name")            # after quit: no reply
    return lines


@pytest.mark.parametrize("seed", [1, 2])
def test_random_lines_get_exactly_one_reply_each(tmp_path, seed):
    lines = random_lines(seed, LINES // 2)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "engine", "--weights", "uniform", "--seed", "1",
                           "--threads", "1", "--visits", "4", "--size", "9", "--quiet"],
                          input=b"\n".join(lines) + b"\n", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, cwd=tmp_path, env=env, timeout=55)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")[-3000:]
    out = proc.stdout.decode()
    assert out.endswith("\n\n") and "\n\n\n" not in out
    blocks = out[:-2].split("\n\n")
    quit_at = lines.index(b"quit")
    expected = [line for line in lines[: quit_at + 1] if holds_command(line)]
    assert len(blocks) == len(expected), (len(blocks), len(expected))
    for block, line in zip(blocks, expected):
        m = re.match(r"([=?])(\d*)(?: |\n|$)", block)
        assert m, (block[:100], line)
        cid = command_id(line)
        assert m.group(2) == (cid or ""), (block[:100], line)
    assert blocks[-1] == "="                      # quit
    assert "internal error" not in out, [b for b in blocks if "internal error" in b][:3]


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
    ("komi 6.5", "="),
    ("loadsgf nokm.sgf", "= black"),                           # no KM: the komi stays 6.5
    ("printsgf", "KM[6.5]"),                                   # (a substring of the reply)
    ("goengine-param max_memory 512M", "="),
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
    assert blocks[-1] == "="
