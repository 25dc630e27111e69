"""SGF records, written and read in one place (via sgfmill).

:func:`write_game` serialises a game (moves as compact points) with its rules, komi, players,
result, handicap set-up and comments; :func:`read_game` parses a record into the same terms.
Both the GTP engine (printsgf/loadsgf), self-play/gating records and matches use them.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from sgfmill import sgf

import engine
from engine import coords
from engine.core import BLACK, WHITE, Game, Rules
from engine.rules import DEFAULT_RULES, SGF_NAMES, client_rules


@dataclass
class SgfGame:
    """The main line of an SGF record.  Points are compact (see engine.coords)."""

    size: int
    komi: float
    rules: str | None                       # our preset name when RU is recognised
    setup_black: list[int] = field(default_factory=list)
    setup_white: list[int] = field(default_factory=list)
    moves: list[tuple[int, int]] = field(default_factory=list)   # (colour, point)
    to_move: int | None = None              # PL of the last node that sets it
    handicap: int = 0
    result: str | None = None
    black: str | None = None
    white: str | None = None
    comments: list[str] = field(default_factory=list)          # one per move ("" if none)
    root_properties: dict[str, str] = field(default_factory=dict)


def rules_from_sgf(ru: str | None) -> str | None:
    """Our rules preset for an SGF RU value, or None when unknown."""
    return client_rules(ru)


def write_game(size: int, komi: float, rules: str, moves: Iterable[tuple[int, int]], *,
               setup_black: Sequence[int] = (), setup_white: Sequence[int] = (),
               handicap: int = 0, to_move: int | None = None, result: str | None = None,
               black: str | None = None, white: str | None = None,
               root_comment: str | None = None, game_comment: str | None = None,
               move_comments: Mapping[int, str] | Sequence[str] | None = None,
               application: tuple[str, str] = ("goengine", "1"), game_name: str | None = None,
               date: datetime.date | None = None) -> bytes:
    """The game as SGF (FF[4]) bytes.

    ``moves`` are (colour, point) pairs; ``move_comments`` maps a move's index to its comment
    (a sequence is indexed the same way).  Set-up stones go in the root (AB/AW)."""
    record = sgf.Sgf_game(size)
    root = record.get_root()
    root.set("KM", float(komi))
    root.set("RU", SGF_NAMES.get(rules, rules))
    root.set("AP", tuple(application))   # (name, version)
    if date is not None:
        root.set("DT", date.isoformat())
    if game_name:
        root.set("GN", game_name)
    if black:
        root.set("PB", black)
    if white:
        root.set("PW", white)
    if result:
        root.set("RE", result)
    if handicap:
        root.set("HA", int(handicap))
    if setup_black or setup_white:
        root.set_setup_stones([coords.to_sgfmill(p, size) for p in setup_black],
                              [coords.to_sgfmill(p, size) for p in setup_white])
    if to_move is not None:
        root.set("PL", "b" if to_move == BLACK else "w")
    if root_comment:
        root.set("C", root_comment)
    if game_comment:
        root.set("GC", game_comment)
    if move_comments is None:
        comments: Mapping[int, str] = {}
    elif isinstance(move_comments, Mapping):
        comments = move_comments
    else:
        comments = dict(enumerate(move_comments))
    for index, (color, point) in enumerate(moves):
        node = record.extend_main_sequence()
        node.set_move("b" if color == BLACK else "w", coords.to_sgfmill(int(point), size))
        text = comments.get(index)
        if text:
            node.set("C", text)
    return record.serialise()


def read_game(data: bytes) -> SgfGame:
    """Parses the main line of an SGF record.  Raises ValueError for a malformed record, a
    board larger than 19 or a point off the board.  AE (removing stones) is not supported."""
    if isinstance(data, str):
        data = data.encode()
    try:
        record = sgf.Sgf_game.from_bytes(data)
        size = record.get_size()
        komi = float(record.get_komi())
    except (ValueError, KeyError) as exc:
        raise ValueError(str(exc)) from None
    if not 2 <= size <= 19:
        raise ValueError(f"SGF board size {size} is not supported (2..19)")
    root = record.get_root()
    props = {}
    for key in root.properties():
        try:
            props[key] = root.get_raw(key).decode("utf-8", errors="replace")
        except Exception:   # noqa: BLE001 - a property sgfmill cannot render is skipped
            continue
    out = SgfGame(size=size, komi=komi, rules=rules_from_sgf(props.get("RU")),
                  result=props.get("RE"), black=props.get("PB"), white=props.get("PW"),
                  root_properties=props)
    if root.has_property("HA"):
        try:
            out.handicap = int(root.get("HA"))
        except ValueError:
            out.handicap = 0
    for index, node in enumerate(record.get_main_sequence()):
        try:
            black, white, empty = node.get_setup_stones()
            color, move = node.get_move()
        except ValueError as exc:
            raise ValueError(f"bad SGF node {index}: {exc}") from None
        if empty:
            raise ValueError("SGF set-up that removes stones (AE) is not supported")
        if black or white:
            if out.moves:
                raise ValueError("SGF set-up stones after the first move are not supported")
            out.setup_black += sorted(coords.from_sgfmill(rc, size) for rc in black)
            out.setup_white += sorted(coords.from_sgfmill(rc, size) for rc in white)
        if color is not None:
            out.moves.append((BLACK if color == "b" else WHITE, coords.from_sgfmill(move, size)))
            out.comments.append(node.get("C") if node.has_property("C") else "")
            out.to_move = None
        if node.has_property("PL"):
            out.to_move = BLACK if node.get("PL") == "b" else WHITE
    return out


# ---------------------------------------------------------------------------------------------
# A game of the engine as a record and back (GTP's printsgf and loadsgf)


def game_to_sgf(game: Game, handicap: list[int] | None, result: str | None, player_name: str) -> str:
    """The game as SGF text: size, komi, rules, handicap stones as AB, the moves; ``player_name``
    (and the engine's version) as the application."""
    moves = list(game.moves)
    handicap = list(handicap or [])
    setup: list[int] = []
    if handicap and moves[:len(handicap)] == [(BLACK, p) for p in handicap]:
        setup = handicap
        moves = moves[len(handicap):]
    data = write_game(game.size, game.rules.komi, game.rules.name, moves,
                          setup_black=setup, handicap=len(setup), result=result,
                          application=(player_name, engine.__version__))
    return data.decode("utf-8").strip()


def game_from_sgf(data: bytes, rules: Rules, move_number: int | None = None,
                  vertex: str | None = None) -> tuple[Game, list[int]]:
    """The position of an SGF record before move ``move_number`` (1-based; None: after all moves)
    or before the first move at ``vertex``; returns (game, handicap points).

    The SGF's komi and (when recognised) rules replace those of ``rules``.  Without KM the komi
    of ``rules`` stays: SGF's default komi is 0, but a record without KM (a problem, a game typed
    in by hand) says nothing about the komi of the game the controller has set up, and the
    controller can send ``komi`` after ``loadsgf`` whenever it wants another.  ValueError for a
    malformed record; IllegalMoveError for an illegal move in it."""
    record = read_game(data)
    preset = record.rules or (rules.name if rules.name in Rules.PRESETS else DEFAULT_RULES)
    komi = record.komi if "KM" in record.root_properties else rules.komi
    game = Game(record.size, Rules.preset(preset, komi))
    for color, points in ((BLACK, record.setup_black), (WHITE, record.setup_white)):
        for p in points:
            game.play(p, color)
    handicap = list(record.setup_black) if not record.setup_white else []
    target = None if move_number is None else max(0, move_number - 1)
    stop_point = None if vertex is None else coords.from_gtp(vertex, record.size)
    played = 0
    for color, point in record.moves:
        if (target is not None and played >= target) or point == stop_point:
            break
        game.play(point, color)
        played += 1
    if played == len(record.moves) and record.to_move is not None:
        game.set_to_move(record.to_move)
    elif handicap and played == 0:
        game.set_to_move(WHITE)
    return game, handicap
