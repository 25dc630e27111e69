"""Engine-vs-engine matches with ratings: ``python -m train.match``.

Two engines::

    python -m train.match --black "gnugo --mode gtp --level 1" \\
        --white "gnugo --mode gtp --level 2" --games 20 --size 9 --komi 7.5 \\
        --rules chinese --sgf-dir matches/gnugo --parallel 2 --sprt 0,35

Our own nets play in this process (``inproc:PATH[:visits=N,device=D,name=X]``,
see ``--help``); when every engine is one, all games are batched through one
``train.pool.GamePool``::

    python -m train.match --black inproc:runs/9x9/models/model-0002000.pt \\
        --white inproc:runs/9x9/models/model-0001000.pt --visits 200 \\
        --games 100 --size 9 --parallel 16 --sgf-dir matches/2000-vs-1000

Colours alternate: engine A (``--black``) is Black in games 0, 2, 4, ... and
White in games 1, 3, 5, .... A round robin takes ``--engine NAME=CMD`` three or
more times and plays ``--games`` games for every pair, then fits Bradley-Terry
ratings (first engine anchored at 0).

Layers, each usable alone:

``Player`` (protocol)
    ``new_game(size, komi, rules)``, ``play(color, point)``,
    ``genmove(color) -> point | "resign"``, ``close()``, and a ``name``.
    Players signal failures by raising ``EngineTimeout`` (lost on time),
    ``EngineDied`` (crash) or ``GTPError`` (refused a command), all from
    ``train.gtp_client``; a ``ValueError`` from ``genmove`` counts as an
    illegal move. ``GTPPlayer`` wraps a GTP subprocess; ``InProcessPlayer``
    is our engine in this process (``engine.player.Player`` over a net that
    ``InProcessNets`` loads once and shares).
``run_game(black, white, settings, opening, referee) -> GameRecord``
    The game loop for players that answer one ``genmove`` at a time: set-up, fixed
    handicap, forced opening moves, then genmove/play alternation checked by
    the C core (``engine.core.Game``), ended by resignation, two passes
    (scored by the core's Tromp-Taylor count or by a referee engine's
    ``final_score``), the move cap (scored the same way), or a forfeit.
``run_match(config) -> dict``
    Schedules games over worker threads (each with its own engine processes,
    one game at a time) or, when every engine is in-process (``uses_pool``),
    over one worker holding a ``train.pool.GamePool`` of ``--parallel`` slots
    (the one batched game runner of self-play and gating; its games are
    counted by ``count_game`` like ``run_game``'s). Either way it writes one
    SGF per game and a results JSON, shows a live progress bar, and stops
    early once an SPRT is decided.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import math
import queue
import random
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from engine import coords, sgf
from engine.fileio import atomic_write
from engine.core import BLACK, EMPTY, WHITE, Game, IllegalMoveError, Rules
from train.gtp_client import EngineDied, EngineError, EngineTimeout, GTPClient, GTPError
from train.stats import bradley_terry, elo_difference, sprt

__all__ = [
    "Player",
    "GTPPlayer",
    "GTPReferee",
    "InProcessSpec",
    "InProcessNets",
    "InProcessPlayer",
    "parse_inproc",
    "Referee",
    "GameSettings",
    "GameRecord",
    "run_game",
    "count_game",
    "fixed_handicap_points",
    "random_opening",
    "parse_final_score",
    "game_to_sgf",
    "MatchConfig",
    "EngineSpec",
    "uses_pool",
    "run_match",
    "format_summary",
    "main",
]

#: How a game ended. Forfeits ("time", "crash", "illegal", "error") lose for
#: the offending side; "score" and "move-limit" are decided by counting.
REASONS = ("resign", "score", "move-limit", "time", "crash", "illegal", "error")

#: SGF RU values for our rule presets.
#: ``kgs-rules`` arguments for our presets (sent only to engines that list it).
KGS_RULES = {"chinese": "chinese", "tromp-taylor": "new_zealand"}


def _color_letter(color: int) -> str:
    return "B" if color == BLACK else "W"


def _color_word(color: int) -> str:
    return "Black" if color == BLACK else "White"


def _other(color: int) -> int:
    return WHITE if color == BLACK else BLACK


# ============================================================== player interface


class Player(Protocol):
    """What the game runner needs from a player.

    ``rules`` is a preset name (``"chinese"`` or ``"tromp-taylor"``); points are
    compact indices (``engine.coords``; pass is ``size * size``).
    """

    name: str

    def new_game(self, size: int, komi: float, rules: str) -> None:
        """Start a new game on an empty board."""

    def play(self, color: int, point: int) -> None:
        """Record a move (handicap stone, forced opening move or the opponent's move)."""

    def genmove(self, color: int) -> int | str:
        """Choose and play a move for ``color``: a point, pass, or ``"resign"``."""

    def close(self) -> None:
        """Release the player's resources (processes, models)."""


class Referee(Protocol):
    """Scores a finished game: black's points minus white's, komi included."""

    def score(self, game: Game) -> float:
        """Score of ``game``; raises EngineError, GTPError or ValueError on failure."""

    def close(self) -> None:
        """Release the referee's resources."""


class GTPPlayer:
    """A ``Player`` backed by a GTP engine subprocess.

    The process starts lazily on the first ``new_game`` and is restarted there
    whenever it has died or was killed after a timeout (``restarts`` counts
    that). ``move_time`` (seconds) is announced to the engine as byo-yomi
    (``time_settings 0 T 1``, T = max(1, floor(move_time)), when the engine
    lists the command); ``move_timeout`` is the hard wall-clock limit on one
    ``genmove`` (None: wait forever); ``command_timeout`` limits every other
    command; ``startup_timeout`` the first command after a (re)start, which
    covers loading a network. ``name`` overrides the display name, which is
    otherwise the engine's ``name`` and ``version`` replies.
    """

    def __init__(
        self,
        command: str,
        *,
        label: str | None = None,
        name: str | None = None,
        move_time: float | None = None,
        move_timeout: float | None = None,
        command_timeout: float = 60.0,
        startup_timeout: float = 300.0,
    ) -> None:
        self.command = command
        self.client = GTPClient(command, default_timeout=command_timeout, label=label, start=False)
        self.label = self.client.label
        self.move_time = move_time
        self.move_timeout = move_timeout
        self.startup_timeout = startup_timeout
        self.engine_name = ""
        self.engine_version = ""
        self.restarts = 0
        self._name_override = name
        self._started = False
        self._size = 19

    @property
    def name(self) -> str:
        """Display name: the override, else ``"<name> <version>"``, else the label."""
        if self._name_override:
            return self._name_override
        return f"{self.engine_name} {self.engine_version}".strip() or self.label

    def start(self) -> None:
        """(Re)start the engine process and read its name and version."""
        if self._started:
            self.client.restart(grace=1.0)
            self.restarts += 1
        else:
            self.client.start()
            self._started = True
        self.engine_name = self.client.send("name", timeout=self.startup_timeout)
        try:
            self.engine_version = self.client.send("version")
        except GTPError:
            self.engine_version = ""

    def new_game(self, size: int, komi: float, rules: str) -> None:
        if not self._started or not self.client.alive:
            self.start()
        self._size = size
        self.client.send(f"boardsize {size}")
        self.client.send(f"komi {komi:g}")
        self.client.send("clear_board")
        if self.client.knows("kgs-rules") and rules in KGS_RULES:
            with contextlib.suppress(GTPError):  # advisory only; our core referees legality
                self.client.send(f"kgs-rules {KGS_RULES[rules]}")
        if self.move_time is not None and self.client.knows("time_settings"):
            self.client.send(f"time_settings 0 {max(1, math.floor(self.move_time))} 1")

    def play(self, color: int, point: int) -> None:
        self.client.send(f"play {_color_letter(color)} {coords.to_gtp(point, self._size)}")

    def genmove(self, color: int) -> int | str:
        """Ask the engine for a move; ValueError if the reply is not a vertex."""
        reply = self.client.send(f"genmove {_color_letter(color)}", timeout=self.move_timeout)
        if reply.strip().lower() == "resign":
            return "resign"
        return coords.from_gtp(reply, self._size)

    def close(self) -> None:
        self.client.close()

    def kill(self) -> None:
        """Kill the engine process at once (safe from another thread)."""
        self.client.kill()


_SCORE = re.compile(r"^([BW])\+(\d+(?:\.\d*)?)$", re.IGNORECASE)


def parse_final_score(text: str) -> float:
    """Black-minus-white score from a GTP ``final_score`` reply.

    ``"B+3.5"`` -> 3.5, ``"W+0.5"`` -> -0.5, ``"0"`` (or Draw/Jigo) -> 0.0.
    Raises ValueError for anything else (including ``B+R``).
    """
    t = text.strip().split()[0] if text.strip() else ""
    if t.lower() in ("0", "draw", "jigo", "b+0", "w+0"):
        return 0.0
    match = _SCORE.match(t)
    if match is None:
        raise ValueError(f"cannot parse final_score reply {text!r}")
    value = float(match.group(2))
    return value if match.group(1).upper() == "B" else -value


class GTPReferee:
    """A ``Referee`` that replays the game into a GTP engine and asks ``final_score``.

    Engines judge dead stones where our Tromp-Taylor count cannot. Give it an
    area-scoring configuration (GNU Go: ``gnugo --mode gtp --chinese-rules``).
    """

    def __init__(self, command: str, *, timeout: float = 120.0) -> None:
        self.command = command
        self.client = GTPClient(command, default_timeout=timeout, label="referee", start=False)
        self._started = False

    def score(self, game: Game) -> float:
        if not self._started:
            self.client.start()
            self._started = True
        elif not self.client.alive:
            self.client.restart(grace=1.0)
        size = game.size
        self.client.send(f"boardsize {size}")
        self.client.send(f"komi {game.rules.komi:g}")
        self.client.send("clear_board")
        rules = game.rules.name
        if rules in KGS_RULES and self.client.knows("kgs-rules"):
            with contextlib.suppress(GTPError):
                self.client.send(f"kgs-rules {KGS_RULES[rules]}")
        for color, point in game.moves:
            self.client.send(f"play {_color_letter(color)} {coords.to_gtp(point, size)}")
        return parse_final_score(self.client.send("final_score"))

    def close(self) -> None:
        self.client.close()

    def kill(self) -> None:
        """Kill the referee process at once (safe from another thread)."""
        self.client.kill()


# ============================================================ in-process players

#: Engine specs starting with this are our engine in this process, not a GTP command.
INPROC_PREFIX = "inproc:"
#: Options of an in-process spec (``inproc:PATH:visits=400,device=cpu,name=NAME``).
INPROC_OPTIONS = ("visits", "device", "name")
#: Root visits per move of in-process players when neither the spec nor ``--visits`` says.
DEFAULT_INPROC_VISITS = 400  # as ``python -m engine`` without limits


@dataclass(frozen=True)
class InProcessSpec:
    """Our engine played in this process: the part of an engine spec after ``inproc:``.

    ``weights`` is one of our ``.pt`` files or a Leela Zero ``.gz``/``.txt``
    net (19x19 only); ``visits`` the root visits per move, counting those kept
    from the previous move's tree (None: the match's ``--visits``); ``device``
    the torch device (None: CUDA when available); ``name`` the display name
    (None: the file name without its extension, so a run's checkpoint plays
    under its model id, e.g. ``model-0000200``, as in gating SGFs).
    """

    weights: str
    visits: int | None = None
    device: str | None = None
    name: str | None = None

    @property
    def display_name(self) -> str:
        if self.name:
            return self.name
        base = Path(self.weights).name
        for suffix in (".pt", ".gz", ".txt"):
            if base.endswith(suffix) and len(base) > len(suffix):
                base = base[: -len(suffix)]
        return base


def parse_inproc(command: str) -> InProcessSpec | None:
    """The in-process spec of an engine command, or None for a GTP command line.

    Syntax: ``inproc:PATH`` optionally followed by ``:KEY=VALUE`` options
    (several separated by ``,`` or ``:``), KEY one of ``INPROC_OPTIONS``:
    ``inproc:runs/9x9/models/model-0001000.pt:visits=200,device=cpu``.
    Raises ValueError for an empty path, an unknown or repeated option, or a
    bad value.
    """
    text = command.strip()
    if not text.startswith(INPROC_PREFIX):
        return None
    parts = text[len(INPROC_PREFIX):].split(":")
    options: dict[str, str] = {}
    while len(parts) > 1 and "=" in parts[-1]:
        for item in parts.pop().split(","):
            key, sep, value = (x.strip() for x in item.partition("="))
            if not sep or key not in INPROC_OPTIONS:
                raise ValueError(
                    f"{command!r}: unknown in-process option {item!r} "
                    f"(known: {', '.join(INPROC_OPTIONS)})")
            if key in options:
                raise ValueError(f"{command!r}: option {key} given twice")
            options[key] = value
    weights = ":".join(parts).strip()
    if not weights:
        raise ValueError(f"{command!r}: no weights file after {INPROC_PREFIX!r}")
    visits = None
    if "visits" in options:
        try:
            visits = int(options["visits"])
        except ValueError:
            visits = 0
        if visits < 1:
            raise ValueError(f"{command!r}: visits must be an integer >= 1")
    return InProcessSpec(weights, visits, options.get("device") or None,
                         options.get("name") or None)


def _resign_value(winrate: float) -> float | None:
    """Root value (-1..1) below which a player resigns, for a winrate (0: never, None)."""
    return None if winrate <= 0 else 2.0 * winrate - 1.0


class InProcessNets:
    """The networks of a match's in-process players, each loaded once.

    ``evaluator(spec)`` returns one ``TorchEvaluator`` per (weights, device),
    shared by every player and pool agent that uses it: thread-safe, one
    evaluation cache, and in a pool both colours of a self-match share its
    forward passes. ``seed`` seeds the random board symmetries.
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._evaluators: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    @staticmethod
    def check(spec: InProcessSpec, size: int) -> dict[str, Any]:
        """Load ``spec``'s weights; return their metadata. Raises ValueError
        (``engine.weights.WeightsError``) for an unreadable file or a board size
        the net cannot play (Leela Zero nets: 19x19 only)."""
        from engine import weights

        _, meta = weights.load_any(spec.weights)
        if meta.get("feature_set") == "lz18" and size != 19:
            raise ValueError(f"{spec.weights} is a Leela Zero net: it plays 19x19 only")
        return meta

    def evaluator(self, spec: InProcessSpec) -> Any:
        from engine import weights
        from engine.evaluator import TorchEvaluator

        key = (str(Path(spec.weights).resolve()), spec.device)
        with self._lock:
            if key not in self._evaluators:
                model, _ = weights.load_any(spec.weights)
                self._evaluators[key] = TorchEvaluator(
                    model, device=spec.device, symmetries="random",
                    seed=self.seed * 1_000_003 + len(self._evaluators))
            return self._evaluators[key]


class InProcessPlayer:
    """A ``Player`` that is our engine in this process (for matches against GTP engines).

    ``engine.player.Player`` searches ``visits`` root visits per move (at most
    ``move_time`` seconds when given), reusing the subtree of the previous
    move, with the GTP engine's default search parameters (no noise, most
    visited move with LCB). It resigns when the root winrate after a search is
    below ``resign`` (0: never), the rule that pool games apply too.
    """

    def __init__(
        self,
        name: str,
        evaluator: Any,
        *,
        visits: int,
        resign: float = 0.05,
        move_time: float | None = None,
        batch: int = 16,
        seed: int = 0,
    ) -> None:
        from engine.core import SearchParams
        from engine.player import Player as SearchPlayer

        self.name = name
        self.visits = visits
        self.move_time = move_time
        threshold = _resign_value(resign)
        params = SearchParams(resign_threshold=-1.0 if threshold is None else threshold)
        self.searcher = SearchPlayer(evaluator, params, batch=batch, seed=seed)
        self.game: Game | None = None

    def new_game(self, size: int, komi: float, rules: str) -> None:
        self.game = Game(size, Rules.preset(rules, komi))
        self.searcher.clear()

    def play(self, color: int, point: int) -> None:
        assert self.game is not None, "new_game first"
        try:
            self.game.play(point, color)
        except IllegalMoveError as exc:  # the runner checked it: our state is out of step
            raise GTPError(f"play {_color_letter(color)}", str(exc)) from exc

    def genmove(self, color: int) -> int | str:
        game = self.game
        assert game is not None, "new_game first"
        if game.to_move != color:
            game.set_to_move(color)
        result = self.searcher.search(game, visits=self.visits, seconds=self.move_time)
        if result.resign:
            return "resign"
        game.play(result.move, color)
        return result.move

    def close(self) -> None:
        self.searcher.clear()
        self.game = None

    def kill(self) -> None:
        """Nothing to kill: a search in progress ends with its visits."""


# ================================================================== game runner


@dataclass(frozen=True)
class GameSettings:
    """Everything that defines a game apart from the players.

    ``max_moves`` caps the moves after the handicap stones (None: 3 * size**2);
    a game reaching it is scored like a finished one. ``move_time_limit`` is
    the hard per-move wall-clock limit in seconds (None: none); a player that
    exceeds it loses on time.
    """

    size: int = 19
    komi: float = 7.5
    rules: str = "chinese"
    handicap: int = 0
    max_moves: int | None = None
    move_time_limit: float | None = None

    @property
    def move_cap(self) -> int:
        return self.max_moves if self.max_moves is not None else 3 * self.size * self.size

    def make_rules(self) -> Rules:
        return Rules.preset(self.rules, self.komi)


@dataclass
class GameRecord:
    """The outcome of one game.

    ``moves`` are ``(color, point)`` after the handicap stones, the first
    ``opening_moves`` of them forced (random opening). ``winner`` is BLACK,
    WHITE or EMPTY (a drawn count). ``score`` is black minus white, komi
    included, when the game was counted, by ``scored_by`` ("core" or
    "referee"). ``move_seconds`` holds each side's genmove wall times.
    """

    settings: GameSettings
    black: str
    white: str
    handicap_stones: list[int] = field(default_factory=list)
    moves: list[tuple[int, int]] = field(default_factory=list)
    opening_moves: int = 0
    winner: int = EMPTY
    reason: str = ""
    score: float | None = None
    scored_by: str | None = None
    detail: str = ""
    move_seconds: dict[int, list[float]] = field(
        default_factory=lambda: {BLACK: [], WHITE: []}
    )

    @property
    def result(self) -> str:
        """SGF result: ``B+R``, ``W+T``, ``B+F`` (crash, illegal move, error), ``W+12.5``, ``0``."""
        if self.winner == EMPTY:
            return "0"
        letter = _color_letter(self.winner)
        if self.reason == "resign":
            return f"{letter}+R"
        if self.reason == "time":
            return f"{letter}+T"
        if self.reason in ("crash", "illegal", "error"):
            return f"{letter}+F"
        assert self.score is not None
        return f"{letter}+{abs(self.score):g}"

    def comment(self) -> str:
        """Human-readable account of how the game ended (the SGF game comment)."""
        loser = _color_word(_other(self.winner)) if self.winner != EMPTY else ""
        if self.reason == "resign":
            text = f"{loser} resigned."
        elif self.reason in ("score", "move-limit"):
            why = "two passes" if self.reason == "score" else f"move limit {self.settings.move_cap}"
            text = f"Game ended by {why}; counted by {self.scored_by}: {self.result}."
        elif self.reason == "time":
            text = f"{loser} lost on time."
        elif self.reason == "crash":
            text = f"{loser} forfeits: engine crashed."
        elif self.reason == "illegal":
            text = f"{loser} forfeits: illegal move."
        else:
            text = f"{loser} forfeits: engine error."
        if self.detail:
            text += f" {self.detail}"
        if self.opening_moves:
            text += f" The first {self.opening_moves} moves were a random opening."
        return text


def fixed_handicap_points(size: int, stones: int) -> list[int]:
    """Handicap stone points in GTP ``fixed_handicap`` order (GTP v2 section 4.1.1).

    Stones sit on the 4-4 points (3-3 below 13x13): 2 = lower left and upper
    right, 3 adds upper left, 4 lower right, 5 and 7 and 9 add the centre, 6 adds
    the left and right sides, 8 the top and bottom. Odd sizes from 9 allow up to
    9 stones; 7x7 and even sizes up to 4; smaller boards none. ``stones`` 0
    returns []. Raises ValueError for an invalid count.
    """
    if stones == 0:
        return []
    max_stones = 0 if size < 7 else (4 if size == 7 or size % 2 == 0 else 9)
    if not 2 <= stones <= max_stones:
        raise ValueError(f"invalid handicap {stones} for a {size}x{size} board (max {max_stones})")
    edge = 3 if size >= 13 else 2
    low, mid, high = edge, size // 2, size - 1 - edge  # (row from top, col) coordinates
    lower_left, upper_right = (high, low), (low, high)
    upper_left, lower_right = (low, low), (high, high)
    left, right, top, bottom, centre = (mid, low), (mid, high), (low, mid), (high, mid), (mid, mid)
    order = [lower_left, upper_right, upper_left, lower_right]
    if stones >= 6:
        order += [left, right]
    if stones >= 8:
        order += [bottom, top]
    if stones % 2 == 1 and stones >= 5:
        order.append(centre)
    order = order[:stones]
    return [coords.from_rowcol(row, col, size) for row, col in order]


def random_opening(settings: GameSettings, moves: int, rng: random.Random) -> list[int]:
    """``moves`` uniformly random legal non-pass points, played alternately.

    Starts after the handicap stones (White first when there are any). Stops
    early if a side has no legal point. Play the same list in both games of a
    colour-swapped pair to compare engines on equal openings.
    """
    game = Game(settings.size, settings.make_rules())
    handicap = fixed_handicap_points(settings.size, settings.handicap)
    for point in handicap:
        game.play(point, BLACK)
    if handicap:
        game.set_to_move(WHITE)
    opening: list[int] = []
    pass_point = settings.size * settings.size
    for _ in range(moves):
        legal = [p for p in game.legal_moves() if p != pass_point]
        if not legal:
            break
        point = rng.choice(legal)
        game.play(point)
        opening.append(point)
    return opening


def _failure(exc: BaseException) -> str:
    """Forfeit reason for a player's exception."""
    if isinstance(exc, EngineTimeout):
        return "time"
    if isinstance(exc, EngineDied):
        return "crash"
    return "error"


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def run_game(
    black: Player,
    white: Player,
    settings: GameSettings,
    opening: Sequence[int] = (),
    referee: Referee | None = None,
) -> GameRecord:
    """Play one game between two players and return its record.

    Both players get ``new_game``; the fixed handicap stones and then the
    ``opening`` points (alternating colours, Black first, or White after a
    handicap) are played into both. Then the side to move is asked
    ``genmove`` and the move is checked by our C core and passed to the other
    side with ``play``. Forfeits: EngineTimeout or a move slower than
    ``settings.move_time_limit`` ("time"), EngineDied ("crash"), an illegal or
    unparsable move ("illegal"), GTPError such as a refused set-up command or
    a refused legal move ("error"). Resignation ends the game; so do two
    consecutive passes and the move cap, after which the game is counted by
    ``referee.score`` if given (falling back to the core's Tromp-Taylor count,
    noted in ``detail``, if the referee fails) or by ``Game.score``.

    Raises ValueError if ``opening`` is illegal (a caller bug); any other
    exception from a player propagates. The players are not closed.
    """
    size = settings.size
    game = Game(size, settings.make_rules())
    players = {BLACK: black, WHITE: white}
    record = GameRecord(settings=settings, black=black.name, white=white.name)
    handicap = fixed_handicap_points(size, settings.handicap)
    record.handicap_stones = list(handicap)

    def forfeit(loser: int, reason: str, detail: str) -> GameRecord:
        record.winner = _other(loser)
        record.reason = reason
        record.detail = f"{_color_word(loser)} ({players[loser].name}): {detail}"
        record.moves = game.moves[len(handicap):]
        return record

    for color in (BLACK, WHITE):
        try:
            players[color].new_game(size, settings.komi, settings.rules)
        except (EngineError, GTPError) as exc:
            return forfeit(color, _failure(exc), f"new game failed: {_first_line(exc)}")
    record.black, record.white = black.name, white.name  # known once started

    def tell_both(color: int, point: int) -> GameRecord | None:
        for receiver in (BLACK, WHITE):
            try:
                players[receiver].play(color, point)
            except (EngineError, GTPError) as exc:
                vertex = coords.to_gtp(point, size)
                return forfeit(receiver, _failure(exc), f"set-up move {vertex}: {_first_line(exc)}")
        return None

    for point in handicap:
        game.play(point, BLACK)
        if (lost := tell_both(BLACK, point)) is not None:
            return lost
    if handicap:
        game.set_to_move(WHITE)
    for point in opening:
        color = game.to_move
        try:
            game.play(point, color)
        except IllegalMoveError as exc:
            raise ValueError(f"illegal opening move {coords.to_gtp(point, size)}: {exc}") from exc
        record.opening_moves += 1
        if (lost := tell_both(color, point)) is not None:
            return lost

    limit = settings.move_time_limit
    while not game.is_over and len(game.moves) - len(handicap) < settings.move_cap:
        color = game.to_move
        player, opponent = players[color], players[_other(color)]
        started = time.monotonic()
        try:
            move = player.genmove(color)
        except EngineTimeout as exc:
            record.move_seconds[color].append(time.monotonic() - started)
            return forfeit(color, "time", _first_line(exc))
        except (EngineDied, GTPError) as exc:
            return forfeit(color, _failure(exc), f"genmove: {_first_line(exc)}")
        except ValueError as exc:
            return forfeit(color, "illegal", f"unreadable move: {_first_line(exc)}")
        elapsed = time.monotonic() - started
        record.move_seconds[color].append(elapsed)
        if limit is not None and elapsed > limit:
            return forfeit(color, "time", f"move took {elapsed:.2f} s, limit {limit:g} s")
        if move == "resign":
            record.winner = _other(color)
            record.reason = "resign"
            record.moves = game.moves[len(handicap):]
            return record
        assert isinstance(move, int)
        try:
            game.play(move, color)
        except (IllegalMoveError, ValueError) as exc:
            reason = getattr(exc, "reason", str(exc))
            vertex = coords.to_gtp(move, size) if 0 <= move <= size * size else str(move)
            return forfeit(color, "illegal", f"illegal move {vertex} ({reason})")
        try:
            opponent.play(color, move)
        except (EngineError, GTPError) as exc:
            vertex = coords.to_gtp(move, size)
            return forfeit(_other(color), _failure(exc), f"play {vertex}: {_first_line(exc)}")

    record.moves = game.moves[len(handicap):]
    return count_game(game, record, referee)


