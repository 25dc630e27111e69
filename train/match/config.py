"""What a match is: its games' settings (:class:`GameSettings`), its engines
(:class:`EngineSpec`), the whole match (:class:`MatchConfig`) and one game of its schedule
(:class:`ScheduledGame`).  Plain values, read by :mod:`train.match.schedule` (which plays them) and
:mod:`train.match.report` (which sums them up).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from engine.core import Rules
from engine.play.settings import DEFAULT_RESIGN, PlaySettings
from engine.play.settings_cli import described
from engine.rules import DEFAULT_KOMI
from train.match.inproc import DEFAULT_INPROC_VISITS, InProcessSpec, parse_inproc
from train.match.stats import SPRT_ALPHA, SPRT_BETA

# The PlaySettings fields a match's (and the ladder's) command line gives: field -> option and
# the results file's settings key.
MATCH_PLAY_OPTIONS = {"visits": "visits", "resign": "resign"}
# The titles of python -m train.match's option groups.
ENGINES, GAMES, LIMITS, COUNTING, RECORDS = ("engines (a GTP command line, or inproc:NET[:visits=N,OPTION=V,...] "
                                             "for our net)", "games", "time limits", "counting and statistics",
                                             "records")


def inproc_play(visits: int = DEFAULT_INPROC_VISITS, resign: float = DEFAULT_RESIGN,
                max_moves: int | None = None) -> PlaySettings:
    """How a match's in-process engines search and play: ``visits`` (when their spec has no
    visits=), resignation below the winrate ``resign`` (0: never), no policy targets;
    ``max_moves`` is the match's move cap (None: :attr:`GameSettings.move_cap`'s 3 * size**2).
    Their search is their spec's (:meth:`train.match.inproc.InProcessSpec.search_params`: no
    noise)."""
    return PlaySettings(visits=visits, resign=resign, record_policy=False, max_moves=max_moves)


def parse_sprt(text: str) -> tuple[float, float]:
    """``--sprt ELO0,ELO1``: the SPRT's two hypotheses, elo0 < elo1."""
    try:
        elo0, elo1 = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ELO0,ELO1, got {text!r}") from None
    if not elo0 < elo1:
        raise argparse.ArgumentTypeError("need elo0 < elo1")
    return elo0, elo1


