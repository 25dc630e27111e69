"""What a game of :class:`train.games.pool.GamePool` is made of: the players (an :class:`Agent`, a net
searched in this process, or a :class:`TurnAgent`, polled one move at a time), how long each may
think (:class:`MoveLimit`), how moves are searched and chosen (:class:`PlaySettings`), the game
itself (:class:`GameSpec`: board, rules, set-up, players) and how it ended (:class:`FinishedGame`,
whose :meth:`FinishedGame.record` is the one :class:`train.games.records.GameRecord`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, Union

from engine.coords import fixed_handicap
from engine.core import BLACK, WHITE, Game, Rules, SearchParams
from engine.play.settings import PlaySettings
from train.games.records import GameRecord, MoveInfo, build_record

@dataclass
class Agent:
    """A network that plays: its id (recorded with every move), evaluator and search parameters.

    Agents are compared by identity; two agents sharing an evaluator are batched together."""

    model_id: str
    evaluator: Any                      # engine.nets.evaluator.Evaluator
    params: SearchParams = field(default_factory=SearchParams)

    @property
    def feature_set(self) -> str:
        return getattr(self.evaluator, "feature_set", "rich")


class TurnAgent(Protocol):
    """A player that answers one move at a time, polled by the pool (see the module docstring).

    Points are compact indices (``engine.coords``, pass = N*N).
    Failures are the GTP client's exceptions, forfeits for the pool: ``EngineTimeout`` (time),
    ``EngineDied`` (crash), ``GTPError`` (error); a ``ValueError`` from ``poll_genmove`` is an
    unreadable move (illegal)."""

    model_id: str                       # the name recorded with its moves (PB/PW)

    def new_game(self, size: int, rules: Rules) -> None:
        """Starts a game on an empty board under ``rules`` (komi included)."""

    def play(self, color: int, point: int) -> None:
        """Records a move: a handicap stone, a forced opening move or the opponent's move."""

    def start_genmove(self, color: int, seconds: float | None) -> None:
        """Starts choosing a move for ``color`` (returns at once); ``seconds``: the hard limit."""

    def poll_genmove(self) -> int | str | None:
        """The move once chosen (a point, pass, or ``"resign"``), else None; never blocks."""


Player = Union[Agent, TurnAgent]


@dataclass(frozen=True)
class MoveLimit:
    """How long one colour may think per move.  Agents search ``visits`` root visits (None: the
    game's ``PlaySettings.visits``) and stop early after ``seconds``; turn agents forfeit on time
    when they take longer than ``seconds`` (None: no limit)."""

    visits: int | None = None
    seconds: float | None = None


@dataclass
class GameSpec:
    """A game for a slot: board, rules, set-up, one agent per colour and its limit, settings and
    a seed."""

    size: int
    rules: Rules
    black: Player
    white: Player
    settings: PlaySettings = field(default_factory=PlaySettings)
    seed: int = 0
    allow_resign: bool = True           # False: a no-resign (calibration) game
    tag: Any = None                     # the caller's data (game name, pairing, ...)
    handicap: int = 0                   # fixed handicap stones (engine.coords.fixed_handicap); White starts
    opening: Sequence[int] = ()         # forced opening moves after them, colours alternating
    black_limit: MoveLimit = MoveLimit()
    white_limit: MoveLimit = MoveLimit()

    def limit(self, color: int) -> MoveLimit:
        return self.black_limit if color == BLACK else self.white_limit

    def handicap_points(self) -> list[int]:
        """The handicap stones (ValueError for a count the board does not allow)."""
        return fixed_handicap(self.size, self.handicap)


@dataclass
class FinishedGame:
    """A game that ended (or was abandoned: ``reason == "abandoned"``)."""

    slot: int
    spec: GameSpec
    game: Game
    moves: list[MoveInfo]
    reason: str                         # one of train.games.records.ENDINGS, or "abandoned"
    winner: int                         # BLACK, WHITE, 0 = draw or abandoned
    started: float
    finished: float
    leaves: int = 0                     # positions this game sent to evaluators (all its searches)
    players: dict[int, list[str]] | None = None   # model ids per colour: set-up, then switches
    detail: str = ""                    # a forfeit, in words
    setup: list[int] = field(default_factory=list)   # the handicap stones played

    def record(self) -> GameRecord:
        """The game's record (ValueError for an abandoned game).  It names the players of
        both colours from the set-up, even when the game ended before a colour moved."""
        if self.reason == "abandoned":
            raise ValueError("an abandoned game has no record")
        s = self.spec.settings
        players = self.players or {BLACK: [self.spec.black.model_id], WHITE: [self.spec.white.model_id]}
        return build_record(self.game, self.moves, reason=self.reason, winner=self.winner,
                            no_resign=not self.spec.allow_resign,
                            resign_winrate=s.resign if self.spec.allow_resign and s.resign > 0 else None,
                            seed=self.spec.seed, started=self.started, finished=self.finished,
                            players=players, setup=self.setup, opening_moves=len(self.spec.opening),
                            detail=self.detail)