def count_game(game: Game, record: GameRecord, referee: Referee | None = None) -> GameRecord:
    """Score a game that ended by two passes or the move cap into ``record`` and return it.

    Sets ``reason`` ("score" after two passes, else "move-limit"), ``score``,
    ``scored_by`` and ``winner``: by ``referee.score`` when given, falling back
    to the core's Tromp-Taylor count (noted in ``detail``) if the referee
    fails; else by ``Game.score``.
    """
    record.reason = "score" if game.is_over else "move-limit"
    score: float | None = None
    if referee is not None:
        try:
            score = referee.score(game)
            record.scored_by = "referee"
        except (EngineError, GTPError, ValueError) as exc:
            record.detail = f"Referee failed ({_first_line(exc)}); Tromp-Taylor count used."
    if score is None:
        score = game.score()
        record.scored_by = "core"
    record.score = score
    record.winner = BLACK if score > 0 else WHITE if score < 0 else EMPTY
    return record


# ========================================================================= SGF


def game_to_sgf(record: GameRecord, date: datetime.date | None = None) -> bytes:
    """Serialise a game record as SGF (engine.sgf): players, rules, komi, result, comment."""
    settings = record.settings
    return sgf.write_game(
        settings.size, settings.komi, settings.rules, record.moves,
        setup_black=record.handicap_stones, handicap=len(record.handicap_stones),
        to_move=WHITE if record.handicap_stones else None,
        result=record.result, black=record.black, white=record.white,
        game_comment=record.comment(),
        move_comments={i: "random opening move" for i in range(record.opening_moves)},
        application=("train.match", "1"), date=date or datetime.date.today())


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (engine.fileio), creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: f.write(data))


