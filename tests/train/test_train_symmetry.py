"""Augmentation maps planes, policy targets and ownership consistently (train.replay)."""
import numpy as np
import pytest

from engine.nets import symmetry
from engine.coords import from_gtp
from engine.core import BLACK, WHITE, Game, Rules
from train.games.records import MoveInfo, build_record, positions, write_npz
from train.replay import ReplayWindow, augment, make_batch
from train.rundir import GameName, RunDir

SIZE = 5
OWN, OPP, LAST_MOVE = 0, 1, 9          # rich planes: own stones, opponent stones, most recent move


def one_hot(point, size=SIZE):
    p = np.zeros(size * size + 1, np.float32)
    p[point] = 1.0
    return p


def record_with_targets(gtp_moves, targets, size=SIZE):
    """A finished game of ``gtp_moves`` whose move t has the one-hot policy target targets[t]."""
    game = Game(size, Rules.preset("chinese", 0.5))
    infos = []
    for t, v in enumerate(gtp_moves):
        color = game.to_move
        point = from_gtp(v, size)
        game.play(point, color)
        infos.append(MoveInfo(color, point, "m0", 10, 0.0, one_hot(targets[t], size)))
    for _ in range(2):
        color = game.to_move
        game.play(size * size, color)
        infos.append(MoveInfo(color, size * size, "m0", 10, 0.0, one_hot(size * size, size)))
    return build_record(game, infos, reason="passes")


def test_known_move_and_stones_move_together():
    # Black B4, White D2, Black C3; at move 3 (White to move) the target is A1.
    rec = record_with_targets(["B4", "D2", "C3", "E5"], [0, 0, 0, from_gtp("A1", SIZE)])
    ex = positions(rec, [3])
    assert ex.policy[0].argmax() == from_gtp("A1", SIZE)
    own_stones = [from_gtp("D2", SIZE)]                      # White's, the side to move
    opp_stones = [from_gtp("B4", SIZE), from_gtp("C3", SIZE)]
    assert sorted(np.flatnonzero(ex.planes[0, OWN].reshape(-1))) == sorted(own_stones)
    assert sorted(np.flatnonzero(ex.planes[0, OPP].reshape(-1))) == sorted(opp_stones)
    for k in range(symmetry.NUM_SYMMETRIES):
        planes, policy, own = augment(ex.planes, ex.policy, ex.ownership, np.array([k]))
        assert policy[0].argmax() == symmetry.transform_point(from_gtp("A1", SIZE), k, SIZE)
        assert sorted(np.flatnonzero(planes[0, OWN].reshape(-1))) == \
            sorted(symmetry.transform_point(p, k, SIZE) for p in own_stones)
        assert sorted(np.flatnonzero(planes[0, OPP].reshape(-1))) == \
            sorted(symmetry.transform_point(p, k, SIZE) for p in opp_stones)
        # Ownership moves with the stones: each stone's point keeps its owner.
        for p in own_stones + opp_stones:
            q = symmetry.transform_point(p, k, SIZE)
            assert own[0, q] == ex.ownership[0, p]
        # Nothing is created or lost.
        assert policy.sum() == pytest.approx(1.0)
        assert planes.sum() == pytest.approx(ex.planes.sum())


def test_pass_target_is_fixed_by_every_symmetry():
    rec = record_with_targets(["C3"], [SIZE * SIZE])
    ex = positions(rec, [0, 1])
    for k in range(symmetry.NUM_SYMMETRIES):
        _, policy, _ = augment(ex.planes, ex.policy, ex.ownership, np.array([k, k]))
        assert policy[0].argmax() == SIZE * SIZE


def test_ownership_target_is_side_to_move_view():
    rec = record_with_targets(["C3", "pass"], [0, 0])
    ex = positions(rec, [0, 1])           # Black to move, then White to move
    c3 = from_gtp("C3", SIZE)
    assert rec.winner == BLACK
    assert ex.ownership[0, c3] == 1.0 and ex.ownership[1, c3] == -1.0
    assert ex.value.tolist() == [1.0, -1.0]
    assert ex.score[0] == pytest.approx(rec.score) and ex.score[1] == pytest.approx(-rec.score)


def test_make_batch_keeps_planes_and_targets_aligned(tmp_path):
    """Targets = the previous move, which the 'most recent move' plane shows: after random
    symmetries the policy argmax and that plane's stone must still be the same point."""
    rd = RunDir(tmp_path).create()
    rng = np.random.default_rng(3)
    for g in range(6):
        game = Game(SIZE, Rules.preset("chinese", 0.5))
        infos, prev = [], None
        while len(infos) < 12:
            color = game.to_move
            legal = [p for p in game.legal_moves() if p != SIZE * SIZE]
            point = int(rng.choice(legal))
            target = prev if prev is not None else SIZE * SIZE
            game.play(point, color)
            infos.append(MoveInfo(color, point, "m0", 10, 0.0, one_hot(target)))
            prev = point
        for _ in range(2):
            color = game.to_move
            game.play(SIZE * SIZE, color)
            infos.append(MoveInfo(color, SIZE * SIZE, "m0", 10, 0.0, None))
        write_npz(rd.game_paths(GameName(g, 0))[0], build_record(game, infos, reason="passes"))
    window = ReplayWindow(rd, capacity=100)
    assert window.refresh() == 6 and window.positions == 6 * 12
    batch = make_batch(window, 256, "rich", np.random.default_rng(0))
    assert batch["planes"].shape == (256, 20, SIZE, SIZE)
    checked = 0
    for planes, policy in zip(batch["planes"], batch["policy"]):
        if policy.argmax() == SIZE * SIZE:
            assert planes[LAST_MOVE].sum() == 0          # the first move of a game
            continue
        assert planes[LAST_MOVE].reshape(-1).argmax() == policy.argmax()
        checked += 1
    assert checked > 150
    # The symmetries really vary: the same position shows up in several orientations.
    assert len({p.tobytes() for p in batch["planes"]}) > 6 * 12
