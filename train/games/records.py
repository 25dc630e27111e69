"""Game records: the one record of every game the project plays (self-play, gating, matches,
ladders), what a finished game leaves on disk, and how training gets its positions back.

Each finished game is written twice, atomically (temp file + ``os.replace``):

- an **SGF** (sgfmill) for people and other programs: size, RU rules, KM komi, RE result, PB/PW
  the model ids per colour (:meth:`GameRecord.player_models`: who was assigned each colour, so
  also in a game that ended before a colour moved), a root comment with every model that played
  and why the game ended, and per move the search's visits and winrate (and the model, when it
  changed mid-game);
- a compact **.npz training record** (``allow_pickle=False``, plain arrays only):

  ==================  =============  =====================================================
  key                 dtype/shape    meaning
  ==================  =============  =====================================================
  version             int            RECORD_VERSION (2; version 1 records are read too)
  size, komi, rules   int/float/str  board size, komi, ``Rules.name``
  moves, colors       int16/int8 [T] the moves (compact points, pass = N*N) and who played
  full                bool [T]       a full search: the position is a training position
  visits              int32 [T]      root visits of the search that chose the move
  values              float16 [T]    root value after that search, mover's view, -1..1
  policy_offsets      int32 [T+1]    CSR rows of the policy targets (empty for cheap moves)
  policy_points       int16 [K]      points with visits
  policy_probs        float16 [K]    their share of the root visits (the policy target)
  model_ids           str [M]        every model that chose a move
  move_model          int16 [T]      index into model_ids of the model that chose each move
  players_black       str [B]        optional: the models that played Black, from the game's
  players_white       str [W]        set-up (assigned at the start, then every switch), so a
                                     game that ends before a colour moves still names it;
                                     absent in older records (same RECORD_VERSION: the
                                     fields are optional): derived from the moves
  setup               int16 [H]      optional: handicap stones, Black's, placed before the
                                     moves (White moves first then); absent: none
  opening_moves       int            optional: the first this many moves were forced (a
                                     random opening), not chosen by the players; absent: 0
  seconds             float32 [T]    optional: wall time that chose each move
  detail              str            optional: how a forfeit or a failed count happened
  referee_score       float32        optional: a referee engine's count (nan: none), which
                                     then decides the winner instead of ``score``
  winner              int8           BLACK, WHITE or 0 (draw)
  score               float32        final Tromp-Taylor score, Black minus White minus komi
  ownership           int8 [N, N]    final area owner per point (0 neutral, 1 black, 2 white)
  scored              bool           the game was played out (score/ownership are targets)
  reason              str            how it ended, one of ENDINGS: "passes", "resign", "move
                                     cap", or a forfeit: "time", "crash", "illegal", "error"
  no_resign           bool           resignation was disabled (calibration game)
  resign_winrate      float32        resignation winrate in force, 0..1 (nan: resignation
                                     off); version 1 kept it as a root value -1..1 under
                                     the key resign_threshold, read as its winrate
  seed, started, finished             the game's seed and wall-clock times
  ==================  =============  =====================================================

Input planes are NOT stored: training regenerates them by replaying the moves through the C
core (:class:`engine.core.Game`) and calling ``Game.features``.  Why:

- compact: a 9x9 game is a few kB instead of ~6 kB per position of float planes;
- feature-set independent: the same games train a net with other input features ("rich",
  "lz18", a future set) and stay valid when the encoder improves;
- one rules engine: captures, ko and history planes come from the same C code that the search
  used during play, so training can never disagree with play about the rules.
"""
from __future__ import annotations

import datetime
import io
import math
import os
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from engine import sgf
from engine.rules import format_result
from engine.core import BLACK, WHITE, Game, Rules, feature_planes, winrate_of
from train.rundir import atomic_write

