"""Differential legality test against GNU Go (``gnugo --mode gtp``), 9x9, simple ko, no suicide.

One GNU Go process plays 100 random games with us (``clear_board`` between games).  Before every
move a few points are probed: GNU Go's answer to ``play <colour> <vertex>`` (``=`` legal,
``? illegal move`` not; a successful probe is taken back with ``undo``) must equal our
``is_legal``.  The probes always include the simple-ko point when there is one, an occupied
point and a suicide point when there are such, then random points.  The chosen move is then
played on both sides and, after each game, GNU Go's ``list_stones`` must equal our stones.

Moves are uniform among our legal moves, except that some moves prefer captures, so that kos
(and therefore ko probes) come up often enough.
"""
from __future__ import annotations

import os
import select
import shutil
import subprocess
import time

import numpy as np
import pytest

from engine import coords
from engine.core import BLACK, EMPTY, WHITE, Game, Rules, other

GNUGO = "/usr/games/gnugo"
SIZE = 9
GAMES = 100
MAX_MOVES = 80
RANDOM_PROBES = 3        # random points probed per move, on top of ko/occupied/suicide ones
CAPTURE_BIAS = 0.3       # probability that a move prefers a capturing point when there is one
REPLY_TIMEOUT = 20.0     # seconds GNU Go may take for one reply

pytestmark = [
    pytest.mark.slow,          # 100 games through GNU Go
    pytest.mark.gnugo,
    pytest.mark.skipif(not (os.path.isfile(GNUGO) and os.access(GNUGO, os.X_OK)),
                       reason=f"GNU Go not installed at {GNUGO}"),
]


class GTPFailure(Exception):
    pass


class TinyGTP:
    """Just enough GTP: send a command, read the reply up to the blank line that ends it."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.buffer = b""

    def _read_line(self, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("GNU Go did not answer in time")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError(f"GNU Go exited (status {self.proc.poll()})")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.rstrip(b"\r")

    def send(self, command: str) -> tuple[bool, str]:
        """(success, text) of one command; success means the reply started with '='."""
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + REPLY_TIMEOUT
        lines: list[str] = []
        while True:
            line = self._read_line(deadline).decode()
            if not line.strip():
                if lines:
                    break
                continue
            lines.append(line)
        reply = "\n".join(lines)
        assert reply[:1] in "=?", f"odd reply to {command!r}: {reply!r}"
        return reply.startswith("="), reply[1:].strip()

    def must(self, command: str) -> str:
        ok, text = self.send(command)
        if not ok:
            raise GTPFailure(f"{command!r} failed: {text}")
        return text

    def close(self) -> None:
        try:
            self.send("quit")
        except (EOFError, TimeoutError, BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def gnugo():
    engine = TinyGTP([GNUGO, "--mode", "gtp", "--chinese-rules", "--level", "0"])
    try:
        engine.must("boardsize 9")
        assert "GNU Go" in engine.must("name")
        yield engine
    finally:
        engine.close()


def colour_name(color: int) -> str:
    return "black" if color == BLACK else "white"


def gnugo_stones(engine: TinyGTP) -> np.ndarray:
    stones = np.zeros(SIZE * SIZE, np.int8)
    for color in (BLACK, WHITE):
        for vertex in engine.must(f"list_stones {colour_name(color)}").split():
            stones[coords.from_gtp(vertex, SIZE)] = color
    return stones.reshape(SIZE, SIZE)


def capturing_points(game: Game, stones: np.ndarray, color: int) -> list[int]:
    """Empty points that are the last liberty of an opponent group."""
    flat = stones.ravel()
    out = set()
    for point in np.flatnonzero(flat == other(color)):
        point = int(point)
        if game.liberties(point) != 1:
            continue
        row, col = divmod(point, SIZE)
        for r, c in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)):
            if 0 <= r < SIZE and 0 <= c < SIZE and flat[r * SIZE + c] == EMPTY:
                out.add(r * SIZE + c)
    return sorted(out)


def test_legality_matches_gnugo(gnugo: TinyGTP) -> None:
    rng = np.random.default_rng(2024)
    start = time.perf_counter()
    counts = {"probes": 0, "ko": 0, "suicide": 0, "occupied": 0, "illegal": 0, "moves": 0}
    area = SIZE * SIZE
    for game_index in range(GAMES):
        gnugo.must("clear_board")
        game = Game(SIZE, Rules.preset("chinese"))
        for _ in range(MAX_MOVES):
            color = game.to_move
            name = colour_name(color)
            stones = game.stones()
            flat = stones.ravel()
            probes = []
            if game.ko_point is not None:
                probes.append(game.ko_point)
                counts["ko"] += 1
            occupied = np.flatnonzero(flat != EMPTY)
            if len(occupied):
                probes.append(int(rng.choice(occupied)))
                counts["occupied"] += 1
            suicides = [p for p in np.flatnonzero(flat == EMPTY)
                        if game.illegal_reason(int(p)) == "suicide"]
            if suicides:
                probes.append(int(rng.choice(suicides)))
                counts["suicide"] += 1
            probes += [int(p) for p in rng.choice(area, size=RANDOM_PROBES, replace=False)]
            for point in probes:
                vertex = coords.to_gtp(point, SIZE)
                ours = game.illegal_reason(point)
                ok, text = gnugo.send(f"play {name} {vertex}")
                if ok:
                    gnugo.must("undo")
                else:
                    assert text == "illegal move", f"unexpected GNU Go reply {text!r}"
                    counts["illegal"] += 1
                assert ok == (ours is None), (
                    f"game {game_index} move {len(game.moves) + 1}: {name} {vertex}: "
                    f"GNU Go says {'legal' if ok else 'illegal'}, we say {ours or 'legal'}\n"
                    f"moves: {' '.join(coords.to_gtp(p, SIZE) for _, p in game.moves)}\n{game}")
                counts["probes"] += 1

            legal = np.flatnonzero(game.legal_mask()[:area])
            captures = capturing_points(game, stones, color) if rng.random() < CAPTURE_BIAS else []
            captures = [p for p in captures if game.is_legal(p)]
            if rng.random() < 0.03 or len(legal) == 0:
                move = area
            elif captures:
                move = int(rng.choice(captures))
            else:
                move = int(rng.choice(legal))
            gnugo.must(f"play {name} {coords.to_gtp(move, SIZE)}")
            game.play(move)
            counts["moves"] += 1
            if game.is_over:
                break
        assert gnugo_stones(gnugo).tolist() == game.stones().tolist(), f"game {game_index}"
    elapsed = time.perf_counter() - start
    print(f"{GAMES} games, {counts}, {elapsed:.1f} s")
    assert counts["ko"] >= 10 and counts["suicide"] >= 50 and counts["illegal"] > 100