# ======================================================================= match


@dataclass(frozen=True)
class EngineSpec:
    """An engine in a match: a short label (A, B or the user's NAME) and its command.

    The command is a GTP command line, or ``inproc:PATH[:OPTIONS]`` for our
    engine in this process (``parse_inproc``).
    """

    label: str
    command: str

    @property
    def inproc(self) -> InProcessSpec | None:
        """The in-process spec, or None for a GTP engine (ValueError if malformed)."""
        return parse_inproc(self.command)


@dataclass(frozen=True)
class MatchConfig:
    """A match or round robin.

    ``games`` is per pair of engines. ``move_time`` is announced to engines and
    ``move_time + time_margin`` is the hard per-move limit. ``sprt`` is
    (elo0, elo1) for the first engine over the second (two-engine matches);
    the match stops scheduling games once it is decided. ``seed`` fixes the
    random openings (the same list for both games of a colour-swapped pair).
    ``visits`` is the default search size of in-process engines and ``resign``
    their resignation winrate (0: never).
    """

    engines: tuple[EngineSpec, ...]
    games: int
    settings: GameSettings
    sgf_dir: Path
    results_path: Path
    parallel: int = 1
    move_time: float | None = None
    time_margin: float = 1.0
    referee: str | None = None
    random_moves: int = 0
    seed: int = 0
    sprt: tuple[float, float] | None = None
    sprt_alpha: float = 0.05
    sprt_beta: float = 0.05
    command_timeout: float = 60.0
    progress: bool = True
    visits: int = DEFAULT_INPROC_VISITS
    resign: float = 0.05

    def inproc_visits(self, spec: InProcessSpec) -> int:
        return spec.visits if spec.visits is not None else self.visits