RECORD_VERSION = 2
#: Versions read: 1 kept the resignation threshold as a root value (resign_threshold).
READ_VERSIONS = (1, 2)
#: Forfeits: the offending side loses on time, by a crash, an illegal (or unreadable) move, or
#: an error (a GTP engine refused a command).
FORFEITS = ("time", "crash", "illegal", "error")
#: Every way a game ends: two passes and the move cap are counted, the rest decide the winner.
ENDINGS = ("passes", "resign", "move cap") + FORFEITS


def result_text(winner: int, reason: str, score: float) -> str:
    """The SGF/GTP result of a game, the one formatter: ``B+R`` (resignation), ``W+T`` (time),
    ``B+F`` (crash, illegal move, error), else the count as :func:`engine.rules.format_result`
    writes it (``B+3.5``, ``W+0.5``, ``0``); ``score`` is Black minus White."""
    if winner in (BLACK, WHITE) and reason not in ("passes", "move cap"):
        letter = "B" if winner == BLACK else "W"
        return f"{letter}+{'R' if reason == 'resign' else 'T' if reason == 'time' else 'F'}"
    return format_result(score)


@dataclass
class GameRecord:
    """A finished game and the search statistics of every move (see the module docstring)."""

    size: int
    rules: Rules                        # komi included (stored as the keys komi and rules)
    moves: np.ndarray                   # int16 [T]
    colors: np.ndarray                  # int8 [T]
    full: np.ndarray                    # bool [T]
    visits: np.ndarray                  # int32 [T]
    values: np.ndarray                  # float16 [T]
    policy_offsets: np.ndarray          # int32 [T+1]
    policy_points: np.ndarray           # int16 [K]
    policy_probs: np.ndarray            # float16 [K]
    model_ids: list[str]
    move_model: np.ndarray              # int16 [T]
    winner: int
    score: float
    ownership: np.ndarray               # int8 [N, N]
    scored: bool
    reason: str
    no_resign: bool = False
    resign_winrate: float = math.nan     # the resignation winrate in force (nan: off)
    seed: int = 0
    started: float = 0.0
    finished: float = 0.0
    # The models assigned to each colour by the game's set-up, in order (a mid-game switch adds
    # one); empty: not known (an older record), the moves say who played.
    players: dict[int, list[str]] = field(default_factory=dict)
    setup: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))   # handicap stones
    opening_moves: int = 0              # the first moves were forced (a random opening)
    seconds: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))   # [T] or empty
    detail: str = ""                    # forfeit or failed count, in words
    referee_score: float | None = None  # a referee engine's count, Black minus White

    # -- derived views -------------------------------------------------------------------
    @property
    def length(self) -> int:
        return int(len(self.moves))

    @property
    def num_positions(self) -> int:
        """Training positions: moves chosen by a full search."""
        return int(np.count_nonzero(self.full))

    @property
    def resigned(self) -> bool:
        return self.reason == "resign"

    @property
    def final_score(self) -> float:
        """The count that decided a counted game: the referee's, else Tromp-Taylor's."""
        return self.referee_score if self.referee_score is not None else self.score

    def result_string(self) -> str:
        """The result (:func:`result_text`): ``B+R``, ``W+T``, ``B+F``, ``B+3.5``, ``0``..."""
        return result_text(self.winner, self.reason, self.final_score)

    def comment(self) -> str:
        """How the game ended, in words (the SGF game comment)."""
        loser = "White" if self.winner == BLACK else "Black"
        if self.reason == "resign":
            text = f"{loser} resigned."
        elif self.reason in ("passes", "move cap"):
            why = "two passes" if self.reason == "passes" else "the move cap"
            by = "referee" if self.referee_score is not None else "core"
            text = f"Game ended by {why}; counted by {by}: {self.result_string()}."
        elif self.reason == "time":
            text = f"{loser} lost on time."
        elif self.reason == "crash":
            text = f"{loser} forfeits: engine crashed."
        elif self.reason == "illegal":
            text = f"{loser} forfeits: illegal move."
        else:
            text = f"{loser} forfeits: engine error."
        if self.detail:
            text += f" {self.detail}"
        if self.opening_moves:
            text += f" The first {self.opening_moves} moves were a random opening."
        return text

    def policy_target(self, t: int) -> np.ndarray:
        """Dense float32 [N*N+1] policy target of move ``t`` (zeros for a cheap search)."""
        out = np.zeros(self.size * self.size + 1, np.float32)
        a, b = self.policy_offsets[t], self.policy_offsets[t + 1]
        out[self.policy_points[a:b].astype(np.int64)] = self.policy_probs[a:b].astype(np.float32)
        return out

    def model_of_move(self, t: int) -> str:
        return self.model_ids[int(self.move_model[t])]

    def player_models(self) -> dict[int, list[str]]:
        """Model ids that played each colour, in order: the set-up's (:attr:`players`), then any
        other model that chose a move for that colour.  A colour that never moved is still
        named when the record knows its set-up."""
        out: dict[int, list[str]] = {c: list(self.players.get(c, ())) for c in (BLACK, WHITE)}
        for c, m in zip(self.colors, self.move_model):
            name = self.model_ids[int(m)]
            if name not in out[int(c)]:
                out[int(c)].append(name)
        return out



