"""The protocol layer of the GTP server: input lines, command parsing, argument parsing and
the framing of replies.  Built to /work/shared/GTP.md (what Sabaki, Lizzie, GoGui and
gogui-twogtp send and parse).

- **Framing.** ``=[id] text`` / ``?[id] message`` then exactly one empty line; ids echoed (as
  digits without leading zeros, however long); empty and ``#`` comment lines get no reply;
  control characters (ASCII 0-31 and 127 but tab) are dropped, tabs and runs of spaces collapse;
  colours and vertices are case-insensitive; command names are exact.  Whitespace is GTP's:
  space and tab only.  Other Unicode spaces (U+00A0, U+3000, U+0085...) are ordinary characters,
  so a line holding only them is a command (an unknown one) and gets a reply like any other.
  A line longer than ``MAX_LINE_BYTES`` gets one reply, ``? line too long`` (none when it is a
  comment line), and the rest of it is discarded.  Numeric arguments longer than
  ``MAX_NUMBER_CHARS`` characters are syntax errors.
- **A table of handlers.** A method marked ``@gtp_command("name")`` answers that command; a
  :class:`CommandTable` collects the marked methods of each concern object (the session, its
  analysis and its parameters), in the order they are added and defined, and ``list_commands``
  and ``known_command`` come from it.  A handler returns the reply text or raises
  :class:`GTPError` (``? message``); any other exception becomes ``? internal error: ...`` and
  the engine goes on.
- **Input while thinking.** A reader thread feeds stdin lines into :class:`InputReader`.  The
  analysis commands (``lz-analyze``, ``kata-analyze``) stream ``info`` lines until ANY line arrives,
  then end their reply with the empty line and leave that line to be answered normally.  A line
  ``# interrupt`` (GoGui's convention, announced by listing ``gogui-interrupt``) ends a running
  genmove early with the best move so far.  Pondering (``--ponder``) searches after our genmove
  until the next line arrives."""
from __future__ import annotations

import collections
import math
import os
import re
import sys
import threading
import time
from typing import Callable, Optional, TextIO

from engine.core import IllegalMoveError, parse_color
from engine.errors import NetworkOutputError
from engine.play.memory import parse_memory

MAX_LINE_BYTES = 1 << 20      # a longer input line gets one "? line too long"; its rest is dropped
MAX_NUMBER_CHARS = 100        # a longer numeric argument is a syntax error (no int() of 4,300 digits)

DIGITS = re.compile(r"[0-9]+")                  # an id, or a number that is not a vertex
VERTEX_SHAPE = re.compile(r"[A-Za-z][0-9]+")    # a vertex on some board
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


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
    if DIGITS.fullmatch(tokens[0]):
        cmd_id = tokens[0].lstrip("0") or "0"
        tokens = tokens[1:]
    if not tokens:
        return cmd_id, "", []
    return cmd_id, tokens[0], tokens[1:]



def _clean_reply(text: str) -> str:
    """Reply text without empty lines inside (an empty line ends a GTP reply) or trailing spaces."""
    if not text:
        return ""
    lead = "\n" if text.startswith("\n") else ""
    lines = [ln.rstrip() for ln in text.split("\n")]
    body = "\n".join(ln for ln in lines if ln.strip())
    return lead + body if body else ""


# ---------------------------------------------------------------------------------------------
# The server


def gtp_command(name: str) -> Callable[[Callable], Callable]:
    """Marks a method as the handler of the GTP command ``name`` (the exact name clients send)."""
    def mark(method: Callable) -> Callable:
        method.gtp_command = name          # type: ignore[attr-defined]
        return method
    return mark


class CommandTable:
    """GTP command names and their handlers: the methods marked with :func:`gtp_command` on
    each concern object added, in the order the concerns are added and, within one, the order
    its class (bases first) defines them.  A name handled twice is an error."""

    def __init__(self, *concerns: object):
        self._handlers: dict[str, Callable[[list[str]], str]] = {}
        for concern in concerns:
            self.add(concern)

    @staticmethod
    def marked(cls: type) -> list[tuple[str, str]]:
        """(command name, attribute name) of every handler ``cls`` defines or inherits."""
        found: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                name = getattr(value, "gtp_command", None)
                if isinstance(name, str):
                    found[name] = attr
        return list(found.items())

    @classmethod
    def names_of(cls, *concern_types: type) -> tuple[str, ...]:
        """The names a table of concerns of these types lists, in its order."""
        return tuple(name for t in concern_types for name, _ in cls.marked(t))

    def add(self, concern: object) -> None:
        for name, attr in self.marked(type(concern)):
            if name in self._handlers:
                raise ValueError(f"GTP command {name!r} has two handlers")
            self._handlers[name] = getattr(concern, attr)

    def names(self) -> tuple[str, ...]:
        return tuple(self._handlers)

    def handler(self, name: str) -> Optional[Callable[[list[str]], str]]:
        return self._handlers.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._handlers


