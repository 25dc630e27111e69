"""Drive Leela Zero (``leelaz``) over GTP as an oracle for its network's outputs.

Used by tests/nets/test_lzweights.py to prove that engine.nets.lzweights evaluates Leela Zero weight files
exactly as Leela Zero 0.17 does.

What the oracle relies on (verified against the Debian ``leela-zero`` 0.17 binary):

* ``leelaz --cpu-only -g -w NET --noponder -t 1`` starts a GTP engine on stdin/stdout. It writes
  diagnostics to stderr (``-q`` would silence them, including the heatmap, so it is not used).
  It needs nothing but the weights file; HOME is pointed at a scratch directory anyway.
* ``heatmap 0`` evaluates the current position with the network under the identity symmetry
  (no cache) and answers ``=`` on stdout, after printing to stderr: 19 lines of 19 numbers
  (``"%3d "`` each), the top line being row 19 (our row 0), each number
  ``int(policy * 1000)`` (truncated per mille) for an empty point and 0 for an occupied one; then
  ``pass: N`` (truncated per mille) and ``winrate: 0.xxxxxx`` (``printf("%f")``), the side to
  move's winrate ``(1 + tanh(v)) / 2`` (for version-2 nets already converted from Black's view).
* ``play b D4`` / ``play w pass`` / ``clear_board`` set up positions; each ``play`` is one entry
  of the history that feeds the network's 8 history planes, passes included. ``play`` only
  rejects occupied points (``? illegal move``): leelaz 0.17 accepts an immediate ko retake and
  suicide over GTP, so it is no legality oracle; :meth:`LeelaZero.stones` (``showboard``) lets a
  test check that leelaz holds the same position as our core.
* ``showboard`` draws the board on stderr: a column header ``   a b c ... t``, then rows 19..1
  such as `` 5 . . . X(O). O . . .  5`` (X black, O white, ``.``/``+`` empty, the last move in
  parentheses), then the header again.

The module also contains :func:`reference_lz18_planes`, an independent, deliberately simple
implementation of the "lz18" input planes, used to check positions before (or besides) the C core.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

SIZE = 19
PASS = SIZE * SIZE
EMPTY, BLACK, WHITE = 0, 1, 2
GTP_COLUMNS = "ABCDEFGHJKLMNOPQRST"  # GTP skips I


def leelaz_path() -> Path | None:
    """The leelaz binary: $LEELAZ, else ``leelaz`` on PATH, else /usr/games/leelaz; None if absent."""
    candidates = [os.environ.get("LEELAZ"), shutil.which("leelaz"), "/usr/games/leelaz"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def gtp_vertex(point: int) -> str:
    """GTP vertex of a compact point on the 19x19 board (row 0 = top = GTP row 19)."""
    if point == PASS:
        return "pass"
    row, col = divmod(point, SIZE)
    return f"{GTP_COLUMNS[col]}{SIZE - row}"


def parse_vertex(vertex: str) -> int:
    """Compact point of a GTP vertex such as ``"D4"`` or ``"pass"`` (19x19)."""
    vertex = vertex.strip().upper()
    if vertex == "PASS":
        return PASS
    col = GTP_COLUMNS.index(vertex[0])
    row = SIZE - int(vertex[1:])
    if not (0 <= row < SIZE):
        raise ValueError(f"bad vertex {vertex!r}")
    return row * SIZE + col


class GTPError(RuntimeError):
    """leelaz answered a command with ``?`` (e.g. ``illegal move``)."""


class Heatmap(NamedTuple):
    """What ``heatmap 0`` prints, in our layout."""

    policy_permille: np.ndarray  # int [19, 19], row 0 = top row; 0 on occupied points
    pass_permille: int
    winrate: float  # side to move's winrate in [0, 1]


class LeelaZero:
    """A running ``leelaz`` process in GTP mode; use as a context manager."""

    def __init__(self, weights: str | Path, binary: str | Path | None = None,
                 timeout: float = 60.0) -> None:
        binary = binary or leelaz_path()
        if binary is None:
            raise FileNotFoundError("leelaz not found")
        self.timeout = timeout
        self._home = tempfile.TemporaryDirectory(prefix="leelaz-home-")
        env = dict(os.environ, HOME=self._home.name, TMPDIR=self._home.name)
        self._proc = subprocess.Popen(
            [str(binary), "--cpu-only", "-g", "-w", str(weights), "--noponder", "-t", "1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1, env=env, cwd=self._home.name)
        self._stdout: queue.Queue[str | None] = queue.Queue()
        self._stderr: queue.Queue[str | None] = queue.Queue()
        self.stderr_log: list[str] = []
        for stream, sink in ((self._proc.stdout, self._stdout), (self._proc.stderr, self._stderr)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()
        self.command("name")  # wait until the network is loaded and GTP answers

    @staticmethod
    def _pump(stream, sink: queue.Queue) -> None:
        for line in stream:
            sink.put(line.rstrip("\n"))
        sink.put(None)

    def _get(self, source: queue.Queue, what: str) -> str:
        try:
            line = source.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"leelaz: no {what} within {self.timeout} s") from None
        if line is None:
            tail = "\n".join(self._drain_stderr()[-20:])
            raise RuntimeError(f"leelaz exited (code {self._proc.poll()}); stderr:\n{tail}")
        return line

    def _drain_stderr(self) -> list[str]:
        lines = []
        while True:
            try:
                line = self._stderr.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                lines.append(line)
        self.stderr_log += lines
        return lines

    def command(self, cmd: str) -> str:
        """Send one GTP command; return the answer text, raise GTPError on ``?``."""
        assert self._proc.stdin is not None
        self._proc.stdin.write(cmd + "\n")
        self._proc.stdin.flush()
        line = self._get(self._stdout, f"answer to {cmd!r}")
        while not line.startswith(("=", "?")):
            line = self._get(self._stdout, f"answer to {cmd!r}")
        status, text = line[0], [line[1:].strip()]
        while (line := self._get(self._stdout, f"answer to {cmd!r}")) != "":
            text.append(line)
        answer = "\n".join(text).strip()
        if status == "?":
            raise GTPError(f"{cmd!r}: {answer}")
        return answer

    def clear_board(self) -> None:
        """Empty board, empty history, Black to move."""
        self.command("clear_board")

    def play(self, color: int, point: int) -> None:
        """Play ``point`` (compact, PASS allowed) for ``color`` (BLACK/WHITE)."""
        self.command(f"play {'b' if color == BLACK else 'w'} {gtp_vertex(point)}")

    def heatmap(self) -> Heatmap:
        """Run ``heatmap 0`` and parse what leelaz prints on stderr."""
        self._drain_stderr()
        self.command("heatmap 0")
        # The heatmap is written to stderr before the GTP answer; collect it.
        lines: list[str] = []
        while not (lines and lines[-1].startswith("winrate:")):
            lines.append(self._get(self._stderr, "heatmap output"))
        self.stderr_log += lines
        grid_lines, pass_line, winrate_line = lines[-21:-2], lines[-2], lines[-1]
        grid = np.array([[int(tok) for tok in row.split()] for row in grid_lines], dtype=np.int64)
        if grid.shape != (SIZE, SIZE) or not pass_line.startswith("pass:"):
            raise RuntimeError("unexpected heatmap output:\n" + "\n".join(lines[-21:]))
        return Heatmap(grid, int(pass_line.split()[1]), float(winrate_line.split()[1]))

    def stones(self) -> np.ndarray:
        """The board leelaz holds, from ``showboard``: int8 [19, 19], row 0 = top, 0/1/2."""
        self._drain_stderr()
        self.command("showboard")
        rows: list[list[int]] = []
        headers = 0
        while headers < 2:
            line = self._get(self._stderr, "showboard output")
            self.stderr_log.append(line)
            if line.startswith("   a b c"):
                headers += 1
            elif headers == 1 and line[:2].strip().isdigit():
                cells = [ch for ch in line[2:].rsplit(" ", 1)[0] if ch in ".+XO"]
                rows.append([{"X": BLACK, "O": WHITE}.get(ch, EMPTY) for ch in cells])
        board = np.array(rows, dtype=np.int8)
        if board.shape != (SIZE, SIZE):
            raise RuntimeError(f"unexpected showboard output (parsed shape {board.shape})")
        return board

    def close(self) -> None:
        """Quit leelaz (killing it if it does not exit) and remove its scratch HOME."""
        if self._proc.poll() is None:
            try:
                self.command("quit")
                self._proc.wait(timeout=10)
            except Exception:
                self._proc.kill()
                self._proc.wait()
        self._home.cleanup()

    def __enter__(self) -> "LeelaZero":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ----------------------------------------------------------------------------------------------
# Reference input planes, independent of the C core


class ReferenceBoard:
    """A minimal 19x19 Go board: stones and captures, no ko or suicide checks.

    Only for building test positions whose legality is already known (leelaz checks it).
    """

    def __init__(self) -> None:
        self.stones = np.zeros((SIZE, SIZE), dtype=np.int8)

    def _group(self, row: int, col: int) -> tuple[set[tuple[int, int]], bool]:
        color = self.stones[row, col]
        group, frontier, has_liberty = {(row, col)}, [(row, col)], False
        while frontier:
            r, c = frontier.pop()
            for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if 0 <= nr < SIZE and 0 <= nc < SIZE:
                    if self.stones[nr, nc] == EMPTY:
                        has_liberty = True
                    elif self.stones[nr, nc] == color and (nr, nc) not in group:
                        group.add((nr, nc))
                        frontier.append((nr, nc))
        return group, has_liberty

    def play(self, color: int, point: int) -> None:
        """Place a stone (or pass) and remove opponent groups left without liberties."""
        if point == PASS:
            return
        row, col = divmod(point, SIZE)
        assert self.stones[row, col] == EMPTY, f"occupied {gtp_vertex(point)}"
        self.stones[row, col] = color
        for nr, nc in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)):
            if 0 <= nr < SIZE and 0 <= nc < SIZE and self.stones[nr, nc] == 3 - color:
                group, has_liberty = self._group(nr, nc)
                if not has_liberty:
                    for r, c in group:
                        self.stones[r, c] = EMPTY


def reference_lz18_planes(moves: Sequence[tuple[int, int]], to_move: int | None = None
                          ) -> np.ndarray:
    """The "lz18" planes [18, 19, 19] after ``moves`` ((color, point) pairs, PASS allowed).

    Layout (row 0 = top row, as everywhere in this project): plane h (0..7) holds the side to
    move's stones in the position h moves ago, plane 8+h the opponent's; history before the
    start of the game is all zeros (the empty board). Plane 16 is all ones if Black is to move,
    plane 17 all ones if White is. The side to move is the opposite of the last mover (Black
    for an empty history) unless ``to_move`` is given.
    """
    board = ReferenceBoard()
    history = [board.stones.copy()]
    for color, point in moves:
        board.play(color, point)
        history.append(board.stones.copy())
    if to_move is None:
        to_move = BLACK if not moves or moves[-1][0] == WHITE else WHITE
    planes = np.zeros((18, SIZE, SIZE), dtype=np.float32)
    for h in range(min(8, len(history))):
        stones = history[-1 - h]
        planes[h] = stones == to_move
        planes[8 + h] = stones == 3 - to_move
    planes[16 if to_move == BLACK else 17] = 1.0
    return planes
