"""Clocks and per-move time budgets for the GTP engine.

A :class:`TimeControl` holds the time system announced by the controller (``time_settings``,
``kgs-time_settings``) and each colour's clock (updated by ``time_left``, or by our own estimate
of the time we spent when the controller sends no ``time_left``).  :meth:`TimeControl.budget`
says how long the next move may think:

==============  ===============================================================================
system          budget
==============  ===============================================================================
none            ``None`` (no limit: the engine's visit/time settings decide)
absolute        main left / expected own moves left - lag
byo-yomi        in main time: main left / moves left + half a period, never more than main left
(Japanese)      + period - lag; in byo-yomi: period - lag (a period is never spent)
Canadian        in main time: as above with the per-stone share of the byo-yomi block; in
                byo-yomi: time left / stones left - lag
==============  ===============================================================================

``lag`` (the lag buffer, seconds) covers process start-up, the controller's own latency and the
network; the budget is never below ``min_seconds`` so the engine always answers with at least one
visit's worth of search.  Expected own moves left shrink with the move number but never fall below
a floor, so an absolute clock decays geometrically and never runs out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from engine.core import BLACK, WHITE

NONE, ABSOLUTE, BYOYOMI, CANADIAN = "none", "absolute", "byoyomi", "canadian"


@dataclass
class Clock:
    """One colour's remaining time: ``main`` seconds of main time; in overtime ``period`` seconds
    left in the current period (Japanese) or block (Canadian), ``stones`` stones left in the
    Canadian block, ``periods`` Japanese periods left."""

    main: float = 0.0
    period: float = 0.0
    stones: int = 0
    periods: int = 0

    @property
    def in_overtime(self) -> bool:
        return self.main <= 0.0


@dataclass
class TimeControl:
    """A time system plus both colours' clocks; see the module docstring for the budgets."""

    system: str = NONE
    main_time: float = 0.0        # seconds of main time
    byo_time: float = 0.0         # Japanese: seconds per period; Canadian: seconds per block
    byo_stones: int = 0           # Canadian: stones per block
    byo_periods: int = 0          # Japanese: number of periods
    lag: float = 1.0              # seconds kept in reserve on every move
    min_seconds: float = 0.05     # smallest budget ever returned
    clocks: dict[int, Clock] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.reset()

    # -- settings ----------------------------------------------------------------------------
    def reset(self) -> None:
        """Both clocks back to the start of the game (new game, new settings)."""
        self.clocks = {c: Clock(self.main_time, self.byo_time, self.byo_stones, self.byo_periods)
                       for c in (BLACK, WHITE)}

    def set_gtp(self, main: float, byo: float, stones: int) -> None:
        """GTP ``time_settings``: byo 0 = absolute; byo > 0 with stones 0 = no limit; else
        Canadian (``stones`` stones per ``byo`` seconds).  ValueError on negative values."""
        _check_nonneg(main, byo, stones)
        if byo > 0 and stones == 0:
            self._set(NONE, 0.0, 0.0, 0, 0)
        elif byo == 0:
            self._set(ABSOLUTE, main, 0.0, 0, 0)
        else:
            self._set(CANADIAN, main, byo, int(stones), 0)

    def set_kgs(self, system: str, args: list[float]) -> None:
        """``kgs-time_settings none | absolute M | byoyomi M T P | canadian M T S``.

        ValueError on an unknown system, a wrong number of arguments or negative values."""
        system = system.lower()
        want = {NONE: 0, ABSOLUTE: 1, BYOYOMI: 3, CANADIAN: 3}
        if system not in want or len(args) != want[system]:
            raise ValueError("expected none | absolute M | byoyomi M T P | canadian M T S")
        _check_nonneg(*args)
        if system == NONE:
            self._set(NONE, 0.0, 0.0, 0, 0)
        elif system == ABSOLUTE:
            self._set(ABSOLUTE, args[0], 0.0, 0, 0)
        elif system == BYOYOMI:
            main, period, periods = args
            if period <= 0 or periods < 1:
                self._set(ABSOLUTE, main, 0.0, 0, 0)
            else:
                self._set(BYOYOMI, main, period, 0, int(periods))
        else:
            main, block, stones = args
            if block <= 0 or stones < 1:
                self._set(ABSOLUTE, main, 0.0, 0, 0)
            else:
                self._set(CANADIAN, main, block, int(stones), 0)

    def _set(self, system: str, main: float, byo: float, stones: int, periods: int) -> None:
        self.system, self.main_time, self.byo_time = system, float(main), float(byo)
        self.byo_stones, self.byo_periods = stones, periods
        self.reset()

    # -- clocks ------------------------------------------------------------------------------
    def time_left(self, color: int, seconds: float, stones: int) -> None:
        """GTP ``time_left``: stones 0 = still in main time with ``seconds`` left; otherwise in
        overtime with ``seconds`` left for ``stones`` stones (Canadian) or in the current period
        with ``stones`` periods left (Japanese, as KGS sends it)."""
        if not math.isfinite(seconds) or stones < 0:
            raise ValueError("invalid time_left")
        clock = self.clocks[color]
        seconds = max(0.0, float(seconds))
        if stones == 0 or self.system in (NONE, ABSOLUTE):
            clock.main = seconds
            if stones == 0:
                clock.period, clock.stones, clock.periods = self.byo_time, self.byo_stones, self.byo_periods
        else:
            clock.main = 0.0
            clock.period = seconds
            if self.system == CANADIAN:
                clock.stones = int(stones)
            else:
                clock.periods = int(stones)

    def charge(self, color: int, seconds: float) -> None:
        """Our own estimate of ``color``'s clock after a move that took ``seconds``."""
        if self.system == NONE:
            return
        clock = self.clocks[color]
        rest = clock.main - seconds
        if rest > 0 or self.system == ABSOLUTE:
            clock.main = max(0.0, rest)
            return
        overrun = -rest
        clock.main = 0.0
        if self.system == BYOYOMI:
            if overrun > clock.period:
                clock.periods = max(0, clock.periods - int(overrun // max(clock.period, 1e-9)))
            clock.period = self.byo_time
        elif self.system == CANADIAN:
            if clock.stones <= 0:
                clock.period, clock.stones = self.byo_time, self.byo_stones
            clock.period = max(0.0, clock.period - overrun)
            clock.stones -= 1
            if clock.stones <= 0:
                clock.period, clock.stones = self.byo_time, self.byo_stones

    # -- budgets -----------------------------------------------------------------------------
    @staticmethod
    def moves_left(size: int, move_number: int) -> float:
        """Expected moves still to play by one side: half of the N*N plies a long game lasts,
        less those played, never below max(5, N*N / 8)."""
        area = size * size
        expected = (area - move_number) / 2.0
        return max(expected, max(5.0, area / 8.0))

    def budget(self, color: int, size: int, move_number: int) -> float | None:
        """Seconds the next move of ``color`` may use, or None when there is no time limit."""
        if self.system == NONE:
            return None
        clock = self.clocks[color]
        moves = self.moves_left(size, move_number)
        lag = self.lag
        if self.system == ABSOLUTE:
            b = min(clock.main / moves - lag, clock.main - lag)
        elif not clock.in_overtime:
            per_move = self.byo_time if self.system == BYOYOMI else self.byo_time / max(1, self.byo_stones)
            b = clock.main / moves + 0.5 * per_move
            b = min(b, clock.main + per_move - lag)
        elif self.system == BYOYOMI:
            b = clock.period - lag
        else:
            b = clock.period / max(1, clock.stones) - lag
        return max(self.min_seconds, b)

    def describe(self) -> str:
        if self.system == NONE:
            return "no time limit"
        if self.system == ABSOLUTE:
            return f"absolute {self.main_time:g}s"
        if self.system == BYOYOMI:
            return f"{self.main_time:g}s + {self.byo_periods}x{self.byo_time:g}s byo-yomi"
        return f"{self.main_time:g}s + {self.byo_stones} stones/{self.byo_time:g}s canadian"


def _check_nonneg(*values: float) -> None:
    for v in values:
        if not math.isfinite(v) or v < 0:
            raise ValueError("time values must be finite and >= 0")
