"""How a move is searched and played, with every play default defined once.

:data:`DEFAULT_VISITS` and :data:`DEFAULT_RESIGN` are the engine's (``python -m engine``, matches
and the ladder); :class:`PlaySettings` is how the game pool searches and chooses the moves of one
game, with self-play's defaults (``train.config.RunConfig`` reads them here) and C's search
defaults (:class:`engine.core.SearchParams`) where C has them.  Komi and rules travel as one
:class:`engine.rules.Rules` value, whose defaults are :mod:`engine.rules`'s.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.core import SearchParams
from engine.rules import move_cap as default_move_cap

DEFAULT_VISITS = 400          # per move when neither visits, playouts nor time are set
DEFAULT_RESIGN = 0.05         # the engine's resignation winrate (python -m engine --resign, matches)

_C = SearchParams()           # C's search defaults


@dataclass
class PlaySettings:
    """How moves are searched and chosen in one game of the game pool (self-play, gating,
    matches, the ladder): the defaults are self-play's (a training run's ``RunConfig`` takes
    them from here), and C's (:class:`engine.core.SearchParams`) where C has them."""

    visits: int = 100                   # root visits of a full search (reused subtree included)
    cheap_visits: int = 0               # playout cap randomisation: visits of a cheap search (0: off)
    full_search_prob: float = 0.25      # with cheap_visits > 0: share of moves given a full search
    temperature_moves: int = 0          # the first this many moves (plies) sample visits^(1/T)
    temperature: float = 1.0            # T of those moves; later moves take the most visited
    noise_epsilon: float = 0.25         # Dirichlet noise weight at the root of full searches (0: off)
    noise_alpha: float = _C.noise_alpha  # total Dirichlet concentration (alpha per move = this / legal)
    resign_threshold: float | None = None   # resign when the root value falls below (None: never)
    max_moves: int | None = None        # move cap, scored as if passed out (None: engine.rules.move_cap)
    record_policy: bool = True          # keep visit distributions of full searches
    root: str = "puct"                  # puct | gumbel (engine.play.rootsearch: sequential halving, no noise,
                                        # no temperature; visits = new simulations per move)
    gumbel_considered: int = 16         # gumbel: moves sampled at the root (m)
    forced_playouts_k: float = _C.forced_playouts_k  # puct: KataGo's forced playouts + target pruning
                                        # in full searches (0: off)

    def move_cap(self, size: int) -> int:
        return self.max_moves if self.max_moves is not None else default_move_cap(size)
