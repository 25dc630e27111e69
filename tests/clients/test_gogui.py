"""GoGui 1.6 as a real client: gogui-regress over tests/gogui/engine.tst, gogui-twogtp games
against GNU Go, and the GoGui window under Xvfb running every one of our analyze commands.

GoGui reads a reply as ``=`` (or ``?``), the id, ONE space, then the body: it splits the reply
at its first space.  A reply written ``=\\n`` before a multi-line body loses the body's first
token, and GoGui's string-board parser refused our ``dboard`` commands ("Incomplete string
board" in a "malformed response" dialog).  Each test here fails on such a reply form:
gogui-regress matches the bodies it reads against full-body patterns, the GoGui window opens its
error dialog, and gogui-twogtp's own transcript (``-verbose``, every reply as it read it) is
checked for ``= `` heads (twogtp itself never reads a reply of ours that holds a space, so it
would play on).

GoGui is not part of the project (GPL-3; a test peer only).  Its jars (gogui.jar,
gogui-regress.jar, gogui-twogtp.jar, built from its source with ant) are looked for in
``$GOGUI_DIR``, then ``../shared/peers/gogui`` next to the repository, then ``/work/gogui``
(each folder or its ``lib/``).  Needs java (``apt-get install default-jre``); twogtp needs
/usr/games/gnugo (``gnugo``); the window needs Xvfb, xdotool (``xvfb xdotool``).  A test skips,
saying what is missing, without them.  ``GOENGINE_GUI_SCREENSHOTS=DIR`` runs the window test
with the shipped net and copies GoGui's board with the policy heatmap to DIR/gogui-9x9.png
(docs/gogui-9x9.png was made so).  Budgets are commands, games and visits; the timeouts are
hang guards."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.gtp.analysis import AnalysisCommands
from tests.clients.test_gui_clients import (START_TIMEOUT, GuiSession, Transcript, missing,
                              xvfb)  # noqa: F401  (xvfb: the X server fixture)

pytestmark = pytest.mark.slow          # GoGui under Xvfb, gogui-regress and gogui-twogtp games against GNU Go

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "gogui"
REGRESSION_FILE = DATA / "engine.tst"
GNUGO = Path("/usr/games/gnugo")
JARS = ("gogui.jar", "gogui-regress.jar", "gogui-twogtp.jar")
HANG = 600                     # seconds: a hang guard for a whole gogui-regress or twogtp run


# -- finding GoGui -------------------------------------------------------------------------------
def gogui_dirs() -> list[Path]:
    """Where the jars are looked for, in order."""
    dirs = [Path(os.environ["GOGUI_DIR"])] if os.environ.get("GOGUI_DIR") else []
    return dirs + [ROOT.parent / "shared" / "peers" / "gogui", Path("/work/gogui")]


def find_gogui() -> Path | None:
    """The first folder (or its lib/) holding all of JARS, or None."""
    for folder in gogui_dirs():
        for candidate in (folder, folder / "lib"):
            if all((candidate / jar).is_file() for jar in JARS):
                return candidate
    return None


@pytest.fixture(scope="module")
def gogui() -> Path:
    """GoGui's jar folder; skips without java or the jars."""
    reason = missing([("java", "default-jre")])
    if reason:
        pytest.skip(reason)
    folder = find_gogui()
    if folder is None:
        pytest.skip(f"no GoGui jars ({', '.join(JARS)}) in "
                    f"{', '.join(str(d) for d in gogui_dirs())}: build GoGui 1.6 from its source "
                    "(github.com/Remi-Coulom/gogui, ant) and set GOGUI_DIR")
    return folder


def program(args: list[str]) -> str:
    """``python -m engine ARGS`` as one GoGui command line (GoGui splits it at spaces and
    honours double quotes)."""
    words = [sys.executable, "-m", "engine", *args]
    return " ".join(f'"{w}"' if re.search(r"\s", w) else w for w in words)


def engine_env() -> dict[str, str]:
    """The environment of a Java tool that starts the engine: the engine imports from ROOT
    whatever folder the tool starts it in."""
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


# -- gogui-regress -------------------------------------------------------------------------------
REGRESS_ENGINE = ["--size", "9", "--weights", "uniform", "--seed", "1", "--threads", "1",
                  "--visits", "8", "--quiet"]


