"""A GTP program as a turn agent of :class:`train.games.pool.GamePool`.

The pool sends the set-up and the opponent's moves (``new_game``, ``play``: short commands,
answered at once) and asks for a move with ``start_genmove``, which only writes the command;
each pool step then calls ``poll_genmove``, which reads what the engine has answered so far
without waiting (``train.games.gtp_client.PendingReply``).  So a slow engine never holds up the
other games' batched searches.  Failures surface as the GTP client's exceptions, which the pool
turns into forfeits: ``EngineTimeout`` (lost on time), ``EngineDied`` (crash), ``GTPError``
(refused a command), ``ValueError`` (an unreadable move: illegal).
"""
from __future__ import annotations

import math

from engine import coords
from engine.rules import Rules
from train.games.gtp_client import GTPClient, GTPError, PendingReply
from train.match.referee import gtp_color, send_rules


class GTPAgent:
    """One GTP engine subprocess playing one game at a time.

    The process starts lazily on the first ``new_game`` and is restarted there whenever it has
    died or was killed after a timeout (``restarts`` counts that).  ``move_time`` (seconds) is
    announced to the engine as byo-yomi (``time_settings 0 T 1``, T = max(1, floor(move_time)),
    when the engine lists the command); the hard limit on one genmove is the pool's (the game
    spec's ``MoveLimit.seconds``).  ``command_timeout`` limits every other command,
    ``startup_timeout`` the first command after a (re)start, which covers loading a network.
    ``model_id`` is the name recorded for its moves (PB/PW): the override ``name``, else the
    engine's ``name`` and ``version`` replies, else the label.
    """

    def __init__(self, command: str, *, label: str | None = None, name: str | None = None,
                 move_time: float | None = None, command_timeout: float = 60.0,
                 startup_timeout: float = 300.0) -> None:
        self.command = command
        self.client = GTPClient(command, default_timeout=command_timeout, label=label, start=False)
        self.label = self.client.label
        self.move_time = move_time
        self.startup_timeout = startup_timeout
        self.engine_name = ""
        self.engine_version = ""
        self.restarts = 0
        self._name_override = name
        self._started = False
        self._size = 19
        self._pending: PendingReply | None = None

    @property
    def model_id(self) -> str:
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

    def new_game(self, size: int, rules: Rules) -> None:
        self._pending = None            # a late answer to an abandoned genmove is skipped by id
        if not self._started or not self.client.alive:
            self.start()
        self._size = size
        self.client.send(f"boardsize {size}")
        self.client.send(f"komi {rules.komi:g}")
        self.client.send("clear_board")
        send_rules(self.client, rules)
        if self.move_time is not None and self.client.knows("time_settings"):
            self.client.send(f"time_settings 0 {max(1, math.floor(self.move_time))} 1")

    def play(self, color: int, point: int) -> None:
        self.client.send(f"play {gtp_color(color)} {coords.to_gtp(point, self._size)}")

    def start_genmove(self, color: int, seconds: float | None) -> None:
        """Sends ``genmove``; the answer must come within ``seconds`` (None: no limit)."""
        self._pending = self.client.request(f"genmove {gtp_color(color)}", timeout=seconds)

    def poll_genmove(self) -> int | str | None:
        """The move once answered (a point or ``"resign"``), else None; ValueError if the reply
        is not a vertex."""
        assert self._pending is not None, "start_genmove first"
        reply = self._pending.poll()
        if reply is None:
            return None
        self._pending = None
        if reply.strip().lower() == "resign":
            return "resign"
        return coords.from_gtp(reply, self._size)

    def close(self) -> None:
        self.client.close()

    def kill(self) -> None:
        """Kill the engine process at once (safe from another thread)."""
        self.client.kill()
