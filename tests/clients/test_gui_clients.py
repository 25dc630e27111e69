"""Real GUI clients drive the engine under Xvfb: Lizzie 0.7.4 (Debian's liblizzie-java) and
Quarry 0.2.0 (Debian's quarry), each with its own configuration naming ``python -m engine``.

The tests follow the engine's own GTP transcript (``--log``) and the X server.  Lizzie: its
start-up commands are answered (``version`` included: see engine/__init__.py), ``lz-analyze``
streams ``info`` lines that Lizzie reads (its window title counts their playouts) and draws on
the board, a click on the board's centre reaches the engine as ``play`` and analysis goes on.
Quarry: a new game against the engine, a click on the centre, the engine's ``genmove`` answer
drawn as a white stone.  No dialog (Lizzie's version refusal, an engine error) may open.  Every
wait is for an event with a generous deadline, so a slow machine only makes them slower.

Needs Xvfb and xdotool, and java with /usr/share/java/lizzie.jar or /usr/games/quarry
(``apt-get install xvfb xdotool x11-utils liblizzie-java quarry``); a test skips, saying what is missing,
without them.  ``GOENGINE_GUI_SCREENSHOTS=DIR`` copies Lizzie's board with analysis to DIR
(docs/lizzie-9x9.png was made so)."""
from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import engine

pytestmark = pytest.mark.slow          # Lizzie and Quarry under Xvfb

ROOT = Path(__file__).resolve().parents[2]
LIZZIE_JAR = Path("/usr/share/java/lizzie.jar")
SCREEN = (1024, 768)
START_TIMEOUT = 300.0                      # Java, and the engine, on a loaded machine
EVENT_TIMEOUT = 180.0


def lizzie_accepts_version(answer: str) -> bool:
    """Lizzie 0.7.4's check of the ``version`` answer of an engine whose ``name`` does not start
    with "KataGo" (featurecat.lizzie.analysis.Leelaz.parseLine): the answer's second dotted field,
    as an int, must be >= 15 (Leela Zero 0.15 brought lz-analyze), else a modal dialog refuses
    analysis; an answer without a dot or with a non-numeric second field stops its reader."""
    fields = answer.split(" ")[0].split(".")
    return len(fields) >= 2 and re.fullmatch(r"[+-]?[0-9]+", fields[1]) is not None \
        and int(fields[1]) >= 15


def test_version_is_one_lizzie_accepts():
    assert lizzie_accepts_version(engine.__version__), engine.__version__
    assert not lizzie_accepts_version("0.1.0") and not lizzie_accepts_version("1.0.0")
    assert lizzie_accepts_version("0.17") and not lizzie_accepts_version("2")
    setup = (ROOT / "setup.py").read_text()
    assert re.search(r'version="([^"]+)"', setup).group(1) == engine.__version__