def uses_pool(config: MatchConfig) -> bool:
    """Whether the match is played in one ``train.pool.GamePool``.

    That needs every engine in-process with the same visits, and no handicap,
    random opening or move time (a pool game starts on an empty board and its
    search size is per game, not per colour); otherwise each worker thread
    plays one game at a time with ``InProcessPlayer``s and GTP players.
    """
    specs = [e.inproc for e in config.engines]
    if any(spec is None for spec in specs):
        return False
    visits = {config.inproc_visits(spec) for spec in specs if spec is not None}
    return (len(visits) == 1 and config.settings.handicap == 0 and config.random_moves == 0
            and config.move_time is None)


@dataclass(frozen=True)
class ScheduledGame:
    """One game of the schedule: ``index`` in start order, ``round`` within its pair."""

    index: int
    pair: int
    round: int
    black: str
    white: str


def make_schedule(engines: Sequence[EngineSpec], games: int) -> list[ScheduledGame]:
    """All games in start order: round by round over every pair, colours alternating.

    For a pair (a, b), ``a`` is Black in even rounds and White in odd ones.
    """
    pairs = list(itertools.combinations([e.label for e in engines], 2))
    schedule = []
    for rnd in range(games):
        for pair_index, (a, b) in enumerate(pairs):
            black, white = (a, b) if rnd % 2 == 0 else (b, a)
            schedule.append(ScheduledGame(len(schedule), pair_index, rnd, black, white))
    return schedule


