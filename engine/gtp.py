"""The GTP server: ``python -m engine`` speaks the Go Text Protocol on stdin/stdout.

Built to /work/shared/GTP.md (what Sabaki, Lizzie, GoGui and gogui-twogtp send and parse).

- **Framing.** ``=[id] text`` / ``?[id] message`` then exactly one empty line; ids echoed (as
  digits without leading zeros, however long); empty and ``#`` comment lines get no reply;
  control characters (ASCII 0-31 and 127 but tab) are dropped, tabs and runs of spaces collapse;
  colours and vertices are case-insensitive; command names are exact.  Whitespace is GTP's:
  space and tab only.  Other Unicode spaces (U+00A0, U+3000, U+0085...) are ordinary characters,
  so a line holding only them is a command (an unknown one) and gets a reply like any other.
  A line longer than ``MAX_LINE_BYTES`` gets one reply, ``? line too long`` (none when it is a
  comment line), and the rest of it is discarded.  Numeric arguments longer than
  ``MAX_NUMBER_CHARS`` characters are syntax errors.
- **A table of handlers.** Every name in :attr:`GTPEngine.COMMANDS` is answered by the method
  ``cmd_<name>`` with ``-`` read as ``_``; ``list_commands`` and ``known_command`` come from the
  table.  A handler returns the reply text or raises :class:`GTPError` (``? message``); any other
  exception becomes ``? internal error: ...`` and the engine goes on.
- **Input while thinking.** A reader thread feeds stdin lines into :class:`InputReader`.  The
  analysis commands (``lz-analyze``, ``kata-analyze``) stream ``info`` lines until ANY line arrives,
  then end their reply with the empty line and leave that line to be answered normally.  A line
  ``# interrupt`` (GoGui's convention, announced by listing ``gogui-interrupt``) ends a running
  genmove early with the best move so far.  Pondering (``--ponder``) searches after our genmove
  until the next line arrives.
- **Game end.** Resignation, passing and clean-up moves are decided by
  :mod:`engine.movepolicy` after each search.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TextIO

import numpy as np

import engine
from engine import coords, movepolicy, scoring, sgf
from engine.core import (BLACK, EMPTY, WHITE, Game, IllegalMoveError, Rules, SearchParams,
                         color_name, other, parse_color)
from engine.movepolicy import RESIGN
from engine.player import Player, SearchResult
from engine.timecontrol import TimeControl

ENGINE_NAME = "goengine"
DEFAULT_VISITS = 400          # per move when neither visits, playouts nor time are set
MAX_SGF_BYTES = 8 << 20
MAX_LINE_BYTES = 1 << 20      # a longer input line gets one "? line too long"; its rest is dropped
MAX_NUMBER_CHARS = 100        # a longer numeric argument is a syntax error (no int() of 4,300 digits)

_ID = re.compile(r"[0-9]+")
_VERTEX_SHAPE = re.compile(r"[A-Za-z][0-9]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_MEMORY = re.compile(r"([0-9]+)\s*([kmgt]?)(?:i?b)?", re.I)

# Rules names clients send (kgs-rules, SGF RU) -> our presets.  Area scoring throughout.
RULES_ALIASES = {
    "chinese": "chinese", "cn": "chinese", "aga": "chinese", "japanese": "chinese",
    "jp": "chinese", "korean": "chinese", "new_zealand": "tromp-taylor", "nz": "tromp-taylor",
    "tromp-taylor": "tromp-taylor", "tromp_taylor": "tromp-taylor", "tt": "tromp-taylor",
}


class GTPError(Exception):
    """A command failed; the reply is ``? <message>``."""


# ---------------------------------------------------------------------------------------------
# Input


_EOF = object()


class LongLine(str):
    """The first ``MAX_LINE_BYTES`` of an input line that was longer (the rest was discarded)."""


class InputReader:
    """Lines from a stream (bytes or text), read by a daemon thread into a queue.

    ``get()`` blocks for the next line (None at end of input); ``has_input()`` says whether a
    line (or the end) is waiting, so searches can stop for it; ``interrupted`` is set as soon as
    a line ``# interrupt`` is read, before it is queued."""

    def __init__(self, stream, start: bool = True):
        self._stream = stream
        self._lines: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self.interrupted = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gtp-stdin", daemon=True)
        if start:
            self._thread.start()

    def _raw_lines(self):
        """Yields (raw line, cut): ``cut`` when the line was longer than ``MAX_LINE_BYTES``,
        then only its first ``MAX_LINE_BYTES`` come and the rest of it is dropped.  Real files
        are read with os.read, so the thread never holds the buffered reader's lock (which would
        abort the interpreter's shutdown)."""
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            fd = None
        if fd is None:
            while True:
                raw = self._stream.readline()
                if not raw:
                    return
                body = raw[:-1] if raw[-1:] in ("\n", b"\n") else raw
                if len(body) > MAX_LINE_BYTES:
                    yield body[:MAX_LINE_BYTES], True
                else:
                    yield raw, False
        pending = b""
        discarding = False          # inside a line already cut: drop it up to its newline
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                if pending:
                    yield pending, False
                return
            if discarding:
                nl = chunk.find(b"\n")
                if nl < 0:
                    continue
                discarding = False
                chunk = chunk[nl + 1:]
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if len(line) > MAX_LINE_BYTES:
                    yield line[:MAX_LINE_BYTES], True
                else:
                    yield line + b"\n", False
            if len(pending) > MAX_LINE_BYTES:          # no newline in sight: cut it here
                yield pending[:MAX_LINE_BYTES], True
                pending = b""
                discarding = True

    def _run(self) -> None:
        try:
            for raw, cut in self._raw_lines():
                line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
                line = LongLine(line) if cut else line.rstrip("\n")
                if not cut and is_interrupt(line):
                    self.interrupted.set()
                with self._cond:
                    self._lines.append(line)
                    self._cond.notify_all()
        except (OSError, ValueError):
            pass
        with self._cond:
            self._lines.append(_EOF)
            self._cond.notify_all()

    def get(self, timeout: float | None = None) -> Optional[str]:
        """The next line; None at end of input (or on timeout)."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._lines, timeout):
                return None
            line = self._lines[0]
            if line is _EOF:
                return None
            self._lines.popleft()
            return line

    def has_input(self) -> bool:
        return bool(self._lines)

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until a line (or the end of input) is waiting; True if one is."""
        with self._cond:
            return self._cond.wait_for(lambda: self._lines, timeout)


