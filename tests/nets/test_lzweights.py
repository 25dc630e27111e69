"""Tests for engine.nets.lzweights: Leela Zero weight files and LZNet.

The central proof is ``test_matches_leelaz``: for random Leela Zero nets of two tower sizes and
both format versions, and ~30 positions (empty board, captures, a ko taken and retaken, passes,
both colours to move, short and long histories), LZNet fed with planes from our C core gives the
value and policy that ``leelaz`` itself prints for ``heatmap 0``. Those tests are skipped, saying
why, when the leelaz binary (Debian package ``leela-zero``) is not installed.

The other tests need no leelaz: file parsing and errors, round trips, the CLI, and LZNet against
an independent functional implementation of Leela Zero's forward pass (explicit batch norm, bias
folding and bottom-row-first layout, as in Leela Zero's CPUPipe).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.helpers.leelaz_oracle import (  # noqa: E402
    BLACK, PASS, WHITE, LeelaZero, leelaz_path, parse_vertex, reference_lz18_planes)

from engine.nets import lzweights  # noqa: E402
from engine.nets.lzweights import LZWeightsError  # noqa: E402

LEELAZ = leelaz_path()
_skip_without_leelaz = pytest.mark.skipif(
    LEELAZ is None,
    reason="leelaz not installed (Debian package leela-zero, /usr/games/leelaz; or set $LEELAZ): "
           "the equivalence proof against Leela Zero itself cannot run")


def needs_leelaz(test):
    """Mark a test as needing the leelaz binary (markers ``leelaz`` and ``slow``: it runs Leela Zero;
    skipped with a reason)."""
    return pytest.mark.slow(pytest.mark.leelaz(_skip_without_leelaz(test)))

# (blocks, filters, version, seed, file name): two tower sizes x both format versions, text and gzip.
NETS = [
    (2, 16, 1, 11, "n2x16v1.txt"),
    (2, 16, 2, 12, "n2x16v2.gz"),
    (4, 32, 1, 13, "n4x32v1.gz"),
    (4, 32, 2, 14, "n4x32v2.txt"),
]
NET_IDS = [name.split(".")[0] for *_, name in NETS]

Move = tuple[int, int]  # (colour, point)


def moves_from(text: str) -> list[Move]:
    """``"B D4 W Q16 B pass"`` -> [(BLACK, point), ...]."""
    tokens = text.split()
    return [(BLACK if c.upper() == "B" else WHITE, parse_vertex(v))
            for c, v in zip(tokens[0::2], tokens[1::2])]


KO_SETUP = "B D5 W G5 B E4 W F4 B E6 W F6 B pass W E5"  # White E5 sits in Black's mouth
SCRIPTED: dict[str, str] = {
    "empty": "",
    "black_D4": "B D4",
    "black_pass": "B pass",
    "two_moves": "B Q16 W D4",
    "white_first_reply_pass": "B Q16 W pass",
    "two_passes": "B D4 W Q16 B pass W pass",
    "nine_moves": "B Q16 W D4 B Q3 W D16 B R5 W C10 B K10 W O17 B F3",
    "corner_capture": "B A2 W A1 B B1",
    "corner_capture_then_pass": "B A2 W A1 B B1 W pass",
    "edge_capture_two": "B J1 W K1 B K2 W L1 B L2 W pass B M1",
    "ko_before": KO_SETUP,
    "ko_taken": KO_SETUP + " B F5",
    "ko_threat": KO_SETUP + " B F5 W Q16",
    "ko_answered": KO_SETUP + " B F5 W Q16 B R16",
    "ko_retaken": KO_SETUP + " B F5 W Q16 B R16 W E5",
}
KO_ILLEGAL_AFTER = "ko_taken"  # White may not retake at E5 immediately


def random_game(seed: int, length: int) -> list[Move]:
    """A random legal game from our C core (occasional passes), alternating colours."""
    from engine.core import Game, Rules

    rng = np.random.default_rng(seed)
    game = Game(19, Rules.preset("chinese", 7.5))
    for _ in range(length):
        legal = np.flatnonzero(game.legal_mask()[:PASS])
        point = PASS if rng.random() < 0.04 or legal.size == 0 else int(rng.choice(legal))
        game.play(point)
    return list(game.moves)


# Snapshots of random games: (seed, length, move numbers to evaluate at).
RANDOM_GAMES = [(1, 140, (15, 16, 60, 61, 139, 140)), (2, 90, (8, 9, 31, 32, 89, 90))]


def all_positions() -> list[tuple[str, list[Move]]]:
    """(label, moves) of every test position."""
    positions = [(name, moves_from(text)) for name, text in SCRIPTED.items()]
    for seed, length, snapshots in RANDOM_GAMES:
        moves = random_game(seed, length)
        positions += [(f"random{seed}@{n}", moves[:n]) for n in snapshots]
    return positions


def core_planes(moves: list[Move]) -> tuple[np.ndarray, np.ndarray]:
    """("lz18" planes [18, 19, 19], stones [19, 19]) from our C core after ``moves``."""
    from engine.core import Game, Rules

    game = Game(19, Rules.preset("chinese", 7.5))
    for color, point in moves:
        game.play(point, color)
    return game.features("lz18").copy(), game.stones()


@pytest.fixture(scope="module")
def net_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("lznets")
    files = {}
    for (blocks, filters, version, seed, name), net_id in zip(NETS, NET_IDS):
        path = directory / name
        lzweights.write_random(path, blocks, filters, seed, version=version)
        files[net_id] = path
    return files


@pytest.fixture(scope="module")
def positions() -> list[tuple[str, list[Move]]]:
    return all_positions()


def evaluate(model: lzweights.LZNet, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(policy probabilities float64 [B, 362], value [B]) of the model."""
    with torch.inference_mode():
        out = model(torch.from_numpy(planes))
    assert out.ownership is None and out.score is None
    probs = torch.softmax(out.policy.double(), dim=1).numpy()
    return probs, out.value.double().numpy()


