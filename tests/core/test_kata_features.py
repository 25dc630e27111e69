"""KataGo's input features (src_c/kata_features.c) on ASCII positions: ladders that work and
ladders that a stone breaks, pass-alive groups and territory, ko and superko bans, move history,
passes and the global inputs.  Diagrams: X = Black, O = White; expected planes: # = 1."""

import numpy as np
import pytest

from engine.core import BLACK, WHITE, Game, Rules, board_from_ascii

LADDER = """
.........
.........
....X....
...XO....
.....X...
.........
.........
.........
.........
"""

# A white stone on each diagonal the ladder can run along: it no longer works.
LADDER_BROKEN = """
.........
.......O.
....X....
...XO....
.....X...
.........
.........
.O.......
.........
"""

# White's group has two eyes (pass-alive); its eyes are its territory.  The black stone
# outside keeps the big empty region from being anybody's.
PASS_ALIVE = """
.........
..OOOOO..
..O.O.O..
..OOOOO..
.........
....X....
.........
.........
.........
"""

# One eye holding a black stone: not pass-alive, the eye is nobody's; stones count as they stand.
ONE_EYE = """
.........
..OOOOO..
..O.X.O..
..OOOOO..
.........
....X....
.........
.........
.........
"""

CASES = [
    # (name, diagram, side to move, plane, expected plane)
    ("working ladder: laddered stone", LADDER, BLACK, 14, """
.........
.........
.........
....#....
.........
.........
.........
.........
.........
"""),
    ("working ladder: the moves that start it", LADDER, BLACK, 17, """
.........
.........
.........
.....#...
....#....
.........
.........
.........
.........
"""),
    ("working ladder: only against the opponent", LADDER, WHITE, 17, "." * 0),
    ("broken ladder", LADDER_BROKEN, BLACK, 14, "." * 0),
    ("broken ladder: no starting move", LADDER_BROKEN, BLACK, 17, "." * 0),
    ("pass-alive group: opponent area", PASS_ALIVE, BLACK, 19, """
.........
..#####..
..#####..
..#####..
.........
.........
.........
.........
.........
"""),
    ("an empty region bordered by one colour is its area", ONE_EYE.replace("X.O", "..O"), BLACK, 19, """
.........
..#####..
..#####..
..#####..
.........
.........
.........
.........
.........
"""),
    ("pass-alive group: own area is the lone stone", PASS_ALIVE, BLACK, 18, """
.........
.........
.........
.........
.........
....#....
.........
.........
.........
"""),
    ("one eye: only the stones count", ONE_EYE, BLACK, 18, """
.........
.........
....#....
.........
.........
....#....
.........
.........
.........
"""),
    ("one eye: only the white stones", ONE_EYE, BLACK, 19, """
.........
..#####..
..#...#..
..#####..
.........
.........
.........
.........
.........
"""),
]


def _plane(text: str, size: int) -> np.ndarray:
    rows = [r.strip() for r in text.strip().splitlines() if r.strip()]
    if not rows:
        return np.zeros((size, size), bool)
    return np.array([[ch == "#" for ch in row] for row in rows])


@pytest.mark.parametrize("name,diagram,to_move,plane,expected", CASES, ids=[c[0] for c in CASES])
def test_planes_on_diagrams(name, diagram, to_move, plane, expected):
    game = board_from_ascii(diagram, Rules.preset("chinese", komi=7), to_move)
    f = game.features("kata7")
    assert f.shape == (41, game.size, game.size)
    np.testing.assert_array_equal(f[plane] > 0, _plane(expected, game.size), err_msg=name)


def test_stones_liberties_and_globals():
    game = board_from_ascii(PASS_ALIVE, Rules.preset("chinese", komi=7.5), BLACK)
    f = game.features("kata7")
    assert np.all(f[0] == 1)
    assert f[1, 5, 4] == 1 and f[2, 1, 2] == 1        # own = Black (to move), opponent = White
    assert f[5, 5, 4] == 0 and f[3:6, 5, 4].sum() == 0  # 4 liberties: none of the 1/2/3 planes
    glob = f[22:, 0, 0]
    assert glob[5] == pytest.approx(-7.5 / 20)          # komi from Black's view
    assert glob[6] == 0 and glob[8] == 0                # simple ko, no suicide
    assert glob[18] == pytest.approx(-0.5)              # parity wave: 81 points, komi 7.5 -> -0.5
    tt = board_from_ascii(PASS_ALIVE, Rules.preset("tromp-taylor", komi=7.5), WHITE).features("kata7")
    assert tt[22 + 5, 0, 0] == pytest.approx(7.5 / 20)
    assert tt[22 + 6, 0, 0] == 1 and tt[22 + 7, 0, 0] == 0.5 and tt[22 + 8, 0, 0] == 1
    assert np.all(tt[22 + 6] == 1)                      # globals are constant planes


