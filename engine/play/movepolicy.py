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
  game.
- **Never pass into a lost count**: after the opponent's pass our pass ends the game, and a
  GUI or referee (GoGui, GNU Go, gogui-twogtp) then counts the board as it stands, Tromp-Taylor,
  dead stones included.  Whatever proposed the pass (the search's move: with a handful of visits
  that is just the net's favourite, or the most visited child although its exact terminal value
  is a loss, or the rules above), :func:`choose_move` lets it through one guard,
  :func:`pass_allowed`: it ends the game only when the raw count does not lose for us, or when
  the game is truly lost (:func:`truly_lost`: the winrate is below the resignation threshold);
  otherwise the engine plays the search's best other move.  A judged score
  (ownership, dead stones removed) that loses does not make a pass acceptable: early in the
  game it is a guess about an open board, and a 40% winrate is no lost game.
- **Never pass into a won count that a referee takes away**: with conservative pass (the
  search's ``conservative_pass``, on by default) the search itself judges our pass after the
  opponent's by the net, play going on, not as a Tromp-Taylor win with our dead stones still on
  the board; so it proposes that pass only when playing on would not do better.
- **Clean-up** (``kgs-genmove_cleanup``): never pass while the opponent's dead stones remain.
"""
from __future__ import annotations

from typing import Callable, Optional

from engine import scoring
from engine.core import BLACK, WHITE, Game, other, winrate_of
from engine.play.player import SearchResult
from engine.play.settings import DEFAULT_RESIGN

RESIGN = -1                   # pseudo-move returned by choose_move
EARLY_FRACTION = 0.25         # no resignation before this share of the board's points is played
HANDICAP_RECOVERY = 0.6       # White's handicap discount is gone by move 0.6 * N * N

Judge = Callable[[Game], scoring.Judgement]


def should_resign(winrate: float, move_number: int, board_size: int, threshold: float,
                  visits: int = 2, handicap: int = 0, white: bool = False) -> bool:
    """Whether a player resigns: the one resignation rule of engine and training.

    ``winrate`` is the player's winrate after its search, 0..1 (a root value of C's search
    through :func:`engine.core.winrate_of`); ``move_number`` the moves played so far (handicap stones included);
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


def best_winrate(result: SearchResult, pass_point: Optional[int] = None) -> float:
    """The winrate a resignation is judged on: the root's, or the most visited move's when
    that is higher (the root value lags behind a refutation the search just found).

    With ``pass_point``, also the winrate of playing on: the root's without the pass child's
    visits, and the most visited move other than a pass.  After the opponent's pass our pass is
    a terminal position, an exact loss when the count loses, and a small search can pour most
    of its visits into it (a net that likes passing back; FPU reduction below a root value the
    losses drag down), so the root value says "lost" while the moves that play on are fine."""
    winrate = result.winrate
    if result.children and result.children[0].visits > 0:
        winrate = max(winrate, result.children[0].winrate)
    if pass_point is not None:
        rest_visits, rest_winrate = playing_on(result, pass_point)
        if rest_visits > 0:
            winrate = max(winrate, rest_winrate)
        other_move = next((c for c in result.children if c.move != pass_point), None)
        if other_move is not None and other_move.visits > 0:
            winrate = max(winrate, other_move.winrate)
    return winrate


def playing_on(result: SearchResult, pass_point: int) -> tuple[int, float]:
    """(visits, winrate) of the search with the pass child's visits taken out: the root's own
    evaluation and every move that plays on (the root value is the mean over all of them)."""
    kid = next((c for c in result.children if c.move == pass_point), None)
    if kid is None or kid.visits <= 0:
        return result.visits, result.winrate
    rest = result.visits - kid.visits
    if rest <= 0:
        return 0, result.winrate
    value = (result.value * result.visits - kid.q * kid.visits) / rest
    return rest, winrate_of(value)


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


def truly_lost(game: Game, result: SearchResult, resign: float) -> bool:
    """The game is lost beyond hope: the winrate of playing on (:func:`best_winrate` with the
    pass child left out) is below the resignation threshold ``resign`` (when resignation is off,
    0: below ``DEFAULT_RESIGN``), after a real search of playing on (2 visits or more besides the
    pass child's: one visit is the net's raw guess).  Only then may a pass that loses by the
    count end the game (the engine concedes instead of filling the board); unlike
    :func:`should_resign` there is no early-game exemption."""
    threshold = resign if resign > 0 else DEFAULT_RESIGN
    rest_visits, _ = playing_on(result, game.pass_point)
    return rest_visits >= 2 and best_winrate(result, game.pass_point) < threshold


