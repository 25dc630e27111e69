"""Counting finished games: our core's Tromp-Taylor count, or a GTP engine's ``final_score``.

Engines judge dead stones where a Tromp-Taylor count cannot; give the referee an area-scoring
configuration (GNU Go: ``gnugo --mode gtp --chinese-rules``).  :func:`count_record` applies a
referee to a finished game's record (:class:`train.games.records.GameRecord`).
"""
from __future__ import annotations

import contextlib
import re
from typing import Protocol

from engine import coords
from engine.core import BLACK, WHITE, Game
from engine.rules import KGS_NAMES, Rules
from train.games.gtp_client import EngineError, GTPClient, GTPError
from train.games.records import GameRecord

_SCORE = re.compile(r"^([BW])\+(\d+(?:\.\d*)?)$", re.IGNORECASE)


class Referee(Protocol):
    """Scores a finished game: black's points minus white's, komi included."""

    def score(self, game: Game) -> float:
        """Score of ``game``; raises EngineError, GTPError or ValueError on failure."""

    def close(self) -> None:
        """Release the referee's resources."""


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


def gtp_color(color: int) -> str:
    return "B" if color == BLACK else "W"


def send_rules(client: GTPClient, rules: Rules) -> None:
    """``kgs-rules`` for the preset of ``rules`` (not its komi), when the engine lists the
    command; advisory only (our core referees legality), so a refusal is ignored."""
    if rules.name in KGS_NAMES and client.knows("kgs-rules"):
        with contextlib.suppress(GTPError):
            client.send(f"kgs-rules {KGS_NAMES[rules.name]}")


class GTPReferee:
    """A ``Referee`` that replays the game into a GTP engine and asks ``final_score``."""

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
        send_rules(self.client, game.rules)
        for color, point in game.moves:
            self.client.send(f"play {gtp_color(color)} {coords.to_gtp(point, size)}")
        return parse_final_score(self.client.send("final_score"))

    def close(self) -> None:
        self.client.close()

    def kill(self) -> None:
        """Kill the referee process at once (safe from another thread)."""
        self.client.kill()


def count_record(record: GameRecord, game: Game, referee: Referee | None) -> GameRecord:
    """Has ``referee`` count a game that ended by two passes or the move cap; returns ``record``
    with ``referee_score`` and ``winner`` set from its count.  A failing referee leaves the
    core's Tromp-Taylor count in force and says so in ``detail``; games that ended otherwise,
    and ``referee`` None, are returned unchanged."""
    if referee is None or record.reason not in ("passes", "move cap"):
        return record
    try:
        score = referee.score(game)
    except (EngineError, GTPError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        record.detail = f"Referee failed ({first}); Tromp-Taylor count used."
        return record
    record.referee_score = float(score)
    record.winner = BLACK if score > 0 else WHITE if score < 0 else 0
    return record
