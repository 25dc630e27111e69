"""The rules, game and search of the C core (cffi ``ffi``/``lib`` from :mod:`engine.native`;
the Winograd convolution kernels, :mod:`engine.nets.winograd`, are the C core's other user).

It ties C lifetimes to Python objects with ``ffi.gc``, checks every status and raises
:class:`IllegalMoveError` or :class:`ValueError`.  No cdata leaves this module: callers see
ints, numpy arrays and plain classes.  Points are compact indices (see :mod:`engine.coords`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from engine.native import ffi, lib
from engine.searchcore import SearchParams, _floats_or_null, _rows_or_null, backup_many, collect_many, ramp_leaves  # noqa: F401 (re-exported)
from engine.coords import GTP_LETTERS
from engine.rules import Rules, format_result

EMPTY, BLACK, WHITE = lib.EMPTY, lib.BLACK, lib.WHITE
MIN_SIZE, MAX_SIZE = lib.BOARD_MIN_SIZE, lib.BOARD_MAX_SIZE

FEATURE_SETS = {"rich": lib.FEATURES_RICH, "lz18": lib.FEATURES_LZ18, "kata7": lib.FEATURES_KATA,
                "kata7s": lib.FEATURES_KATA_S}

_REASONS = {
    lib.MOVE_OCCUPIED: "occupied",
    lib.MOVE_SUICIDE: "suicide",
    lib.MOVE_KO: "ko",
    lib.MOVE_SUPERKO: "superko",
    lib.MOVE_OFF_BOARD: "off board",
    lib.MOVE_BAD_COLOR: "bad colour",
}


class IllegalMoveError(ValueError):
    """A move the rules forbid; ``reason`` is one of occupied, suicide, ko, superko, off board."""

    def __init__(self, reason: str, point: int | None = None, color: int | None = None):
        super().__init__(f"illegal move ({reason})")
        self.reason = reason
        self.point = point
        self.color = color


def winrate_of(value):
    """The winrate (0..1) of a value from C's search or the net (the mover's view, -1..1):
    ``(v + 1) / 2``, clipped.  The one conversion: resignation, its calibration and the records'
    comments work in winrates, and take C's root values through here.  Works on numpy arrays."""
    if isinstance(value, np.ndarray):
        return (np.clip(value.astype(np.float64), -1.0, 1.0) + 1.0) / 2.0
    return (min(1.0, max(-1.0, float(value))) + 1.0) / 2.0


def other(color: int) -> int:
    """The opposite colour."""
    return 3 - color


def parse_color(text: str) -> int:
    """BLACK or WHITE from ``b``/``black``/``w``/``white`` in any case; ValueError otherwise."""
    color = {"b": BLACK, "black": BLACK, "w": WHITE, "white": WHITE}.get(text.strip().lower())
    if color is None:
        raise ValueError(f"invalid colour {text!r}")
    return color


def color_name(color: int) -> str:
    return {BLACK: "B", WHITE: "W"}[color]


def _rules_c(rules: Rules) -> dict:
    """The C ``rules_t`` of ``rules``."""
    return {"ko_rule": lib.KO_POSITIONAL if rules.ko == "positional" else lib.KO_SIMPLE,
            "allow_suicide": int(rules.suicide), "komi": float(rules.komi),
            "scoring": lib.SCORING_TERRITORY if rules.scoring == "territory" else lib.SCORING_AREA,
            "tax": {"none": lib.TAX_NONE, "seki": lib.TAX_SEKI, "all": lib.TAX_ALL}[rules.tax]}


def feature_planes(feature_set: str) -> int:
    """Number of input planes of a feature set (read from C)."""
    return lib.features_planes(_feature_id(feature_set))


def _feature_id(feature_set: str) -> int:
    try:
        return FEATURE_SETS[feature_set]
    except KeyError:
        raise ValueError(f"unknown feature set {feature_set!r} (known: {', '.join(FEATURE_SETS)})")


