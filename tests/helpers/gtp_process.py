"""A GTP engine subprocess for tests: send lines, read replies and streamed lines with timeouts."""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class EngineProcess:
    """``python -m engine ARGS`` (or any command) with a reader thread on its stdout."""

    def __init__(self, args: list[str], command: list[str] | None = None, cwd: str | None = None):
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = command if command is not None else [sys.executable, "-m", "engine", *args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, cwd=cwd or str(ROOT), env=env)
        self.lines: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put((time.monotonic(), raw.decode("utf-8", "replace").rstrip("\n")))
        self.lines.put((time.monotonic(), None))

    def send(self, line: str) -> float:
        """Writes one line; returns the time it was sent."""
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()
        return time.monotonic()

    def line(self, timeout: float = 30.0) -> tuple[float, str | None]:
        """(arrival time, line) of the next stdout line; None at EOF.  AssertionError on timeout."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output from the engine within {timeout} s") from None

    def reply(self, timeout: float = 30.0) -> list[str]:
        """The lines of the next reply, up to (without) its terminating empty line."""
        out = []
        deadline = time.monotonic() + timeout
        while True:
            _, text = self.line(max(0.01, deadline - time.monotonic()))
            assert text is not None, f"engine closed its output after {out}"
            if text == "":
                return out
            out.append(text)

    def command(self, line: str, timeout: float = 30.0) -> list[str]:
        self.send(line)
        return self.reply(timeout)

    def close(self, timeout: float = 10.0) -> int:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("the engine did not exit at the end of its input") from None

    def __enter__(self) -> "EngineProcess":
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# -- analysis lines as Sabaki reads them ------------------------------------------------------

import re  # noqa: E402

_SABAKI_PV = re.compile(r"(pass|[A-Za-z]\d+)(\s+(pass|[A-Za-z]\d+))*$")
_VERTEX = re.compile(r"(pass|[A-HJ-Z]\d{1,2})$")


def sabaki_parse(line: str) -> list[dict]:
    """Sabaki's parseAnalysis (src/modules/analysis.js): segments after ``info``, the trailing
    run of vertices is the pv, the rest key/value pairs; moves that are not vertices dropped."""
    out = []
    for seg in re.split(r"\s*info\s+", line)[1:]:
        seg = seg.strip()
        m = _SABAKI_PV.search(seg)
        if m is None:
            continue
        tokens = seg[: m.start()].strip().split()[:-1]
        pv_text = m.group(0)
        cut = pv_text.find("pass")
        pv = [t for t in (pv_text if cut < 0 else pv_text[:cut]).split() if len(t) >= 2]
        entry = dict(zip(tokens[0::2], tokens[1::2]))
        entry["pv"] = pv
        if not re.fullmatch(r"[A-Za-z]\d+", entry.get("move", "")):
            continue
        w = entry["winrate"]
        entry["winrate_percent"] = float(w) * 100 if "." in w else float(w) / 100
        out.append(entry)
    return out


def check_info_line(line: str, kind: str, size: int, ownership: bool = False) -> list[dict]:
    """Asserts that an analysis line follows GTP.md and parses in Sabaki; returns its entries."""
    assert line.startswith("info "), line
    body, own = line, None
    if " ownership " in line:
        body, own = line.split(" ownership ", 1)
    assert (own is not None) == ownership, line[-200:]
    segments = re.split(r"\s*info\s+", body)[1:]
    assert segments
    for seg in segments:
        tokens = seg.split()
        assert "pv" in tokens, seg
        i = tokens.index("pv")
        pv = tokens[i + 1:]
        assert pv and all(_VERTEX.match(t) for t in pv), seg          # pv last, vertices only
        pairs = tokens[:i]
        assert len(pairs) % 2 == 0, seg
        kv = dict(zip(pairs[0::2], pairs[1::2]))
        for key in ("move", "visits", "winrate", "prior", "lcb", "order"):
            assert key in kv, (key, seg)
        assert _VERTEX.match(kv["move"]) and pv[0] == kv["move"], seg
        assert re.fullmatch(r"\d+", kv["visits"]) and re.fullmatch(r"\d+", kv["order"]), seg
        for key in ("winrate", "prior", "lcb"):
            if kind == "lz":
                assert re.fullmatch(r"\d+", kv[key]) and 0 <= int(kv[key]) <= 10000, (key, seg)
            else:
                assert re.fullmatch(r"\d+\.\d+", kv[key]) and 0 <= float(kv[key]) <= 1, (key, seg)
        if kind == "kata":
            for key in ("scoreLead", "scoreMean"):
                if key in kv:
                    assert re.fullmatch(r"-?\d+\.\d+", kv[key]), (key, seg)
    if own is not None:
        values = own.split()
        assert len(values) == size * size, len(values)
        assert all(re.fullmatch(r"-?\d+\.\d+", x) and -1 <= float(x) <= 1 for x in values)
    parsed = sabaki_parse(body)
    assert len(parsed) == sum(1 for s in segments if not s.split()[1] == "pass"), line[:300]
    return parsed