# ----------------------------------------------------------------------------------------------
# Equivalence with Leela Zero itself


@needs_leelaz
@pytest.mark.parametrize("net_id", NET_IDS)
def test_matches_leelaz(net_id: str, net_files: dict[str, Path],
                        positions: list[tuple[str, list[Move]]]) -> None:
    """Value within 1e-4 (as a winrate) and the per-mille policy grid exactly, on every position."""
    model, meta = lzweights.load(net_files[net_id])
    blocks, filters, version, _, _ = NETS[NET_IDS.index(net_id)]
    assert meta == {"feature_set": "lz18", "board_sizes": [19], "blocks": blocks,
                    "filters": filters, "version": version}
    planes, stones = zip(*(core_planes(moves) for _, moves in positions))
    probs, values = evaluate(model, np.stack(planes))

    problems: list[str] = []
    tol = 0.01  # per mille; float32 differences are ~1e-4 per mille at most
    with LeelaZero(net_files[net_id], LEELAZ) as lz:
        for i, (label, moves) in enumerate(positions):
            lz.clear_board()
            for color, point in moves:
                lz.play(color, point)
            heat = lz.heatmap()
            winrate = (1.0 + values[i]) / 2.0
            if abs(winrate - heat.winrate) > 1e-4:
                problems.append(f"{label}: winrate {winrate:.6f}, leelaz {heat.winrate:.6f}")
            permille = probs[i, :PASS].reshape(19, 19) * 1000.0
            empty = stones[i] == 0
            # leelaz prints int(p * 1000) on empty points and 0 on occupied ones.
            low = heat.policy_permille - tol
            high = heat.policy_permille + 1 + tol
            bad = empty & ((permille < low) | (permille >= high))
            bad |= ~empty & (heat.policy_permille != 0)
            for r, c in zip(*np.nonzero(bad)):
                problems.append(f"{label}: point row {r} col {c}: ours {permille[r, c]:.4f} "
                                f"per mille, leelaz printed {heat.policy_permille[r, c]}")
            pass_permille = probs[i, PASS] * 1000.0
            if not heat.pass_permille - tol <= pass_permille < heat.pass_permille + 1 + tol:
                problems.append(f"{label}: pass ours {pass_permille:.4f}, leelaz {heat.pass_permille}")
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:40])

    # The comparison must not be vacuous: peaked policies and varied values.
    assert probs[:, :PASS].max() > 0.05
    assert np.ptp(values) > 0.1


@needs_leelaz
def test_leelaz_holds_the_same_positions(net_files: dict[str, Path],
                                         positions: list[tuple[str, list[Move]]]) -> None:
    """leelaz's board (``showboard``) equals our core's after every test position's moves.

    leelaz's GTP ``play`` checks only occupancy, so this is what shows that the positions compared
    above are the same on both sides (captures and the ko included).
    """
    with LeelaZero(net_files[NET_IDS[0]], LEELAZ) as lz:
        for label, moves in positions:
            lz.clear_board()
            for color, point in moves:
                lz.play(color, point)
            _, stones = core_planes(moves)
            diff = np.argwhere(lz.stones() != stones)
            assert diff.size == 0, f"{label}: boards differ at (row, col) {diff[:5].tolist()}"


