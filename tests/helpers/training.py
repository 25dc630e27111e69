"""Tiny training runs and hand-made games, shared by tests/train/ (and tests/nets/test_cuda.py).

``TINY`` is the command line of a 5x5 run with a 1x8 net that ``python -m train.loop`` finishes in
seconds; ``run_loop`` runs the loop from the repository root; ``write_game`` writes a random legal
5x5 game into a run directory's game folder."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from engine.core import BLACK, WHITE, Game, Rules
from train.games.records import MoveInfo, build_record, write_npz
from train.rundir import GameName, RunDir

REPO = Path(__file__).resolve().parents[2]
SIZE = 5


def tiny(threads: int = 1) -> list[str]:
    """The tiny run's settings, with ``threads`` search threads."""
    return ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "8",
            "--parallel-games", "4", "--batch", "16", "--train-batch", "16", "--min-games", "2",
            "--checkpoint-every", "2", "--metrics-every", "1", "--threads", str(threads), "--seed", "7",
            "--no-resign-fraction", "0.5", "--resign-min-games", "2", "--quiet"]


TINY = tiny()


def run_loop(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m train.loop ARGS`` in the repository root, output captured."""
    return subprocess.run([sys.executable, "-m", "train.loop", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def write_game(rd: RunDir, seq: int, length: int, seed: int, worker: int = 0, *,
               random_targets: bool = False, resign: bool = False, model: str | None = None) -> None:
    """A random legal game of ``length`` moves as game ``seq`` of ``worker``, by ``model``
    (default ``m{seq}``).  Policy targets are one-hot on the move played and values 0, or with
    ``random_targets`` Dirichlet-random targets and uniform values in [-1, 1].  The game then ends
    by two passes, or with ``resign`` by a resignation (Black wins unless ``seq`` is a multiple
    of 4)."""
    rng = np.random.default_rng(seed)
    model = f"m{seq}" if model is None else model
    game = Game(SIZE, Rules.preset("chinese", 0.5))
    infos = []
    for _ in range(length):
        color = game.to_move
        legal = [p for p in game.legal_moves() if p != SIZE * SIZE] or [SIZE * SIZE]
        point = int(rng.choice(legal))
        if random_targets:
            target = rng.dirichlet(np.ones(SIZE * SIZE + 1)).astype(np.float32)
        else:
            target = np.zeros(SIZE * SIZE + 1, np.float32)
            target[point] = 1.0
        game.play(point, color)
        value = float(rng.uniform(-1, 1)) if random_targets else 0.0
        infos.append(MoveInfo(color, point, model, 10, value, target))
    if resign:
        write_npz(rd.game_paths(GameName(seq, worker))[0],
                  build_record(game, infos, reason="resign", winner=BLACK if seq % 4 else WHITE))
        return
    while not game.is_over:
        color = game.to_move
        game.play(SIZE * SIZE, color)
        infos.append(MoveInfo(color, SIZE * SIZE, model, 10, 0.0, None))
    write_npz(rd.game_paths(GameName(seq, worker))[0], build_record(game, infos, reason="passes"))