def test_territory_rules_inputs():
    """Japanese rules as KataGo shows them (nninputs.cpp, main phase): territory scoring and
    the seki tax set globals 9 and 10; no area planes and no parity wave; the komi plus the
    stones Black placed more; the tax on every group sets 11 too.  Different rules, different
    cache keys."""
    chinese = board_from_ascii(PASS_ALIVE, Rules.preset("chinese", komi=6.5), BLACK)
    japanese = board_from_ascii(PASS_ALIVE, Rules.preset("japanese", komi=6.5), BLACK)
    c, j = chinese.features("kata7"), japanese.features("kata7")
    assert c[18:20].sum() > 0 and j[18:20].sum() == 0
    assert list(j[22 + 9:22 + 12, 0, 0]) == [1, 1, 0] and list(c[22 + 9:22 + 12, 0, 0]) == [0, 0, 0]
    # komi: KataGo counts territory as area less a point per stone placed (White placed 12 more)
    stones = japanese.stones()
    assert (stones == BLACK).sum() - (stones == WHITE).sum() == -12
    assert j[22 + 18].sum() == 0 and j[22 + 5, 0, 0] == pytest.approx(-(6.5 - 12) / 20)
    assert np.array_equal(np.delete(c, [18, 19, 22 + 5, 22 + 9, 22 + 10, 22 + 18], axis=0),
                          np.delete(j, [18, 19, 22 + 5, 22 + 9, 22 + 10, 22 + 18], axis=0))
    tax_all = board_from_ascii(PASS_ALIVE, Rules("simple", False, 6.5, "territory", "all"), BLACK)
    assert list(tax_all.features("kata7")[22 + 9:22 + 12, 0, 0]) == [1, 1, 1]
    assert chinese.feature_key("kata7") != japanese.feature_key("kata7")


def test_our_nets_see_the_area_komi_a_territory_komi_is_worth():
    """Our nets' komi plane under territory scoring: the komi plus the stones Black is expected
    to have placed more than White at the end (src_c/count.h); the same komi under area."""
    game = Game(9, Rules.preset("japanese", 6.5))
    assert game.features("rich")[16, 0, 0] == pytest.approx(-7.0 / 15)     # Black to move: +1/2
    game.play(40)
    assert game.features("rich")[16, 0, 0] == pytest.approx(7.0 / 15)      # one stone more, -1/2
    area = Game(9, Rules.preset("chinese", 6.5))
    assert area.features("rich")[16, 0, 0] == pytest.approx(-6.5 / 15)


def _play(game: Game, moves: str) -> None:
    """Plays space-separated GTP moves alternately from the side to move."""
    for m in moves.split():
        game.play(game.size * game.size if m == "pass" else _point(game.size, m))


def _point(size: int, gtp: str) -> int:
    col = "ABCDEFGHJKLMNOPQRST".index(gtp[0].upper())
    row = size - int(gtp[1:])
    return row * size + col


def test_ko_ban_and_history_planes():
    game = Game(5, Rules.preset("chinese", komi=0))
    #   B: B4 C5 C3 D4   W: D5 E4 D3 ... then B takes the ko at ... set up a ko at C4/D4
    _play(game, "B4 D5 C5 E4 C3 D3 pass C4 D4")  # D4 captures C4: ko at C4
    f = game.features("kata7")
    ko = _point(5, "C4")
    assert game.ko_point == ko
    assert f[6].ravel()[ko] == 1 and f[6].sum() == 1
    # history: 9 = the opponent's last move (D4), 10 = own move before (C4), ... pass at 13? no:
    assert f[9].ravel()[_point(5, "D4")] == 1
    assert f[10].ravel()[_point(5, "C4")] == 1
    assert f[22 + 2, 0, 0] == 1                         # the third move back was a pass
    assert f[11].sum() == 0
    assert f[12].ravel()[_point(5, "D3")] == 1
    assert f[13].ravel()[_point(5, "C3")] == 1


