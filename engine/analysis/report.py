"""The responses of ``python -m engine analysis``: one search turned into KataGo's JSON.

The winrates, LCBs, priors and principal variations are the search's, computed by the helpers
the GTP engine's ``kata-analyze`` uses (:mod:`engine.gtp.analysis`); ownership is the one
``kata-analyze`` reports (:func:`engine.scoring.estimate_ownership`: the network's, else random
playouts).  Where KataGo's figures have no exact counterpart here, this is what is reported:

- ``scoreLead`` of a move: the network's score lead of the position after the move, for the
  mover (the search backs up values only); ``scoreMean`` and ``scoreSelfplay`` repeat it (our
  nets and our KataGo evaluator give the lead only).  ``rootInfo.scoreLead`` averages the root's
  own network lead and the moves' leads weighted by their visits.  Nets without a score head
  (Leela Zero's) leave the score fields out.
- ``scoreStdev``: derived, not predicted: the spread of a normal final score whose mean is
  ``scoreLead`` and whose chance of being a win is ``winrate`` (sigma = lead / z(winrate)),
  bounded to [1, points on the board / 2]; the bound itself where winrate and lead do not
  determine it (a lead of 0, or lead and winrate on opposite sides of even).
- ``utility`` is the search value, 2 * winrate - 1 (the score utility, when switched on, steers
  the search but is not reported), and
  ``utilityLcb`` the same of ``lcb``; ``weight`` and ``edgeWeight`` equal the visits (every
  visit weighs 1) and ``edgeVisits`` the visits (no graph search).
- ``order``: 0 is the move the engine would play (its LCB choice), then by visits and prior.
- ``ownership`` of a move (``includeMovesOwnership``): the network's ownership of the position
  after the move (not averaged over its subtree).
- ``thisHash`` / ``symHash``: 128-bit hashes of the stones, the player to move and the ko point
  (the least of the 8 symmetric boards for ``symHash``), not KataGo's own numbers.

All values are from the perspective of ``reportAnalysisWinratesAs`` (BLACK, WHITE or
SIDETOMOVE), ownership included (+1: that side owns the point).
"""
from __future__ import annotations

import hashlib
from statistics import NormalDist
from typing import Any, Optional

import numpy as np

from engine import coords, scoring
from engine.analysis.query import TurnRequest
from engine.core import BLACK, WHITE, Search, color_name, other
from engine.gtp.analysis import (candidate_winrate_lcb, evaluate_after_moves, root_winrate,
                                 softmax)

_NORMAL = NormalDist()


def num(x: float) -> float:
    """A float with 8 significant digits, as KataGo prints them (never -0.0)."""
    return float(f"{float(x):.8g}") + 0.0


def implied_score_stdev(winrate: float, lead: float, size: int) -> float:
    """Sigma of a normal final score with mean ``lead`` that is a win with chance ``winrate``
    (both for the same player), within [1, size*size/2] (see the module docstring)."""
    cap = max(1.0, size * size / 2.0)
    z = _NORMAL.inv_cdf(min(0.999, max(0.001, winrate)))
    if abs(z) < 1e-9 or z * lead <= 0:
        return cap
    return min(cap, max(1.0, lead / z))


def position_hashes(stones: np.ndarray, to_move: int, ko_point: Optional[int]) -> tuple[str, str]:
    """(thisHash, symHash): 32 upper-case hex digits each (see the module docstring)."""
    size = stones.shape[0]
    board = stones.astype(np.int8).copy()
    if ko_point is not None and ko_point < size * size:
        board.flat[ko_point] = 3
    digests = []
    for k in range(8):
        b = np.rot90(board, k % 4)
        if k >= 4:
            b = b.T
        data = np.ascontiguousarray(b).tobytes() + bytes([to_move, size])
        digests.append(hashlib.blake2b(data, digest_size=16).hexdigest().upper())
    return digests[0], min(digests)


class Perspective:
    """Turns the side to move's figures into those of ``reportAnalysisWinratesAs``."""

    def __init__(self, name: str, to_move: int):
        self.flip = (name == "BLACK" and to_move == WHITE) or (name == "WHITE" and to_move == BLACK)
        # ownership comes Black-positive; +1 must mean the perspective's side
        self.owner = WHITE if name == "WHITE" or (name == "SIDETOMOVE" and to_move == WHITE) else BLACK

    def winrate(self, x: float) -> float:
        return num(1.0 - x if self.flip else x)

    def score(self, x: float) -> float:
        return num(-x if self.flip else x)

    def ownership(self, black_positive: np.ndarray) -> list[float]:
        own = np.asarray(black_positive, np.float64).ravel()
        if self.owner == WHITE:
            own = -own
        return [num(v) for v in own]


