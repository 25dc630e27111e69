"""How a move is searched and played, with every play default defined once.

:data:`DEFAULT_VISITS` and :data:`DEFAULT_RESIGN` are the engine's (``python -m engine``, matches
and the ladder); :class:`PlaySettings` is how the game pool searches and chooses the moves of one
game, with self-play's defaults (``train.config.RunConfig`` reads them here); how each player
searches (noise, temperature, forced playouts) is its :class:`engine.core.SearchParams`, the one
owner of those knobs.  Komi and rules travel as one
:class:`engine.rules.Rules` value, whose defaults are :mod:`engine.rules`'s.

Each field carries its command-line help (:func:`engine.play.settings_cli.described`): a
command gives the fields it names as options and reads them back, and a saved config's flat keys,
through :mod:`engine.play.settings_cli` (:func:`~engine.play.settings_cli.add_field_arguments`,
:func:`~engine.play.settings_cli.fields_from`, :func:`~engine.play.settings_cli.field_options`),
which builds every settings dataclass's command line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from engine.core import winrate_of
from engine.play.settings_cli import described
from engine.rules import MOVE_CAP_PER_POINT, move_cap as default_move_cap

DEFAULT_VISITS = 400          # per move on 19x19 when neither visits, playouts nor time are set
DEFAULT_RESIGN = 0.05         # the engine's resignation winrate (python -m engine --resign, matches)
# Resignation is a winrate (0..1, 0: never) everywhere: the engine's --resign, matches, the ladder,
# PlaySettings.resign, self-play's calibrated threshold and the game records' threshold in force.
# C's root values become winrates in one function, engine.core.winrate_of; resign_winrate reads
# the root value thresholds of older files and options.


def default_visits(size: int) -> int:
    """The engine's visits per move on a board of ``size`` when neither visits, playouts, time
    nor a clock limit it: :data:`DEFAULT_VISITS` on 19x19, and on a smaller board that times the
    power of two nearest 361 / size², at most 8 (a network call costs about its board's area,
    so a move costs about the same on every size): 800 on 13x13, 1600 on 9x9, 3200 on 7x7 and
    smaller.  Matches' in-process players and the ladder search :data:`DEFAULT_VISITS` on every
    size."""
    ratio = 361.0 / (size * size)
    return DEFAULT_VISITS * (1 << min(3, max(0, round(math.log2(ratio)))))


def resign_winrate(value: float | None) -> float:
    """The resignation winrate of an older file's or option's root value threshold (-1..1; -1
    or None: never, 0.0)."""
    return 0.0 if value is None or value <= -1.0 else winrate_of(value)


@dataclass
class PlaySettings:
    """How moves are searched and chosen in one game of the game pool (self-play, gating,
    matches, the ladder): the defaults are self-play's (a training run's ``RunConfig`` takes
    them from here).  Each player searches with its own :class:`engine.core.SearchParams`
    (Dirichlet noise, move temperature, forced playouts); the pool turns its noise and forced
    playouts off in cheap searches and under the Gumbel root, and its temperature off after
    ``temperature_moves``.  Each field's ``help`` is its command-line help
    (:mod:`engine.play.settings_cli`)."""

    visits: int = described(100, "root visits of a full search (reused subtree included)")
    cheap_visits: int = described(0, "playout cap randomisation (KataGo): visits of the cheap searches that most "
                                 "moves get; they are played, not trained on (0: off)")
    full_search_prob: float = described(0.25, "with --cheap-visits: share of moves given a full search")
    temperature_moves: int | None = described(0, "the first this many moves (plies) sample visits^(1/T) at the "
                                                 "player's temperature T; later moves take the most visited (None: "
                                                 "the caller's default by board size, resolved before play: "
                                                 "self-play N*N//8, gating N//2)")
    resign: float = described(0.0, "resign when the winrate falls below this (0: never)", metavar="WINRATE")
    max_moves: int | None = described(None, "move cap, scored as if passed out "
                                        f"(default {MOVE_CAP_PER_POINT}*N*N)")
    record_policy: bool = described(True, "keep visit distributions of full searches")
    root: str = described("puct", "root search of self-play: puct (visit counts as the policy target, Dirichlet "
                              "noise, temperature) or gumbel (Gumbel-top-k sampling and sequential halving, "
                              "target softmax(logits + sigma(completed Q)); --visits is then the "
                              "simulations of a move, and noise, temperature and forced playouts are not used)",
                      choices=("puct", "gumbel"))      # engine.play.rootsearch
    gumbel_considered: int = described(16, "--root gumbel: moves sampled at the root (m)")

    def move_cap(self, size: int) -> int:
        return self.max_moves if self.max_moves is not None else default_move_cap(size)