# -- the X server --------------------------------------------------------------------------------
class Xvfb:
    """An Xvfb server on a free display, its screen readable as a file (-fbdir, XWD format).

    ``-noreset``: by default an X server resets when its last client disconnects, and a client
    that connects during the reset is refused.  The tests' own xdotool calls are often the only
    client, so without it the GUI client started next failed now and then, at once and before
    starting the engine (Lizzie: "Can't connect to X11 window server using ':0'"; Quarry: exit
    status 253, no output)."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.root: list[str] | None = None          # the root window's id, once asked
        for attempt in range(3):          # a server that dies at once is started again
            if self._start(attempt):
                return
            self.close()
        raise RuntimeError("Xvfb did not start:\n" + self.errors())

    def _start(self, attempt: int) -> bool:
        self.fbdir = self.workdir / f"xvfb{attempt}"
        self.fbdir.mkdir()
        self.log = self.workdir / f"xvfb{attempt}.log"
        read_end, write_end = os.pipe()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                ["Xvfb", "-displayfd", str(write_end), "-screen", "0",
                 f"{SCREEN[0]}x{SCREEN[1]}x24", "-fbdir", str(self.fbdir), "-nolisten", "tcp",
                 "-noreset"],
                pass_fds=(write_end,), stdout=log, stderr=log, start_new_session=True)
        os.close(write_end)
        answer, deadline = b"", time.monotonic() + 60
        try:        # Xvfb writes the display number and a newline once it accepts clients
            while not answer.endswith(b"\n") and time.monotonic() < deadline:
                if select.select([read_end], [], [], 1)[0]:
                    chunk = os.read(read_end, 64)
                    if not chunk:
                        break
                    answer += chunk
        finally:
            os.close(read_end)
        number = answer.decode().strip()
        if not number.isdigit():
            return False
        self.display = ":" + number
        self.env = dict(os.environ, DISPLAY=self.display)
        while time.monotonic() < deadline:          # a client can connect
            if self.proc.poll() is not None:
                return False
            if subprocess.run(["xdotool", "getdisplaygeometry"], env=self.env,
                              capture_output=True, timeout=30).returncode == 0:
                return True
            time.sleep(0.5)
        return False

    def errors(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""

    def close(self) -> None:
        stop_group(self.proc)

    def screenshot(self) -> np.ndarray:
        """The screen as an (height, width, 3) uint8 RGB array."""
        data = (self.fbdir / "Xvfb_screen0").read_bytes()
        head = np.frombuffer(data[:100], dtype=">u4")
        header_size, width, height = int(head[0]), int(head[4]), int(head[5])
        bits_per_pixel, bytes_per_line, ncolors = int(head[11]), int(head[12]), int(head[19])
        assert bits_per_pixel == 32 and int(head[7]) == 0, "expected 32-bit LSB-first pixels"
        start = header_size + 12 * ncolors
        pixels = np.frombuffer(data, dtype=np.uint8, count=height * bytes_per_line, offset=start)
        pixels = pixels.reshape(height, bytes_per_line)[:, :width * 4].reshape(height, width, 4)
        return pixels[:, :, 2::-1].copy()          # B, G, R, X -> R, G, B

    def xdotool(self, *args: str) -> str:
        return subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True,
                              timeout=30).stdout

    def window_titles(self) -> list[str]:
        """The titles of the visible windows but the root window (untitled, always there), so
        that an untitled dialog (GoGui's error messages) shows as ""."""
        if not self.root:
            self.root = self.xdotool("search", "--maxdepth", "0", "--name", "").split()
        ids = [w for w in self.xdotool("search", "--onlyvisible", "--name", "").split()
               if w not in self.root]
        return [self.xdotool("getwindowname", w).rstrip("\n") for w in ids]


def stop_group(proc: subprocess.Popen) -> None:
    """Stop a process started with start_new_session=True and what it started (the engine)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=10)
            time.sleep(0.2)         # the group's other members go with SIGTERM too
        except subprocess.TimeoutExpired:
            continue


def test_the_x_server_does_not_reset_between_clients(xvfb):
    """A root-window property set by one client is still there for the next: the server did not
    reset when the first disconnected (see Xvfb)."""
    reason = missing([("xprop", "x11-utils")])
    if reason:
        pytest.skip(reason)
    subprocess.run(["xprop", "-root", "-f", "GOENGINE_PROBE", "8s", "-set", "GOENGINE_PROBE",
                    "kept"], env=xvfb.env, check=True, timeout=30)
    answer = subprocess.run(["xprop", "-root", "GOENGINE_PROBE"], env=xvfb.env,
                            capture_output=True, text=True, timeout=30).stdout
    assert answer.strip() == 'GOENGINE_PROBE(STRING) = "kept"', answer


# -- the engine's transcript ---------------------------------------------------------------------
class Transcript:
    """The engine's --log file: "HH:MM:SS << [id] command" and "HH:MM:SS >> reply" lines."""

    def __init__(self, path: Path):
        self.path = path

    def lines(self) -> list[tuple[str, str]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(errors="replace").splitlines():
            m = re.match(r"^\S+ (<<|>>) ?(.*)$", line)
            if m:
                out.append((m.group(1), m.group(2)))
        return out

    def commands(self) -> list[tuple[str, str]]:
        """(id, command) of every command received, in order."""
        out = []
        for way, text in self.lines():
            if way == "<<":
                m = re.match(r"^(\d*)\s*(.*)$", text)
                out.append((m.group(1), m.group(2)))
        return out

    def replies(self) -> dict[str, str]:
        """id -> the first line of its reply ("=id text" or "?id text")."""
        out = {}
        for way, text in self.lines():
            m = re.match(r"^([=?])(\d+)\s?(.*)$", text) if way == ">>" else None
            if m:
                out.setdefault(m.group(2), m.group(1) + " " + m.group(3))
        return out

    def failures(self) -> list[str]:
        """Every "?" reply: a command the engine refused."""
        return [t for w, t in self.lines() if w == ">>" and t.startswith("?")]

    def info_lines_after(self, command_pattern: str) -> int:
        """info lines the engine wrote after the last command matching command_pattern."""
        count, seen = 0, False
        for way, text in self.lines():
            if way == "<<" and re.search(command_pattern, text, re.I):
                count, seen = 0, True
            elif seen and way == ">>" and text.startswith("info "):
                count += 1
        return count

    def tail(self, n: int = 30) -> str:
        return "\n".join(f"{w} {t[:160]}" for w, t in self.lines()[-n:])


# -- GUI sessions --------------------------------------------------------------------------------
def missing(programs: list[tuple[str, str]], files: list[tuple[Path, str]] = ()) -> str | None:
    """Why a client cannot run here (program or file -> its Debian package), or None."""
    for program, package in programs:
        if shutil.which(program) is None:
            return f"{program} is not installed (apt-get install {package})"
    for path, package in files:
        if not path.exists():
            return f"no {path} (apt-get install {package})"
    return None


X_TOOLS = [("Xvfb", "xvfb"), ("xdotool", "xdotool")]


class GuiSession:
    """A GUI client on an Xvfb display driving ``python -m engine ... --log engine.log``.
    Subclasses write the client's configuration in a home directory of its own."""

    # titles of windows that are not dialogs; any other visible window fails the test
    quiet_titles = re.compile(r"^$")

    def __init__(self, xvfb: Xvfb, workdir: Path, argv: list[str], cwd: Path,
                 home: Path | None = None):
        self.xvfb = xvfb
        self.workdir = workdir
        self.log = Transcript(workdir / "engine.log")
        self.output = open(workdir / "client.out", "wb")
        env = dict(xvfb.env)
        if home is not None:        # the engine inherits it: keep its cache where it always is
            env["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME",
                                                   str(Path.home() / ".cache"))
            env["HOME"] = str(home)
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env,
                                     stdin=subprocess.DEVNULL, stdout=self.output,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def engine_command(self, args: list[str]) -> str:
        return " ".join([sys.executable, "-m", "engine", *args, "--log", str(self.log.path)])

    def close(self) -> None:
        stop_group(self.proc)          # the client and the engine it started
        self.output.close()

    def context(self) -> str:
        return (f"windows: {self.xvfb.window_titles()}\nXvfb ({self.xvfb.display}, "
                f"{'running' if self.xvfb.proc.poll() is None else 'ended'}): "
                f"{self.xvfb.errors()}\nengine transcript (last lines):\n"
                f"{self.log.tail()}\nthe client's output:\n"
                f"{(self.workdir / 'client.out').read_text(errors='replace')[-2000:]}")

    def check_no_dialog(self) -> None:
        dialogs = [t for t in self.xvfb.window_titles() if not self.quiet_titles.match(t)]
        if dialogs:
            self.save_screenshot("dialog.png")
            pytest.fail(f"the client opened a dialog: {dialogs}\n{self.context()}")

    def wait_for(self, what: str, predicate, timeout: float = EVENT_TIMEOUT, fail: bool = True):
        """Poll predicate until it returns something true; fail on a dialog or at the deadline
        (or there return None if not fail)."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            self.check_no_dialog()
            if self.proc.poll() is not None:
                pytest.fail(f"the client exited ({self.proc.returncode}) waiting for {what}\n"
                            f"{self.context()}")
            if time.monotonic() > deadline:
                if not fail:
                    return None
                self.save_screenshot("timeout.png")
                pytest.fail(f"no {what} within {timeout:.0f} s\n{self.context()}")
            time.sleep(0.25)

    def window(self, pattern: str) -> str | None:
        """The id of a visible window whose title matches pattern (re.search), or None."""
        for w in self.xvfb.xdotool("search", "--onlyvisible", "--name", "").split():
            if re.search(pattern, self.xvfb.xdotool("getwindowname", w)):
                return w
        return None

    def board(self, rgb: tuple[int, int, int]) -> tuple[int, int, int, int]:
        """The board's box once it has stopped moving: the same in two screenshots half a
        second apart (a window still being laid out on a loaded machine draws it elsewhere)."""
        last = None

        def settled():
            nonlocal last
            box = color_box(self.xvfb.screenshot(), rgb)
            same, last = box is not None and box == last, box
            if not same:
                time.sleep(0.5)
            return box if same else None
        return self.wait_for("the board", settled)

    def click_until(self, rgb: tuple[int, int, int], what: str, predicate,
                    timeout: float = EVENT_TIMEOUT, window: str | None = None):
        """Click the centre of the board (found by its colour rgb, again before every click)
        until predicate returns something true (a client busy starting may miss a click, or
        move its board; a second click on the stone a first one placed is ignored).
        window, if given, is raised before every click: with no window manager another
        window of the client may lie over the board.
        The button is held down a while (longer at every try), and the pointer stays on the
        board until predicate holds or 10 s pass: Quarry asks the server for the pointer's
        position and buttons when it handles the press and the release, instead of reading
        them from the events, and drops a click whose press it handled after the button was
        already up or whose release it handled with the pointer elsewhere (a loaded machine:
        its own handling lags).  The pointer leaves the board afterwards (no hover stone).
        Returns that value and the board's box at the click that made it true."""
        deadline = time.monotonic() + timeout
        hold = 0.5
        while True:
            if window:
                self.xvfb.xdotool("windowraise", window)
            box = self.board(rgb)
            x, y = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
            self.xvfb.xdotool("mousemove", "--sync", str(x), str(y))
            time.sleep(0.3)
            self.xvfb.xdotool("mousedown", "1")
            time.sleep(hold)
            self.xvfb.xdotool("mouseup", "1")
            hold = min(2 * hold, 4.0)
            last = time.monotonic() + 10 > deadline
            value = self.wait_for(what, predicate, 10.0, fail=last)
            self.xvfb.xdotool("mousemove", str(SCREEN[0] - 1), str(SCREEN[1] - 1))  # away
            if value:
                return value, box

    def save_screenshot(self, name: str, crop: tuple[int, int, int, int] | None = None) -> Path:
        from PIL import Image
        image = self.xvfb.screenshot()
        if crop:
            x, y, w, h = crop
            image = image[y:y + h, x:x + w]
        path = self.workdir / name
        Image.fromarray(image).save(path, optimize=True)
        return path


def color_box(image: np.ndarray, rgb: tuple[int, int, int]) -> tuple[int, int, int, int] | None:
    """(left, top, right, bottom) of the pixels of exactly this colour; None if few."""
    ys, xs = np.nonzero(np.all(image == np.array(rgb, dtype=np.uint8), axis=2))
    if len(xs) < 10_000:
        return None
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def count_pixels(image: np.ndarray, box: tuple[int, int, int, int], test) -> int:
    """Pixels of image inside box for which test(r, g, b) holds (on int arrays)."""
    left, top, right, bottom = box
    rgb = image[top:bottom + 1, left:right + 1].astype(int)
    return int(np.count_nonzero(test(rgb[..., 0], rgb[..., 1], rgb[..., 2])))


def dark_disc(image: np.ndarray, x: int, y: int, radius: float) -> float:
    """The fraction of dark pixels in the disc of this radius around (x, y): a black stone."""
    r = int(radius)
    patch = image[y - r:y + r + 1, x - r:x + r + 1].astype(int)
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    disc = xx * xx + yy * yy <= r * r
    return float(np.count_nonzero(np.all(patch < 90, axis=2) & disc) / np.count_nonzero(disc))


def vertex_name(col: int, row: int) -> str:
    return "ABCDEFGHJKLMNOPQRST"[col] + str(row + 1)


@pytest.fixture
def xvfb(tmp_path):
    reason = missing(X_TOOLS)
    if reason:
        pytest.skip(reason)
    server = Xvfb(tmp_path)
    yield server
    server.close()


# -- Lizzie --------------------------------------------------------------------------------------
LIZZIE_BOARD = (217, 152, 77)              # Lizzie's plain board colour ("fancy-board": false)
LIZZIE_WINDOW = (0, 0, 1024, 720)          # its main window: x, y, width, height


class Lizzie(GuiSession):
    """Lizzie 0.7.4 with a config file (engine command, board size) and a persist file
    (window position) in its home directory; the Debian package reads them from
    ~/.config/leela-zero/lizzie-config.txt and ~/.local/share/leela-zero/lizzie-persist."""

    # Lizzie's main frame ("Lizzie" or "Lizzie [engine command] N playouts ...") and the helper
    # windows Java's X11 toolkit maps ("Content window", "FocusProxy", untitled); a dialog is
    # "Message" (the version refusal), "Lizzie - Error!" (engine down) or anything else.
    quiet_titles = re.compile(r"^(Lizzie( \[.*)?|Content window|FocusProxy|)$")

    def __init__(self, xvfb: Xvfb, workdir: Path, size: int, engine_args: list[str]):
        home = workdir / "home"
        (home / ".config" / "leela-zero").mkdir(parents=True)
        (home / ".local" / "share" / "leela-zero").mkdir(parents=True)
        self.log = Transcript(workdir / "engine.log")
        config = {
            "leelaz": {"engine-command": self.engine_command(engine_args),
                       "engine-start-location": str(ROOT)},
            "ui": {"board-size": size, "fancy-board": False, "show-subboard": False,
                   "show-comment": False, "resume-previous-game": False, "confirm-exit": False},
        }
        (home / ".config" / "leela-zero" / "lizzie-config.txt").write_text(json.dumps(config))
        persist = {"ui-persist": {"main-window-position": list(LIZZIE_WINDOW),
                                  "window-maximized": False}}
        (home / ".local" / "share" / "leela-zero" / "lizzie-persist").write_text(
            json.dumps(persist))
        super().__init__(xvfb, workdir, ["java", f"-Duser.home={home}", "-jar", str(LIZZIE_JAR)],
                         cwd=workdir)

    def title_playouts(self) -> int:
        """The playouts Lizzie's title reports (it sums them from the info lines it parsed)."""
        for title in self.xvfb.window_titles():
            m = re.match(r"^Lizzie \[.*\] (\d+) playouts", title)
            if m:
                return int(m.group(1))
        return 0


@pytest.mark.parametrize("size", [9, 19])
def test_lizzie_analyses_and_plays(size, xvfb, tmp_path):
    reason = missing([("java", "default-jre")], [(LIZZIE_JAR, "liblizzie-java")])
    if reason:
        pytest.skip(reason)
    # The network is 'random' (deterministic pseudo-random outputs, no torch): the engine starts
    # in seconds.  Screenshots for the README use the shipped net, as a user would.
    screenshots = os.environ.get("GOENGINE_GUI_SCREENSHOTS")
    net = [] if screenshots else ["--weights", "random"]
    lizzie = Lizzie(xvfb, tmp_path, size,
                    ["--visits", "50", "--threads", "1", "--seed", "1", "--quiet"] + net)
    try:
        log = lizzie.log
        # start-up: name, version, boardsize, komi ... all answered, then lz-analyze
        lizzie.wait_for("lz-analyze", lambda: any(c.startswith("lz-analyze")
                                                   for _, c in log.commands()), START_TIMEOUT)
        commands, replies = log.commands(), log.replies()
        startup = commands[:[c.split()[0] for _, c in commands].index("lz-analyze")]
        assert [c for _, c in startup[:2]] == ["name", "version"], startup
        assert f"boardsize {size}" in [c for _, c in startup], startup
        for ident, command in startup:
            assert replies.get(ident, "?").startswith("="), (command, replies.get(ident))
        assert replies[startup[1][0]] == f"= {engine.__version__}"
        # analysis: info lines streamed and read by Lizzie (its title counts their playouts)
        lizzie.wait_for("info lines", lambda: log.info_lines_after(r"^\d* ?lz-analyze") >= 3)
        first = lizzie.wait_for("playouts in Lizzie's title", lizzie.title_playouts)
        lizzie.wait_for("more playouts in Lizzie's title", lambda: lizzie.title_playouts() > first)
        # ... and drawn: best-move circles in green to cyan on the board
        xvfb.xdotool("mousemove", str(SCREEN[0] - 1), str(SCREEN[1] - 1))
        box = lizzie.wait_for("the board", lambda: color_box(xvfb.screenshot(), LIZZIE_BOARD))
        lizzie.wait_for("analysis drawn on the board", lambda: count_pixels(
            xvfb.screenshot(), box, lambda r, g, b: (g > 150) & (g > r + 60)) > 200)
        if screenshots:                                   # docs/lizzie-9x9.png
            lizzie.wait_for("400 playouts", lambda: lizzie.title_playouts() >= 400)
            time.sleep(1)
            shot = lizzie.save_screenshot(f"lizzie-{size}x{size}.png", crop=LIZZIE_WINDOW)
            shutil.copy(shot, Path(screenshots) / shot.name)
        # a click on the board's centre reaches the engine as play
        centre = vertex_name(size // 2, size // 2)
        play, box = lizzie.click_until(LIZZIE_BOARD, f"play B {centre}", lambda: next(
            ((i, c) for i, c in log.commands() if c.lower().startswith("play")), None))
        assert play[1].lower() == f"play b {centre.lower()}", play
        lizzie.wait_for(f"a reply to {play[1]}", lambda: log.replies().get(play[0]))
        assert log.replies()[play[0]].startswith("="), log.replies()[play[0]]
        # analysis goes on after the move, and the stone is on the board
        lizzie.wait_for("info lines after the move", lambda: log.info_lines_after(
            r"^\d* ?play ") >= 3)
        spacing = (box[2] - box[0]) / (size + 0.5)
        x, y = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
        lizzie.wait_for("a black stone at the centre", lambda: dark_disc(
            xvfb.screenshot(), x, y, 0.4 * spacing) > 0.5)
        assert not log.failures(), log.failures()
        lizzie.check_no_dialog()
    finally:
        lizzie.close()


# -- Quarry --------------------------------------------------------------------------------------
QUARRY = Path("/usr/games/quarry")
QUARRY_BOARD = (0xdb, 0xb6, 0x65)          # its plain board colour ("Use background texture")


class Quarry(GuiSession):
    """Quarry 0.2.0 (GTK+ 2) with ~/.quarry naming the engine and the new game's players:
    Black the human (the test), White the engine."""

    # the control centre, the new-game dialog, the game window ("goengine 1.15.0 (W) vs.
    # tester"), untitled helper windows; anything else is a dialog
    quiet_titles = re.compile(r"^(Quarry Control Center|New Game|goengine .* vs\. tester.*|)$")

    def __init__(self, xvfb: Xvfb, workdir: Path, size: int, engine_args: list[str]):
        home = workdir / "home"
        home.mkdir()
        self.log = Transcript(workdir / "engine.log")
        (home / ".quarry").write_text(f"""# Quarry configuration file
[GTP Engine "goengine "]
Screen name format	= "%n %v"
Name			= "goengine"
Command line		= "{self.engine_command(engine_args)}"
Supported games		= "Go"

[Go Board Appearance]
Use background texture	= false
Background color	= "#{''.join(f'{c:02x}' for c in QUARRY_BOARD)}"

[New Game Parameters]
Game			= "Go"
White player name	= "goengine"
White is computer	= true
Engine playing white	= "goengine "
Black player name	= "tester"
Black is computer	= false

[New Go Game Parameters]
Board size		= {size}
Handicap is fixed	= true
Fixed handicap		= 0
Komi			= 7.5
Time control type	= 0
""")
        super().__init__(xvfb, workdir, [str(QUARRY)], cwd=ROOT, home=home)


def test_quarry_plays_a_move_against_the_engine(xvfb, tmp_path):
    reason = missing([], [(QUARRY, "quarry")])
    if reason:
        pytest.skip(reason)
    quarry = Quarry(xvfb, tmp_path, 9, ["--visits", "50", "--threads", "1", "--seed", "1",
                                        "--quiet", "--weights", "random"])
    try:
        log = quarry.log
        centre = quarry.wait_for("Quarry's control centre",
                                 lambda: quarry.window("^Quarry Control Center$"), START_TIMEOUT)
        xvfb.xdotool("windowfocus", "--sync", centre, "key", "alt+n")          # New Game
        dialog = quarry.wait_for("the New Game dialog", lambda: quarry.window("^New Game$"))
        first_page = xvfb.screenshot()
        xvfb.xdotool("windowfocus", "--sync", dialog, "key", "alt+f")          # Forward
        quarry.wait_for("the dialog's second page", lambda: not np.array_equal(
            xvfb.screenshot(), first_page))
        xvfb.xdotool("windowfocus", "--sync", dialog, "key", "alt+p")          # Play
        game = quarry.wait_for("the game window", lambda: quarry.window(r" vs\. tester"),
                               START_TIMEOUT)
        # Quarry shows the engine as "%n %v": our name and version
        assert xvfb.xdotool("getwindowname", game).startswith(
            f"goengine {engine.__version__} (W) vs. tester"), xvfb.xdotool("getwindowname", game)
        quarry.wait_for("komi", lambda: any(c == "komi 7.5" for _, c in log.commands()),
                        START_TIMEOUT)
        names = [c.split()[0] for _, c in log.commands()]
        for name in ("protocol_version", "name", "version", "list_commands", "boardsize",
                     "clear_board", "komi"):
            assert name in names, names
        assert not log.failures(), log.failures()
        # the board: a click on its centre plays E5, the engine answers genmove white
        _, box = quarry.click_until(QUARRY_BOARD, "play black E5", lambda: any(
            c.lower() == "play black e5" for _, c in log.commands()), window=game)
        quarry.wait_for("genmove white", lambda: any(
            c.lower() == "genmove white" for _, c in log.commands()))
        answer = quarry.wait_for("the engine's move", lambda: next(
            (t for w, t in log.lines() if w == ">>" and re.match(r"^= [A-T]\d+$", t)), None))
        # Quarry draws the engine's move: a white stone appears on the board
        # (light grey pixels: the board's own colour has little blue)
        quarry.wait_for(f"a white stone ({answer})", lambda: count_pixels(
            xvfb.screenshot(), box, lambda r, g, b: (r > 170) & (g > 170) & (b > 170)) > 300)
        assert not log.failures(), log.failures()
        quarry.check_no_dialog()
    finally:
        quarry.close()