class GTPServer:
    """Reads command lines, dispatches them to the handlers in :attr:`commands` and frames the
    replies.  Subclasses add their concerns to the table; :class:`engine.gtp.commands.GTPEngine`
    is the engine's."""

    def __init__(self, stdin=None, stdout: TextIO | None = None, stderr: TextIO | None = None,
                 log: TextIO | None = None, quiet: bool = False):
        self.stdin = stdin
        self.out = stdout if stdout is not None else sys.stdout
        self.err = stderr if stderr is not None else sys.stderr
        self.logfile = log
        self.quiet = quiet                  # no diagnostics on stderr (the log still gets them)
        self.inputs: InputReader | None = None
        self.commands = CommandTable()
        self._streaming = False
        self._quit = False
        self._cmd_id: Optional[str] = None

    # -- plumbing ---------------------------------------------------------------------------
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
        if not self.quiet:
            try:
                self.err.write(text + "\n")
                self.err.flush()
            except (ValueError, OSError):
                pass

    def stream_begin(self) -> None:
        """Starts a streamed reply: ``=[id]`` now, lines later, the empty line at the end."""
        self._write("=" + ("" if self._cmd_id is None else str(self._cmd_id)) + " \n")
        self._streaming = True

    def stream_line(self, line: str) -> None:
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
            self.idle()
            line = self.inputs.get()
            if line is None:
                break
            self.handle_line(line)
        return 0

    def idle(self) -> None:
        """Called before each wait for input (the engine ponders here)."""

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
        # GNU Go's form, the one every client reads: "=[id] " then the body, even when the body
        # is empty or starts on a new line (GoGui splits the reply at its first space)
        self._write(head + " " + _clean_reply(text) + "\n\n")

    def execute(self, cmd_id: Optional[str], name: str, args: list[str]) -> tuple[bool, str]:
        """Runs one command; (success, reply text).  Never raises."""
        self._cmd_id = cmd_id
        handler = self.commands.handler(name)
        if handler is None:
            return False, "unknown command"
        try:
            return True, handler(args) or ""
        except GTPError as exc:
            return False, str(exc) or "failed"
        except IllegalMoveError:
            return False, "illegal move"
        except NetworkOutputError as exc:
            self.info(f"error: {exc}")
            return False, str(exc)
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


# ---------------------------------------------------------------------------------------------
# Argument parsing, shared by every handler


def nargs(args: list[str], lo: int, hi: int | None = None) -> None:
    """GTPError("syntax error") unless there are ``lo`` to ``hi`` (default ``lo``) arguments."""
    hi = lo if hi is None else hi
    if not lo <= len(args) <= hi:
        raise GTPError("syntax error")


def color_arg(text: str) -> int:
    try:
        return parse_color(text)
    except ValueError:
        raise GTPError("syntax error") from None


def int_arg(text: str, lo: int | None = None) -> int:
    """Every integer argument: ASCII digits with an optional sign, at most
    ``MAX_NUMBER_CHARS`` characters (so neither int() nor a later float() can fail)."""
    if len(text) > MAX_NUMBER_CHARS or not _INT.fullmatch(text):
        raise GTPError("syntax error")
    value = int(text)
    if lo is not None and value < lo:
        raise GTPError("syntax error")
    return value


def float_arg(text: str) -> float:
    """Every real argument: a finite decimal number (ASCII, optional exponent), at most
    ``MAX_NUMBER_CHARS`` characters."""
    if len(text) > MAX_NUMBER_CHARS or not _FLOAT.fullmatch(text):
        raise GTPError("syntax error")
    value = float(text)
    if not math.isfinite(value):
        raise GTPError("syntax error")
    return value


def memory_arg(text: str) -> int:
    try:
        return parse_memory(text)
    except ValueError:
        raise GTPError("syntax error") from None