def _tokens(text: str) -> list[str]:
    """The tokens of ``text`` separated by GTP's whitespace: spaces and tabs, nothing else."""
    return [t for t in text.replace("\t", " ").split(" ") if t]


def is_interrupt(line: str) -> bool:
    """GoGui's ``# interrupt`` line (any spacing, any trailing CR)."""
    return _tokens(_CONTROL.sub("", line)) in (["#", "interrupt"], ["#interrupt"])


def parse_command(line: str) -> Optional[tuple[Optional[str], str, list[str]]]:
    """(id, name, args) of a GTP line, or None for an empty or comment line.

    Control characters other than tab are dropped, everything from ``#`` on is a comment, tabs
    and runs of spaces separate tokens; a leading all-digit token is the id, kept as its digits
    without leading zeros (never converted to an int: any length is echoed).  The name is
    ``""`` when the line holds an id only."""
    tokens = _tokens(_CONTROL.sub("", line).split("#", 1)[0])
    if not tokens:
        return None
    cmd_id = None
    if _ID.fullmatch(tokens[0]):
        cmd_id = tokens[0].lstrip("0") or "0"
        tokens = tokens[1:]
    if not tokens:
        return cmd_id, "", []
    return cmd_id, tokens[0], tokens[1:]


# ---------------------------------------------------------------------------------------------
# Configuration


@dataclass
class EngineConfig:
    """What the command line sets; every field can also be changed with ``goengine-param``."""

    size: int = 19                    # initial board size
    komi: float = 7.5
    rules: str = "chinese"            # a Rules preset
    visits: Optional[int] = None      # root visits per move (tree reuse counts)
    playouts: Optional[int] = None    # new visits per move
    seconds: Optional[float] = None   # seconds per move (the clock may allow less)
    batch: int = 16                   # leaves per network call
    threads: int = 1                  # search threads, each with its own batch in flight
    resign: float = 0.05              # resign below this winrate (0 disables)
    ponder: bool = False              # search on the opponent's time after genmove
    lag_buffer: float = 1.0           # seconds kept in reserve on every move under a clock
    seed: int = 0
    analysis_min_visits: int = 1      # visits an analysis makes before input can stop it
    max_analysis_visits: int = 5_000_000
    max_ponder_visits: int = 200_000
    judge_playouts: int = 64          # playouts behind final_score / final_status_list
    quiet: bool = False               # no search summaries on stderr
    search: SearchParams = field(default_factory=SearchParams)


@dataclass
class AnalysisOptions:
    color: int
    interval: float = 1.0             # seconds between info lines; 0: only the final line
    minmoves: int = 0
    maxmoves: int = 0                 # 0: no limit
    ownership: bool = False


# ---------------------------------------------------------------------------------------------
# Board helpers


