"""Golden GTP transcripts: ``tests/gtp/NAME.gtp`` is fed to ``python -m engine`` and its stdout
must equal ``tests/gtp/NAME.out`` byte for byte.

The first line of each ``.gtp`` file is ``# args: ...`` (the engine's command line; fixed seed,
one thread, ``--weights uniform``).  The engine runs in ``tests/gtp`` so SGF paths are relative
to it.  A command whose line carries the comment ``# volatile`` (e.g. ``cputime``) must answer
successfully, but its reply text is not compared.  The whole file is written at once, so
analysis commands stop at the next line after ``analysis_min_visits``: deterministic output.

Regenerate the expected files after a deliberate change with::

    GTP_GOLDEN_UPDATE=1 python -m pytest tests/gtp/test_gtp_golden.py

and review the diff.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "gtp"
CASES = sorted(p.stem for p in GOLDEN.glob("*.gtp"))
UPDATE = os.environ.get("GTP_GOLDEN_UPDATE") == "1"


def engine_args(path: Path) -> list[str]:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    m = re.match(r"#\s*args:(.*)", first)
    assert m, f"{path.name}: the first line must be '# args: ...'"
    return shlex.split(m.group(1))


def volatile_ids(path: Path) -> set[str]:
    ids = set()
    for line in path.read_text().splitlines():
        m = re.match(r"\s*(\d+)\s.*#\s*volatile", line)
        if m:
            ids.add(str(int(m.group(1))))
    return ids


def mask_volatile(output: str, ids: set[str]) -> str:
    """Replaces the text of successful replies to the ``ids`` by ``<volatile>``."""
    blocks = output.split("\n\n")
    out = []
    for block in blocks:
        m = re.match(r"=(\d+)( .*)?$", block, re.S)
        if m and m.group(1) in ids:
            block = f"={m.group(1)} <volatile>"
        elif "(;" in block:
            # SGF replies: the version is not part of the transcript, and the line breaks move
            # with its length.
            block = re.sub(r"AP\[goengine:[^\]]*\]", "AP[goengine:VERSION]", block)
            block = block.replace("\n", "")
        out.append(block)
    return "\n\n".join(out)


def start_engine(path: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "engine", "--quiet", *engine_args(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=GOLDEN, env=env)


@pytest.fixture(scope="module")
def transcripts() -> dict[str, tuple[int, str, str]]:
    """Runs every transcript at once (start-up dominates; the engines run in parallel):
    case -> (exit status, stdout, stderr)."""
    procs = {case: start_engine(GOLDEN / f"{case}.gtp") for case in CASES}
    out = {}
    for case, proc in procs.items():
        try:
            stdout, stderr = proc.communicate((GOLDEN / f"{case}.gtp").read_bytes(), timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            stderr += b"\n[timed out]"
        out[case] = (proc.returncode, stdout.decode(), stderr.decode(errors="replace"))
    return out


@pytest.mark.parametrize("case", CASES)
def test_golden_transcript(case: str, transcripts) -> None:
    gtp = GOLDEN / f"{case}.gtp"
    expected_path = GOLDEN / f"{case}.out"
    returncode, actual, stderr = transcripts[case]
    assert returncode == 0, stderr[-2000:]
    ids = volatile_ids(gtp)
    if UPDATE:
        expected_path.write_text(mask_volatile(actual, ids))
    assert expected_path.exists(), f"missing {expected_path.name}: run with GTP_GOLDEN_UPDATE=1"
    expected = expected_path.read_text()
    assert mask_volatile(actual, ids) == expected


def test_every_command_is_covered() -> None:
    """Each command in list_commands appears in some golden transcript."""
    from engine.gtp import GTPEngine

    text = "\n".join(p.read_text() for p in GOLDEN.glob("*.gtp"))
    used = set(re.findall(r"^\s*(?:\d+\s+)?(\S+)", text, re.M))
    missing = [c for c in GTPEngine.COMMANDS if c not in used]
    assert not missing, f"commands without a golden transcript: {missing}"


def test_framing_of_every_reply() -> None:
    """Every reply in the expected files is GNU Go's form: '=' or '?', the id if any, a space,
    then the body (which may be empty or start on the next line), then exactly one empty line.
    GoGui splits a reply at its first space: without it, a board-shaped body loses a value."""
    for out in GOLDEN.glob("*.out"):
        text = out.read_text()
        assert text == "" or text.endswith("\n\n"), out.name
        assert "\n\n\n" not in text, out.name
        for block in text[:-2].split("\n\n") if text else []:
            assert re.match(r"[=?]\d* ", block), (out.name, block[:80])
            head, *rest = block.split("\n")
            assert head == head.rstrip() or head.rstrip() == head.split(" ")[0], (out.name, head)
            for line in rest:
                assert line == line.rstrip(), (out.name, line)


GNUGO = Path("/usr/games/gnugo")


@pytest.mark.slow          # runs GNU Go
@pytest.mark.gnugo
@pytest.mark.skipif(not GNUGO.exists(), reason="GNU Go is not installed (apt-get install gnugo)")
def test_reply_heads_match_gnugo() -> None:
    """The same commands, answered by GNU Go and by us: the same head ('=id ' / '?id '), byte
    for byte, for empty, one-line, multi-line and failed replies."""
    script = ("boardsize 9\n1 clear_board\n2 play b E5\n3 showboard\nlist_commands\n"
              "4 play b E5\n5 final_score\n6 undo\nquit\n")

    def heads(cmd: list[str]) -> list[str]:
        out = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=120).stdout
        return [re.match(r"[=?]\d* ", b).group(0) if re.match(r"[=?]\d* ", b) else b[:8]
                for b in out[:-2].split("\n\n")]

    ours = heads([sys.executable, "-m", "engine", "--weights", "uniform", "--threads", "1",
                  "--visits", "4", "--seed", "1"])
    theirs = heads([str(GNUGO), "--mode", "gtp", "--chinese-rules"])
    assert ours == theirs