def regression_tests() -> list[tuple[int, str, str]]:
    """(id, command, pattern) of the tests of REGRESSION_FILE; the pattern keeps its trailing
    ``*`` (an expected failure)."""
    tests, last = [], None
    for line in REGRESSION_FILE.read_text().splitlines():
        line = line.strip()
        if line.startswith("#?"):
            assert last is not None, f"a pattern without a numbered command: {line}"
            tests.append((last[0], last[1], line[2:].strip()))
            last = None
        elif line and not line.startswith("#"):
            m = re.match(r"^(\d+) (.*)$", line)
            last = (int(m.group(1)), m.group(2)) if m else None
    return tests


def test_the_regression_file_covers_every_analyze_command():
    """Test 10 expects exactly the engine's gogui-analyze_commands list, and every command in
    it is a test of its own (so a command added to the engine needs a test here)."""
    tests = regression_tests()
    listed = next(p for _, c, p in tests if c == "gogui-analyze_commands")
    assert listed[1:-1].replace(r"\n", "\n") == "\n".join(AnalysisCommands.ANALYZE_COMMANDS)
    tested = {c.split()[0] for _, c, _ in tests}
    for entry in AnalysisCommands.ANALYZE_COMMANDS:
        name = entry.split("/")[2].split()[0]
        assert name in tested, f"{name} has no test in {REGRESSION_FILE.name}"
    assert {"play", "genmove", "undo", "loadsgf", "final_score"} <= tested
    ids = [i for i, _, _ in tests]
    assert len(ids) == len(set(ids)), "test ids repeat"


def test_gogui_regress(gogui, tmp_path):
    """gogui-regress runs engine.tst: every test passes, every expected failure is a refusal
    with a message, nothing else fails."""
    tests = regression_tests()
    expected_failures = [i for i, _, p in tests if p.endswith("*")]
    out = tmp_path / "regress"
    out.mkdir()
    run = subprocess.run(
        ["java", "-jar", str(gogui / "gogui-regress.jar"), "-long", "-output", str(out),
         program(REGRESS_ENGINE), str(REGRESSION_FILE)],
        cwd=tmp_path, env=engine_env(), capture_output=True, text=True, timeout=HANG)
    report = f"gogui-regress (exit {run.returncode}):\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    summary = (out / "summary.dat").read_text().splitlines() if (out / "summary.dat").exists() \
        else []
    assert len(summary) == 2, report
    columns = dict(zip(summary[0].lstrip("#").split("\t"), summary[1].split("\t")))
    # FAIL: unexpected failures, fail: expected ones, PASS: unexpected passes, pass: expected
    # ones, Error: a failed setup command
    counts = {k: int(columns[k]) for k in ("Tests", "FAIL", "fail", "PASS", "pass", "Error")}
    assert counts == {"Tests": len(tests), "FAIL": 0, "fail": len(expected_failures), "PASS": 0,
                      "pass": len(tests) - len(expected_failures), "Error": 0}, report
    assert run.returncode == 0, report
    # the expected failures: "? message" replies (the engine's own refusals)
    refused = dict(re.findall(r"^(\d+) failed: Correct '\.\*', got '(.*)'$", run.stdout, re.M))
    assert sorted(map(int, refused)) == expected_failures, report
    for ident, message in refused.items():
        assert message and "internal error" not in message, (ident, message)
    assert (out / "engine.html").exists() and (out / "index.html").exists()