def _check_size(size: int) -> int:
    if not isinstance(size, (int, np.integer)) or not MIN_SIZE <= int(size) <= MAX_SIZE:
        raise ValueError(f"board size must be an integer from {MIN_SIZE} to {MAX_SIZE}, got {size!r}")
    return int(size)


def _check_color(color: int) -> int:
    if isinstance(color, bool) or not isinstance(color, (int, np.integer)) or color not in (BLACK, WHITE):
        raise ValueError(f"invalid colour {color!r} (expected BLACK=1 or WHITE=2)")
    return int(color)


class Game:
    """A game on a size x size board under ``rules``; moves are compact points.

    The same colour may play several times in a row (GTP set-up does this).  ``undo`` replays
    the game from the start.  ``copy`` is independent of the original.
    """

    def __init__(self, size: int, rules: Rules | None = None):
        self.size = _check_size(size)
        self.rules = rules if rules is not None else Rules.default()
        self._ptr = self._new_ptr()
        self.moves: list[tuple[int, int]] = []
        # set_to_move overrides, keyed by the number of moves played when they were made
        self._to_move_overrides: dict[int, int] = {}

    def _new_ptr(self):
        ptr = lib.game_new(self.size, _rules_c(self.rules))
        if ptr == ffi.NULL:
            raise MemoryError("could not allocate a game")
        return ffi.gc(ptr, lib.game_free)

    # -- state ---------------------------------------------------------------------------
    @property
    def pass_point(self) -> int:
        return self.size * self.size

    @property
    def to_move(self) -> int:
        return lib.game_to_move(self._ptr)

    def set_to_move(self, color: int) -> None:
        """Makes ``color`` the side to move (kept across ``undo``)."""
        lib.game_set_to_move(self._ptr, _check_color(color))
        self._to_move_overrides[len(self.moves)] = color

    @property
    def passes(self) -> int:
        """Consecutive passes at the end of the game."""
        return lib.game_passes(self._ptr)

    @property
    def is_over(self) -> bool:
        return self.passes >= 2

    @property
    def hash(self) -> int:
        """Positional Zobrist hash of the stones (equal for transpositions)."""
        return int(lib.game_hash(self._ptr))

    @property
    def ko_point(self) -> int | None:
        """The simple-ko point the side to move may not play, if any."""
        k = lib.game_ko_point(self._ptr)
        return None if k < 0 else k

    def captures(self, color: int) -> int:
        """Stones captured by ``color``."""
        return lib.game_captures(self._ptr, _check_color(color))

    def liberties(self, point: int) -> int:
        """Liberties of the group on ``point`` (0 for an empty point)."""
        self._check_point(point)
        return lib.game_group_libs(self._ptr, point)

    def chains(self) -> list[tuple[int, list[int]]]:
        """(colour, ascending points) of every chain of stones, ordered by their first point."""
        label = np.zeros(self.size * self.size, np.int16)
        lib.game_chains(self._ptr, ffi.from_buffer("int16_t[]", label))
        stones = self.stones().ravel()
        members: dict[int, list[int]] = {}
        for p in np.flatnonzero(label >= 0):
            members.setdefault(int(label[p]), []).append(int(p))
        return [(int(stones[first]), pts) for first, pts in members.items()]

    def chain_liberties(self, point: int) -> list[int]:
        """Ascending liberties of the chain on ``point`` ([] for an empty point)."""
        point = self._check_point(point)
        libs = np.zeros(self.size * self.size, np.int16)
        k = lib.game_chain_liberties(self._ptr, point, ffi.from_buffer("int16_t[]", libs))
        return [int(p) for p in libs[:k]]

    def eyes(self, color: int) -> np.ndarray:
        """Bool [N*N]: empty points that are ``color``'s eyes (see src_c/chains.h)."""
        mask = np.zeros(self.size * self.size, np.uint8)
        lib.game_eyes(self._ptr, _check_color(color), ffi.from_buffer("uint8_t[]", mask))
        return mask.astype(bool)

    def floating_stones(self) -> np.ndarray:
        """Bool [N*N]: stones floating in an area the other colour encloses (see
        src_c/chains.h, game_floating): a finished game's dead stones."""
        dead = np.zeros(self.size * self.size, np.uint8)
        lib.game_floating(self._ptr, ffi.from_buffer("uint8_t[]", dead))
        return dead.astype(bool)

    def _check_point(self, point: int) -> int:
        if not isinstance(point, (int, np.integer)) or not 0 <= int(point) <= self.size * self.size:
            raise ValueError(f"point {point!r} is not on a {self.size}x{self.size} board")
        return int(point)

    # -- moves ---------------------------------------------------------------------------
    def illegal_reason(self, point: int, color: int | None = None) -> str | None:
        """Why ``color`` may not play ``point`` (occupied, suicide, ko, superko), or None."""
        point = self._check_point(point)
        color = self.to_move if color is None else _check_color(color)
        r = lib.game_check(self._ptr, point, color)
        return None if r == lib.MOVE_OK else _REASONS.get(r, f"error {r}")

    def is_legal(self, point: int, color: int | None = None) -> bool:
        return self.illegal_reason(point, color) is None

    def play(self, point: int, color: int | None = None) -> None:
        """Plays ``point`` (pass = N*N) for ``color`` (default: side to move).

        Raises IllegalMoveError (with ``reason``) and leaves the game unchanged when illegal."""
        point = self._check_point(point)
        color = self.to_move if color is None else _check_color(color)
        r = lib.game_play(self._ptr, point, color)
        if r != lib.MOVE_OK:
            if r < 0:
                raise MemoryError("out of memory recording the game")
            raise IllegalMoveError(_REASONS.get(r, f"error {r}"), point, color)
        self.moves.append((color, point))

    def play_many(self, moves: Iterable[tuple[int, int]]) -> None:
        for color, point in moves:
            self.play(point, color)

    def legal_mask(self, color: int | None = None) -> np.ndarray:
        """Boolean array of N*N+1 entries: which points (and pass, last) are legal."""
        color = self.to_move if color is None else _check_color(color)
        mask = np.zeros(self.size * self.size + 1, dtype=np.uint8)
        lib.game_legal_mask(self._ptr, color, ffi.from_buffer("uint8_t[]", mask))
        return mask.astype(bool)

    def legal_moves(self, color: int | None = None) -> list[int]:
        return [int(p) for p in np.flatnonzero(self.legal_mask(color))]

    def copy(self) -> "Game":
        g = Game.__new__(Game)
        g.size, g.rules = self.size, self.rules
        ptr = lib.game_clone(self._ptr)
        if ptr == ffi.NULL:
            raise MemoryError("could not copy a game")
        g._ptr = ffi.gc(ptr, lib.game_free)
        g.moves = list(self.moves)
        g._to_move_overrides = dict(self._to_move_overrides)
        return g

    def undo(self) -> tuple[int, int]:
        """Takes back the last move (replaying from the start); returns it.  IndexError if none."""
        if not self.moves:
            raise IndexError("no move to undo")
        last = self.moves[-1]
        moves = self.moves[:-1]
        overrides = {k: c for k, c in self._to_move_overrides.items() if k <= len(moves)}
        self._ptr = self._new_ptr()
        self.moves = []
        self._to_move_overrides = {}
        for i, (color, point) in enumerate(moves):
            if i in overrides:
                self.set_to_move(overrides[i])
            self.play(point, color)
        if len(moves) in overrides:
            self.set_to_move(overrides[len(moves)])
        return last

    # -- views ---------------------------------------------------------------------------
    def stones(self) -> np.ndarray:
        """int8 [N, N] of EMPTY/BLACK/WHITE, row 0 at the top."""
        out = np.zeros(self.size * self.size, dtype=np.uint8)
        lib.game_stones(self._ptr, ffi.from_buffer("uint8_t[]", out))
        return out.reshape(self.size, self.size).astype(np.int8)

    def score(self) -> float:
        """Tromp-Taylor area score: Black's area minus White's minus komi (>0: Black wins)."""
        return float(lib.game_area(self._ptr, ffi.NULL)) - float(self.rules.komi)

    def judged_score(self, playouts: int = 32, seed: int = 0) -> float:
        """Area score with dead groups off, as the search counts a game that ends in its tree
        (``SearchParams.terminal_judge``): ``playouts`` random playouts finish the position,
        half with each side first, and a group whose points the opponent owns at the end of
        60% of them or more is taken off.  Black's area minus White's minus komi;
        ``playouts`` < 1: :meth:`score`."""
        return float(lib.game_judged_area(self._ptr, int(playouts), seed & 0xFFFFFFFFFFFFFFFF)) - float(self.rules.komi)

    def count(self, dead=(), seki=()) -> tuple[float, np.ndarray]:
        """The count of this position by its rules (area or territory, tax; src_c/count.h)
        with the stones at the compact points ``dead`` taken off (prisoners under territory
        scoring) and the groups at ``seki`` in seki: (Black's points minus White's minus komi,
        the owner of every point int8 [N, N], 0 = neutral).  Under territory scoring the stones
        captured during play count too."""
        area = self.size * self.size
        masks = []
        for points in (dead, seki):
            mask = np.zeros(area, np.uint8)
            mask[np.asarray(list(points), dtype=np.int64)] = 1
            masks.append(mask)
        owner = np.zeros(area, np.uint8)
        score = lib.game_count(self._ptr, ffi.from_buffer("uint8_t[]", masks[0]),
                               ffi.from_buffer("uint8_t[]", masks[1]), ffi.from_buffer("uint8_t[]", owner))
        return float(score), owner.reshape(self.size, self.size).astype(np.int8)

    def judged_count(self, playouts: int = 32, seed: int = 0) -> float:
        """:meth:`judged_score`'s dead groups off, then counted by the rules as :meth:`count`
        counts (under area scoring without tax, the same number as :meth:`judged_score`)."""
        return float(lib.game_judged_count(self._ptr, int(playouts), seed & 0xFFFFFFFFFFFFFFFF))

    def area(self) -> np.ndarray:
        """int8 [N, N]: owner of each point under area counting (0 = neutral)."""
        out = np.zeros(self.size * self.size, dtype=np.uint8)
        lib.game_area(self._ptr, ffi.from_buffer("uint8_t[]", out))
        return out.reshape(self.size, self.size).astype(np.int8)

    def playout_ownership(self, playouts: int = 32, seed: int = 0,
                          max_moves: int | None = None, tactical: bool | int = False) -> np.ndarray:
        """Black-positive ownership float32 [N, N]: the mean final area (+1 Black, -1 White,
        0 neutral) of ``playouts`` random playouts from this position (legal moves that do not
        fill the mover's own eyes, to two passes; half of them start with each colour).
        ``tactical``: the playouts capture and escape atari around the last move and avoid
        self-atari (the search's ``rollout_policy=1``); 2: they also play MoGo's 3x3 patterns
        around the last move (``rollout_policy=2``)."""
        if playouts < 1:
            raise ValueError("playouts must be >= 1")
        if int(tactical) not in (0, 1, 2):
            raise ValueError("tactical must be False/0, True/1 or 2")
        out = np.zeros(self.size * self.size, np.float32)
        lib.game_playout_ownership(self._ptr, int(playouts), seed & 0xFFFFFFFFFFFFFFFF,
                                   0 if max_moves is None else int(max_moves), int(tactical),
                                   ffi.from_buffer("float[]", out))
        return out.reshape(self.size, self.size)

    def features(self, feature_set: str = "rich", out: np.ndarray | None = None) -> np.ndarray:
        """Input planes float32 [P, N, N] for the side to move (see src_c/feature_planes.h)."""
        fid = _feature_id(feature_set)
        shape = (lib.features_planes(fid), self.size, self.size)
        if out is None:
            out = np.empty(shape, dtype=np.float32)
        elif out.shape != shape or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous float32 array of shape {shape}")
        lib.features_game(fid, self._ptr, ffi.from_buffer("float[]", out))
        return out

    def feature_key(self, feature_set: str = "rich") -> int:
        """Evaluation-cache key of the current position for ``feature_set``."""
        return int(lib.features_game_key(_feature_id(feature_set), self._ptr))

    def result_string(self) -> str:
        """SGF/GTP result by Tromp-Taylor count (:func:`engine.rules.format_result`)."""
        return format_result(self.score())

    def __str__(self) -> str:
        n = self.size
        letters = "   " + " ".join(GTP_LETTERS[:n])
        rows = [" ".join(".XO"[c] for c in row) for row in self.stones()]
        return "\n".join([letters, *(f"{n - r:2d} {line} {n - r:2d}" for r, line in enumerate(rows)),
                          letters])