def _opening_for(config: MatchConfig, rnd: int) -> list[int]:
    """The random opening of round ``rnd`` (shared by rounds 2k and 2k+1 and all pairs)."""
    if config.random_moves <= 0:
        return []
    rng = random.Random(f"{config.seed}/{rnd // 2}")
    return random_opening(config.settings, config.random_moves, rng)


def probe_engines(config: MatchConfig) -> dict[str, dict[str, Any]]:
    """Start each engine once; return label -> {command, gtp_name, gtp_version, name}.

    ``name`` is the display name for SGFs: ``"<name> <version>"`` (in-process
    engines: ``InProcessSpec.display_name``), with ``" [label]"`` appended when
    engines would otherwise share a name. In-process entries also hold
    ``in_process`` (True), ``weights``, ``visits`` and the checkpoint ``step``.
    Raises EngineError or GTPError if a GTP engine cannot start, ValueError if
    an in-process engine's weights cannot be loaded or cannot play the size.
    """
    info: dict[str, dict[str, Any]] = {}
    for spec in config.engines:
        inproc = spec.inproc
        if inproc is not None:
            meta = InProcessNets.check(inproc, config.settings.size)
            info[spec.label] = {
                "command": spec.command,
                "gtp_name": "",
                "gtp_version": "",
                "name": inproc.display_name,
                "in_process": True,
                "weights": inproc.weights,
                "visits": config.inproc_visits(inproc),
                "step": meta.get("step"),
            }
            continue
        with GTPClient(spec.command, default_timeout=300.0, label=spec.label) as client:
            gtp_name = client.send("name")
            try:
                version = client.send("version")
            except GTPError:
                version = ""
        info[spec.label] = {
            "command": spec.command,
            "gtp_name": gtp_name,
            "gtp_version": version,
            "name": f"{gtp_name} {version}".strip() or spec.label,
        }
    counts = Counter(entry["name"] for entry in info.values())
    for label, entry in info.items():
        if counts[entry["name"]] > 1:
            entry["name"] = f"{entry['name']} [{label}]"
    return info


class _Worker(threading.Thread):
    """Plays the games it is handed (None: stop), one at a time, with its own
    engine processes (and ``InProcessPlayer``s over the match's shared nets)."""

    capacity = 1  # games in flight

    def __init__(
        self,
        config: MatchConfig,
        names: dict[str, str],
        todo: queue.Queue[ScheduledGame | None],
        done: queue.Queue[tuple[ScheduledGame | None, GameRecord | BaseException]],
        nets: InProcessNets,
        index: int = 0,
    ) -> None:
        super().__init__(daemon=True)
        self.config = config
        self.names = names
        self.todo = todo
        self.done = done
        self.nets = nets
        self.index = index
        self.aborted = threading.Event()
        self.players: dict[str, GTPPlayer | InProcessPlayer] = {}
        self.referee: GTPReferee | None = None

    def _player(self, label: str) -> GTPPlayer | InProcessPlayer:
        if label not in self.players:
            spec = next(e for e in self.config.engines if e.label == label)
            inproc = spec.inproc
            if inproc is not None:
                self.players[label] = InProcessPlayer(
                    self.names[label],
                    self.nets.evaluator(inproc),
                    visits=self.config.inproc_visits(inproc),
                    resign=self.config.resign,
                    move_time=self.config.move_time,
                    seed=self.config.seed * 7919 + 100 * self.index + len(self.players),
                )
            else:
                self.players[label] = GTPPlayer(
                    spec.command,
                    label=label,
                    name=self.names[label],
                    move_time=self.config.move_time,
                    move_timeout=self.config.settings.move_time_limit,
                    command_timeout=self.config.command_timeout,
                )
        return self.players[label]

    def run(self) -> None:
        try:
            if self.config.referee:
                self.referee = GTPReferee(self.config.referee)
            while (scheduled := self.todo.get()) is not None and not self.aborted.is_set():
                record = run_game(
                    self._player(scheduled.black),
                    self._player(scheduled.white),
                    self.config.settings,
                    opening=_opening_for(self.config, scheduled.round),
                    referee=self.referee,
                )
                self.done.put((scheduled, record))
        except BaseException as exc:  # reported to and re-raised by the main thread
            self.done.put((None, exc))
        finally:
            for player in self.players.values():
                player.close()
            if self.referee is not None:
                self.referee.close()

    def kill(self) -> None:
        """Kill this worker's engines and play no further game (used on Ctrl-C)."""
        self.aborted.set()
        for player in list(self.players.values()):
            player.kill()
        if self.referee is not None:
            self.referee.kill()


