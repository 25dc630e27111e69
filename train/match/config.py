"""What a match is: its games' settings (:class:`GameSettings`), its engines
(:class:`EngineSpec`), the whole match (:class:`MatchConfig`) and one game of its schedule
(:class:`ScheduledGame`).  Plain values, read by :mod:`train.match.schedule` (which plays them) and
:mod:`train.match.report` (which sums them up).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.core import Rules
from engine.play.settings import DEFAULT_RESIGN, PlaySettings
from train.match.inproc import DEFAULT_INPROC_VISITS, InProcessSpec, parse_inproc

# The PlaySettings fields a match's (and the ladder's) command line gives: field -> option and
# the results file's settings key.
MATCH_PLAY_OPTIONS = {"visits": "visits", "resign": "resign"}


def inproc_play(visits: int = DEFAULT_INPROC_VISITS, resign: float = DEFAULT_RESIGN) -> PlaySettings:
    """How a match's in-process engines search and play: ``visits`` (when their spec has no
    visits=), resignation below the winrate ``resign`` (0: never), no policy targets; the move
    cap is the match's (:attr:`GameSettings.move_cap`).  Their search is their spec's
    (:meth:`train.match.inproc.InProcessSpec.search_params`: no noise)."""
    return PlaySettings(visits=visits, resign=resign, record_policy=False)


@dataclass(frozen=True)
class GameSettings:
    """Everything that defines a game apart from the players.

    ``rules`` holds the komi.  ``max_moves`` caps the moves after the handicap stones (None: 3 * size**2);
    a game reaching it is scored like a finished one. ``move_time_limit`` is
    the hard per-move wall-clock limit in seconds (None: none); a player that
    exceeds it loses on time.
    """

    size: int = 19
    rules: Rules = Rules.default()
    handicap: int = 0
    max_moves: int | None = None
    move_time_limit: float | None = None

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
    """A match or round robin.

    ``games`` is per pair of engines. ``move_time`` is announced to engines and
    ``move_time + time_margin`` is the hard per-move limit. ``sprt`` is
    (elo0, elo1) for the first engine over the second (two-engine matches);
    the match stops scheduling games once it is decided. ``seed`` fixes the
    random openings (the same list for both games of a colour-swapped pair).
    ``play`` is how in-process engines search and play (:func:`inproc_play`): its ``visits``
    the default search size, its ``resign`` their resignation winrate (0: never; the rule is
    ``engine.play.movepolicy.should_resign``).
    ``resume`` keeps the finished games of ``results_path`` (a match with the same engines and
    settings; ``train.match.schedule.resumed_games``) and plays only the others.
    ``batch_ramp``: in-process engines' leaves per step grow with their trees (the game pool's
    ``batch_ramp``; 0: up to 8 per tree from the first visit).
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
    play: PlaySettings = field(default_factory=inproc_play)
    resume: bool = False
    batch_ramp: int = 0

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