# -- gogui-twogtp --------------------------------------------------------------------------------
def read_dat(path: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    """gogui-twogtp's result table: its "# Key: value" properties and its rows by column."""
    properties, columns, rows = {}, None, []
    for line in path.read_text().splitlines():
        if line.startswith("#GAME"):
            columns = line[1:].split("\t")
        elif line.startswith("# ") and ":" in line:
            key, value = line[2:].split(":", 1)
            properties[key] = value.strip()
        elif line.strip() and not line.startswith("#"):
            rows.append(dict(zip(columns, line.split("\t"))))
    return properties, rows


@pytest.mark.gnugo
def test_gogui_twogtp_against_gnugo(gogui, tmp_path):
    """Two 9x9 games against GNU Go level 1, colours alternating: both end (two passes or a
    resignation) without an error, with our final_score read as a result; every reply of
    ours that twogtp read starts "= " or "? "."""
    reason = missing([], [(GNUGO, "gnugo")])
    if reason:
        pytest.skip(reason)
    prefix = tmp_path / "match"
    ours = program(["--size", "9", "--weights", "random", "--seed", "1", "--threads", "1",
                    "--visits", "8", "--quiet"])
    run = subprocess.run(
        ["java", "-jar", str(gogui / "gogui-twogtp.jar"), "-black", ours,
         "-white", f"{GNUGO} --mode gtp --level 1", "-games", "2", "-alternate", "-size", "9",
         "-komi", "7", "-auto", "-sgffile", str(prefix), "-verbose"],
        cwd=tmp_path, env=engine_env(), capture_output=True, text=True, timeout=HANG)
    report = f"gogui-twogtp (exit {run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert run.returncode == 0, report
    properties, rows = read_dat(Path(f"{prefix}.dat"))
    assert properties["Black"] == "goengine", properties
    assert properties["BlackVersion"] == engine.__version__, properties
    assert [r["GAME"] for r in rows] == ["0", "1"], rows
    assert [r["ALT"] for r in rows] == ["0", "1"], rows          # we play Black, then White
    for row in rows:
        assert row["ERR"] == "0", row
        assert re.fullmatch(r"[BW]\+([0-9]+(\.[0-9]+)?|R|Resign)|0", row["RES_B"]), row
        assert int(row["LEN"]) > 0, row
    for game, (black, white) in enumerate([("goengine", "GNU Go"), ("GNU Go", "goengine")]):
        sgf = Path(f"{prefix}-{game}.sgf").read_text()
        assert f"PB[{black}]" in sgf and f"PW[{white}]" in sgf, sgf[:300]
    # twogtp's transcript of our engine ("B>> command", "B<< reply line"): the first line of
    # each reply is "= body" or "? message" (twogtp sends no ids)
    heads, waiting = [], False
    for line in run.stderr.splitlines():
        if line.startswith("B>> "):
            waiting = True
        elif line.startswith("B<< ") and waiting:
            heads.append(line[4:])
            waiting = False
    assert len(heads) > 20, report
    bad = [h for h in heads if not re.match(r"^[=?] ", h)]
    assert not bad, f"replies not in '= body' form: {bad[:5]}"


# -- the GoGui window ----------------------------------------------------------------------------
SGF = DATA / "opening9.sgf"             # six moves; GoGui opens it at its end (-move 6)
LAST_MOVE = "play W G6"
FIELD = 56                              # pixels per point: a board of about 530 pixels
ANALYZE_WINDOW = (764, 0, 260, 400)     # x, y, width, height of GoGui's Analyze window
SELECTED, FOCUSED = (184, 207, 229), (99, 130, 191)   # a selected row: background, focus border


class GoGui(GuiSession):
    """GoGui 1.6 attached to ``python -m engine`` with the position of SGF, its preferences
    (~/.gogui-prefs: board size, field size, window places, the Analyze window shown) in a home
    directory of its own."""

    # the main window ("GoGui" at first, then the file's name and players), the Analyze window,
    # the parameter dialog of "Engine parameters" and Java's helper windows; anything else is
    # a dialog that must not open (GoGui's message dialogs, "malformed response", "not
    # responding", have a blank title)
    quiet_titles = re.compile(r"^(GoGui|opening9\.sgf .*|Analyze|Engine parameters|"
                              r"Content window|FocusProxy)$")

    def __init__(self, xvfb, workdir: Path, jar: Path, engine_args: list[str]):
        home = workdir / "home"
        home.mkdir()
        self.log = Transcript(workdir / "engine.log")
        x, y, width, height = ANALYZE_WINDOW
        prefs = {
            "net.sf.gogui.gogui.boardsize": 9,
            "net.sf.gogui.gogui.windows/main/size-9/fieldsize": FIELD,
            "net.sf.gogui.gogui.session.main-9.x": 0,
            "net.sf.gogui.gogui.session.main-9.y": 0,
            "net.sf.gogui.gogui.session.show-analyze": "true",
            "net.sf.gogui.gogui.session.analyze-9.x": x,
            "net.sf.gogui.gogui.session.analyze-9.y": y,
            "net.sf.gogui.gogui.session.analyze-9.width": width,
            "net.sf.gogui.gogui.session.analyze-9.height": height,
        }
        (home / ".gogui-prefs").write_text("".join(f"{k}={v}\n" for k, v in prefs.items()))
        super().__init__(xvfb, workdir,
                         ["java", f"-Duser.home={home}", "-jar", str(jar),
                          "-program", self.engine_command(engine_args), "-size", "9",
                          "-computer-none", "-move", "6", str(SGF)],
                         cwd=ROOT, home=home)

    def reply(self, command: str) -> str | None:
        """The first line of the engine's reply to the last ``command`` sent, or None."""
        lines = self.log.lines()
        sent = [i for i, (way, text) in enumerate(lines) if way == "<<" and text == command]
        if not sent:
            return None
        return next((text for way, text in lines[sent[-1] + 1:] if way == ">>"), None)

    def geometry(self, window: str) -> tuple[int, int, int, int]:
        text = self.xvfb.xdotool("getwindowgeometry", window)
        x, y = map(int, re.search(r"Position: (-?\d+),(-?\d+)", text).groups())
        w, h = map(int, re.search(r"Geometry: (\d+)x(\d+)", text).groups())
        return x, y, w, h


def changed_pixels(before: np.ndarray, after: np.ndarray, box: tuple[int, int, int, int]) -> int:
    """Pixels inside box (x, y, width, height) that changed visibly."""
    x, y, w, h = box
    a = before[y:y + h, x:x + w].astype(int)
    b = after[y:y + h, x:x + w].astype(int)
    return int(np.count_nonzero(np.abs(a - b).sum(axis=2) > 60))


def test_gogui_window_runs_every_analyze_command(gogui, xvfb, tmp_path):
    """GoGui opens a position, sends it to the engine, and draws each analyze command's reply
    (run from its Analyze window) on the board; the parameter dialog of "Engine parameters"
    sets a value back; no error dialog ever opens."""
    screenshots = os.environ.get("GOENGINE_GUI_SCREENSHOTS")
    # the shipped net for the picture (fp32: no precision measurement before the engine
    # answers GoGui's first command, which GoGui gives 15 s); else no net at all, in full
    # batches (searched one visit at a time, a uniform net's 8 visits fall on 2 points: too
    # few visit-count labels to see; in one batch they spread over 8)
    net = ["--precision", "fp32"] if screenshots else ["--weights", "uniform", "--batch-ramp", "0"]
    window = GoGui(xvfb, tmp_path, gogui / "gogui.jar",
                   ["--size", "9", "--seed", "1", "--threads", "1", "--visits", "8",
                    "--quiet"] + net)
    try:
        analyze = window.wait_for("GoGui's Analyze window", lambda: window.window("^Analyze$"),
                                  START_TIMEOUT)
        main = window.wait_for("GoGui's main window", lambda: window.window(r"^opening9\.sgf "))
        window.wait_for(f"the position sent to the engine ({LAST_MOVE})",
                        lambda: window.reply(LAST_MOVE), START_TIMEOUT)
        assert window.reply(LAST_MOVE).startswith("="), window.reply(LAST_MOVE)
        assert not window.log.failures(), window.log.failures()
        mx, my, mw, mh = window.geometry(main)
        board = (mx, my + 70, mw, mh - 100)                 # without menus, tool and status bars
        ax, ay, aw, _ = window.geometry(analyze)
        column = ax + aw - 20                              # right of the labels in the list
        window.xvfb.xdotool("mousemove", str(ax + 40), str(ay + 8))   # off the board
        bare = steady(window, board)
        # a first click activates the Analyze window (which hands the focus to its history
        # box); a click on the list's first row then selects it and gives the list the
        # keyboard focus, and the row's highlight tells the rows' height
        # (under load a click that comes before the window is ready is lost: click again)
        for attempt in range(6):
            window.xvfb.xdotool("mousemove", str(ax + 40), str(ay + 200), "click", "1")
            window.xvfb.xdotool("mousemove", str(ax + 40), str(ay + 8), "click", "1")
            first = window.wait_for("the first command selected", lambda: focused_row(
                xvfb.screenshot(), column, ay, ay + 200), timeout=30, fail=attempt == 5)
            if first:
                break
        top, bottom = first
        row = bottom - top + 1
        # what a reply draws on the board, in changed pixels at least (measured: the uniform
        # policy's heatmap and labels cover every empty point, about 90,000; ownership 5,000,
        # a variation's stone 2,000, visit-count labels 200); with the shipped net
        # (screenshots) the heatmap's squares are small but for a few points
        drawn = {"dboard": 1_000, "gfx": 1_000, "pspairs": 100, "var": 500}
        covering = set() if screenshots else {"goengine-policy", "goengine-policy_gfx"}
        for k, entry in enumerate(AnalysisCommands.ANALYZE_COMMANDS):
            kind, label, command = entry.split("/")
            gtp = command.replace("%m", "b")                # Black is to move
            sent_before = len(window.log.commands())
            # a click selects the k-th row (a click on another row: never a double click,
            # which would run it); with the focus in the Analyze window, Clear (alt+c) wipes
            # the last command's drawing and Run (alt+r) runs the selected command
            if k > 0:
                window.xvfb.xdotool("mousemove", str(ax + 40), str(top + k * row + row // 2),
                                    "click", "1")
                window.wait_for(f"{label} selected", lambda: (focused_row(
                    xvfb.screenshot(), column, ay, ay + 200) or (0, 0))[0] == top + k * row)
            window.xvfb.xdotool("key", "alt+c")
            window.wait_for("the board cleared", lambda: changed_pixels(
                bare, xvfb.screenshot(), board) < 50)
            window.xvfb.xdotool("key", "alt+r")
            window.wait_for(f"{label}: {gtp} sent", lambda: any(
                c == gtp for _, c in window.log.commands()[sent_before:]))
            answer = window.wait_for(f"the reply to {gtp}", lambda: window.reply(gtp))
            assert answer.startswith("="), (gtp, answer)
            if kind == "param":
                # GoGui parsed the parameters into a dialog: Tab Tab from its OK button (the
                # focus) reaches the first field (visits, 8); a new value goes back to the
                # engine as goengine-param
                dialog = window.wait_for("the parameter dialog",
                                         lambda: window.window("^Engine parameters$"))
                steady(window, window.geometry(dialog))
                window.xvfb.xdotool("key", "Tab", "Tab", "ctrl+a")
                window.xvfb.xdotool("type", "9")
                window.xvfb.xdotool("key", "Return")
                window.wait_for("goengine-param visits 9",
                                lambda: window.reply(f"{command} visits 9"))
                assert window.reply(f"{command} visits 9").startswith("=")
                window.wait_for("the parameter dialog closed",
                                lambda: window.window("^Engine parameters$") is None)
            else:
                # GoGui parsed the reply and drew it (a malformed one opens a dialog instead,
                # which wait_for reports)
                least = 40_000 if command.split()[0] in covering else drawn[kind]
                window.wait_for(f"{label} drawn on the board", lambda: changed_pixels(
                    bare, xvfb.screenshot(), board) > least)
                if screenshots and k == 0:                     # docs/gogui-9x9.png
                    steady(window, board)
                    shot = window.save_screenshot("gogui-9x9.png", crop=(mx, my, mw, mh))
                    shutil.copy(shot, Path(screenshots) / shot.name)
            window.check_no_dialog()
        assert not window.log.failures(), window.log.failures()
        window.check_no_dialog()
    finally:
        window.close()


def focused_row(image: np.ndarray, x: int, y0: int, y1: int) -> tuple[int, int] | None:
    """(first, last) y, between y0 and y1 in column x, of the list's selected row once the list
    has the keyboard focus (the row's focus border drawn at its top), or None."""
    pixels = image[y0:y1, x]
    ys = np.nonzero(np.any([np.all(pixels == np.array(colour, dtype=np.uint8), axis=1)
                            for colour in (SELECTED, FOCUSED)], axis=0))[0]
    if not len(ys) or tuple(pixels[ys.min()]) != FOCUSED:
        return None
    return y0 + int(ys.min()), y0 + int(ys.max())


def steady(window: GoGui, box: tuple[int, int, int, int]) -> np.ndarray:
    """The screen once box looked the same on three looks in a row (wait_for polls every
    quarter second): painted."""
    shots = []

    def still() -> bool:
        shots.append(window.xvfb.screenshot())
        return len(shots) >= 3 and all(changed_pixels(shots[-1], shot, box) == 0
                                       for shot in shots[-3:-1])
    window.wait_for("a steady board", still)
    return shots[-1]