def test_core_rejects_the_ko_retake() -> None:
    """The ko positions are a real ko: the immediate retake is illegal in our core."""
    from engine.core import Game, IllegalMoveError, Rules

    game = Game(19, Rules.preset("chinese", 7.5))
    for color, point in moves_from(SCRIPTED[KO_ILLEGAL_AFTER]):
        game.play(point, color)
    with pytest.raises(IllegalMoveError) as info:
        game.play(parse_vertex("E5"), WHITE)
    assert info.value.reason == "ko"


def test_core_planes_match_reference(positions: list[tuple[str, list[Move]]]) -> None:
    """Our C core's "lz18" planes equal the simple reference implementation in leelaz_oracle."""
    for label, moves in positions:
        planes, _ = core_planes(moves)
        expected = reference_lz18_planes(moves)
        diff = np.argwhere(planes != expected)
        assert diff.size == 0, f"{label}: planes differ at (plane, row, col) {diff[:5].tolist()}"


@needs_leelaz
def test_matches_leelaz_on_reference_planes(net_files: dict[str, Path]) -> None:
    """The same equivalence with hand-built planes (independent of the C core), a few positions."""
    model, _ = lzweights.load(net_files["n4x32v2"])
    positions = [moves_from(SCRIPTED[name]) for name in ("empty", "black_D4", "corner_capture")]
    probs, values = evaluate(model, np.stack([reference_lz18_planes(m) for m in positions]))
    with LeelaZero(net_files["n4x32v2"], LEELAZ) as lz:
        for i, moves in enumerate(positions):
            lz.clear_board()
            for color, point in moves:
                lz.play(color, point)
            heat = lz.heatmap()
            assert abs((1 + values[i]) / 2 - heat.winrate) < 1e-4
            ours = np.floor(probs[i, :PASS].reshape(19, 19) * 1000 + 1e-6)
            occupied = reference_lz18_planes(moves)[[0, 8]].sum(0) > 0
            assert np.array_equal(np.where(occupied, 0, ours), heat.policy_permille)


# ----------------------------------------------------------------------------------------------
# Forward pass against an independent implementation of Leela Zero's arithmetic