# ---------------------------------------------------------------------------------------------
# Building a record from a finished game


@dataclass
class MoveInfo:
    """One move of a game in progress, as the game runner records it."""

    color: int
    point: int
    model_id: str
    visits: int
    value: float                        # root value after the search, mover's view
    policy: np.ndarray | None           # visit distribution (float32 [N*N+1]) or None (cheap)
    seconds: float = 0.0                # wall time from asking for the move to getting it


def build_record(game: Game, moves: Sequence[MoveInfo], *, reason: str, winner: int | None = None,
                 no_resign: bool = False, resign_winrate: float | None = None, seed: int = 0,
                 started: float = 0.0, finished: float | None = None,
                 players: Mapping[int, Sequence[str]] | None = None, setup: Sequence[int] = (),
                 opening_moves: int = 0, detail: str = "") -> GameRecord:
    """The record of ``game`` (its final position) played with ``moves``.

    ``setup``: the handicap stones, played into ``game`` as Black's first moves before ``moves``
    (White to move after them); ``opening_moves``: how many of ``moves`` were forced.
    ``reason`` is one of ENDINGS; ``winner`` is required for a resignation or a forfeit (the side
    that did NOT resign or forfeit) and otherwise taken from the Tromp-Taylor score.
    ``players``: the model ids the game's set-up assigned to each colour (BLACK/WHITE -> ids in
    order); the record names them even if the game ended before that colour moved (models that
    chose moves are added).  Raises ValueError on an unknown reason or when ``setup`` and
    ``moves`` do not match ``game.moves``."""
    if reason not in ENDINGS:
        raise ValueError(f"unknown game end {reason!r}")
    expected = [(BLACK, int(p)) for p in setup] + [(m.color, m.point) for m in moves]
    if expected != list(game.moves):
        raise ValueError("move records do not match the game's moves")
    n = game.size
    score = game.score()
    scored = reason in ("passes", "move cap")
    if not scored:
        if winner not in (BLACK, WHITE):
            raise ValueError(f"a game ended by {reason} needs the winner")
    else:
        winner = BLACK if score > 0 else WHITE if score < 0 else 0
    ids: list[str] = []
    index: dict[str, int] = {}
    move_model = np.zeros(len(moves), np.int16)
    offsets = np.zeros(len(moves) + 1, np.int32)
    points: list[np.ndarray] = []
    probs: list[np.ndarray] = []
    for t, m in enumerate(moves):
        if m.model_id not in index:
            index[m.model_id] = len(ids)
            ids.append(m.model_id)
        move_model[t] = index[m.model_id]
        k = 0
        if m.policy is not None:
            nz = np.flatnonzero(m.policy > 0)
            points.append(nz.astype(np.int16))
            probs.append(m.policy[nz].astype(np.float16))
            k = len(nz)
        offsets[t + 1] = offsets[t] + k
    rec = GameRecord(
        size=n, rules=game.rules,
        moves=np.array([m.point for m in moves], np.int16),
        colors=np.array([m.color for m in moves], np.int8),
        full=np.array([m.policy is not None for m in moves], bool),
        visits=np.array([m.visits for m in moves], np.int32),
        values=np.array([m.value for m in moves], np.float16),
        policy_offsets=offsets,
        policy_points=np.concatenate(points) if points else np.zeros(0, np.int16),
        policy_probs=np.concatenate(probs) if probs else np.zeros(0, np.float16),
        model_ids=ids, move_model=move_model, winner=int(winner), score=float(score),
        ownership=game.area().astype(np.int8), scored=scored, reason=reason,
        no_resign=bool(no_resign),
        resign_winrate=math.nan if resign_winrate is None else float(resign_winrate),
        seed=int(seed), started=float(started),
        finished=float(time.time() if finished is None else finished),
        players={c: [str(m) for m in (players or {}).get(c, ())] for c in (BLACK, WHITE)},
        setup=np.array(list(setup), np.int16), opening_moves=int(opening_moves),
        seconds=np.array([m.seconds for m in moves], np.float32), detail=detail)
    rec.players = rec.player_models()           # the set-up's players and every model that moved
    return rec