class _PoolWorker(threading.Thread):
    """Plays every game it is handed (None: stop) in one ``train.pool.GamePool``
    of ``config.parallel`` slots: all games advance together and each step
    makes one forward pass per network over every game's leaves, both colours
    included (``uses_pool`` says when a match can).

    Pool games are cut into ``GameRecord``s like ``run_game``'s: "passes" and
    "move cap" are counted by ``count_game`` (referee included), resignation
    is the pool's (root value below ``config.resign``). Each game's genmove
    times are its share of the pool's wall time (every step's time split
    evenly between the games searching in it, charged to the side to move).
    """

    def __init__(
        self,
        config: MatchConfig,
        names: dict[str, str],
        todo: queue.Queue[ScheduledGame | None],
        done: queue.Queue[tuple[ScheduledGame | None, GameRecord | BaseException]],
        nets: InProcessNets,
    ) -> None:
        super().__init__(daemon=True)
        self.config = config
        self.names = names
        self.todo = todo
        self.done = done
        self.nets = nets
        self.capacity = config.parallel
        self.aborted = threading.Event()
        self.referee: GTPReferee | None = None

    def _agents(self) -> dict[str, Any]:
        from engine.core import SearchParams
        from train.pool import Agent

        agents = {}
        for spec in self.config.engines:
            inproc = spec.inproc
            assert inproc is not None
            # Agents sharing an evaluator (the same net twice) share forward passes too.
            agents[spec.label] = Agent(self.names[spec.label], self.nets.evaluator(inproc),
                                       SearchParams())
        return agents

    def run(self) -> None:
        import collections

        import numpy as np

        from train.pool import GamePool, GameSpec, PlaySettings

        config = self.config
        settings = config.settings
        rules = settings.make_rules()
        first = config.engines[0].inproc
        assert first is not None
        play = PlaySettings(visits=config.inproc_visits(first), noise_epsilon=0.0,
                            resign_threshold=_resign_value(config.resign),
                            max_moves=settings.move_cap, record_policy=False)
        pending: collections.deque[ScheduledGame] = collections.deque()
        seconds: dict[int, dict[int, float]] = {}  # game index -> colour -> wall time
        stop_seen = False

        def next_game(slot: Any) -> Any:
            nonlocal stop_seen
            if pending:
                scheduled: ScheduledGame | None = pending.popleft()
            elif stop_seen:
                return None
            else:
                try:
                    scheduled = self.todo.get_nowait()
                except queue.Empty:
                    return None
            if scheduled is None:
                stop_seen = True
                return None
            seconds[scheduled.index] = {BLACK: 0.0, WHITE: 0.0}
            seed = int(np.random.SeedSequence([config.seed, scheduled.index]).generate_state(1)[0])
            return GameSpec(settings.size, rules, agents[scheduled.black], agents[scheduled.white],
                            play, seed=seed, tag=scheduled)

        try:
            agents = self._agents()
            if config.referee:
                self.referee = GTPReferee(config.referee)
            pool = GamePool(config.parallel, next_game)
            while not self.aborted.is_set():
                if pool.idle:
                    if stop_seen:
                        break
                    item = self.todo.get()  # nothing to play: wait for work
                    if item is None:
                        break
                    pending.append(item)
                started = time.monotonic()
                finished = pool.step()
                searching = pool.playing()
                share = (time.monotonic() - started) / max(1, len(searching))
                for slot in searching:
                    seconds[slot.spec.tag.index][slot.to_move] += share
                for game in finished:
                    scheduled = game.spec.tag
                    record = self._record(game, seconds.pop(scheduled.index))
                    self.done.put((scheduled, record))
        except BaseException as exc:  # reported to and re-raised by the main thread
            self.done.put((None, exc))
        finally:
            if self.referee is not None:
                self.referee.close()

    def _record(self, finished: Any, seconds: dict[int, float]) -> GameRecord:
        """The match record of a finished pool game (``train.pool.FinishedGame``)."""
        scheduled = finished.spec.tag
        game = finished.game
        record = GameRecord(settings=self.config.settings, black=self.names[scheduled.black],
                            white=self.names[scheduled.white], moves=list(game.moves))
        for color in (BLACK, WHITE):
            moves = sum(1 for c, _ in game.moves if c == color)
            record.move_seconds[color] = [seconds[color] / moves] * moves if moves else []
        if finished.reason == "resign":
            record.winner = finished.winner
            record.reason = "resign"
            return record
        return count_game(game, record, self.referee)

    def kill(self) -> None:
        """Stop after the current step and kill the referee (used on Ctrl-C)."""
        self.aborted.set()
        if self.referee is not None:
            self.referee.kill()


def _json_number(value: float | None) -> float | str | None:
    """JSON-safe float: infinities as "+inf"/"-inf", NaN as None."""
    if value is None or math.isnan(value):
        return None
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return value


def _game_entry(scheduled: ScheduledGame, record: GameRecord, sgf_path: Path) -> dict[str, Any]:
    winner = None
    if record.winner == BLACK:
        winner = scheduled.black
    elif record.winner == WHITE:
        winner = scheduled.white
    return {
        "index": scheduled.index,
        "round": scheduled.round,
        "black": scheduled.black,
        "white": scheduled.white,
        "result": record.result,
        "winner": winner,
        "reason": record.reason,
        "score": record.score,
        "scored_by": record.scored_by,
        "moves": len(record.moves),
        "opening_moves": record.opening_moves,
        "handicap": len(record.handicap_stones),
        "detail": record.detail,
        "black_seconds": sum(record.move_seconds[BLACK]),
        "black_moves": len(record.move_seconds[BLACK]),
        "white_seconds": sum(record.move_seconds[WHITE]),
        "white_moves": len(record.move_seconds[WHITE]),
        "sgf": str(sgf_path),
    }


def _pair_summary(
    games: list[dict[str, Any]], a: str, b: str, config: MatchConfig
) -> dict[str, Any]:
    """Counts, Elo (and SPRT) of engine ``a`` against ``b`` over their games."""
    mine = [g for g in games if {g["black"], g["white"]} == {a, b}]
    side = {"black": Counter(), "white": Counter()}
    for g in mine:
        colour = "black" if g["black"] == a else "white"
        outcome = "draws" if g["winner"] is None else ("wins" if g["winner"] == a else "losses")
        side[colour][outcome] += 1
    wins = side["black"]["wins"] + side["white"]["wins"]
    losses = side["black"]["losses"] + side["white"]["losses"]
    draws = side["black"]["draws"] + side["white"]["draws"]
    elo = elo_difference(wins, losses, draws)
    summary: dict[str, Any] = {
        "a": a,
        "b": b,
        "games": len(mine),
        "a_wins": wins,
        "b_wins": losses,
        "draws": draws,
        "a_as_black": {k: side["black"][k] for k in ("wins", "losses", "draws")},
        "a_as_white": {k: side["white"][k] for k in ("wins", "losses", "draws")},
        "black_wins": sum(1 for g in mine if g["winner"] is not None and g["winner"] == g["black"]),
        "white_wins": sum(1 for g in mine if g["winner"] is not None and g["winner"] == g["white"]),
        "elo": {
            "elo": _json_number(elo.elo),
            "lower": _json_number(elo.lower),
            "upper": _json_number(elo.upper),
            "confidence": elo.confidence,
            "text": str(elo),
        },
    }
    if config.sprt is not None:
        result = sprt(wins, losses, draws, config.sprt[0], config.sprt[1],
                      config.sprt_alpha, config.sprt_beta)
        summary["sprt"] = {
            "elo0": result.elo0,
            "elo1": result.elo1,
            "alpha": result.alpha,
            "beta": result.beta,
            "llr": result.llr,
            "lower": result.lower,
            "upper": result.upper,
            "verdict": result.verdict,
        }
    return summary


def summarize(
    config: MatchConfig,
    engines: dict[str, dict[str, str]],
    games: list[dict[str, Any]],
    *,
    complete: bool,
    stopped_by_sprt: bool = False,
) -> dict[str, Any]:
    """The results document (what ``--results`` holds) for the games played so far."""
    labels = [e.label for e in config.engines]
    pairs = [_pair_summary(games, a, b, config) for a, b in itertools.combinations(labels, 2)]
    per_engine: dict[str, dict[str, Any]] = {}
    for label in labels:
        seconds = sum(g["black_seconds"] for g in games if g["black"] == label)
        seconds += sum(g["white_seconds"] for g in games if g["white"] == label)
        moves = sum(g["black_moves"] for g in games if g["black"] == label)
        moves += sum(g["white_moves"] for g in games if g["white"] == label)
        per_engine[label] = {
            **engines[label],
            "games": sum(1 for g in games if label in (g["black"], g["white"])),
            "moves": moves,
            "seconds": seconds,
            "seconds_per_move": seconds / moves if moves else None,
        }
    ratings: dict[str, Any] = {}
    bt_games = [
        (g["black"], g["white"], 0.5 if g["winner"] is None else float(g["winner"] == g["black"]))
        for g in games
    ]
    if bt_games:
        for name, rating in bradley_terry(bt_games, anchor=labels[0]).items():
            ratings[name] = {"elo": rating.elo, "stderr": rating.stderr,
                             "games": rating.games, "points": rating.points}
    settings = config.settings
    return {
        "format": "train.match results v1",
        "complete": complete,
        "stopped_by_sprt": stopped_by_sprt,
        "settings": {
            "size": settings.size,
            "komi": settings.komi,
            "rules": settings.rules,
            "handicap": settings.handicap,
            "max_moves": settings.move_cap,
            "move_time": config.move_time,
            "move_time_limit": settings.move_time_limit,
            "games_per_pair": config.games,
            "parallel": config.parallel,
            "random_moves": config.random_moves,
            "seed": config.seed,
            "referee": config.referee,
            "sgf_dir": str(config.sgf_dir),
            "runner": "pool" if uses_pool(config) else "threads",
            "visits": config.visits,
            "resign": config.resign,
        },
        "engines": per_engine,
        "games_played": len(games),
        "average_game_length": (sum(g["moves"] for g in games) / len(games)) if games else None,
        "reasons": dict(Counter(g["reason"] for g in games)),
        "pairs": pairs,
        "ratings": ratings,
        "games": games,
    }


