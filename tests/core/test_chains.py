"""The C core's chains, liberties, eyes and floating stones (src_c/chains.h) on diagrams."""
from engine.core import BLACK, WHITE, board_from_ascii
from engine.coords import from_gtp

POSITION = """
X X O . .
. X O . O
X . O O .
. . . . .
. . O . X
"""


def pts(*vertices):
    return sorted(from_gtp(v, 5) for v in vertices)


def test_chains_are_ordered_by_their_first_point():
    game = board_from_ascii(POSITION)
    assert game.chains() == [
        (BLACK, pts("A5", "B5", "B4")), (WHITE, pts("C5", "C4", "C3", "D3")), (WHITE, pts("E4")),
        (BLACK, pts("A3")), (WHITE, pts("C1")), (BLACK, pts("E1")),
    ]


def test_chain_liberties():
    game = board_from_ascii(POSITION)
    assert game.chain_liberties(from_gtp("B4", 5)) == pts("A4", "B3")
    assert game.chain_liberties(from_gtp("D3", 5)) == pts("D5", "D4", "B3", "E3", "C2", "D2")
    assert game.chain_liberties(from_gtp("A3", 5)) == pts("A4", "B3", "A2")
    assert game.chain_liberties(from_gtp("E3", 5)) == []          # empty point
    assert game.chain_liberties(25) == []                          # pass


def test_eyes():
    game = board_from_ascii("""
. X O . O
X X O O .
O O O . O
. . O . .
. . O . .
""")
    assert [p for p, e in enumerate(game.eyes(WHITE)) if e] == pts("D5", "E4")   # D3 sees D2
    assert [p for p, e in enumerate(game.eyes(BLACK)) if e] == pts("A5")          # edge, no enemy diagonal


def test_floating_stones():
    inside = board_from_ascii("""
. . . . .
. O O O .
. O X O .
. O . O .
. O O O .
""")
    assert [p for p, d in enumerate(inside.floating_stones()) if d] == pts("C3")
    # Black's corner has one eye and three stones against none of White's inside: the region
    # decides nothing (White has no stones there to outnumber), so nothing floats.
    corner = board_from_ascii("""
. X O . O
X X O O .
O O O . O
. . O . .
. . O . .
""")
    assert not corner.floating_stones().any()