# ---------------------------------------------------------------------------------------------
# .npz training records

_ARRAY_FIELDS = ("moves", "colors", "full", "visits", "values", "policy_offsets", "policy_points",
                 "policy_probs", "move_model", "ownership")


def to_npz_bytes(rec: GameRecord) -> bytes:
    arrays = {k: getattr(rec, k) for k in _ARRAY_FIELDS}
    arrays.update(
        version=np.int32(RECORD_VERSION), size=np.int32(rec.size), komi=np.float32(rec.rules.komi),
        rules=np.str_(rec.rules.name), model_ids=np.array(rec.model_ids, dtype=np.str_),
        winner=np.int8(rec.winner), score=np.float32(rec.score), scored=np.bool_(rec.scored),
        reason=np.str_(rec.reason), no_resign=np.bool_(rec.no_resign),
        resign_winrate=np.float32(rec.resign_winrate), seed=np.int64(rec.seed),
        started=np.float64(rec.started), finished=np.float64(rec.finished))
    players = rec.player_models()
    arrays.update(players_black=np.array(players[BLACK], dtype=np.str_),
                  players_white=np.array(players[WHITE], dtype=np.str_),
                  setup=rec.setup.astype(np.int16), opening_moves=np.int32(rec.opening_moves),
                  seconds=rec.seconds.astype(np.float32), detail=np.str_(rec.detail),
                  referee_score=np.float32(math.nan if rec.referee_score is None else rec.referee_score))
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def write_npz(path: str | os.PathLike, rec: GameRecord) -> None:
    """Writes the training record atomically."""
    data = to_npz_bytes(rec)
    atomic_write(path, lambda f: f.write(data))


def _resign_winrate(z, version: int) -> float:
    """The record's resignation winrate in force (nan: off); version 1 kept a root value."""
    if version >= 2:
        return float(z["resign_winrate"])
    value = float(z["resign_threshold"])
    return math.nan if math.isnan(value) else winrate_of(value)


