"""The GTP engine's settings (:class:`EngineConfig`): what ``python -m engine``'s command line sets
(:mod:`engine.options` builds it from these fields) and ``goengine-param`` changes.  What it
shares with the game pool's players, visits and resignation, is a :class:`PlaySettings` it
holds (:func:`engine_play`), not a second definition."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from engine.core import Rules, SearchParams
from engine.play.settings import DEFAULT_RESIGN, PlaySettings
from engine.play.settings_cli import (described, nonneg_float, nonneg_int, positive_float, positive_int,
                                      winrate)

# The titles of python -m engine's option groups (engine.options makes them, with their descriptions).
NETWORK, LIMITS, SEARCH, GAME, OUTPUT = "network", "search limits", "search", "game", "output and testing"

# The PlaySettings fields the engine uses: field -> option.
ENGINE_PLAY_OPTIONS = {"visits": "visits", "resign": "resign"}
_BATCH = 16


def engine_play(visits: int | None = None, resign: float = DEFAULT_RESIGN) -> PlaySettings:
    """The engine's play settings: ``visits`` per move (None: by board size,
    :func:`engine.play.settings.default_visits`, unless playouts, time or a clock limit the
    move) and resignation below the winrate ``resign`` (0: never).  Their other fields are
    the game pool's and unused here."""
    return PlaySettings(visits=visits, resign=resign)


@dataclass
class EngineConfig:
    """What the command line sets; every field can also be changed with ``goengine-param``."""

    size: int = described(19, "initial board size N x N, 2..19 (default: the size the --weights net was trained "
                              "for when it was trained for one size only, else 19)",
                          metavar="N", cli_default=None, group=GAME)
    rules: Rules = described(Rules.default(), "rules preset: chinese (simple ko, no suicide) or tromp-taylor "
                                              "(positional superko, suicide allowed), scoring by area; japanese "
                                              "or korean (simple ko, no suicide, territory scoring, no points in "
                                              "seki); see docs/rules.md",
                             komi_help="initial komi in points (default: the rules' own, 7.5 for area scoring, "
                                       "6.5 for territory)", komi_default=None, komi_metavar="POINTS", group=GAME)
    play: PlaySettings = field(default_factory=engine_play, metadata={
        "options": ENGINE_PLAY_OPTIONS,
        "helps": {"visits": "root visits per move, counting visits kept from the previous move's tree "
                            "(default: by board size, see below)",
                  "resign": f"resign when the winrate (0..1) falls below this (default {DEFAULT_RESIGN:g}; "
                            "0 never resigns). Not in the first quarter of the game; later in handicap games "
                            "as White"},
        "kw": {"visits": {"type": positive_int, "metavar": "N", "group": LIMITS},
               "resign": {"type": winrate, "group": GAME}}})
    playouts: Optional[int] = described(None, "new visits per move, tree reuse not counted (default: no limit)",
                                        type=positive_int, metavar="N", group=LIMITS)
    seconds: Optional[float] = described(None, "seconds per move; a clock set by the controller may allow less "
                                               "(default: no limit)",
                                         option="time", type=positive_float, metavar="SECONDS", group=LIMITS)
    batch: int = described(_BATCH, f"most positions per network call (default {_BATCH}; on CUDA measured with "
                                   "--threads)", type=positive_int, metavar="POSITIONS", cli_default=None, group=NETWORK)
    batch_ramp: int = described(8, "grow the batches with the tree: at most one position in flight per VISITS root "
                                   "visits, at least one (default 8; 0: always full batches).  Positions in flight "
                                   "are searched blind to each other, which costs small searches much of their "
                                   "strength", type=nonneg_int, metavar="VISITS", group=SEARCH)
    threads: int = described(1, "search threads, each with its own batch of positions in the network at once (on a "
                                "CPU each runs the network on one core); default: the cores this process may use; "
                                "on CUDA measured with the batch once per machine, net and size, and cached "
                                "(engine/nets/gpu_settings.py).  With 1 thread and --visits the engine is "
                                "deterministic", type=positive_int, metavar="N", cli_default=None, group=NETWORK)
    resign_turns: int = described(3, "resign only when N consecutive own moves fall below --resign (default 3, as "
                                     "KataGo's resignConsecTurns; 1: at once)",
                                  type=positive_int, metavar="N", group=GAME)
    ponder: bool = described(False, "after genmove, keep searching on the opponent's time until the next command "
                                    "arrives (default off)", group=GAME)
    lag_buffer: float = described(1.0, "seconds kept in reserve on every move under a clock (default 1)",
                                  type=nonneg_float, metavar="SECONDS", group=LIMITS)
    seed: int = described(0, "random seed (default: a random one); with --threads 1 and fixed visits the engine "
                             "is deterministic", metavar="N", cli_default=None, group=OUTPUT)
    analysis_min_visits: int = 1      # visits an analysis makes before input can stop it
    max_analysis_visits: int = 5_000_000
    max_ponder_visits: int = 200_000
    judge_playouts: int = 64          # playouts behind final_score / final_status_list
    quiet: bool = described(False, "no search summaries on stderr", flag="switch", group=OUTPUT)
    search: SearchParams = field(default_factory=SearchParams)   # set from --max-memory and --search at load