def _root_evaluation(evaluator, game):
    fs = getattr(evaluator, "feature_set", "rich")
    return evaluator.evaluate(game.features(fs)[None], keys=np.array([game.feature_key(fs)], np.uint64))


def candidates(tree: Search) -> list:
    """The moves to report, in ``order``: the visited children with the engine's choice first,
    or the highest-prior move (unvisited) when none has been visited yet."""
    children = tree.children()
    visited = [c for c in children if c.visits > 0]
    if not visited:
        return children[:1]
    best = tree.choose()
    return sorted(visited, key=lambda c: c.move != best)   # stable: then by visits and prior


def no_results(req: TurnRequest) -> dict:
    """The response to a query terminated before any visit."""
    return {"id": req.id, "turnNumber": req.turn, "isDuringSearch": False, "noResults": True}


def analysis_response(req: TurnRequest, tree: Search, evaluator, during: bool,
                      ownership_playouts: int = 32, seed: int = 0) -> dict[str, Any]:
    """KataGo's response for ``req`` from the current state of its search ``tree``."""
    game = req.game
    size = game.size
    to_move = game.to_move
    view = Perspective(req.perspective, to_move)
    cands = candidates(tree)
    root_wr = root_winrate(tree)
    after = evaluate_after_moves(evaluator, game, [c.move for c in cands]) if cands else None
    root_ev = _root_evaluation(evaluator, game)
    has_score = root_ev.score is not None and after is not None and after.score is not None
    move_infos = []
    lead_sum, lead_weight = 0.0, 0
    for order, c in enumerate(cands):
        wr, lcb = candidate_winrate_lcb(c, root_wr)
        info: dict[str, Any] = {
            "move": coords.to_gtp(c.move, size), "visits": c.visits, "edgeVisits": c.visits,
            "weight": float(c.visits), "edgeWeight": float(c.visits),
            "winrate": view.winrate(wr), "lcb": view.winrate(lcb),
            "utility": num(2 * view.winrate(wr) - 1), "utilityLcb": num(2 * view.winrate(lcb) - 1),
            "prior": num(c.prior), "order": order,
            "pv": [coords.to_gtp(p, size) for p in (c.pv if c.visits else [c.move])[:1 + req.pv_len]],
        }
        if has_score:
            lead = -float(after.score[order])          # the position after the move: the mover's lead
            info["scoreLead"] = info["scoreMean"] = info["scoreSelfplay"] = view.score(lead)
            info["scoreStdev"] = num(implied_score_stdev(wr, lead, size))
            lead_sum += c.visits * lead
            lead_weight += c.visits
        if req.include_moves_ownership and after is not None and after.ownership is not None:
            own = np.asarray(after.ownership[order], np.float64)   # the opponent's view after the move
            info["ownership"] = view.ownership(own if other(to_move) == BLACK else -own)
        move_infos.append(info)

    raw_wr = min(1.0, max(0.0, (float(root_ev.value[0]) + 1.0) / 2.0))
    this_hash, sym_hash = position_hashes(game.stones(), to_move, game.ko_point)
    root: dict[str, Any] = {
        "visits": tree.visits, "weight": float(tree.visits),
        "winrate": view.winrate(root_wr), "utility": num(2 * view.winrate(root_wr) - 1),
        "rawWinrate": view.winrate(raw_wr), "currentPlayer": color_name(to_move),
        "thisHash": this_hash, "symHash": sym_hash,
    }
    if has_score:
        raw_lead = float(root_ev.score[0])
        lead = (raw_lead + lead_sum) / (1 + lead_weight)
        root["scoreLead"] = root["scoreSelfplay"] = view.score(lead)
        root["scoreStdev"] = num(implied_score_stdev(root_wr, lead, size))
        root["rawLead"] = view.score(raw_lead)
    out: dict[str, Any] = {"id": req.id, "turnNumber": req.turn, "isDuringSearch": during,
                           "moveInfos": move_infos, "rootInfo": root}
    if req.include_ownership:
        own = scoring.estimate_ownership(game, evaluator, playouts=ownership_playouts, seed=seed)
        out["ownership"] = view.ownership(own)
    if req.include_policy:
        mask = game.legal_mask(to_move)
        probs = softmax(np.asarray(root_ev.policy[0]), mask)
        out["policy"] = [num(p) if ok else -1.0 for p, ok in zip(probs, mask)]
    return out