def read_npz(path: str | os.PathLike) -> GameRecord:
    """Reads a training record; ValueError (naming the file) if it is not a valid one."""
    try:
        with np.load(path, allow_pickle=False) as z:
            version = int(z["version"])
            if version not in READ_VERSIONS:
                raise ValueError(f"record version {version}, this code reads versions "
                                 f"{', '.join(map(str, READ_VERSIONS))}")
            rec = GameRecord(
                size=int(z["size"]), rules=Rules.from_name(str(z["rules"]), float(z["komi"])),
                **{k: z[k] for k in _ARRAY_FIELDS},
                model_ids=[str(s) for s in z["model_ids"]], winner=int(z["winner"]),
                score=float(z["score"]), scored=bool(z["scored"]), reason=str(z["reason"]),
                no_resign=bool(z["no_resign"]), resign_winrate=_resign_winrate(z, version),
                seed=int(z["seed"]), started=float(z["started"]), finished=float(z["finished"]),
                players={c: [str(s) for s in z[key]] for c, key in ((BLACK, "players_black"),
                                                                   (WHITE, "players_white")) if key in z.files})
            if "setup" in z.files:          # optional fields (records written before them lack them)
                referee = float(z["referee_score"])
                rec.setup, rec.opening_moves = z["setup"].astype(np.int16), int(z["opening_moves"])
                rec.seconds, rec.detail = z["seconds"].astype(np.float32), str(z["detail"])
                rec.referee_score = None if math.isnan(referee) else referee
    except Exception as exc:          # zipfile, numpy and OS errors of all kinds
        raise ValueError(f"{path}: not a valid game record ({type(exc).__name__}: {exc})") from exc
    t = len(rec.moves)
    if (len(rec.colors) != t or len(rec.policy_offsets) != t + 1 or rec.ownership.shape != (rec.size, rec.size)
            or int(rec.policy_offsets[-1]) != len(rec.policy_points)):
        raise ValueError(f"{path}: inconsistent game record")
    return rec


# ---------------------------------------------------------------------------------------------
# SGF


def to_sgf_bytes(rec: GameRecord, *, game_name: str = "", application: str = "goengine-train") -> bytes:
    """The game as SGF (FF4) text via engine.sgf: rules, komi, result, model ids per colour,
    and per move the root visits and the mover's winrate (and the model when it changes)."""
    n = rec.size
    models = rec.player_models()
    lines = [f"models: black {', '.join(models[BLACK]) or '-'}; white {', '.join(models[WHITE]) or '-'}",
             f"end: {rec.reason}; Tromp-Taylor score of the final position {rec.score:+g}"
             + (f", referee's count {rec.referee_score:+g}" if rec.referee_score is not None else ""),
             f"rules {rec.rules.name}, komi {rec.rules.komi:g}; seed {rec.seed}"]
    if rec.no_resign:
        lines.append("resignation disabled (calibration game)")
    elif not math.isnan(rec.resign_winrate):
        lines.append(f"resign winrate {rec.resign_winrate:.3f}")
    # Records without training targets (matches, the ladder) keep no policies: no move is 'fast'.
    marks_fast = bool(np.any(rec.full))
    lines.append("move comments: root visits, winrate of the mover after the search"
                 + (", 'fast' = cheap search (not a training target)" if marks_fast else ""))
    comments = []
    prev_model = None
    for t in range(rec.length):
        winrate = winrate_of(float(rec.values[t]))
        if t < rec.opening_moves:
            text = "random opening move"
        elif int(rec.visits[t]) == 0:
            text = "no search"          # a move from outside (a GTP engine)
        else:
            text = f"visits {int(rec.visits[t])} winrate {winrate:.3f}"
        if marks_fast and not rec.full[t] and int(rec.visits[t]) > 0:
            text += " fast"
        model = rec.model_of_move(t)
        if model != prev_model:
            text += f" model {model}"
            prev_model = model
        comments.append(text)
    moves = [(int(rec.colors[t]), int(rec.moves[t])) for t in range(rec.length)]
    date = datetime.datetime.fromtimestamp(rec.finished, datetime.timezone.utc).date() if rec.finished else None
    setup = [int(p) for p in rec.setup]
    return sgf.write_game(n, rec.rules.komi, rec.rules.name, moves, setup_black=setup, handicap=len(setup),
                          to_move=WHITE if setup else None, result=rec.result_string(),
                          black=",".join(models[BLACK]) or "-", white=",".join(models[WHITE]) or "-",
                          root_comment="\n".join(lines), game_comment=rec.comment(), move_comments=comments,
                          application=(application, "1"), game_name=game_name or None, date=date)


def write_sgf(path: str | os.PathLike, rec: GameRecord, game_name: str = "",
              application: str = "goengine-train") -> None:
    """Writes the SGF atomically."""
    data = to_sgf_bytes(rec, game_name=game_name, application=application)
    atomic_write(path, lambda f: f.write(data))


