"""``python -m tools.checks.gtp_fuzz``: seeded random and malformed GTP lines against ``python -m engine``.

Every line that holds a command must get exactly one reply, in order, echoing its id; the engine
must never crash (exit status other than 0, a traceback, ``internal error``) or hang.

    python -m tools.checks.gtp_fuzz --lines 100000 --seed 1          # prints a table, then a JSON line

A line holds a command when, after dropping ASCII control characters other than tab and
everything from ``#`` on, it has a character other than space and tab (GTP's preprocessing,
GTP.md: other Unicode spaces such as U+00A0 are ordinary characters).  Lines are separated by
``\\n`` only; ``\\r`` and NUL are control characters.  Ids are echoed as digits without leading
zeros.  The lines include numbers of thousands of digits, Unicode whitespace, raw bytes, NULs,
CR-only line ends, comments and tabs.  Long runs are cut into chunks of ``--chunk`` lines, each
fed to a fresh engine, so that one crash does not hide the rest.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from engine.gtp import GTPEngine
from tools import REPO_ROOT as ROOT

SGF = ROOT / "tests" / "gtp" / "data" / "game9.sgf"
ENGINE_ARGS = ["--weights", "uniform", "--seed", "1", "--threads", "1", "--visits", "4", "--size", "9",
               "--quiet"]
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def tokens(line: bytes) -> list[str]:
    text = CONTROL.sub("", line.decode("utf-8", "replace")).split("#", 1)[0].replace("\t", " ")
    return [t for t in text.split(" ") if t]


def holds_command(line: bytes) -> bool:
    return bool(tokens(line))


def command_id(line: bytes) -> str | None:
    first = tokens(line)[0]
    return (first.lstrip("0") or "0") if re.fullmatch(r"[0-9]+", first) else None


def random_lines(seed: int, count: int) -> list[bytes]:
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
                                     "\u2028".encode(), b"\x0b\x0c", b"name\x00version",
                                     b"\x00", b"name\rversion\r", b"\r\r\r"]))
        elif r < 0.8:
            alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 \t#\r-_.+=?"
            lines.append(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
        else:
            raw = bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 60)))
            lines.append(raw.replace(b"\n", b" "))
    lines.append(b"quit")
    lines.append(b"name")            # after quit: no reply
    return lines



def check_replies(lines: list[bytes], out: str) -> list[str]:
    """The protocol violations of ``out`` (the engine's stdout for ``lines``); [] when none."""
    problems = []
    if not out.endswith("\n\n") or "\n\n\n" in out:
        problems.append("replies are not separated by exactly one empty line")
    blocks = out[:-2].split("\n\n") if out.endswith("\n\n") else out.split("\n\n")
    quit_at = lines.index(b"quit") if b"quit" in lines else len(lines) - 1
    expected = [line for line in lines[: quit_at + 1] if holds_command(line)]
    if len(blocks) != len(expected):
        problems.append(f"{len(blocks)} replies for {len(expected)} commands")
    for block, line in zip(blocks, expected):
        m = re.match(r"([=?])(\d*)(?: |\n|$)", block)
        if not m:
            problems.append(f"malformed reply {block[:60]!r} to {line[:60]!r}")
        elif m.group(2) != (command_id(line) or ""):
            problems.append(f"reply {block[:30]!r} does not echo the id of {line[:60]!r}")
    problems += [f"internal error: {b[:80]!r}" for b in blocks if "internal error" in b]
    return problems


def run_engine(lines: list[bytes], cwd: Path, timeout: float = 600.0) -> dict[str, Any]:
    """Feeds ``lines`` to a fresh ``python -m engine``; returns exit status, output, violations."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-m", "engine", *ENGINE_ARGS],
                              input=b"\n".join(lines) + b"\n", stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=cwd, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"hang": True, "crash": False, "violations": ["no end within the timeout"],
                "stdout": "", "stderr": ""}
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    crash = proc.returncode != 0 or "Traceback" in err
    return {"hang": False, "crash": crash, "returncode": proc.returncode, "stdout": out,
            "stderr": err, "violations": check_replies(lines, out)}


def fuzz(total: int, seed: int, chunk: int, cwd: Path) -> dict[str, Any]:
    counts = {"lines": 0, "commands": 0, "answered": 0, "crashes": 0, "hangs": 0, "violations": 0}
    examples: list[str] = []
    t0 = time.perf_counter()
    for i, start in enumerate(range(0, total, chunk)):
        lines = random_lines(seed * 1000003 + i, min(chunk, total - start))
        res = run_engine(lines, cwd)
        quit_at = lines.index(b"quit")
        counts["lines"] += len(lines)
        counts["commands"] += sum(holds_command(x) for x in lines[: quit_at + 1])
        counts["answered"] += res["stdout"].count("\n\n")
        counts["crashes"] += res["crash"]
        counts["hangs"] += res["hang"]
        counts["violations"] += len(res["violations"])
        examples += res["violations"][:3]
        if res["crash"]:
            examples.append(res["stderr"][-300:])
    counts["seconds"] = round(time.perf_counter() - t0, 1)
    counts["examples"] = examples[:10]
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.checks.gtp_fuzz", description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=100_000, help="random lines in all (default 100000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--chunk", type=int, default=5000, help="lines per engine process (default 5000)")
    a = p.parse_args(argv)
    res = fuzz(a.lines, a.seed, a.chunk, Path.cwd())
    for key in ("lines", "commands", "answered", "crashes", "hangs", "violations", "seconds"):
        print(f"{key:<11} {res[key]}")
    for ex in res["examples"]:
        print("  ", ex)
    print(json.dumps({"bench": "gtp-fuzz", "seed": a.seed, **res}))
    return 0 if not (res["crashes"] or res["hangs"] or res["violations"]) else 1


if __name__ == "__main__":
    sys.exit(main())