def board_from_ascii(diagram: str, rules: Rules | None = None, to_move: int = BLACK) -> Game:
    """A Game set up from rows of ``.``/``X``/``O`` (X = Black), top row first.

    Stones are placed as set-up moves (each checked for legality)."""
    rows = [r.split() if " " in r.strip() else list(r.strip())
            for r in diagram.strip().splitlines() if r.strip()]
    size = len(rows)
    game = Game(size, rules)
    for r, row in enumerate(rows):
        if len(row) != size:
            raise ValueError(f"row {r} has {len(row)} points, expected {size}")
        for c, ch in enumerate(row):
            if ch in "Xx":
                game.play(r * size + c, BLACK)
            elif ch in "Oo":
                game.play(r * size + c, WHITE)
            elif ch not in ".+":
                raise ValueError(f"unknown character {ch!r} in diagram")
    game.set_to_move(to_move)
    return game


# ---------------------------------------------------------------------------------------------
# Search


NODE_BYTES = int(lib.search_node_bytes())
EDGE_BYTES = int(lib.search_edge_bytes())


@dataclass
class ChildStats:
    """Root statistics of one candidate move (values from the mover's view, -1..1)."""

    move: int
    visits: int
    q: float
    prior: float
    lcb: float
    pv: list[int]

    @property
    def winrate(self) -> float:
        return winrate_of(self.q)


