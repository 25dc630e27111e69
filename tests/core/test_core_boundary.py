"""The C boundary checks what crosses it: buffer shapes, dtypes and capacities before C
writes, a failed game_play leaves the game as it was, a network's NaN and inf outputs do not
poison the tree, and the first games of two threads at once see the same Zobrist keys."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.core import BLACK, Game, Search, SearchParams, backup_many, collect_many
from engine.nets.evaluator import Evaluation, UniformEvaluator
from engine.play.player import Player

ROOT = Path(__file__).resolve().parents[2]
PLANES = 20          # the rich feature set


def pool(n: int = 3, size: int = 5, batch: int = 2) -> list[Search]:
    return [Search(Game(size), SearchParams(), max_batch=batch, seed=i) for i in range(n)]


def buffers(rows: int, size: int = 5, planes: int = PLANES, n: int = 3):
    return (np.zeros((rows, planes, size, size), np.float32), np.zeros(rows, np.uint64),
            np.zeros(n, np.int32))


# -- collect_many ---------------------------------------------------------------------------

@pytest.mark.parametrize("break_it,message", [
    (lambda p, k, c: (p.astype(np.float64), k, c), "planes must be float32"),
    (lambda p, k, c: (p[:5], k, c), "planes has room for 5"),
    (lambda p, k, c: (np.zeros((12, 19, 5, 5), np.float32), k, c), "planes must have shape"),
    (lambda p, k, c: (np.zeros((12, 20, 5, 4), np.float32), k, c), "planes must have shape"),
    (lambda p, k, c: (np.zeros((12, 20 * 25), np.float32), k, c), "planes must have 4 dim"),
    (lambda p, k, c: (np.zeros((24, 20, 5, 5), np.float32)[::2], k, c), "C-contiguous"),
    (lambda p, k, c: (p, k.astype(np.int64), c), "keys must be uint64"),
    (lambda p, k, c: (p, k[:3], c), "keys has room for 3"),
    (lambda p, k, c: (p, k, c.astype(np.int64)), "counts must be int32"),
    (lambda p, k, c: (p, k, c[:2]), "counts has room for 2"),
    (lambda p, k, c: (p.tolist(), k, c), "planes must be a numpy array"),
])
def test_collect_many_refuses_bad_buffers_before_writing(break_it, message):
    trees = pool()
    planes, keys, counts = break_it(*buffers(12))
    with pytest.raises(ValueError, match=message):
        collect_many(trees, 2, planes, keys, counts)
    assert all(t.pending == 0 for t in trees)
    if isinstance(planes, np.ndarray):
        assert not planes.any()


def test_collect_many_refuses_read_only_buffers_and_mixed_pools():
    planes, keys, counts = buffers(12)
    planes.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        collect_many(pool(), 2, planes, keys, counts)
    mixed = pool(2) + [Search(Game(7), SearchParams(), max_batch=2)]
    with pytest.raises(ValueError, match="share board size"):
        collect_many(mixed, 2, *buffers(12))
    with pytest.raises(ValueError, match="per_search"):
        collect_many(pool(), 3, *buffers(12))
    with pytest.raises(ValueError, match="per_search"):
        collect_many(pool(), -1, *buffers(12))


# -- backup_many ----------------------------------------------------------------------------

def collected():
    trees = pool()
    planes, keys, counts = buffers(12)
    total = collect_many(trees, 2, planes, keys, counts)
    return trees, counts, total


def test_backup_many_checks_counts_and_sizes():
    trees, counts, total = collected()
    policy, values = np.zeros((total, 26), np.float32), np.zeros(total, np.float32)
    wrong = counts.copy()
    wrong[0] -= 1
    with pytest.raises(ValueError, match="do not match the pending"):
        backup_many(trees, wrong, policy, values)
    with pytest.raises(ValueError, match="policy has room"):
        backup_many(trees, counts, policy[:total - 1], values)
    with pytest.raises(ValueError, match="policy must have shape"):
        backup_many(trees, counts, np.zeros((total, 25), np.float32), values)
    with pytest.raises(ValueError, match="values has room"):
        backup_many(trees, counts, policy, values[:1])
    with pytest.raises(ValueError, match="counts must be integers"):
        backup_many(trees, counts[:2], policy, values)
    assert [t.pending for t in trees] == counts.tolist()     # nothing was backed up
    backup_many(trees, counts.astype(np.int64), policy.astype(np.float64), values)
    assert all(t.pending == 0 and t.visits > 0 for t in trees)


# -- a broken network -----------------------------------------------------------------------

class BrokenEvaluator(UniformEvaluator):
    """NaN values, and logits that are NaN, +inf or -inf on a pattern of points."""

    def evaluate(self, planes, keys=None):
        ev = super().evaluate(planes, keys)
        policy = ev.policy.copy()
        policy[:, 0::3] = np.nan
        policy[:, 1::3] = np.inf
        policy[:, 2::7] = -np.inf
        value = np.full(len(policy), np.nan, np.float32)
        return Evaluation(policy, value, ev.ownership, ev.score)


def test_nan_and_inf_outputs_leave_the_tree_usable():
    game = Game(5)
    player = Player(BrokenEvaluator(), SearchParams(), batch=4, seed=1)
    result = player.search(game, visits=64)
    assert result.visits >= 64
    assert np.isfinite(result.value) and result.value == 0.0      # NaN values count as even
    priors = np.array([c.prior for c in result.children])
    assert np.isfinite(priors).all() and abs(priors.sum() - 1.0) < 1e-4
    assert all(np.isfinite(c.q) for c in result.children)
    # +inf logits share the prior; NaN and -inf get none.
    best = {c.move for c in result.children if c.prior > 0}
    assert best and all(m % 3 == 1 and m % 7 != 2 for m in best if m != 25)
    assert game.legal_mask(BLACK)[result.move]


# -- game_play ------------------------------------------------------------------------------

def test_illegal_play_leaves_the_game_unchanged():
    game = Game(5)
    game.play(12, BLACK)
    before = (game.hash, list(game.moves), game.to_move, game.stones().copy())
    with pytest.raises(ValueError):
        game.play(12)
    assert (game.hash, list(game.moves), game.to_move) == before[:3]
    assert (game.stones() == before[3]).all()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_game_play_out_of_memory_leaves_the_game_unchanged(tmp_path):
    """tests/c/game_play_oom.c: realloc fails on the play that must grow the history."""
    src = ROOT / "src_c"
    exe = tmp_path / "game_play_oom"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pthread", f"-I{src}",
                    "-include", str(ROOT / "tests/c/failing_realloc.h"), str(src / "board.c"),
                    str(src / "game.c"), str(ROOT / "tests/c/game_play_oom.c"), "-o", str(exe)],
                   check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


# -- global initialisation ------------------------------------------------------------------

THREADS = """
import threading
from engine.core import Game
barrier = threading.Barrier(8)
hashes = []
def first_game():
    barrier.wait()
    g = Game(19)
    for p in (60, 300, 72, 288):
        g.play(p)
    hashes.append(g.hash)
threads = [threading.Thread(target=first_game) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(sorted(set(hashes)))
"""


def test_first_games_of_two_threads_at_once_share_the_keys():
    out = subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.strip()
    g = Game(19)
    for p in (60, 300, 72, 288):
        g.play(p)
    assert out == f"[{g.hash}]"


# -- the cffi declarations ------------------------------------------------------------------

def test_cdef_is_read_from_the_headers_and_matches_the_build():
    import importlib.util
    import re

    from engine._core import lib

    spec = importlib.util.spec_from_file_location("build_core", ROOT / "src_c/build_core.py")
    build_core = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_core)
    cdef = build_core.cdef_from_headers()
    functions = re.findall(r"([a-z_0-9]+)\(", cdef)
    assert {"game_new", "game_play", "search_collect_many", "game_playout_ownership"} <= set(functions)
    assert "board_play" not in functions          # board_t stays inside C
    missing = [f for f in functions if not hasattr(lib, f)]
    assert not missing, f"the extension is older than the headers: rebuild it ({missing})"
    assert "typedef struct { int ko_rule; int allow_suicide; float komi; int scoring; int tax; } rules_t;" in cdef