def pass_allowed(game: Game, color: int, result: SearchResult, resign: float) -> bool:
    """Whether ``color`` may pass now.  A pass that does not end the game always may; one after
    the opponent's pass ends it, and a GUI or referee counts the board as it stands
    (Tromp-Taylor, no dead stones removed): it may when that count does not lose, or when the
    game is truly lost anyway (:func:`truly_lost`)."""
    if not opponent_passed(game, color):
        return True
    score = game.score()
    return score == 0 or wins(score, color) or truly_lost(game, result, resign)


def raw_pass_allowed(game: Game, color: int, result: SearchResult, resign: float) -> bool:
    """Whether ``color`` may pass in a game counted as the board stands, by raw Tromp-Taylor
    count with no referee (self-play, gating and in-process matches): any pass, not only one
    that ends the game, since the opponent may end it with a pass of its own.  It may when that
    count does not lose for ``color``, or when the game is truly lost (:func:`truly_lost`, which
    needs a real search of playing on).  So a pass that a search of a handful of visits favours
    by noise (the net's favourite at 1 visit) never hands over the game on a near-empty board."""
    score = game.score()
    return score == 0 or wins(score, color) or truly_lost(game, result, resign)


def opponent_passed(game: Game, color: int) -> bool:
    """The opponent's last move was a pass: ``color``'s pass now ends the game."""
    return bool(game.moves) and game.moves[-1] == (other(color), game.pass_point)


def best_other_move(game: Game, color: int, result: SearchResult) -> Optional[int]:
    """The search's best move other than a pass: among the legal root children, one that does
    not fill our own eye first, then the most visited, the best winrate, the highest prior.
    Without children (no search), any legal point that is not our own eye, else any legal
    point.  None when no point is legal (then passing is all that is left)."""
    legal = game.legal_mask(color)
    eyes = scoring.own_eyes(game, color)
    pass_point = game.pass_point
    best, best_key = None, None
    for c in result.children:
        if c.move == pass_point or not 0 <= c.move < pass_point or not legal[c.move]:
            continue
        played = c.winrate if c.visits > 0 else 0.0
        key = (bool(eyes[c.move]), -c.visits, -played, -c.prior, c.move)
        if best_key is None or key < best_key:
            best, best_key = c.move, key
    if best is not None and not eyes[best]:
        return best
    points = [p for p in range(pass_point) if legal[p]]
    for p in points:
        if not eyes[p]:
            return p
    return best if best is not None else (points[0] if points else None)


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
                say: Callable[[str], None] = lambda text: None, may_resign: bool = True) -> int:
    """The move ``color`` plays in ``game`` after the search ``result``: a point, the pass
    point, or RESIGN.  ``judge(game)`` returns the dead-stone verdict (cached by the caller);
    ``resign`` is the resignation winrate (0: never); ``handicap`` the game's handicap stones;
    ``cleanup`` forbids passing while the opponent's dead stones remain.  ``say`` receives a
    line explaining a pass or a move that replaces the search's move.  ``may_resign`` False
    holds a resignation back (the engine resigns only after several low moves in a row).

    Every pass leaves through one guard, :func:`pass_allowed`: whatever proposed it (the search,
    whose move after a handful of visits is only the net's favourite, or the rules below), a
    pass that ends the game in a lost count is replaced by the search's best other move unless
    the game is truly lost."""
    pass_point = game.pass_point
    if may_resign and should_resign(best_winrate(result, pass_point), len(game.moves), game.size, resign,
                                    visits=result.visits, handicap=handicap, white=color == WHITE):
        return RESIGN
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
    elif opponent_passed(game, color) and not cleanup:
        if pass_wins(game, color, judge):
            say("the opponent passed and passing wins: passing")
            move = pass_point
        elif truly_lost(game, result, resign):
            say("the opponent passed and the game is lost: passing")
            move = pass_point
    if move == pass_point and not pass_allowed(game, color, result, resign):
        alt = best_other_move(game, color, result)
        if alt is not None:
            say(f"the opponent passed and passing would lose by the count "
                f"({scoring.format_result(game.score())}) at winrate "
                f"{100 * best_winrate(result, pass_point):.1f}%: playing on")
            return alt
    return move