@dataclass(frozen=True)
class GameSettings:
    """Everything that defines a game apart from the players, and how our in-process engines
    play it.

    ``rules`` holds the komi.  ``play`` is how in-process engines search and play
    (:func:`inproc_play`): its ``visits`` their default search size, its ``resign`` their
    resignation winrate (0: never; the rule is ``engine.play.movepolicy.should_resign``), its
    ``max_moves`` the move cap of every game, counted after the handicap stones (None: 3 *
    size**2; :attr:`move_cap`); a game reaching it is scored like a finished one.
    ``move_time_limit`` is the hard per-move wall-clock limit in seconds (None: none); a player
    that exceeds it loses on time.
    """

    size: int = described(19, "board size, 2..19 (default 19)", group=GAMES)
    rules: Rules = described(Rules.default(), "rules preset", komi_help="komi in points",
                             komi_default=DEFAULT_KOMI, group=GAMES)
    handicap: int = described(0, "fixed handicap stones (default 0)", group=GAMES)
    play: PlaySettings = field(default_factory=inproc_play, metadata={
        "options": {**MATCH_PLAY_OPTIONS, "max_moves": "max_moves"},
        "helps": {"visits": "root visits per move of in-process engines without a visits= option",
                  "resign": "in-process engines resign below this root winrate (0: never)",
                  "max_moves": "move cap, then the game is counted (default 3*size*size)"},
        "kw": {"visits": {"group": ENGINES}, "resign": {"group": ENGINES}, "max_moves": {"group": GAMES}}})
    move_time_limit: float | None = None

    @property
    def max_moves(self) -> int | None:
        return self.play.max_moves

    @property
    def move_cap(self) -> int:
        return self.max_moves if self.max_moves is not None else 3 * self.size * self.size


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
    """A match or round robin: ``python -m train.match``'s command line gives these fields
    (:func:`train.match.cli.build_parser`).

    ``games`` is per pair of engines. ``move_time`` is announced to engines and
    ``move_time + time_margin`` is the hard per-move limit. ``sprt`` is
    (elo0, elo1) for the first engine over the second (two-engine matches);
    the match stops scheduling games once it is decided. ``seed`` fixes the
    random openings (the same list for both games of a colour-swapped pair).
    :attr:`play` is how in-process engines search and play: its ``settings``' (:class:`GameSettings`).
    ``resume`` keeps the finished games of ``results_path`` (a match with the same engines and
    settings; ``train.match.schedule.resumed_games``) and plays only the others.
    ``batch_ramp``: in-process engines' leaves per step grow with their trees (the game pool's
    ``batch_ramp``; 0: up to 8 per tree from the first visit).
    """

    engines: tuple[EngineSpec, ...]
    games: int = described(help="games per pair (default 10)", cli_default=10, group=GAMES)
    settings: GameSettings = field(metadata={"compose": True})
    sgf_dir: Path = described(help="where the SGF files go (required)", type=Path, required=True, group=RECORDS)
    results_path: Path = described(help="results file, rewritten after every game (default SGF_DIR/results.json)",
                                   option="results", type=Path, metavar="FILE.json", cli_default=None,
                                   group=RECORDS)
    parallel: int = described(1, "games played at once (worker threads, or game pool slots) (default 1)", group=GAMES)
    move_time: float | None = described(None, "seconds per move announced to engines (time_settings 0 T 1); "
                                               "exceeding it by more than --time-margin loses (default: no limit)",
                                        metavar="SECONDS", group=LIMITS)
    time_margin: float = described(1.0, "seconds of lag allowed on top of --move-time (default 1.0)",
                                   metavar="SECONDS", group=LIMITS)
    referee: str | None = described(None, "GTP engine whose final_score counts finished games (e.g. \"gnugo --mode "
                                          "gtp --chinese-rules\"; default: the area count as the board stands)",
                                    metavar="CMD", group=COUNTING)
    random_moves: int = described(0, "random legal opening moves, the same for both colours of a pair (default 0)",
                                  metavar="K", group=GAMES)
    seed: int = described(0, "seed for the random openings (default: random, recorded)", cli_default=None,
                          group=GAMES)
    sprt: tuple[float, float] | None = described(None, "SPRT of A over B, Elo; stop once decided (default: off)",
                                                 type=parse_sprt, metavar="ELO0,ELO1", group=COUNTING)
    sprt_alpha: float = described(SPRT_ALPHA, f"SPRT false-positive rate (default {SPRT_ALPHA:g})", group=COUNTING)
    sprt_beta: float = described(SPRT_BETA, f"SPRT false-negative rate (default {SPRT_BETA:g})", group=COUNTING)
    command_timeout: float = described(60.0, "seconds allowed for commands other than genmove (default 60)",
                                       metavar="SECONDS", group=LIMITS)
    progress: bool = described(True, "no progress bar", flag="negated", group=RECORDS)
    resume: bool = described(False, "continue the match of --results (an interrupted or shorter one with the same "
                                    "engines and settings; its seed unless --seed is given): its finished games "
                                    "count and only the others are played", flag="switch", group=RECORDS)
    batch_ramp: int = 0

    @property
    def play(self) -> PlaySettings:
        """How the in-process engines search and play (:attr:`GameSettings.play`)."""
        return self.settings.play

    def inproc_visits(self, spec: InProcessSpec) -> int:
        return spec.visits if spec.visits is not None else self.play.visits


@dataclass(frozen=True)
class ScheduledGame:
    """One game of the schedule: ``index`` in start order, ``round`` within its pair."""

    index: int
    pair: int
    round: int
    black: str
    white: str