def test_positional_superko_plane():
    game = Game(5, Rules.preset("tromp-taylor", komi=0))
    _play(game, "B4 D5 C5 E4 C3 D3 pass C4 D4")       # D4 captures C4
    _play(game, "pass pass")                          # the simple ko is gone after passes
    f = game.features("kata7")
    assert game.ko_point is None
    # White retaking at C4 would repeat the position before D4 was played: superko bans it.
    assert f[6].ravel()[_point(5, "C4")] == 1
    simple = Game(5, Rules.preset("chinese", komi=0))
    _play(simple, "B4 D5 C5 E4 C3 D3 pass C4 D4 pass pass")
    assert simple.features("kata7")[6].sum() == 0


def test_passes_and_game_end():
    game = Game(9, Rules.preset("chinese", komi=7))
    _play(game, "E5 pass")
    f = game.features("kata7")
    assert f[22 + 0, 0, 0] == 1 and f[22 + 14, 0, 0] == 1   # last move a pass; passing ends it
    _play(game, "D4")
    f = game.features("kata7")
    assert f[22 + 1, 0, 0] == 1 and f[22 + 14, 0, 0] == 0


def test_history_cleared_when_the_other_colour_is_to_move():
    game = Game(9, Rules.preset("chinese", komi=7))
    _play(game, "E5 D4")
    game.set_to_move(WHITE)                            # White moves twice: KataGo clears history
    f = game.features("kata7")
    assert f[9:14].sum() == 0 and f[22:27, 0, 0].sum() == 0


def test_feature_key_tracks_history_and_komi():
    a = Game(9, Rules.preset("chinese", komi=7))
    b = Game(9, Rules.preset("chinese", komi=7))
    _play(a, "E5 D4 C3")
    _play(b, "C3 D4 E5")                               # same stones, other history
    assert a.feature_key("kata7") != b.feature_key("kata7")
    c = Game(9, Rules.preset("chinese", komi=6))
    _play(c, "E5 D4 C3")
    assert a.feature_key("kata7") != c.feature_key("kata7")
    assert a.feature_key("kata7") == a.copy().feature_key("kata7")


def _leaf_paths(planes: np.ndarray, size: int):
    """Candidate move paths (1 to 5 moves, oldest first) from a leaf's history planes: plane
    9 + k (or global k for a pass) is the move k + 1 moves back."""
    import itertools

    def back(k):
        if planes[22 + k, 0, 0] == 1:
            return [size * size]
        return [int(p) for p in np.flatnonzero(planes[9 + k].ravel())]
    for depth in range(1, 6):
        yield from (list(reversed(c)) for c in itertools.product(*[back(k) for k in range(depth)]))


@pytest.mark.parametrize("rules", ["chinese", "tromp-taylor"])
def test_search_leaves_match_the_game(rules):
    """The search writes a leaf's planes from the root game and the moves below it; they equal
    the planes of the game with those moves played (history, ladders two moves back, ko,
    superko, passes).  Leaves up to 5 moves deep are checked (the planes show 5 moves)."""
    from engine.core import Search
    game = Game(7, Rules.preset(rules, komi=7.5))
    _play(game, "D4 C4 C3 D3 E3 D2 C5 B4 pass E4")
    search = Search(game, feature_set="kata7", max_batch=8, seed=3)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(7):                     # shallow enough for every leaf to be <= 5 moves deep
        n = search.collect()
        for i in range(n):
            leaf = search.planes[i]
            if np.array_equal(leaf, game.features("kata7")):
                checked += 1
                continue
            for path in _leaf_paths(leaf, 7):
                g = game.copy()
                try:
                    for m in path:
                        g.play(m)
                except Exception:
                    continue
                if np.array_equal(g.features("kata7"), leaf):
                    assert search.keys[i] == g.feature_key("kata7")
                    checked += 1
                    break
            else:
                raise AssertionError(f"leaf {i}: no path of 1-5 moves reproduces its planes")
        search.backup(rng.standard_normal((n, 50)).astype(np.float32),
                      rng.uniform(-1, 1, n).astype(np.float32))
    assert checked >= 30