def _score_line(games: list[dict[str, Any]], labels: list[str]) -> str:
    """Running score for the progress bar: "A 3 - B 2 (=1)" or points per engine."""
    points = Counter({label: 0.0 for label in labels})
    draws = 0
    for g in games:
        if g["winner"] is None:
            draws += 1
            points[g["black"]] += 0.5
            points[g["white"]] += 0.5
        else:
            points[g["winner"]] += 1.0
    text = " - ".join(f"{label} {points[label]:g}" for label in labels)
    return text + (f" ({draws} drawn)" if draws else "")


def _sgf_name(scheduled: ScheduledGame) -> str:
    def clean(label: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:40]

    return f"{scheduled.index:04d}-{clean(scheduled.black)}-vs-{clean(scheduled.white)}.sgf"


def run_match(
    config: MatchConfig, engines: dict[str, dict[str, str]] | None = None
) -> dict[str, Any]:
    """Play the whole match; write SGFs and the results JSON; return the results.

    ``engines`` is ``probe_engines(config)`` (probed here when None). Results
    are rewritten after every game, so an interrupted match leaves a valid
    (``"complete": false``) file. With an SPRT, no new games start once the
    verdict over the earliest-started finished games is decided; games in
    flight still finish and count. Ctrl-C kills the engines and returns the
    partial results (the caller sees ``complete`` false).
    """
    if engines is None:
        engines = probe_engines(config)
    names = {label: entry["name"] for label, entry in engines.items()}
    labels = [e.label for e in config.engines]
    schedule = make_schedule(config.engines, config.games)
    todo: queue.Queue[ScheduledGame | None] = queue.Queue()
    done: queue.Queue[tuple[ScheduledGame | None, GameRecord | BaseException]] = queue.Queue()
    nets = InProcessNets(config.seed)
    workers: list[_Worker | _PoolWorker]
    if uses_pool(config):
        workers = [_PoolWorker(config, names, todo, done, nets)]
    else:
        workers = [
            _Worker(config, names, todo, done, nets, index)
            for index in range(max(1, min(config.parallel, len(schedule))))
        ]
    capacity = sum(worker.capacity for worker in workers)
    config.sgf_dir.mkdir(parents=True, exist_ok=True)
    finished: dict[int, dict[str, Any]] = {}
    dispatched = 0  # games handed to workers, in schedule order
    stopping = False  # no more games are handed out
    stopped_by_sprt = False
    interrupted = False
    bar = tqdm(total=len(schedule), unit="game", disable=not config.progress,
               dynamic_ncols=True, file=sys.stderr)

    def ordered() -> list[dict[str, Any]]:
        return [finished[i] for i in sorted(finished)]

    def dispatch() -> None:
        # At most one game per worker (pool slot) in flight, so an SPRT stop wastes little.
        nonlocal dispatched
        while (
            not stopping
            and dispatched < len(schedule)
            and dispatched - len(finished) < capacity
        ):
            todo.put(schedule[dispatched])
            dispatched += 1

    try:
        for worker in workers:
            worker.start()
        dispatch()
        while len(finished) < dispatched:
            scheduled, outcome = done.get()
            if isinstance(outcome, BaseException):
                raise outcome
            assert scheduled is not None
            sgf_path = config.sgf_dir / _sgf_name(scheduled)
            _write_atomic(sgf_path, game_to_sgf(outcome))
            finished[scheduled.index] = _game_entry(scheduled, outcome, sgf_path)
            games = ordered()
            results = summarize(config, engines, games, complete=False)
            _write_atomic(config.results_path, (json.dumps(results, indent=2) + "\n").encode())
            bar.update(1)
            bar.set_postfix_str(_score_line(games, labels))
            if config.sprt is not None and len(labels) == 2 and not stopping:
                # Count results in start order: a decision never waits on, nor
                # skips, a long game that started earlier.
                started = itertools.takewhile(lambda i: i in finished, itertools.count())
                prefix = [finished[i] for i in started]
                verdict = _pair_summary(prefix, labels[0], labels[1], config)["sprt"]["verdict"]
                if verdict != "continue":
                    stopping = stopped_by_sprt = True
            dispatch()
    except KeyboardInterrupt:
        interrupted = True
        for worker in workers:
            worker.kill()
    finally:
        stopping = True
        while True:  # games handed out but not yet picked up are not played
            try:
                todo.get_nowait()
            except queue.Empty:
                break
        for _ in workers:
            todo.put(None)
        for worker in workers:
            worker.join(timeout=30.0)
        bar.close()
    games = ordered()
    complete = not interrupted and (len(games) == len(schedule) or stopped_by_sprt)
    results = summarize(config, engines, games, complete=complete, stopped_by_sprt=stopped_by_sprt)
    results["interrupted"] = interrupted
    _write_atomic(config.results_path, (json.dumps(results, indent=2) + "\n").encode())
    return results


def _fmt_seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f} s"


def format_summary(results: dict[str, Any]) -> str:
    """The end-of-match report printed by the command line."""
    lines = []
    engines = results["engines"]
    for label, entry in engines.items():
        lines.append(f"{label}: {entry['name']}  ({entry['command']})")
    lines.append(
        f"{results['games_played']} games, average length "
        + (f"{results['average_game_length']:.1f} moves" if results["games_played"] else "n/a")
        + ", endings: "
        + ", ".join(f"{k} {v}" for k, v in sorted(results["reasons"].items()))
    )
    for pair in results["pairs"]:
        a, b = pair["a"], pair["b"]
        ab, aw = pair["a_as_black"], pair["a_as_white"]
        lines.append(
            f"{a} vs {b}: {a} {pair['a_wins']} wins, {b} {pair['b_wins']} wins, "
            f"{pair['draws']} draws ({pair['games']} games)"
        )
        lines.append(
            f"  {a} as Black: {ab['wins']}-{ab['losses']}-{ab['draws']}   "
            f"{a} as White: {aw['wins']}-{aw['losses']}-{aw['draws']}   (W-L-D); "
            f"Black won {pair['black_wins']}, White won {pair['white_wins']}"
        )
        lines.append(f"  Elo {a} - {b}: {pair['elo']['text']}")
        if "sprt" in pair:
            s = pair["sprt"]
            lines.append(
                f"  SPRT(elo0={s['elo0']:g}, elo1={s['elo1']:g}, alpha={s['alpha']:g}, "
                f"beta={s['beta']:g}): LLR {s['llr']:.2f} [{s['lower']:.2f}, {s['upper']:.2f}]"
                f" -> {s['verdict']}"
                + (" (stopped early)" if results.get("stopped_by_sprt") else "")
            )
    if len(engines) > 2 and results["ratings"]:
        anchor = next(iter(engines))
        lines.append(f"Bradley-Terry ratings (anchor {anchor} = 0):")
        for label, rating in results["ratings"].items():
            lines.append(
                f"  {label:>12}: {rating['elo']:+8.1f} +- {rating['stderr']:.1f}  "
                f"({rating['points']:g}/{rating['games']})"
            )
    lines.append(
        "Average time per move: "
        + ", ".join(
            f"{label} {_fmt_seconds(entry['seconds_per_move'])}" for label, entry in engines.items()
        )
    )
    return "\n".join(lines)


# ================================================================ command line


def _parse_engine(text: str) -> EngineSpec:
    name, sep, command = text.partition("=")
    if not sep or not name.strip() or not command.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=COMMAND, got {text!r}")
    return EngineSpec(name.strip(), command.strip())