def game_to_sgf(game: Game, handicap: list[int] | None = None, result: str | None = None,
                player_name: str = ENGINE_NAME) -> str:
    """The game as SGF text (engine.sgf): size, komi, rules, handicap stones as AB, the moves."""
    moves = list(game.moves)
    handicap = list(handicap or [])
    setup: list[int] = []
    if handicap and moves[:len(handicap)] == [(BLACK, p) for p in handicap]:
        setup = handicap
        moves = moves[len(handicap):]
    data = sgf.write_game(game.size, game.rules.komi, game.rules.name, moves,
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
    record = sgf.read_game(data)
    preset = record.rules or (rules.name if rules.name in Rules.PRESETS else "chinese")
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


MEMORY_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_MEMORY_LIMIT = 1 << 60    # the C core keeps the cap in an int64


def parse_memory(text: str) -> int:
    """Bytes of a memory size: ``512M``, ``2G``, ``65536`` (bytes).  K, M, G, T are binary
    multiples (KiB, MiB...) and may be followed by ``B`` or ``iB``; whole numbers only.
    ValueError for anything else, 0, or more than ``MAX_MEMORY_LIMIT``."""
    text = text.strip()
    m = _MEMORY.fullmatch(text) if len(text) <= 30 else None
    if not m:
        raise ValueError(f"bad memory size {text!r}: use bytes or e.g. 512M, 2G")
    value = int(m.group(1)) * MEMORY_UNITS[m.group(2).lower()]
    if not 1 <= value <= MAX_MEMORY_LIMIT:
        raise ValueError(f"memory size {text!r} out of range")
    return value


def format_memory(value: int) -> str:
    """``parse_memory``'s inverse: the largest unit that divides ``value`` exactly."""
    for unit in ("T", "G", "M", "K"):
        if value % MEMORY_UNITS[unit.lower()] == 0:
            return f"{value // MEMORY_UNITS[unit.lower()]}{unit}"
    return str(value)


def _fmt(x: float, digits: int = 6) -> str:
    """A float that always has a decimal point and never reads ``-0.0``."""
    return f"{round(float(x), digits) + 0.0:.{digits}f}"


def _softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    z = np.where(mask, logits.astype(np.float64), -np.inf)
    if not np.isfinite(z).any():
        return np.zeros_like(z)
    z = np.exp(z - z[np.isfinite(z)].max())
    return z / z.sum()


# ---------------------------------------------------------------------------------------------
# The engine


class GTPEngine:
    """One GTP session.  ``evaluator_for(size)`` returns the evaluator to play ``size`` with
    (ValueError when the size is not supported); everything else comes from ``config``."""

    COMMANDS = (
        "protocol_version", "name", "version", "known_command", "list_commands", "quit",
        "boardsize", "clear_board", "komi", "play", "genmove", "reg_genmove", "undo", "gg-undo",
        "showboard", "final_score", "final_status_list",
        "fixed_handicap", "place_free_handicap", "set_free_handicap",
        "time_settings", "kgs-time_settings", "time_left",
        "loadsgf", "printsgf", "kgs-rules", "goengine-rules", "kgs-genmove_cleanup",
        "lz-analyze", "kata-analyze", "lz-genmove_analyze", "kata-genmove_analyze",
        "gogui-analyze_commands", "gogui-interrupt",
        "goengine-policy", "goengine-policy_gfx", "goengine-ownership", "goengine-visits",
        "goengine-pv", "goengine-param", "cputime",
    )

    ANALYZE_COMMANDS = (
        "dboard/Policy heatmap/goengine-policy %m",
        "gfx/Policy labels/goengine-policy_gfx %m",
        "dboard/Ownership/goengine-ownership %m",
        "pspairs/Visit counts/goengine-visits %m",
        "var/Principal variation/goengine-pv %m",
        "param/Engine parameters/goengine-param",
    )

    def __init__(self, evaluator_for: Callable[[int], Any], config: EngineConfig | None = None,
                 stdin=None, stdout: TextIO | None = None, stderr: TextIO | None = None,
                 log: TextIO | None = None):
        self.config = config or EngineConfig()
        self.evaluator_for = evaluator_for
        self.stdin = stdin
        self.out = stdout if stdout is not None else sys.stdout
        self.err = stderr if stderr is not None else sys.stderr
        self.logfile = log
        self.inputs: InputReader | None = None
        self._players: dict[int, Player] = {}
        self.clock = TimeControl(lag=self.config.lag_buffer)
        self.handicap: list[int] = []       # handicap stones set by a handicap command or SGF
        self.resigned: int | None = None    # colour that resigned, for printsgf
        self._judgement: tuple[Any, scoring.Judgement] | None = None
        self._streaming = False
        self._ponder_next = False
        self._quit = False
        self._cmd_id: Optional[str] = None
        self._last_result: SearchResult | None = None
        self.evaluator = None
        self.player: Player | None = None
        self.game = Game(self.config.size, Rules.preset(self.config.rules, self.config.komi))
        self._use_evaluator(self.config.size)

    def warm_up(self) -> None:
        """One evaluation of the current position, so the first genmove does not pay for the
        network's first call (allocation, kernel selection, CUDA start-up) on its clock."""
        fs = getattr(self.evaluator, "feature_set", "rich")
        self.evaluator.evaluate(self.game.features(fs)[None])

    # -- plumbing ---------------------------------------------------------------------------
    @classmethod
    def handler_name(cls, name: str) -> str:
        return "cmd_" + name.replace("-", "_")

    def _use_evaluator(self, size: int) -> None:
        """Selects the evaluator (and Player) for ``size``; ValueError if unsupported."""
        ev = self.evaluator_for(size)
        key = id(ev)
        if key not in self._players:
            self._players[key] = Player(ev, self._search_params(), batch=self.config.batch,
                                        seed=self.config.seed, threads=self.config.threads)
        self.evaluator = ev
        self.player = self._players[key]

    def _search_params(self) -> SearchParams:
        return dataclasses.replace(self.config.search, resign_threshold=-1.0)

    def _write(self, text: str) -> None:
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ValueError, OSError):
            self._quit = True
        self._log(">> " + text.rstrip("\n").replace("\n", "\n>> ") if text.strip() else None)

    def _log(self, text: str | None) -> None:
        if self.logfile is not None and text is not None:
            try:
                self.logfile.write(f"{time.strftime('%H:%M:%S')} {text}\n")
                self.logfile.flush()
            except (ValueError, OSError):
                pass

    def info(self, text: str) -> None:
        """A diagnostic line on stderr (and in the log)."""
        self._log("## " + text)
        if not self.config.quiet:
            try:
                self.err.write(text + "\n")
                self.err.flush()
            except (ValueError, OSError):
                pass

    def _stream_begin(self) -> None:
        """Starts a streamed reply: ``=[id]`` now, lines later, the empty line at the end."""
        self._write("=" + ("" if self._cmd_id is None else str(self._cmd_id)) + "\n")
        self._streaming = True

    def _stream_line(self, line: str) -> None:
        if line:
            self._write(line + "\n")

    # -- main loop --------------------------------------------------------------------------
    def run(self) -> int:
        """Answers commands until ``quit`` or the end of input; returns the exit status (0)."""
        stream = self.stdin
        if stream is None:
            stream = sys.stdin.buffer
        self.inputs = InputReader(stream)
        while not self._quit:
            if self._ponder_next and self.config.ponder and not self.inputs.has_input():
                self._ponder()
            self._ponder_next = False
            line = self.inputs.get()
            if line is None:
                break
            self.handle_line(line)
        return 0

    def handle_line(self, line: str) -> None:
        """Answers one input line (nothing for empty and comment lines)."""
        self._log("<< " + line.rstrip("\r"))
        if isinstance(line, LongLine):
            if parse_command(line) is None and "#" in line:
                return                            # a comment line, however long
            text = _CONTROL.sub("", line).replace("\t", " ")
            parsed = parse_command(text[: text.rfind(" ") + 1])   # not a last token the cut split
            cmd_id = None if parsed is None else parsed[0]
            self._write(f"?{cmd_id or ''} line too long\n\n")
            return
        if is_interrupt(line):
            if self.inputs is not None:
                self.inputs.interrupted.clear()   # it was meant for a command already answered
            return
        parsed = parse_command(line)
        if parsed is None:
            return
        cmd_id, name, args = parsed
        ok, text = self.execute(cmd_id, name, args)
        head = ("=" if ok else "?") + ("" if cmd_id is None else str(cmd_id))
        if self._streaming:
            self._streaming = False
            tail = _clean_reply(text)
            if not ok and tail:
                self.info(f"error after the reply started: {tail}")
                tail = ""
            self._write((tail + "\n" if tail else "") + "\n")
            return
        body = _clean_reply(text)
        if not body:
            self._write(head + "\n\n")
        elif body.startswith("\n"):
            self._write(head + body + "\n\n")
        else:
            self._write(head + " " + body + "\n\n")

    def execute(self, cmd_id: Optional[str], name: str, args: list[str]) -> tuple[bool, str]:
        """Runs one command; (success, reply text).  Never raises."""
        self._cmd_id = cmd_id
        if name not in self.COMMANDS:
            return False, "unknown command"
        handler = getattr(self, self.handler_name(name))
        try:
            return True, handler(args) or ""
        except GTPError as exc:
            return False, str(exc) or "failed"
        except IllegalMoveError:
            return False, "illegal move"
        except Exception as exc:   # never die on input
            self.info(f"internal error in {name}: {type(exc).__name__}: {exc}")
            return False, f"internal error: {exc}".strip()

    def command(self, line: str) -> str:
        """Runs one command line without any I/O and returns the reply text (tests); raises
        GTPError with the message when the command fails."""
        parsed = parse_command(line)
        if parsed is None:
            return ""
        ok, text = self.execute(*parsed)
        if not ok:
            raise GTPError(text)
        return text

    # -- argument helpers -------------------------------------------------------------------
    @staticmethod
    def _nargs(args: list[str], lo: int, hi: int | None = None) -> None:
        hi = lo if hi is None else hi
        if not lo <= len(args) <= hi:
            raise GTPError("syntax error")

    @staticmethod
    def _color(text: str) -> int:
        try:
            return parse_color(text)
        except ValueError:
            raise GTPError("syntax error") from None

    def _vertex(self, text: str) -> int:
        try:
            return coords.from_gtp(text, self.game.size)
        except ValueError:
            if _VERTEX_SHAPE.fullmatch(text):
                raise GTPError("illegal move") from None   # a vertex, but not on this board
            raise GTPError("syntax error") from None

    @staticmethod
    def _int(text: str, lo: int | None = None) -> int:
        """Every integer argument: ASCII digits with an optional sign, at most
        ``MAX_NUMBER_CHARS`` characters (so neither int() nor a later float() can fail)."""
        if len(text) > MAX_NUMBER_CHARS or not _INT.fullmatch(text):
            raise GTPError("syntax error")
        value = int(text)
        if lo is not None and value < lo:
            raise GTPError("syntax error")
        return value

    @staticmethod
    def _float(text: str) -> float:
        """Every real argument: a finite decimal number (ASCII, optional exponent), at most
        ``MAX_NUMBER_CHARS`` characters."""
        if len(text) > MAX_NUMBER_CHARS or not _FLOAT.fullmatch(text):
            raise GTPError("syntax error")
        value = float(text)
        if not math.isfinite(value):
            raise GTPError("syntax error")
        return value

    @staticmethod
    def _memory(text: str) -> int:
        try:
            return parse_memory(text)
        except ValueError:
            raise GTPError("syntax error") from None

    def _vtx(self, point: int) -> str:
        return coords.to_gtp(point, self.game.size)

    # -- game state -------------------------------------------------------------------------
    def _new_game(self, size: int, rules: Rules) -> None:
        self.game = Game(size, rules)
        self.handicap = []
        self.resigned = None
        self.clock.reset()
        self.player.clear()

    def _set_rules(self, rules: Rules) -> None:
        """Replays the game under ``rules`` (komi is part of the rules)."""
        if rules == self.game.rules:
            return
        game = Game(self.game.size, rules)
        try:
            game.play_many(self.game.moves)
        except IllegalMoveError:
            raise GTPError(f"the game has a move that is illegal under {rules.name} rules") from None
        game.set_to_move(self.game.to_move)
        self.game = game

    def _handicap_count(self) -> int:
        return movepolicy.handicap_count(self.game, self.handicap)

    def _judge(self, game: Game | None = None) -> scoring.Judgement:
        game = self.game if game is None else game
        key = (game.size, tuple(game.moves), game.rules, game.to_move)
        if self._judgement is not None and self._judgement[0] == key:
            return self._judgement[1]
        verdict = scoring.judge(game, self.evaluator, playouts=self.config.judge_playouts,
                                seed=self.config.seed)
        self._judgement = (key, verdict)
        return verdict

    # -- core commands ----------------------------------------------------------------------
    def cmd_protocol_version(self, args: list[str]) -> str:
        return "2"

    def cmd_name(self, args: list[str]) -> str:
        return ENGINE_NAME

    def cmd_version(self, args: list[str]) -> str:
        return engine.__version__

    def cmd_known_command(self, args: list[str]) -> str:
        self._nargs(args, 1)
        return "true" if args[0] in self.COMMANDS else "false"

    def cmd_list_commands(self, args: list[str]) -> str:
        return "\n".join(self.COMMANDS)

    def cmd_quit(self, args: list[str]) -> str:
        self._quit = True
        return ""

    def cmd_boardsize(self, args: list[str]) -> str:
        self._nargs(args, 1)
        size = self._int(args[0])
        try:
            if not 2 <= size <= 19:
                raise ValueError
            self._use_evaluator(size)
        except ValueError:
            raise GTPError("unacceptable size") from None
        self._new_game(size, self.game.rules)
        return ""

    def cmd_clear_board(self, args: list[str]) -> str:
        self._new_game(self.game.size, self.game.rules)
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        self._nargs(args, 1)
        komi = self._float(args[0])
        if abs(komi) > 1000:
            raise GTPError("syntax error")
        self._set_rules(self.game.rules.with_komi(komi))
        return ""

    def cmd_play(self, args: list[str]) -> str:
        self._nargs(args, 2)
        color = self._color(args[0])
        point = self._vertex(args[1])
        self.game.play(point, color)
        self.resigned = None
        return ""

    def cmd_genmove(self, args: list[str]) -> str:
        self._nargs(args, 1)
        color = self._color(args[0])
        move = self._genmove(color)
        self._ponder_next = move != RESIGN
        return "resign" if move == RESIGN else self._vtx(move)

    def cmd_reg_genmove(self, args: list[str]) -> str:
        self._nargs(args, 1)
        color = self._color(args[0])
        move = self._genmove(color, play=False)
        return "resign" if move == RESIGN else self._vtx(move)

    def cmd_kgs_genmove_cleanup(self, args: list[str]) -> str:
        self._nargs(args, 1)
        color = self._color(args[0])
        move = self._genmove(color, cleanup=True)
        return "resign" if move == RESIGN else self._vtx(move)

    def cmd_undo(self, args: list[str]) -> str:
        self._nargs(args, 0)
        if not self.game.moves:
            raise GTPError("cannot undo")
        self.game.undo()
        self.resigned = None
        return ""

    def cmd_gg_undo(self, args: list[str]) -> str:
        self._nargs(args, 0, 1)
        n = self._int(args[0], 0) if args else 1
        if n > len(self.game.moves):
            raise GTPError("cannot undo")
        for _ in range(n):
            self.game.undo()
        return ""

    def cmd_showboard(self, args: list[str]) -> str:
        g = self.game
        lines = str(g).split("\n")
        lines.append(f"{'Black' if g.to_move == BLACK else 'White'} to move, move {len(g.moves) + 1}, "
                     f"komi {g.rules.komi:g}, {g.rules.name} rules")
        lines.append(f"captures: Black {g.captures(BLACK)}, White {g.captures(WHITE)}")
        return "\n" + "\n".join(lines)

    def cmd_final_score(self, args: list[str]) -> str:
        return self._judge().result()

    def cmd_final_status_list(self, args: list[str]) -> str:
        self._nargs(args, 1)
        status = args[0].lower()
        if status not in ("alive", "dead", "seki"):
            raise GTPError("syntax error")
        groups = self._judge().groups(status)
        return "\n".join(" ".join(self._vtx(p) for p in g) for g in groups)

    # -- handicap ---------------------------------------------------------------------------
    def _place_handicap(self, points: list[int]) -> str:
        for p in points:
            self.game.play(p, BLACK)
        self.game.set_to_move(WHITE)
        self.handicap = list(points)
        return " ".join(self._vtx(p) for p in points)

    def _require_empty(self) -> None:
        if self.game.moves or (self.game.stones() != EMPTY).any():
            raise GTPError("board not empty")

    def cmd_fixed_handicap(self, args: list[str]) -> str:
        self._nargs(args, 1)
        n = self._int(args[0])
        self._require_empty()
        try:
            if n == 0:
                raise ValueError("no handicap")
            points = coords.fixed_handicap(self.game.size, n)
        except ValueError:
            raise GTPError("invalid handicap") from None
        return self._place_handicap(points)

    def cmd_place_free_handicap(self, args: list[str]) -> str:
        self._nargs(args, 1)
        n = self._int(args[0])
        size = self.game.size
        self._require_empty()
        if not 2 <= n < size * size:
            raise GTPError("invalid handicap")
        try:
            points = coords.fixed_handicap(size, min(n, 9 if size % 2 == 1 else 4))
        except ValueError:
            points = []
        points = points[:n]
        if len(points) < n:
            # The rest where the policy likes Black's stones best, off the edge, not touching.
            probs = self._policy(BLACK)[: size * size]
            taken = set(points)
            order = np.argsort(-probs, kind="stable")
            nbrs = scoring.neighbours(size)
            for relax in (False, True):
                for p in order:
                    p = int(p)
                    if len(points) >= n:
                        break
                    r, c = divmod(p, size)
                    if p in taken:
                        continue
                    if not relax and (min(r, c, size - 1 - r, size - 1 - c) == 0 or
                                      any(q in taken for q in nbrs[p])):
                        continue
                    points.append(p)
                    taken.add(p)
        return self._place_handicap(points)

    def cmd_set_free_handicap(self, args: list[str]) -> str:
        if len(args) < 2:
            raise GTPError("syntax error")
        self._require_empty()
        points = []
        for a in args:
            try:
                p = coords.from_gtp(a, self.game.size)
            except ValueError:
                raise GTPError("bad vertex list") from None
            if p == self.game.pass_point or p in points:
                raise GTPError("bad vertex list")
            points.append(p)
        if len(points) >= self.game.size * self.game.size:
            raise GTPError("bad vertex list")
        self._place_handicap(points)
        return ""

    # -- time -------------------------------------------------------------------------------
    def cmd_time_settings(self, args: list[str]) -> str:
        self._nargs(args, 3)
        main, byo = self._float(args[0]), self._float(args[1])
        stones = self._int(args[2], 0)
        try:
            self.clock.set_gtp(main, byo, stones)
        except ValueError:
            raise GTPError("syntax error") from None
        return ""

    def cmd_kgs_time_settings(self, args: list[str]) -> str:
        if not args:
            raise GTPError("syntax error")
        values = [self._float(a) for a in args[1:]]
        try:
            self.clock.set_kgs(args[0], values)
        except ValueError:
            raise GTPError("syntax error") from None
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        self._nargs(args, 3)
        color = self._color(args[0])
        seconds = self._float(args[1])
        stones = self._int(args[2], 0)
        try:
            self.clock.time_left(color, seconds, stones)
        except ValueError:
            raise GTPError("syntax error") from None
        return ""

    def cmd_cputime(self, args: list[str]) -> str:
        return f"{time.process_time():.3f}"

    # -- SGF --------------------------------------------------------------------------------
    def cmd_loadsgf(self, args: list[str]) -> str:
        self._nargs(args, 1, 2)
        move_number, vertex = None, None
        if len(args) == 2:
            if _ID.fullmatch(args[1]):
                move_number = self._int(args[1])
            else:
                vertex = args[1]
        try:
            with open(args[0], "rb") as f:
                data = f.read(MAX_SGF_BYTES + 1)
        except OSError:
            raise GTPError("cannot open file") from None
        if len(data) > MAX_SGF_BYTES:
            raise GTPError("SGF file too large")
        try:
            game, handicap = game_from_sgf(data, self.game.rules, move_number, vertex)
        except IllegalMoveError:
            raise GTPError("illegal move in SGF file") from None
        except ValueError as exc:
            raise GTPError(f"cannot load SGF: {exc}") from None
        try:
            self._use_evaluator(game.size)
        except ValueError:
            raise GTPError("unacceptable size") from None
        self.game = game
        self.handicap = handicap
        self.resigned = None
        self.clock.reset()
        self.player.clear()
        return "black" if game.to_move == BLACK else "white"

    def cmd_printsgf(self, args: list[str]) -> str:
        self._nargs(args, 0, 1)
        result = None
        if self.resigned is not None:
            result = f"{color_name(other(self.resigned))}+R"
        elif self.game.is_over:
            result = self._judge().result()
        text = game_to_sgf(self.game, self.handicap, result)
        if args:
            try:
                with open(args[0], "w", encoding="utf-8") as f:
                    f.write(text + "\n")
            except OSError:
                raise GTPError("cannot write file") from None
            return ""
        return text

    # -- rules ------------------------------------------------------------------------------
    def _rules_named(self, name: str) -> Rules:
        key = RULES_ALIASES.get(name.strip().lower())
        if key is None:
            raise GTPError("unknown rules")
        return Rules.preset(key, self.game.rules.komi)

    def cmd_kgs_rules(self, args: list[str]) -> str:
        self._nargs(args, 1)
        self._set_rules(self._rules_named(args[0]))
        return ""

    def cmd_goengine_rules(self, args: list[str]) -> str:
        self._nargs(args, 0, 1)
        if args:
            self._set_rules(self._rules_named(args[0]))
        return self.game.rules.name

    # -- search -----------------------------------------------------------------------------
    def _limits(self, color: int) -> tuple[Optional[int], Optional[float], Optional[int]]:
        """(visits, seconds, playouts) for a move of ``color``."""
        cfg = self.config
        visits, seconds, playouts = cfg.visits, cfg.seconds, cfg.playouts
        budget = self.clock.budget(color, self.game.size, len(self.game.moves))
        if budget is not None:
            seconds = budget if seconds is None else min(seconds, budget)
        if visits is None and seconds is None and playouts is None:
            visits = DEFAULT_VISITS
        return visits, seconds, playouts

    def _run_search(self, game: Game, visits: Optional[int], seconds: Optional[float],
                    playouts: Optional[int], stop=None, callback=None, interval: float = 1.0,
                    min_visits: int = 1) -> SearchResult:
        tree = self.player.sync(game)
        if playouts is not None:
            target = tree.visits + playouts
            visits = target if visits is None else min(visits, target)
        if visits is None and seconds is None and stop is None:
            visits = DEFAULT_VISITS
        return self.player.search(game, visits=visits, seconds=seconds, stop=stop,
                                  callback=callback, callback_interval=max(interval, 0.01),
                                  min_visits=min_visits)

    def _genmove(self, color: int, play: bool = True, cleanup: bool = False,
                 callback=None, interval: float = 1.0) -> int:
        """Searches for ``color`` and returns the move (RESIGN to resign); plays it if ``play``."""
        t0 = time.monotonic()
        game = self.game if play else self.game.copy()
        if game.to_move != color:
            game.set_to_move(color)
        visits, seconds, playouts = self._limits(color)
        stop = self.inputs.interrupted.is_set if self.inputs is not None else None
        result = self._run_search(game, visits, seconds, playouts, stop=stop,
                                  callback=callback, interval=interval)
        self._last_result = result
        move = self._choose(game, color, result, cleanup)
        if callback is not None and self.player.search_tree is not None:
            callback(self.player.search_tree)
        if play and move != RESIGN:
            game.play(move, color)
        if play:
            self.clock.charge(color, time.monotonic() - t0)
            if move == RESIGN:
                self.resigned = color
        self._summary(game.size, color, result, move, time.monotonic() - t0)
        return move

    def _summary(self, size: int, color: int, result: SearchResult, move: int, seconds: float) -> None:
        if self.config.quiet and self.logfile is None:
            return
        vtx = "resign" if move == RESIGN else coords.to_gtp(move, size)
        best = result.children[0] if result.children else None
        pv = " ".join(coords.to_gtp(p, size) for p in (best.pv if best else [])[:12])
        self.info(f"{color_name(color)} {vtx}: {result.visits} visits ({result.playouts} new, "
                  f"{seconds:.2f}s), winrate {100 * result.winrate:.1f}%, pv {pv}")

    def _should_resign(self, game: Game, color: int, result: SearchResult) -> bool:
        return movepolicy.should_resign(movepolicy.best_winrate(result), len(game.moves), game.size,
                                        self.config.resign, visits=result.visits,
                                        handicap=self._handicap_count(), white=color == WHITE)

    def _choose(self, game: Game, color: int, result: SearchResult, cleanup: bool = False) -> int:
        return movepolicy.choose_move(game, color, result, self._judge, self.config.resign,
                                      handicap=self._handicap_count(), cleanup=cleanup, say=self.info)

    def _ponder(self) -> None:
        """Searches the current position until input arrives (tree kept for the next genmove)."""
        if self.game.is_over or self.inputs is None:
            return
        try:
            self.player.search(self.game, visits=self.config.max_ponder_visits,
                               stop=self.inputs.has_input, min_visits=0)
        except Exception as exc:   # pondering is best effort
            self.info(f"pondering stopped: {exc}")

    # -- analysis ---------------------------------------------------------------------------
    def _analysis_options(self, args: list[str], need_color: bool) -> AnalysisOptions:
        i = 0
        color = self.game.to_move
        if args:
            try:
                color = parse_color(args[0])
                i = 1
            except ValueError:
                if need_color:
                    raise GTPError("syntax error") from None
        elif need_color:
            raise GTPError("syntax error")
        opts = AnalysisOptions(color=color)
        if i < len(args) and _ID.fullmatch(args[i]):
            opts.interval = self._int(args[i]) / 100.0
            i += 1
        while i < len(args):
            key = args[i]
            if i + 1 >= len(args):
                raise GTPError("syntax error")
            value = args[i + 1]
            i += 2
            if key == "interval":
                opts.interval = self._int(value, 0) / 100.0
            elif key == "minmoves":
                opts.minmoves = self._int(value, 0)
            elif key == "maxmoves":
                opts.maxmoves = self._int(value, 0)
            elif key in ("ownership", "ownershipStdev", "movesOwnership", "rootInfo", "pvVisits",
                         "pvEdgeVisits"):
                if value.lower() not in ("true", "false"):
                    raise GTPError("syntax error")
                if key == "ownership":
                    opts.ownership = value.lower() == "true"
            else:
                raise GTPError("syntax error")
        return opts

    def _info_line(self, kind: str, tree, game: Game, opts: AnalysisOptions,
                   scores: dict[int, Optional[float]], ownership: Optional[str]) -> str:
        """One analysis line (every candidate, then ``ownership`` when asked)."""
        size = game.size
        children = tree.children()
        visited = [c for c in children if c.visits > 0]
        cands = list(visited)
        if opts.minmoves > len(cands):
            rest = sorted((c for c in children if c.visits == 0), key=lambda c: -c.prior)
            cands += rest[: opts.minmoves - len(cands)]
        if opts.maxmoves > 0:
            cands = cands[: opts.maxmoves]
        if not cands:
            return ""
        root_wr = min(1.0, max(0.0, (tree.value + 1.0) / 2.0))
        if kind == "kata":
            self._score_leads(game, [c.move for c in cands], scores)
        parts = []
        for order, c in enumerate(cands):
            wr = min(1.0, max(0.0, c.winrate)) if c.visits else root_wr
            lcb = min(1.0, max(0.0, (c.lcb + 1.0) / 2.0)) if c.visits > 1 else 0.0
            lcb = min(lcb, wr)
            pv = " ".join(coords.to_gtp(p, size) for p in (c.pv if c.visits else [c.move]))
            move = coords.to_gtp(c.move, size)
            if kind == "lz":
                parts.append(f"info move {move} visits {c.visits} winrate {round(wr * 10000)} "
                             f"prior {round(c.prior * 10000)} lcb {round(lcb * 10000)} "
                             f"order {order} pv {pv}")
            else:
                lead = scores.get(c.move)
                score = "" if lead is None else f"scoreMean {_fmt(lead, 3)} scoreLead {_fmt(lead, 3)} "
                parts.append(f"info move {move} visits {c.visits} winrate {_fmt(wr)} {score}"
                             f"prior {_fmt(c.prior)} lcb {_fmt(lcb)} order {order} pv {pv}")
        line = " ".join(parts)
        if ownership is not None:
            line += " ownership " + ownership
        return line

    def _score_leads(self, game: Game, moves: list[int], scores: dict[int, Optional[float]]) -> None:
        """Fills ``scores`` with the mover's score lead after each of ``moves`` (network score
        head of the position after the move, negated), None without a score head."""
        todo = [m for m in moves if m not in scores]
        if not todo:
            return
        fs = getattr(self.evaluator, "feature_set", "rich")
        planes, keys = [], []
        for m in todo:
            g = game.copy()
            g.play(m, game.to_move)
            planes.append(g.features(fs))
            keys.append(g.feature_key(fs))
        ev = self.evaluator.evaluate(np.stack(planes), keys=np.array(keys, np.uint64))
        for i, m in enumerate(todo):
            scores[m] = None if ev.score is None else -float(ev.score[i])

    def _ownership_text(self, game: Game) -> str:
        own = scoring.estimate_ownership(game, self.evaluator, playouts=self.config.judge_playouts // 2,
                                         seed=self.config.seed)
        if game.to_move == WHITE:
            own = -own
        return " ".join(_fmt(x) for x in own.ravel())

    def _analyze(self, kind: str, args: list[str]) -> str:
        opts = self._analysis_options(args, need_color=False)
        game = self.game.copy()
        if game.to_move != opts.color:
            game.set_to_move(opts.color)
        self._stream_begin()                  # '=' at once; the ownership may take a moment
        ownership = self._ownership_text(game) if kind == "kata" and opts.ownership else None
        scores: dict[int, Optional[float]] = {}

        def emit(tree) -> None:
            self._stream_line(self._info_line(kind, tree, game, opts, scores, ownership))

        result = self.player.search(game, visits=self.config.max_analysis_visits,
                                    stop=self.inputs.has_input if self.inputs else (lambda: True),
                                    callback=emit if opts.interval > 0 else None,
                                    callback_interval=max(opts.interval, 0.01),
                                    min_visits=max(1, self.config.analysis_min_visits))
        del result
        emit(self.player.search_tree)
        if self.inputs is not None and not self.inputs.has_input():
            self.inputs.wait()      # the search ran out; the analysis still ends only at input
        return ""

    def _genmove_analyze(self, kind: str, args: list[str]) -> str:
        opts = self._analysis_options(args, need_color=True)
        game_before = self.game.copy()
        game_before.set_to_move(opts.color)
        self._stream_begin()
        ownership = None
        if kind == "kata" and opts.ownership:
            ownership = self._ownership_text(game_before)
        scores: dict[int, Optional[float]] = {}

        def emit(tree) -> None:
            self._stream_line(self._info_line(kind, tree, game_before, opts, scores, ownership))

        move = self._genmove(opts.color, callback=emit if opts.interval > 0 else None,
                             interval=opts.interval if opts.interval > 0 else 1.0)
        if opts.interval <= 0 and self.player.search_tree is not None:
            emit(self.player.search_tree)
        self._ponder_next = move != RESIGN
        return "play " + ("resign" if move == RESIGN else self._vtx(move))

    def cmd_lz_analyze(self, args: list[str]) -> str:
        return self._analyze("lz", args)

    def cmd_kata_analyze(self, args: list[str]) -> str:
        return self._analyze("kata", args)

    def cmd_lz_genmove_analyze(self, args: list[str]) -> str:
        return self._genmove_analyze("lz", args)

    def cmd_kata_genmove_analyze(self, args: list[str]) -> str:
        return self._genmove_analyze("kata", args)

    # -- GoGui ------------------------------------------------------------------------------
    def cmd_gogui_analyze_commands(self, args: list[str]) -> str:
        return "\n".join(self.ANALYZE_COMMANDS)

    def cmd_gogui_interrupt(self, args: list[str]) -> str:
        return ""

    def _analysis_color(self, args: list[str]) -> int:
        self._nargs(args, 0, 1)
        return self._color(args[0]) if args else self.game.to_move

    def _policy(self, color: int) -> np.ndarray:
        """Move probabilities (N*N+1) of the network for ``color`` to move, legal moves only."""
        g = self.game.copy()
        g.set_to_move(color)
        fs = getattr(self.evaluator, "feature_set", "rich")
        ev = self.evaluator.evaluate(g.features(fs)[None])
        return _softmax(np.asarray(ev.policy[0]), g.legal_mask(color))

    def _board_rows(self, values: np.ndarray, fmt: Callable[[float], str]) -> str:
        size = self.game.size
        v = np.asarray(values).reshape(size, size)
        return "\n" + "\n".join(" ".join(fmt(x) for x in row) for row in v)

    def cmd_goengine_policy(self, args: list[str]) -> str:
        """dboard: policy probability of each point relative to the best move (1.0)."""
        probs = self._policy(self._analysis_color(args))
        n2 = self.game.size ** 2
        top = probs.max() if probs.max() > 0 else 1.0
        return self._board_rows(probs[:n2] / top, lambda x: f"{x:.3f}")

    def cmd_goengine_policy_gfx(self, args: list[str]) -> str:
        """gfx: INFLUENCE by policy relative to the best move, LABEL with percentages."""
        probs = self._policy(self._analysis_color(args))
        n2 = self.game.size ** 2
        top = probs.max() if probs.max() > 0 else 1.0
        order = [int(p) for p in np.argsort(-probs[:n2], kind="stable") if probs[p] > 0]
        influence = " ".join(f"{self._vtx(p)} {probs[p] / top:.2f}" for p in order)
        labels = " ".join(f"{self._vtx(p)} {100 * probs[p]:.0f}" for p in order[:10])
        lines = []
        if influence:
            lines.append("INFLUENCE " + influence)
        if labels:
            lines.append("LABEL " + labels)
        lines.append(f"TEXT pass {100 * probs[n2]:.1f}%")
        return "\n".join(lines)

    def cmd_goengine_ownership(self, args: list[str]) -> str:
        """dboard: ownership, +1 Black to -1 White."""
        color = self._analysis_color(args)
        g = self.game.copy()
        g.set_to_move(color)
        own = scoring.estimate_ownership(g, self.evaluator, playouts=self.config.judge_playouts // 2,
                                         seed=self.config.seed)
        return self._board_rows(own, lambda x: _fmt(x, 2))

    def _visit_search(self, args: list[str]) -> tuple[Game, SearchResult]:
        color = self._analysis_color(args)
        g = self.game.copy()
        g.set_to_move(color)
        cfg = self.config
        visits = cfg.visits if (cfg.visits or cfg.seconds or cfg.playouts) else DEFAULT_VISITS
        result = self._run_search(g, visits, cfg.seconds, cfg.playouts)
        return g, result

    def cmd_goengine_visits(self, args: list[str]) -> str:
        """pspairs: root visits of every visited move."""
        _, result = self._visit_search(args)
        return " ".join(f"{self._vtx(c.move)} {c.visits}" for c in result.children if c.visits > 0)

    def cmd_goengine_pv(self, args: list[str]) -> str:
        """var: the principal variation, colour-prefixed."""
        g, result = self._visit_search(args)
        best = next((c for c in result.children if c.visits > 0), None)
        if best is None:
            return ""
        color, out = g.to_move, []
        for p in best.pv:
            out.append(f"{color_name(color).lower()} {self._vtx(p)}")
            color = other(color)
        return " ".join(out)

    PARAMS = ("visits", "playouts", "time", "resign", "ponder", "lag_buffer", "batch",
              "analysis_min_visits", "judge_playouts", "c_puct", "fpu_reduction", "lcb_z", "max_memory",
              "rules")

    def cmd_goengine_param(self, args: list[str]) -> str:
        """Without arguments: GoGui's parameter list; ``goengine-param KEY VALUE`` sets one."""
        cfg = self.config
        if not args:
            def opt(v):
                return 0 if v is None else v
            return "\n".join([
                f"[string] visits {opt(cfg.visits)}",
                f"[string] playouts {opt(cfg.playouts)}",
                f"[string] time {opt(cfg.seconds):g}",
                f"[string] resign {cfg.resign:g}",
                f"[bool] ponder {int(cfg.ponder)}",
                f"[string] lag_buffer {cfg.lag_buffer:g}",
                f"[string] batch {cfg.batch}",
                f"[string] analysis_min_visits {cfg.analysis_min_visits}",
                f"[string] judge_playouts {cfg.judge_playouts}",
                f"[string] c_puct {cfg.search.c_puct:g}",
                f"[string] fpu_reduction {cfg.search.fpu_reduction:g}",
                f"[string] lcb_z {cfg.search.lcb_z:g}",
                f"[string] max_memory {format_memory(cfg.search.max_memory)}",
                f"[list/chinese/tromp-taylor] rules {self.game.rules.name}",
            ])
        if len(args) != 2 or args[0] not in self.PARAMS:
            raise GTPError("syntax error")
        key, value = args
        if key in ("visits", "playouts"):
            n = self._int(value, 0)
            setattr(cfg, key, n or None)
        elif key == "time":
            t = self._float(value)
            cfg.seconds = t if t > 0 else None
        elif key == "resign":
            r = self._float(value)
            if not 0 <= r < 1:
                raise GTPError("syntax error")
            cfg.resign = r
        elif key == "ponder":
            if value.lower() not in ("0", "1", "true", "false"):
                raise GTPError("syntax error")
            cfg.ponder = value.lower() in ("1", "true")
        elif key == "lag_buffer":
            cfg.lag_buffer = max(0.0, self._float(value))
            self.clock.lag = cfg.lag_buffer
        elif key == "batch":
            cfg.batch = max(1, self._int(value, 1))
            for p in self._players.values():
                p.batch = cfg.batch
                p.clear()
        elif key == "analysis_min_visits":
            cfg.analysis_min_visits = self._int(value, 0)
        elif key == "judge_playouts":
            cfg.judge_playouts = max(1, self._int(value, 1))
            self._judgement = None
        elif key == "rules":
            self._set_rules(self._rules_named(value))
        else:
            v = self._memory(value) if key == "max_memory" else self._float(value)
            cfg.search = dataclasses.replace(cfg.search, **{key: v})
            for p in self._players.values():
                p.set_params(self._search_params())
        return ""


def _clean_reply(text: str) -> str:
    """Reply text without empty lines inside (an empty line ends a GTP reply) or trailing spaces."""
    if not text:
        return ""
    lead = "\n" if text.startswith("\n") else ""
    lines = [ln.rstrip() for ln in text.split("\n")]
    body = "\n".join(ln for ln in lines if ln.strip())
    return lead + body if body else ""