MAX_SLOTS = int(lib.SEARCH_MAX_SLOTS)


class Search:
    """A PUCT tree over a copy of ``game``, evaluated in batches by the caller.

    ``collect(max_leaves)`` fills :attr:`planes` (and :attr:`keys`) with up to ``max_batch``
    leaves; the caller runs the network and calls ``backup(policy_logits, values)``.

    With ``slots`` > 1 several batches can be pending at once: ``collect(n, slot=i)`` fills
    ``slot_planes(i)``/``slot_keys(i)`` and ``backup(policy, values, slot=i)`` backs that batch
    up, in any order relative to the other slots.  Calls on one Search must not overlap (hold a
    lock around each collect/backup; the forward pass in between needs no lock).
    """

    def __init__(self, game: Game, params: SearchParams | None = None, feature_set: str = "rich",
                 max_batch: int = 16, seed: int = 0, slots: int = 1):
        self.params = params or SearchParams()
        self.feature_set = feature_set
        self.size = game.size
        self.max_batch = int(max_batch)
        if self.max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        if not 1 <= int(slots) <= MAX_SLOTS:
            raise ValueError(f"slots must be 1..{MAX_SLOTS}")
        self.game = game.copy()
        ptr = lib.search_new(game._ptr, self._c_params(game), _feature_id(feature_set), self.max_batch,
                             seed & 0xFFFFFFFFFFFFFFFF)
        if ptr == ffi.NULL:
            raise MemoryError("could not allocate a search")
        self._ptr = ffi.gc(ptr, lib.search_free)
        self._nplanes = lib.features_planes(_feature_id(feature_set))
        self._bufs: list[tuple] = []
        self._pending: list[int] = []
        self.set_slots(int(slots))

    def set_slots(self, slots: int) -> None:
        """Number of batches that may be pending at once (1..MAX_SLOTS); none may be pending."""
        if not 1 <= int(slots) <= MAX_SLOTS:
            raise ValueError(f"slots must be 1..{MAX_SLOTS}")
        if lib.search_set_slots(self._ptr, int(slots)) != 0:
            raise RuntimeError("cannot change slots while leaves are pending (or out of memory)")
        while len(self._bufs) < slots:
            planes = np.zeros((self.max_batch, self._nplanes, self.size, self.size), dtype=np.float32)
            keys = np.zeros(self.max_batch, dtype=np.uint64)
            self._bufs.append((planes, keys, ffi.from_buffer("float[]", planes),
                               ffi.from_buffer("uint64_t[]", keys)))
            self._pending.append(0)
        del self._bufs[slots:]
        del self._pending[slots:]
        self.planes, self.keys = self._bufs[0][0], self._bufs[0][1]

    @property
    def slots(self) -> int:
        return len(self._bufs)

    def slot_planes(self, slot: int) -> np.ndarray:
        """The input planes buffer of ``slot`` (its first ``pending_in(slot)`` rows are pending)."""
        return self._bufs[slot][0]

    def slot_keys(self, slot: int) -> np.ndarray:
        return self._bufs[slot][1]

    def pending_in(self, slot: int) -> int:
        """Leaves pending in ``slot``."""
        return self._pending[slot]

    @property
    def pending(self) -> int:
        """Leaves pending in slot 0."""
        return self._pending[0]

    @pending.setter
    def pending(self, n: int) -> None:
        self._pending[0] = int(n)

    @property
    def pending_total(self) -> int:
        """Leaves pending in all slots."""
        return sum(self._pending)

    def cancel(self, slot: int = 0) -> None:
        """Withdraws the leaves pending in ``slot`` (virtual loss removed, nothing backed up)."""
        lib.search_cancel_slot(self._ptr, int(slot))
        self._pending[slot] = 0

    def check(self) -> int:
        """0 when the tree's counters are consistent (see search_check in src_c/search.h)."""
        return int(lib.search_check(self._ptr))

    def _c_params(self, game: Game):
        """The C parameters for a tree over ``game``: :attr:`params`, except that a game ending
        in the tree under Tromp-Taylor rules is counted as it stands (terminal_judge 0): those
        rules take no dead stones off."""
        params = self.params
        if game.rules.name == "tromp-taylor" and params.terminal_judge:
            params = dataclasses.replace(params, terminal_judge=0.0)
        return params._c()

    def set_params(self, params: SearchParams) -> None:
        self.params = params
        lib.search_set_params(self._ptr, self._c_params(self.game))

    def set_game(self, game: Game) -> None:
        """Replaces the root position (the tree is cleared)."""
        if game.size != self.size:
            raise ValueError("a search keeps its board size")
        if game.rules != self.game.rules:
            lib.search_set_params(self._ptr, self._c_params(game))
        if lib.search_set_game(self._ptr, game._ptr) != 0:
            raise MemoryError("could not reset the search")
        self.game = game.copy()
        self._pending = [0] * len(self._pending)

    def advance(self, point: int, color: int | None = None) -> None:
        """Plays a move at the root, keeping the matching subtree (tree reuse)."""
        color = self.game.to_move if color is None else _check_color(color)
        r = lib.search_advance(self._ptr, int(point), color)
        if r == -2:
            raise RuntimeError("cannot advance while leaves are pending")
        if r < 0:
            raise MemoryError("out of memory advancing the search")
        if r != lib.MOVE_OK:
            raise IllegalMoveError(_REASONS.get(r, f"error {r}"), point, color)
        self.game.play(point, color)

    def request_noise(self) -> None:
        """Adds Dirichlet noise (params.noise_alpha/epsilon) to the root priors."""
        lib.search_request_noise(self._ptr)

    def set_avoid(self, avoid: dict[int, dict[int, int]] | None) -> None:
        """KataGo's avoidMoves: ``{colour: {compact point: until depth}}`` keeps that colour's
        move out of the search at depths below ``until depth`` (0: the root's children, so 1
        restricts the root only); a node with no move left ignores it.  None or {} clears it.
        A changed table clears the tree; :meth:`set_game` and :meth:`advance` clear the table."""
        tables = {}
        for color in (BLACK, WHITE):
            table = np.zeros(self.size * self.size + 1, np.int32)
            for point, depth in (avoid or {}).get(color, {}).items():
                if not 0 <= point <= self.size * self.size:
                    raise ValueError(f"point {point} is off a {self.size}x{self.size} board")
                table[point] = max(0, int(depth))
            tables[color] = table
        r = lib.search_set_avoid(self._ptr, ffi.from_buffer("int32_t[]", tables[BLACK]),
                                 ffi.from_buffer("int32_t[]", tables[WHITE]))
        if r == -2:
            raise RuntimeError("leaves are pending: back them up before changing avoided moves")
        if r < 0:
            raise MemoryError("out of memory clearing the search tree")

    def set_root_targets(self, targets: dict[int, int] | None) -> int:
        """Gumbel sequential halving: the root descends only into the moves of ``targets``
        (compact point -> root visits to reach); None or {} goes back to PUCT at the root.
        Returns how many of the moves are root children (0 before the root is expanded)."""
        targets = targets or {}
        moves = np.array(list(targets.keys()), np.int32)
        counts = np.array(list(targets.values()), np.int32)
        return int(lib.search_set_root_targets(self._ptr, ffi.from_buffer("int32_t[]", moves),
                                               ffi.from_buffer("int32_t[]", counts), len(moves)))

    def _root_children(self) -> tuple[np.ndarray, ...]:
        """Root children in edge order: moves, visits, Q, priors, LCBs (see root_arrays)."""
        cap = self.size * self.size + 1
        arrays = [np.zeros(cap, np.int32), np.zeros(cap, np.int32)] + [np.zeros(cap, np.float32)
                                                                       for _ in range(3)]
        k = lib.search_root_children(self._ptr, *(ffi.from_buffer("int32_t[]", a) for a in arrays[:2]),
                                     *(ffi.from_buffer("float[]", a) for a in arrays[2:]), cap)
        return tuple(a[:k] for a in arrays)

    def root_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Root children as arrays in edge order: compact moves, visits, Q (mover's view,
        -1..1, 0 when unvisited) and priors (empty before the root is expanded)."""
        return self._root_children()[:4]

    def collect(self, max_leaves: int | None = None, slot: int = 0) -> int:
        """Collects up to ``max_leaves`` (default ``max_batch``) leaves into ``slot``'s buffers;
        leaves still pending in that slot are cancelled first.  Returns how many are pending."""
        buf = self._bufs[slot]
        n = lib.search_collect_slot(self._ptr, int(slot),
                                    self.max_batch if max_leaves is None else int(max_leaves),
                                    buf[2], buf[3])
        if n < 0:
            raise ValueError(f"bad slot {slot}")
        self._pending[slot] = n
        return n

    def backup(self, policy: np.ndarray, values: np.ndarray, slot: int = 0,
               scores: np.ndarray | None = None, uncertainty: np.ndarray | None = None,
               policy_opt: np.ndarray | None = None) -> None:
        """Backs up the network's policy logits, values and score leads (side to move, points;
        None without a score head: no score utility) of the leaves pending in ``slot``, and its
        short-term errors ``uncertainty`` [n, 2] (win/loss error, score error in points; None
        for nets without them: every playout weighs 1), and ``policy_opt`` [n, N*N+1] the logits
        of an optimistic policy head (None: none; blended in by ``params.policy_optimism``)."""
        n = self._pending[slot]
        policy = np.ascontiguousarray(policy[:n], dtype=np.float32)
        values = np.ascontiguousarray(values[:n], dtype=np.float32)
        if policy.shape != (n, self.size * self.size + 1):
            raise ValueError(f"policy must have shape ({n}, {self.size * self.size + 1})")
        for name, a in (("values", values), ("scores", scores)):
            if a is not None and np.shape(a[:n]) != (n,):
                raise ValueError(f"{name} must have shape ({n},)")
        if lib.search_backup_slot(self._ptr, int(slot), ffi.from_buffer("float[]", policy),
                                  ffi.from_buffer("float[]", values), _floats_or_null(scores, n),
                                  _rows_or_null(uncertainty, n, 2, "uncertainty"),
                                  _rows_or_null(policy_opt, n, self.size * self.size + 1, "policy_opt"), n) != 0:
            raise RuntimeError("backup does not match the pending leaves")
        self._pending[slot] = 0

    @property
    def visits(self) -> int:
        return int(lib.search_root_visits(self._ptr))

    @property
    def value(self) -> float:
        """Root value for the side to move, -1..1 (win/loss only, never the score utility)."""
        return float(lib.search_root_value(self._ptr))

    @property
    def score(self) -> float:
        """Root mean score lead for the side to move (0 when no scores were backed up)."""
        return float(lib.search_root_score(self._ptr))

    def playout_weight(self, wl_error: float, score_error: float, lead: float,
                       color: int | None = None) -> float:
        """The weight this search gives a leaf with short-term errors ``wl_error`` and
        ``score_error`` and score lead ``lead`` (points) for ``color`` (default: the side to
        move at the root) to move; 1 unless ``params.use_uncertainty``."""
        color = self.game.to_move if color is None else _check_color(color)
        return float(lib.search_playout_weight(self._ptr, float(wl_error), float(score_error),
                                               float(lead), color))

    @property
    def weight(self) -> float:
        """Sum of the root's playout weights (its visits when every playout weighs 1)."""
        return float(lib.search_root_weight(self._ptr))

    def child_utility(self, move: int) -> float:
        """Selection's utility of root child ``move``: mean value plus mean score utility
        (mover's view; -2 when unvisited)."""
        return float(lib.search_child_utility(self._ptr, int(move)))

    def child_bias(self, move: int) -> tuple[float, float] | None:
        """The value-bias table entry of root child ``move``: (weighted delta sum, weight sum),
        or None when the child has no entry (unvisited, or the correction is off)."""
        delta, weight = ffi.new("double *"), ffi.new("double *")
        found = lib.search_child_bias(self._ptr, int(move), delta, weight) == 0
        return (float(delta[0]), float(weight[0])) if found else None

    @property
    def nodes(self) -> int:
        return int(lib.search_nodes(self._ptr))

    @property
    def memory_bytes(self) -> int:
        """Bytes the tree uses (nodes and edges)."""
        return int(lib.search_memory(self._ptr))

    @property
    def full_events(self) -> int:
        return int(lib.search_full_events(self._ptr))

    def children(self, with_pv: bool = True) -> list[ChildStats]:
        """Root children sorted by visits (then prior), with principal variations."""
        moves, visits, q, prior, lcb = self._root_children()
        order = sorted(range(len(moves)), key=lambda i: (-visits[i], -prior[i]))
        out = []
        for i in order:
            pv = self.pv(int(moves[i])) if with_pv and visits[i] > 0 else [int(moves[i])]
            out.append(ChildStats(int(moves[i]), int(visits[i]), float(q[i]), float(prior[i]),
                                  float(lcb[i]), pv))
        return out

    def pv(self, first: int = -1, max_len: int = 64) -> list[int]:
        buf = np.zeros(max_len, np.int32)
        n = lib.search_pv(self._ptr, int(first), ffi.from_buffer("int32_t[]", buf), max_len)
        return [int(x) for x in buf[:n]]

    def visit_distribution(self) -> np.ndarray:
        """Normalised root visit counts over N*N+1 points (the policy training target)."""
        dist = np.zeros(self.size * self.size + 1, np.float32)
        moves, visits = self._root_children()[:2]
        dist[moves] = visits
        total = dist.sum()
        return dist / total if total > 0 else dist

    def choose(self) -> int:
        """The move to play under params.temperature / LCB; never illegal."""
        return int(lib.search_choose(self._ptr))
