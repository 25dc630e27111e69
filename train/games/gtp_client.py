"""A client for one GTP engine running as a subprocess.

``GTPClient`` starts a command line (split with ``shlex``), sends commands with
numeric ids, and reads replies (``=[id] text`` or ``?[id] message``, possibly
several lines, ended by an empty line). Every command has a timeout; a reader
thread feeds stdout lines into a queue so a hung engine can never block the
caller. ``send`` waits for the reply; ``request`` returns a ``PendingReply``
at once, whose ``poll()`` reads what has arrived without waiting (the game
pool asks a GTP engine for a move that way and keeps playing other games).
Failures surface as three exceptions:

``GTPError``
    The engine answered ``?``: the command failed, the engine is still usable.
``EngineTimeout``
    No complete reply within the timeout. The engine is in an unknown state
    (it may answer later, or never), so the client kills it; call ``restart()``
    to get a fresh process.
``EngineDied``
    The process exited or closed its stdout (or could not be started).

``EngineTimeout`` and ``EngineDied`` derive from ``EngineError``.
The engine's stderr is drained by a second thread; its last lines are kept
for error messages (``stderr_tail()``).
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Literal

__all__ = ["GTPClient", "PendingReply", "GTPError", "EngineError", "EngineTimeout", "EngineDied"]

_REPLY_START = re.compile(r"^([=?])(\d*)(?:\s+(.*))?$")
_EOF = object()  # queued by the reader thread when stdout closes


class GTPError(Exception):
    """The engine answered a command with ``?``.

    ``command`` is the command sent (without id), ``message`` the engine's text.
    """

    def __init__(self, command: str, message: str) -> None:
        super().__init__(f"{command!r} failed: {message}")
        self.command = command
        self.message = message


class EngineError(Exception):
    """The engine process misbehaved (base of ``EngineTimeout``, ``EngineDied``)."""


class EngineTimeout(EngineError):
    """No complete reply arrived in time; the client has killed the engine."""


class EngineDied(EngineError):
    """The engine process exited, closed its output, or could not start.

    ``returncode`` is the exit status when known.
    """

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode


class GTPClient:
    """One GTP engine subprocess.

    ``command`` is a command line (split with ``shlex.split``) or an argv list.
    The process starts in its own session, so a Ctrl-C in the terminal reaches
    the controlling program, which then closes its engines itself.
    ``default_timeout`` (seconds, None = wait forever) applies to commands
    sent without an explicit timeout. ``label`` names the engine in error
    messages. ``start=False`` defers starting the process to ``start()``.

    Not thread-safe: one thread talks to one client.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        default_timeout: float | None = 60.0,
        label: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stderr_lines: int = 40,
        start: bool = True,
    ) -> None:
        self.argv: list[str] = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("empty engine command")
        self.default_timeout = default_timeout
        self.label = label or os.path.basename(self.argv[0])
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._next_id = 1
        self._commands: set[str] | None = None
        self._closed_reason: str | None = None
        if start:
            self.start()

    # ----------------------------------------------------------------- process

    @property
    def pid(self) -> int | None:
        """Process id of the running engine, or None."""
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        """True while the process runs and its output is still open."""
        return self._proc is not None and self._proc.poll() is None and self._closed_reason is None

    def start(self) -> None:
        """Start the engine process. Raises EngineDied if it cannot be started."""
        if self._proc is not None:
            raise RuntimeError(f"{self.label}: already started")
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                cwd=self._cwd,
                env=self._env,
                start_new_session=True,
            )
        except OSError as exc:
            raise EngineDied(f"{self.label}: cannot start {self.argv!r}: {exc}") from exc
        self._proc = proc
        self._lines = queue.Queue()
        self._next_id = 1
        self._commands = None
        self._closed_reason = None
        self._stderr_tail.clear()
        self._threads = [
            threading.Thread(target=self._read_stdout, args=(proc, self._lines), daemon=True),
            threading.Thread(target=self._read_stderr, args=(proc,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _read_stdout(proc: subprocess.Popen[str], lines: queue.Queue[object]) -> None:
        assert proc.stdout is not None
        with contextlib.suppress(OSError, ValueError):  # pipe closed under us by close()
            for line in proc.stdout:
                lines.put(line)
        lines.put(_EOF)

    def _read_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        try:
            for line in proc.stderr:
                self._stderr_tail.append(line.rstrip("\r\n"))
        except (OSError, ValueError):
            pass

    def stderr_tail(self) -> str:
        """The engine's last stderr lines (for error messages)."""
        return "\n".join(self._stderr_tail)

    def _died(self, what: str) -> EngineDied:
        """Build an EngineDied for the current process (waiting briefly for its status)."""
        returncode = None
        if self._proc is not None:
            try:
                returncode = self._proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                returncode = None
        self._closed_reason = self._closed_reason or what
        message = f"{self.label}: {what}"
        if returncode is not None:
            message += f" (exit code {returncode})"
        tail = self.stderr_tail()
        if tail:
            message += "\n  stderr: " + "\n  stderr: ".join(tail.splitlines()[-5:])
        return EngineDied(message, returncode)

    # ---------------------------------------------------------------- commands

    def send(self, command: str, timeout: float | None | Literal["default"] = "default") -> str:
        """Send one command and return the reply text (without ``=`` and id).

        Multi-line replies are returned joined by newlines. ``timeout`` is in
        seconds; ``None`` waits forever; by default ``default_timeout``.
        Raises GTPError for a ``?`` reply, EngineTimeout (after killing the
        engine) when the reply is late, EngineDied if the engine is gone.
        """
        return self.request(command, timeout).wait()

    def request(self, command: str, timeout: float | None | Literal["default"] = "default") -> PendingReply:
        """Send one command and return at once: the reply is read later with
        ``PendingReply.poll()`` (never blocks) or ``wait()``, which raise as ``send``
        does. Only one request may be pending at a time. Raises EngineDied at once
        if the engine is gone."""
        command = " ".join(command.split())
        if not command:
            raise ValueError("empty GTP command")
        if self._proc is None:
            raise EngineDied(f"{self.label}: not started")
        if not self.alive:
            raise self._died(self._closed_reason or "engine is not running")
        limit = self.default_timeout if timeout == "default" else timeout
        command_id = self._next_id
        self._next_id += 1
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(f"{command_id} {command}\n")
            self._proc.stdin.flush()
        except (OSError, ValueError):
            raise self._died(f"engine closed its input while sending {command!r}") from None
        return PendingReply(self, command, command_id, None if limit is None else float(limit))

    def _take_line(self, command: str, deadline: float | None, limit: float | None, block: bool) -> str | None:
        """The next stdout line; None when ``block`` is False and none is there yet.
        Raises EngineTimeout (killing the engine) past ``deadline``, EngineDied at EOF."""
        try:
            if block:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                item = self._lines.get(timeout=remaining)
            else:
                item = self._lines.get_nowait()
        except queue.Empty:
            if not block and (deadline is None or time.monotonic() < deadline):
                return None
            self._kill()
            self._closed_reason = f"timed out on {command!r}"
            raise EngineTimeout(
                f"{self.label}: no reply to {command!r} within {limit:g} s; engine killed"
            ) from None
        if item is _EOF:
            raise self._died(f"engine exited while answering {command!r}")
        assert isinstance(item, str)
        return item.rstrip("\r\n").replace("\r", "")

    def known_commands(self) -> set[str]:
        """Command names from ``list_commands`` (cached until restart)."""
        if self._commands is None:
            self._commands = {
                line.strip() for line in self.send("list_commands").splitlines() if line.strip()
            }
        return self._commands

    def knows(self, name: str) -> bool:
        """True if ``name`` is in the engine's ``list_commands``."""
        return name in self.known_commands()

    # ---------------------------------------------------------------- lifetime

    def _kill(self) -> None:
        """Kill the engine's process group at once."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass

    def kill(self) -> None:
        """Kill the engine at once; a ``send`` in progress in another thread sees EngineDied."""
        self._closed_reason = self._closed_reason or "killed"
        self._kill()

    def close(self, grace: float = 2.0) -> int | None:
        """Stop the engine: ``quit``, wait ``grace`` seconds, then terminate, then kill.

        An engine that is not answering (after a timeout or death) is not sent
        ``quit``. Safe to call more than once. Returns the exit code if known.
        """
        proc = self._proc
        if proc is None:
            return None
        if self.alive:
            try:
                self.send("quit", timeout=grace)
            except (GTPError, EngineError):
                pass
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                proc.terminate()
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self._kill()
        for thread in self._threads:
            thread.join(timeout=1.0)
        for stream in (proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except (OSError, ValueError):
                pass
        self._closed_reason = self._closed_reason or "closed"
        return proc.returncode

    def restart(self, grace: float = 2.0) -> None:
        """Close the engine (if still running) and start a fresh process."""
        self.close(grace)
        self._proc = None
        self.start()

    def __enter__(self) -> GTPClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.alive else (self._closed_reason or "not started")
        return f"GTPClient({self.label!r}, pid={self.pid}, {state})"


class PendingReply:
    """The reply to one command sent with ``GTPClient.request``, read without blocking.

    Lines before a reply that do not start with ``=``/``?`` are skipped
    (tolerating chatty engines), as are complete replies carrying another id
    (late answers to earlier commands). A reply without an id is taken as the
    answer (engines need not echo ids). ``limit`` (seconds, None: no limit)
    counts from the request.
    """

    def __init__(self, client: GTPClient, command: str, command_id: int, limit: float | None) -> None:
        self.client = client
        self.command = command
        self.command_id = command_id
        self.limit = limit
        self.sent = time.monotonic()
        self.deadline = None if limit is None else self.sent + limit
        self._status: str | None = None     # "=" or "?" once the reply's first line came
        self._id = ""
        self._body: list[str] = []

    def poll(self) -> str | None:
        """The reply text once complete, else None (never blocks). Raises GTPError for a
        ``?`` reply, EngineTimeout past the limit (the engine is killed), EngineDied."""
        return self._read(block=False)

    def wait(self) -> str:
        """Blocks until the reply is complete; returns or raises as ``poll``."""
        text = self._read(block=True)
        assert text is not None
        return text

    def _read(self, block: bool) -> str | None:
        while True:
            line = self.client._take_line(self.command, self.deadline, self.limit, block)
            if line is None:
                return None
            if self._status is None:
                match = _REPLY_START.match(line.strip())
                if match is not None:
                    self._status, self._id, first = match.groups()
                    self._body = [first or ""]
                continue
            if line.strip() != "":
                self._body.append(line)
                continue
            status, reply_id, body = self._status, self._id, self._body
            self._status, self._id, self._body = None, "", []
            if reply_id and int(reply_id) != self.command_id:
                continue
            text = "\n".join(body).strip()
            if status != "=":
                raise GTPError(self.command, text)
            return text
