"""What to do with a finished search: resign, pass, or play which move.

One resignation rule, :func:`should_resign`, serves ``python -m engine`` and the training side
(self-play, gating and matches call it with their own thresholds).  :func:`choose_move` adds the
engine's game-end decisions on top of the search's move:

- **Resignation** below a winrate threshold, never in the first quarter of the board's points
  and, for White in handicap games, against a threshold lowered by the handicap that returns to
  normal as the game goes on.
- **Passing never throws away a won game**: when a pass would lose by raw Tromp-Taylor count
  although the judged score (dead stones removed, :mod:`engine.scoring`) wins, the engine
  captures dead stones instead; when the opponent has passed and passing now wins (by raw count,
  and by the judged score unless the rules are Tromp-Taylor), the engine passes and ends the
  game; when the opponent has passed, the judged score loses and no move's winrate beats
  ``0.5 + HOPE_MARGIN``, it passes too rather than fill the board.
- **Clean-up** (``kgs-genmove_cleanup``): never pass while the opponent's dead stones remain.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from engine import scoring
from engine.core import BLACK, WHITE, Game, other

if TYPE_CHECKING:                 # engine.player imports this module for should_resign
    from engine.player import SearchResult

RESIGN = -1                   # pseudo-move returned by choose_move
DEFAULT_RESIGN = 0.05         # the engine's resignation winrate (python -m engine --resign)
HOPE_MARGIN = 0.05            # after the opponent's pass, play on in a lost game only above 55%
EARLY_FRACTION = 0.25         # no resignation before this share of the board's points is played
HANDICAP_RECOVERY = 0.6       # White's handicap discount is gone by move 0.6 * N * N

Judge = Callable[[Game], scoring.Judgement]


def should_resign(winrate: float, move_number: int, board_size: int, threshold: float,
                  visits: int = 2, handicap: int = 0, white: bool = False) -> bool:
    """Whether a player resigns: the one resignation rule of engine and training.

    ``winrate`` is the player's winrate after its search, 0..1 (from a root value v in -1..1:
    ``(v + 1) / 2``); ``move_number`` the moves played so far (handicap stones included);
    ``threshold`` the winrate to resign below, 0 (or less) never; ``visits`` the root visits
    behind ``winrate`` (fewer than 2: no real search, never resign); ``handicap`` the handicap
    stones of the game and ``white`` whether the player is White.

    Returns False during the first ``EARLY_FRACTION`` of ``board_size ** 2`` moves.  White in a
    handicap game is behind on paper, so its threshold starts at ``threshold / (1 + handicap)``
    and rises linearly to ``threshold`` by move ``HANDICAP_RECOVERY * board_size ** 2``.  Pure:
    no state, no side effects."""
    if threshold <= 0 or visits < 2:
        return False
    area = board_size * board_size
    if move_number < int(area * EARLY_FRACTION):
        return False
    if handicap > 0 and white:
        blend = min(1.0, move_number / (HANDICAP_RECOVERY * area))
        threshold = blend * threshold + (1.0 - blend) * threshold / (1 + handicap)
    return winrate < threshold


def best_winrate(result: SearchResult) -> float:
    """The winrate a resignation is judged on: the root's, or the most visited move's when
    that is higher (the root value lags behind a refutation the search just found)."""
    winrate = result.winrate
    if result.children and result.children[0].visits > 0:
        winrate = max(winrate, result.children[0].winrate)
    return winrate


def handicap_count(game: Game, handicap: list[int]) -> int:
    """Handicap stones: ``handicap`` (set by a handicap command or an SGF file) when given,
    else Black's leading stones before White's first move (handicap sent as plain plays)."""
    if handicap:
        return len(handicap)
    n = 0
    for color, point in game.moves:
        if color != BLACK or point == game.pass_point:
            break
        n += 1
    return n if n >= 2 and any(c == WHITE for c, _ in game.moves) else 0


def wins(score: float, color: int) -> bool:
    """Whether a Black-positive ``score`` is a win for ``color``."""
    return score > 0 if color == BLACK else score < 0


def pass_wins(game: Game, color: int, judge: Judge) -> bool:
    """Whether passing now (ending the game after the opponent's pass) wins for ``color``."""
    if not wins(game.score(), color):
        return False
    if game.rules.name == "tromp-taylor":
        return True
    return wins(judge(game).score, color)


def pass_throws_away(game: Game, color: int, judge: Judge) -> bool:
    """Passing loses by raw count, but ``color`` wins once dead stones are taken off."""
    if wins(game.score(), color):
        return False
    return wins(judge(game).score, color)


def hopeless(game: Game, color: int, result: SearchResult, judge: Judge) -> bool:
    """The judged score loses and no move's winrate is clearly better than even: playing on
    after the opponent's pass would only fill the board."""
    best = max([result.winrate] + [c.winrate for c in result.children if c.visits > 0])
    return best < 0.5 + HOPE_MARGIN and not wins(judge(game).score, color)


def cleanup_move(game: Game, color: int, result: SearchResult,
                 verdict: scoring.Judgement) -> Optional[int]:
    """A move that attacks the opponent's dead stones: a liberty of a dead group, not one of
    our own eyes, preferring moves that are not self-atari, then the search's favourites.
    None when no dead stone of the opponent's is left or no such move is legal."""
    size = game.size
    stones = game.stones().ravel()
    opp = other(color)
    dead = {p for g in verdict.dead for p in g if stones[p] == opp}
    if not dead:
        return None
    nbrs = scoring.neighbours(size)
    legal = game.legal_mask(color)
    eyes = scoring.own_eyes(game, color)
    visits = {c.move: c.visits for c in result.children}
    prior = {c.move: c.prior for c in result.children}
    best, best_key = None, None
    for p in range(size * size):
        if not legal[p] or eyes[p] or not any(q in dead for q in nbrs[p]):
            continue
        trial = game.copy()
        captured = trial.captures(color)
        trial.play(p, color)
        self_atari = trial.liberties(p) <= 1 and trial.captures(color) == captured
        key = (self_atari, -visits.get(p, 0), -prior.get(p, 0.0), p)
        if best_key is None or key < best_key:
            best, best_key = p, key
    return best


def choose_move(game: Game, color: int, result: SearchResult, judge: Judge,
                resign: float, handicap: int = 0, cleanup: bool = False,
                say: Callable[[str], None] = lambda text: None) -> int:
    """The move ``color`` plays in ``game`` after the search ``result``: a point, the pass
    point, or RESIGN.  ``judge(game)`` returns the dead-stone verdict (cached by the caller);
    ``resign`` is the resignation winrate (0: never); ``handicap`` the game's handicap stones;
    ``cleanup`` forbids passing while the opponent's dead stones remain.  ``say`` receives a
    line explaining a pass or a capture that replaces the search's move."""
    if should_resign(best_winrate(result), len(game.moves), game.size, resign,
                     visits=result.visits, handicap=handicap, white=color == WHITE):
        return RESIGN
    pass_point = game.pass_point
    move = result.move
    if move == pass_point:
        if cleanup:
            verdict = judge(game)
            if any(game.stones().ravel()[g[0]] == other(color) for g in verdict.dead):
                alt = cleanup_move(game, color, result, verdict)
                if alt is not None:
                    return alt
        if pass_throws_away(game, color, judge):
            alt = cleanup_move(game, color, result, judge(game))
            if alt is not None:
                say("passing would lose by raw count: capturing dead stones instead")
                return alt
        return move
    opponent_passed = bool(game.moves) and game.moves[-1] == (other(color), pass_point)
    if opponent_passed and not cleanup:
        if pass_wins(game, color, judge):
            say("the opponent passed and passing wins: passing")
            return pass_point
        if hopeless(game, color, result, judge):
            say("the opponent passed, the game is lost and the search sees no way back: passing")
            return pass_point
    return move