def _parse_sprt(text: str) -> tuple[float, float]:
    try:
        elo0, elo1 = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ELO0,ELO1, got {text!r}") from None
    if not elo0 < elo1:
        raise argparse.ArgumentTypeError("need elo0 < elo1")
    return elo0, elo1


_EPILOG = """engines:
  An engine (CMD) is a GTP command line, or our engine in this process:

    inproc:PATH[:KEY=VALUE[,KEY=VALUE...]]   KEY: visits=N, device=DEV, name=NAME

  e.g. inproc:runs/9x9/models/model-0002000.pt:visits=200.  PATH is one of our
  .pt weights files or a Leela Zero .gz/.txt net (19x19 only); visits defaults
  to --visits, device to CUDA when available, and the name (PB/PW in the SGFs,
  the player in train.ratings) to the file name without extension, so a run's
  checkpoint plays as its model id (model-0001000).  Options may also be
  separated by ':' (inproc:a.pt:visits=200:name=a200).

  When every engine is in-process with the same visits and there is no
  --handicap, --random-moves or --move-time, all games run in one batched
  game pool (train.pool.GamePool): --parallel games at once, one network
  forward pass per net per step over all of them.  Otherwise each of the
  --parallel workers plays one game at a time, in-process engines searching
  with engine.player.Player.

examples:
  python -m train.match --black inproc:runs/9x9/models/model-0002000.pt \\
      --white "gnugo --mode gtp --level 1" --size 9 --games 20 --visits 100 \\
      --parallel 2 --sgf-dir runs/match-gnugo1
  python -m train.match --engine new=inproc:runs/9x9/models/model-0002000.pt \\
      --engine old=inproc:runs/9x9/models/model-0001000.pt --size 9 --games 100 \\
      --parallel 16 --sprt 0,35 --sgf-dir runs/9x9/matches/2000-vs-1000
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m train.match",
        description="Play engines (GTP programs or our nets in-process) against each other; "
        "report Elo, SPRT and ratings.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--black", metavar="CMD", help="engine A (Black in game 0)")
    parser.add_argument("--white", metavar="CMD", help="engine B (White in game 0)")
    parser.add_argument("--engine", metavar="NAME=CMD", type=_parse_engine, action="append",
                        default=[], help="round robin: an engine (repeat, 2 or more)")
    parser.add_argument("--visits", type=int, default=DEFAULT_INPROC_VISITS,
                        help="root visits per move of in-process engines without a visits= "
                        f"option (default {DEFAULT_INPROC_VISITS})")
    parser.add_argument("--resign", type=float, default=0.05, metavar="WINRATE",
                        help="in-process engines resign below this root winrate "
                        "(default 0.05; 0 never)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads for in-process nets (default: torch's choice)")
    parser.add_argument("--games", type=int, default=10, help="games per pair (default 10)")
    parser.add_argument("--size", type=int, default=19, help="board size (default 19)")
    parser.add_argument("--komi", type=float, default=7.5, help="komi (default 7.5)")
    parser.add_argument("--rules", choices=("chinese", "tromp-taylor"), default="chinese")
    parser.add_argument("--handicap", type=int, default=0, help="fixed handicap stones")
    parser.add_argument("--random-moves", type=int, default=0, metavar="K",
                        help="random legal opening moves, the same for both colours of a pair")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for the random openings (default: random, recorded)")
    parser.add_argument("--max-moves", type=int, default=None,
                        help="move cap, then the game is counted (default 3*size*size)")
    parser.add_argument("--move-time", type=float, default=None, metavar="SECONDS",
                        help="time per move announced to engines (time_settings 0 T 1); "
                        "exceeding it by more than --time-margin loses")
    parser.add_argument("--time-margin", type=float, default=1.0, metavar="SECONDS",
                        help="lag allowance on top of --move-time (default 1.0)")
    parser.add_argument("--command-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="limit for commands other than genmove (default 60)")
    parser.add_argument("--referee", metavar="CMD",
                        help="GTP engine whose final_score counts finished games "
                        "(e.g. \"gnugo --mode gtp --chinese-rules\")")
    parser.add_argument("--sgf-dir", type=Path, required=True, help="where the SGF files go")
    parser.add_argument("--results", type=Path, default=None, metavar="FILE.json",
                        help="results file (default SGF_DIR/results.json)")
    parser.add_argument("--parallel", type=int, default=1,
                        help="games played at once (worker threads, or game pool slots)")
    parser.add_argument("--sprt", type=_parse_sprt, default=None, metavar="ELO0,ELO1",
                        help="SPRT of A over B; stop once decided")
    parser.add_argument("--sprt-alpha", type=float, default=0.05)
    parser.add_argument("--sprt-beta", type=float, default=0.05)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def config_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> MatchConfig:
    """Validate parsed arguments and build the MatchConfig (parser.error on misuse)."""
    if args.engine and (args.black or args.white):
        parser.error("use either --black/--white or --engine, not both")
    if args.engine:
        engines = tuple(args.engine)
        if len(engines) < 2:
            parser.error("a round robin needs at least two --engine")
        labels = [e.label for e in engines]
        if len(set(labels)) != len(labels):
            parser.error("engine names must be distinct")
    elif args.black and args.white:
        engines = (EngineSpec("A", args.black), EngineSpec("B", args.white))
    else:
        parser.error("give --black and --white, or --engine NAME=CMD two or more times")
    if args.games < 1:
        parser.error("--games must be at least 1")
    if not 2 <= args.size <= 19:
        parser.error("--size must be in 2..19")
    if args.parallel < 1:
        parser.error("--parallel must be at least 1")
    if args.visits < 1:
        parser.error("--visits must be at least 1")
    if not 0 <= args.resign < 1:
        parser.error("--resign must be a winrate from 0 (never) to below 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    for spec in engines:
        try:
            spec.inproc  # noqa: B018 - validates the in-process syntax
        except ValueError as exc:
            parser.error(str(exc))
    if args.sprt is not None and len(engines) != 2:
        parser.error("--sprt needs exactly two engines")
    try:
        fixed_handicap_points(args.size, args.handicap)
    except ValueError as exc:
        parser.error(str(exc))
    limit = None if args.move_time is None else args.move_time + args.time_margin
    settings = GameSettings(
        size=args.size,
        komi=args.komi,
        rules=args.rules,
        handicap=args.handicap,
        max_moves=args.max_moves,
        move_time_limit=limit,
    )
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    return MatchConfig(
        engines=engines,
        games=args.games,
        settings=settings,
        sgf_dir=args.sgf_dir,
        results_path=args.results or args.sgf_dir / "results.json",
        parallel=args.parallel,
        move_time=args.move_time,
        time_margin=args.time_margin,
        referee=args.referee,
        random_moves=args.random_moves,
        seed=seed,
        sprt=args.sprt,
        sprt_alpha=args.sprt_alpha,
        sprt_beta=args.sprt_beta,
        command_timeout=args.command_timeout,
        progress=not args.no_progress,
        visits=args.visits,
        resign=args.resign,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0 ok, 1 interrupted, 2 bad setup)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    config = config_from_args(args, parser)
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    try:
        engines = probe_engines(config)
    except (EngineError, GTPError, ValueError, OSError) as exc:
        print(f"train.match: engine failed to start: {exc}", file=sys.stderr)
        return 2
    if config.referee:
        try:
            with GTPClient(config.referee, label="referee") as client:
                if not client.knows("final_score"):
                    print("train.match: the referee does not list final_score", file=sys.stderr)
                    return 2
        except (EngineError, GTPError) as exc:
            print(f"train.match: referee failed to start: {exc}", file=sys.stderr)
            return 2
    results = run_match(config, engines)
    print(format_summary(results))
    print(f"Results: {config.results_path}   SGFs: {config.sgf_dir}")
    return 1 if results.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
