"""Coordinates, defined once.

The C core uses padded indices internally; everything in Python uses the compact *point*:

==========  ==========================  ====================================
notation    example on 19x19             meaning
==========  ==========================  ====================================
point       ``3 * 19 + 3`` = 60          ``row * N + col``; pass is ``N * N``
(row, col)  ``(3, 3)``                  row 0 is the TOP row, col 0 is column A
GTP         ``"D16"``                   letters A..T without I, number = N - row
SGF         ``"dd"``                    col letter then row letter, ``a`` = top row;
                                         pass is ``""`` (``"tt"`` also read as pass for N <= 19)
==========  ==========================  ====================================

The point is also the index into policy vectors (``N * N + 1`` entries, pass last) and the
row-major order of ownership maps (top-left first, as kata-analyze prints them).
"""

GTP_LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
SGF_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _check_size(size: int) -> None:
    if not 2 <= size <= 25:
        raise ValueError(f"board size {size} out of range")


def to_rowcol(point: int, size: int) -> tuple[int, int]:
    """(row, col) of an on-board point; raises ValueError for pass or out-of-range points."""
    if not 0 <= point < size * size:
        raise ValueError(f"point {point} is not on a {size}x{size} board")
    return divmod(point, size)


def from_rowcol(row: int, col: int, size: int) -> int:
    """Point of (row, col); raises ValueError when off the board."""
    if not (0 <= row < size and 0 <= col < size):
        raise ValueError(f"({row}, {col}) is not on a {size}x{size} board")
    return row * size + col


def to_gtp(point: int, size: int) -> str:
    """GTP vertex such as ``D4``, or ``pass``."""
    if point == size * size:
        return "pass"
    row, col = to_rowcol(point, size)
    return f"{GTP_LETTERS[col]}{size - row}"


def from_gtp(text: str, size: int) -> int:
    """Point of a GTP vertex (any case; ``pass``); raises ValueError for anything else."""
    _check_size(size)
    t = text.strip().upper()
    if t == "PASS":
        return size * size
    if len(t) < 2 or t[0] not in GTP_LETTERS or not (t[1:].isascii() and t[1:].isdigit()):
        raise ValueError(f"invalid vertex {text!r}")
    col = GTP_LETTERS.index(t[0])
    number = int(t[1:])
    if col >= size or not 1 <= number <= size:
        raise ValueError(f"vertex {text!r} is off the {size}x{size} board")
    return (size - number) * size + col


def to_sgf(point: int, size: int) -> str:
    """SGF point such as ``dd``; pass is the empty string."""
    if point == size * size:
        return ""
    row, col = to_rowcol(point, size)
    return SGF_LETTERS[col] + SGF_LETTERS[row]


def from_sgf(text: str, size: int) -> int:
    """Point of an SGF move value (``""`` and ``"tt"`` on boards <= 19 are pass)."""
    t = text.strip()
    if t == "" or (t == "tt" and size <= 19):
        return size * size
    if len(t) != 2 or t[0] not in SGF_LETTERS or t[1] not in SGF_LETTERS:
        raise ValueError(f"invalid SGF point {text!r}")
    col, row = SGF_LETTERS.index(t[0]), SGF_LETTERS.index(t[1])
    return from_rowcol(row, col, size)


def from_sgfmill(move: tuple[int, int] | None, size: int) -> int:
    """Point of an sgfmill (row, col) move where row 0 is the BOTTOM row; None is pass."""
    if move is None:
        return size * size
    row, col = move
    return from_rowcol(size - 1 - row, col, size)


def to_sgfmill(point: int, size: int) -> tuple[int, int] | None:
    """sgfmill's (row-from-bottom, col) of a point, None for pass."""
    if point == size * size:
        return None
    row, col = to_rowcol(point, size)
    return (size - 1 - row, col)


def max_handicap(size: int) -> int:
    """Most fixed handicap stones on a size x size board: 9 on odd boards from 9x9, 4 on 7x7
    and even boards from 8x8, 0 below 7x7."""
    if size < 7:
        return 0
    return 9 if size % 2 == 1 and size >= 9 else 4


def fixed_handicap(size: int, stones: int) -> list[int]:
    """The points of GTP's fixed handicap placement (GTP v2 section 4.1.1), in its order.

    Stones sit on the 4-4 points (3-3 below 13x13): 2 = lower left and upper right, 3 adds
    upper left, 4 lower right, 5, 7 and 9 add the centre, 6 adds the left and right sides, 8 the
    bottom and top.  ``stones`` 0 returns [].  ValueError for any other count outside
    2..``max_handicap(size)``."""
    if stones == 0:
        return []
    limit = max_handicap(size)
    if not 2 <= stones <= limit:
        raise ValueError(f"invalid handicap {stones} for a {size}x{size} board (max {limit})")
    edge = 3 if size >= 13 else 2
    low, mid, high = edge, size // 2, size - 1 - edge          # (row from the top, col)
    order = [(high, low), (low, high), (low, low), (high, high)]   # ll, ur, ul, lr
    if stones >= 6:
        order += [(mid, low), (mid, high)]                        # left, right
    if stones >= 8:
        order += [(high, mid), (low, mid)]                        # bottom, top
    if stones % 2 == 1 and stones >= 5:
        order.append((mid, mid))                                  # centre
    return [from_rowcol(row, col, size) for row, col in order[:stones]]