def read_sgf_moves(data: bytes) -> tuple[int, float, list[tuple[int, int]], dict[str, str]]:
    """(size, komi, [(color, point)], root properties as text) of an SGF's main line."""
    record = sgf.read_game(data)
    return record.size, record.komi, record.moves, record.root_properties


# ---------------------------------------------------------------------------------------------
# Training positions, regenerated by the C core


@dataclass
class Positions:
    """Training examples of some positions of one game (arrays indexed like ``indices``).

    Targets are from the side to move's view: value +1 win / -1 loss / 0 draw; ownership +1 own,
    -1 opponent's, 0 neutral; score = final score lead of the side to move.  ``aux_weight`` is 0
    for resigned games (no final position to learn ownership and score from)."""

    planes: np.ndarray        # float32 [B, P, N, N]
    policy: np.ndarray        # float32 [B, N*N+1]
    value: np.ndarray         # float32 [B]
    ownership: np.ndarray     # float32 [B, N*N]
    score: np.ndarray         # float32 [B]
    aux_weight: np.ndarray    # float32 [B]
    indices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def positions(rec: GameRecord, indices: Sequence[int] | np.ndarray, feature_set: str = "rich",
              out_planes: np.ndarray | None = None) -> Positions:
    """Replays ``rec`` once through the C core and returns the examples at move numbers
    ``indices`` (position before move t; duplicates allowed, any order).

    ``out_planes`` (float32 [len(indices), P, N, N]) may be given to avoid an allocation.
    Raises IllegalMoveError if the record does not replay (a corrupt record)."""
    idx = np.asarray(indices, dtype=np.int64)
    n = rec.size
    b = len(idx)
    planes = out_planes if out_planes is not None else np.empty((b, feature_planes(feature_set), n, n), np.float32)
    game = start_position(rec)
    order = np.argsort(idx, kind="stable")
    t = 0
    for j in order:
        target = int(idx[j])
        while t < target:
            game.play(int(rec.moves[t]), int(rec.colors[t]))
            t += 1
        if game.to_move != int(rec.colors[target]):
            game.set_to_move(int(rec.colors[target]))
        game.features(feature_set, out=planes[j])
    movers = rec.colors[idx].astype(np.int8)
    if rec.winner in (BLACK, WHITE):
        value = np.where(movers == rec.winner, 1.0, -1.0).astype(np.float32)
    else:
        value = np.zeros(b, np.float32)
    area = rec.ownership.reshape(-1).astype(np.int8)
    own_black = np.where(area == BLACK, 1.0, np.where(area == WHITE, -1.0, 0.0)).astype(np.float32)
    sign = np.where(movers == BLACK, 1.0, -1.0).astype(np.float32)
    policy = np.zeros((b, n * n + 1), np.float32)
    for j, t in enumerate(idx):
        a, e = rec.policy_offsets[t], rec.policy_offsets[t + 1]
        policy[j, rec.policy_points[a:e].astype(np.int64)] = rec.policy_probs[a:e]
    total = policy.sum(axis=1, keepdims=True)
    np.divide(policy, total, out=policy, where=total > 0)   # float16 storage rounds the sums
    weight = np.full(b, 1.0 if rec.scored else 0.0, np.float32)
    return Positions(planes=planes, policy=policy, value=value, ownership=sign[:, None] * own_black[None, :],
                     score=sign * np.float32(rec.score), aux_weight=weight, indices=idx)


def start_position(rec: GameRecord) -> Game:
    """The position before ``rec``'s first move: the empty board, or the handicap stones with
    White to move."""
    game = Game(rec.size, rec.rules)
    for p in rec.setup:
        game.play(int(p), BLACK)
    if len(rec.setup):
        game.set_to_move(WHITE)
    return game


def replay(rec: GameRecord) -> Game:
    """The final position of ``rec`` replayed through the C core (IllegalMoveError if corrupt)."""
    game = start_position(rec)
    for c, p in zip(rec.colors, rec.moves):
        game.play(int(p), int(c))
    return game