def lz_reference_forward(w: lzweights.LZWeights, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leela Zero's forward pass, written out as in its CPU pipeline, on our-layout planes.

    Returns (policy logits [B, 362] in our order, side-to-move value [B]), float64.
    """
    x = torch.from_numpy(planes).double().flip(2)  # to Leela Zero's layout: y = 0 is the bottom row

    def conv_bn(h: torch.Tensor, layer: lzweights.ConvLayer, residual=None) -> torch.Tensor:
        weight = torch.from_numpy(layer.weight).double()
        y = F.conv2d(h, weight, padding=weight.shape[-1] // 2)
        mean = torch.from_numpy(layer.mean - layer.bias).double().view(1, -1, 1, 1)  # bias folded
        stddiv = 1.0 / torch.sqrt(torch.from_numpy(layer.var).double() + 1e-5).view(1, -1, 1, 1)
        y = stddiv * (y - mean)
        return torch.relu(y if residual is None else y + residual)

    h = conv_bn(x, w.tower[0])
    for i in range(w.blocks):
        h = conv_bn(conv_bn(h, w.tower[1 + 2 * i]), w.tower[2 + 2 * i], residual=h)
    t = lambda a: torch.from_numpy(a).double()  # noqa: E731
    p = conv_bn(h, w.policy_conv).flatten(1) @ t(w.policy_fc_w).T + t(w.policy_fc_b)
    v = conv_bn(h, w.value_conv).flatten(1)
    v = torch.relu(v @ t(w.value_fc1_w).T + t(w.value_fc1_b))
    winrate = (1 + torch.tanh(v @ t(w.value_fc2_w).T + t(w.value_fc2_b)).squeeze(1)) / 2
    black_to_move = x[:, 16, 0, 0] > 0.5
    if w.version == 2:  # Black's winrate -> side to move's
        winrate = torch.where(black_to_move, winrate, 1 - winrate)
    # Policy: Leela Zero index j = y*19 + x back to our row-major top-first order.
    board = p[:, :PASS].reshape(-1, 19, 19).flip(1).reshape(-1, PASS)
    return torch.cat([board, p[:, PASS:]], 1).numpy(), (2 * winrate - 1).numpy()


def random_planes(seed: int, count: int) -> np.ndarray:
    """Random legal-looking "lz18" planes: random stones and histories, both colours to move."""
    rng = np.random.default_rng(seed)
    planes = np.zeros((count, 18, 19, 19), dtype=np.float32)
    for i in range(count):
        stones = rng.choice(3, size=(19, 19), p=[0.7, 0.15, 0.15])
        for h in range(rng.integers(1, 9)):
            planes[i, h], planes[i, 8 + h] = stones == 1, stones == 2
            stones = np.where(rng.random((19, 19)) < 0.05, 0, stones)
        planes[i, 16 + i % 2] = 1
    return planes


@pytest.mark.parametrize("blocks,filters,version", [(0, 8, 1), (2, 16, 2), (3, 24, 1)])
def test_forward_matches_reference_arithmetic(blocks: int, filters: int, version: int) -> None:
    weights = lzweights.random_weights(blocks, filters, seed=blocks + 7, version=version)
    model = lzweights.build_model(weights)
    planes = random_planes(blocks, 6)
    logits, value = lz_reference_forward(weights, planes)
    with torch.inference_mode():
        out = model(torch.from_numpy(planes))
    np.testing.assert_allclose(out.value.numpy(), value, atol=2e-5)
    ours = torch.log_softmax(out.policy.double(), 1).numpy()
    ref = torch.log_softmax(torch.from_numpy(logits), 1).numpy()
    np.testing.assert_allclose(ours, ref, atol=2e-4)


def test_version2_value_is_blacks_view() -> None:
    """Same weights as version 1 and 2: equal values with Black to move, negated with White."""
    w1 = lzweights.random_weights(1, 8, seed=3, version=1)
    w2 = lzweights.random_weights(1, 8, seed=3, version=2)
    planes = torch.from_numpy(random_planes(5, 4))  # Black, White, Black, White to move
    with torch.inference_mode():
        v1 = lzweights.build_model(w1)(planes).value
        v2 = lzweights.build_model(w2)(planes).value
    assert torch.allclose(v1[0::2], v2[0::2]) and torch.allclose(v1[1::2], -v2[1::2])
    assert (v1.abs() > 1e-3).all()


def test_bfloat16_forward_close() -> None:
    model = lzweights.build_model(lzweights.random_weights(2, 16, seed=4))
    x = torch.from_numpy(random_planes(9, 4))
    with torch.inference_mode():
        ref = model(x)
        low = model.to(torch.bfloat16)(x.to(torch.bfloat16))
    assert low.policy.dtype == torch.bfloat16
    assert (low.value.float() - ref.value).abs().max() < 0.1


def test_random_net_policy_far_from_uniform() -> None:
    for blocks, filters in [(2, 16), (6, 64)]:
        model = lzweights.build_model(lzweights.random_weights(blocks, filters, seed=1))
        with torch.inference_mode():
            probs = torch.softmax(model(torch.from_numpy(random_planes(1, 8))).policy, 1)
        assert probs.max(1).values.min() > 5 / 362, (blocks, filters)


# ----------------------------------------------------------------------------------------------
# Files: round trips, metadata, errors


def test_roundtrip_text_and_gzip(tmp_path: Path) -> None:
    weights = lzweights.random_weights(1, 8, seed=2, version=2)
    lzweights.write_weights(tmp_path / "net.txt", weights)
    lzweights.write_weights(tmp_path / "net.gz", weights)
    assert (tmp_path / "net.gz").read_bytes()[:2] == b"\x1f\x8b"
    text = (tmp_path / "net.txt").read_text()
    assert gzip.decompress((tmp_path / "net.gz").read_bytes()).decode() == text
    assert text.count("\n") == 19 + 8 and text.startswith("2\n")
    for name in ("net.txt", "net.gz"):
        back = lzweights.read_weights(tmp_path / name)
        assert back.version == 2 and back.blocks == 1 and back.filters == 8
        for a, b in zip(back.lines(), weights.lines()):
            assert np.array_equal(a, b)
    # gzip is recognised by content, not by name
    (tmp_path / "gz_named.txt").write_bytes((tmp_path / "net.gz").read_bytes())
    assert lzweights.read_weights(tmp_path / "gz_named.txt").filters == 8


def test_load_meta_and_model(tmp_path: Path) -> None:
    lzweights.write_random(tmp_path / "n.gz", 3, 12, seed=5)
    model, meta = lzweights.load(tmp_path / "n.gz")
    assert meta == {"feature_set": "lz18", "board_sizes": [19], "blocks": 3, "filters": 12,
                    "version": 1}
    assert isinstance(model, lzweights.LZNet) and not model.training
    assert (model.feature_set, model.planes, model.board_size) == ("lz18", 18, 19)
    out = model(torch.zeros(2, 18, 19, 19))
    assert out.policy.shape == (2, 362) and out.value.shape == (2,)
    assert out.ownership is None and out.score is None
    with pytest.raises(ValueError, match="expected input"):
        model(torch.zeros(2, 17, 19, 19))


def _good_lines(tmp_path: Path) -> list[str]:
    lzweights.write_random(tmp_path / "good.txt", 1, 4, seed=1)
    return (tmp_path / "good.txt").read_text().splitlines()


def _corrupt(lines: list[str], kind: str) -> list[str]:
    lines = list(lines)
    if kind == "version3":
        lines[0] = "3"
    elif kind == "version_text":
        lines[0] = "leela"
    elif kind == "non_numeric":
        tokens = lines[4].split()
        tokens[2] = "0.5x"
        lines[4] = " ".join(tokens)
    elif kind == "truncated":
        lines = lines[:-3]
    elif kind == "extra_layer":
        lines = lines + lines[-4:]
    elif kind == "short_line":
        lines[6] = " ".join(lines[6].split()[:-1])
    elif kind == "not_19x19":
        policy_fc = 1 + 4 * 3 + 4  # version, 3 conv layers, policy conv/BN
        lines[policy_fc] = " ".join(lines[policy_fc].split()[: 2 * 81 * 82])
    elif kind == "nan":
        lines[3] = "nan " + lines[3]
    elif kind == "empty":
        lines = []
    return lines


@pytest.mark.parametrize("kind,line", [
    ("version3", 1), ("version_text", 1), ("non_numeric", 5), ("truncated", 24),
    ("extra_layer", 31), ("short_line", 7), ("not_19x19", 18), ("nan", 4), ("empty", 1),
])
def test_bad_files_name_the_line(tmp_path: Path, kind: str, line: int) -> None:
    bad = tmp_path / f"{kind}.txt"
    bad.write_text("\n".join(_corrupt(_good_lines(tmp_path), kind)) + "\n")
    with pytest.raises(LZWeightsError, match=rf"line {line}\b") as info:
        lzweights.load(bad)
    assert isinstance(info.value, ValueError)
    assert str(bad) in str(info.value)


def test_truncated_gzip(tmp_path: Path) -> None:
    lzweights.write_random(tmp_path / "n.gz", 1, 4, seed=1)
    data = (tmp_path / "n.gz").read_bytes()
    (tmp_path / "cut.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(LZWeightsError, match="line"):
        lzweights.load(tmp_path / "cut.gz")


def test_cli_random_and_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli.gz"
    assert lzweights.main(["random", "--blocks", "2", "--filters", "8", "--seed", "3",
                           "-o", str(out), "--version", "2"]) == 0
    assert lzweights.read_weights(out).version == 2
    assert lzweights.main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    for expected in ("blocks: 2", "filters: 8", "version: 2", "feature_set: lz18"):
        assert expected in text
    (tmp_path / "bad.txt").write_text("7\n")
    assert lzweights.main(["info", str(tmp_path / "bad.txt")]) == 1
    assert "line 1" in capsys.readouterr().err


def test_gzip_is_told_by_its_magic_bytes_not_the_name(tmp_path):
    """engine.fileio reads plain and gzip data alike, whatever the file is called, for both the
    Leela Zero and the KataGo readers; corrupt gzip data is a clear error."""
    import gzip as _gzip

    from engine.fileio import CorruptGzip, head_maybe_gzipped, read_maybe_gzipped
    data = b"1\n" + b"0.5 " * 100
    plain, packed, broken = tmp_path / "w.gz", tmp_path / "w.txt", tmp_path / "b.gz"
    plain.write_bytes(data)
    packed.write_bytes(_gzip.compress(data))
    broken.write_bytes(_gzip.compress(data)[:20])
    assert read_maybe_gzipped(plain) == read_maybe_gzipped(packed) == data
    assert head_maybe_gzipped(packed, 4) == head_maybe_gzipped(plain, 4) == data[:4]
    assert head_maybe_gzipped(broken, 4096) is None
    with pytest.raises(CorruptGzip):
        read_maybe_gzipped(broken)
