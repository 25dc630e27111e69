"""Fixed anchors: reference players that never change, rated once, so that every net is rated on
one Elo scale whatever other nets or runs exist.

    python -m tools.experiments.anchors calibrate --out experiments/anchors/7x7-komi9.json \\
        --work-dir runs/anchors/7x7-komi9                      # once; resumable
    python -m tools.experiments.anchors rate NET.pt --visits 32 --anchors experiments/anchors/7x7-komi9.json \\
        --out runs/ratings/NET.json                            # one net; resumable

**The ladder** (:data:`LADDER_7X7`, weakest first): our C search with the uniform evaluator
(a flat policy, value 0) and random playouts at the leaves (``rollout_weight=1``: a pure Monte
Carlo tree search) at growing numbers of playouts a move, and GNU Go 3.8 levels through GTP.
Each anchor is its exact engine spec (an ``inproc:uniform:...`` spec or a GTP command line).

**Calibration** (:func:`calibrate`): a round robin of the anchors in which neighbours on the
ladder play the most games, anchors two rungs apart fewer, every other pair a few (two GNU Go
levels: one game a colour, as GNU Go plays the same game again), then one Bradley-Terry fit
(:func:`train.match.stats.bradley_terry`, its weak default prior) with ``gnugo-L1`` at 0 Elo.
The result is committed (``experiments/anchors/<size>x<size>-komi<K>.json``) with every game,
so the fit can be redone, and never changes afterwards.

**Rating a net** (:func:`rate_net`): the net (in-process, at the given visits) plays batches of
games against the anchors, each batch against the anchor whose expected score is nearest 50% at
the net's current estimate, until the 95% interval is narrow or a cap of games is reached.  Its
Elo is the maximum-likelihood fit of its own games against the anchors' FIXED Elos
(:func:`fit_elo`, one parameter), so no other net changes it.  Every finished batch is saved in
the net's JSON file; a later call continues from it.

Every game, anchors' and nets', is counted by a GNU Go level-0 referee (dead stones off) and
played through :func:`train.match.ladder.play_match`.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import itertools
import json
import math
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from engine.core import Rules
from engine.play.settings import DEFAULT_RESIGN
from train.match.config import inproc_play
from train.match.inproc import parse_inproc
from train.match.ladder import REFEREE, play_match
from train.match.stats import ELO_PER_NAT, bradley_terry, score_from_elo
from train.rundir import atomic_write_json
from tools import REPO_ROOT
from tools.machine import cpu_label

# The committed files' tags: they name the module's path before tools/ was split, kept as they are.
FORMAT = "tools.anchors v1"
RATING_FORMAT = "tools.anchors rating v1"
ZERO = "gnugo-L1"                   # the anchor at 0 Elo
GNUGO = "/usr/games/gnugo --mode gtp --chinese-rules --level {level}"
# Pure Monte Carlo tree search: the uniform evaluator, values from uniformly random playouts only.
MC = "inproc:uniform:visits={visits},rollout_weight=1,rollouts={rollouts},rollout_policy=0"


def mc_anchor(visits: int, rollouts: int = 1) -> tuple[str, str]:
    """(name, spec) of the Monte Carlo anchor with ``visits`` tree visits a move and ``rollouts``
    random playouts a leaf: ``mc-<visits>`` or ``mc-<visits>x<rollouts>``."""
    name = f"mc-{visits}" if rollouts == 1 else f"mc-{visits}x{rollouts}"
    return name, MC.format(visits=visits, rollouts=rollouts)


def gnugo_anchor(level: int) -> tuple[str, str]:
    """(name, GTP command) of GNU Go 3.8 at ``level`` under Chinese rules."""
    return f"gnugo-L{level}", GNUGO.format(level=level)


#: The 7x7 ladder in the order of its calibration (neighbours here play the most games), chosen
#: by short matches (komi 9, Chinese rules).  By strength, as calibrated: mc-1 (it plays the first
#: legal point), mc-16, mc-16x16, mc-64, mc-64x16, mc-256, mc-256x16, gnugo-L10, gnugo-L1: below
#: 49 visits the uniform search looks only at the first points in board order, so 16 playouts a
#: leaf at few visits are weaker than one at more; GNU Go levels play each other the same game
#: every time, and on 7x7 level 10 is not measurably stronger than level 1.
LADDER_7X7: tuple[tuple[str, str], ...] = (
    mc_anchor(1), mc_anchor(16), mc_anchor(64), mc_anchor(256), mc_anchor(16, 16), mc_anchor(64, 16),
    gnugo_anchor(1), mc_anchor(256, 16), gnugo_anchor(10))


def net_anchor(path: str, visits: int) -> tuple[str, str]:
    """(name, spec) of a shipped net of ours (a file that never changes) at ``visits``, its
    search alone (no leaf playouts): ``net-<file stem>-<visits>``."""
    return f"net-{Path(path).stem}-{visits}", f"inproc:{path}:visits={visits},rollout_weight=0"


#: The 5x5 ladder (komi 24.5: Black must own the whole board), in the order of its calibration:
#: pure Monte Carlo search, GNU Go, and the shipped 5x5 net (weights/5x5.pt, which owns the
#: whole board as Black against itself) at few and many visits, to bound the best nets.
LADDER_5X5: tuple[tuple[str, str], ...] = (
    mc_anchor(16), mc_anchor(64), mc_anchor(256), mc_anchor(1024), gnugo_anchor(1), gnugo_anchor(10),
    net_anchor("weights/5x5.pt", 8), net_anchor("weights/5x5.pt", 128))
LADDERS = {7: LADDER_7X7, 5: LADDER_5X5}

#: Games of a calibration pair by its distance on the ladder (1: neighbours), and of the rest.
CALIBRATION_GAMES = {1: 12, 2: 6}
CALIBRATION_OTHER_GAMES = 2

# A game's result as the fits read it: (black, white, Black's score: 1, 1/2 or 0).
Game = tuple[str, str, float]
# Plays ``games`` games of a against b (each (name, spec)), colours alternating from a as Black,
# into ``folder`` with ``seed``; returns the games.  The default is :func:`match_games`.
PlayGames = Callable[[tuple[str, str], tuple[str, str], int, int, Path], list[Game]]


# ---------------------------------------------------------------------------------------------
# The anchors file


@dataclass(frozen=True)
class Anchor:
    """A fixed reference player: its ``name``, its engine ``spec`` (``inproc:...`` or a GTP
    command line) and, once calibrated, its ``elo`` and 95% interval."""

    name: str
    spec: str
    elo: float = math.nan
    elo_ci95: tuple[float, float] = (math.nan, math.nan)


@dataclass(frozen=True)
class AnchorSet:
    """The anchors of one board, komi and rules, weakest first, and how their games are played:
    ``referee`` counts every game (None: Tromp-Taylor), ``resign`` is the in-process players'
    resignation winrate."""

    board_size: int
    komi: float
    rules: str
    anchors: tuple[Anchor, ...]
    referee: str | None = REFEREE
    resign: float = DEFAULT_RESIGN

    @property
    def elos(self) -> dict[str, float]:
        return {a.name: a.elo for a in self.anchors}

    def match_rules(self) -> Rules:
        return Rules.from_name(self.rules, self.komi)


def load_anchors(path: Path | str) -> AnchorSet:
    """The calibrated anchors of the file ``path`` (written by :func:`calibrate`), their Elos as
    committed.  ValueError for another kind of file or an anchor without an Elo."""
    doc = json.loads(Path(path).read_text())
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT!r} file")
    anchors = []
    for a in doc["anchors"]:
        if a.get("elo") is None:
            raise ValueError(f"{path}: anchor {a.get('name')!r} has no Elo")
        anchors.append(Anchor(a["name"], a["spec"], float(a["elo"]), tuple(a["elo_ci95"])))
    return AnchorSet(int(doc["board_size"]), float(doc["komi"]), doc["rules"], tuple(anchors),
                     doc.get("referee"), float(doc.get("resign", DEFAULT_RESIGN)))


# ---------------------------------------------------------------------------------------------
# Playing


def match_games(anchors: AnchorSet, visits: int = 1, parallel: int = 4) -> PlayGames:
    """The default game player: :func:`train.match.ladder.play_match` on the anchors' board,
    rules and referee (``visits`` only for in-process specs without ``visits=``); a finished
    match in its folder is not played again."""
    from train.match.ladder import LadderConfig
    from train.match.ratings import MATCH_FORMAT, _results_games

    def play(a: tuple[str, str], b: tuple[str, str], games: int, seed: int, folder: Path) -> list[Game]:
        cfg = LadderConfig(games=games, play=inproc_play(visits, anchors.resign), rules=anchors.match_rules(),
                           referee=anchors.referee, parallel=parallel, seed=seed)
        doc = play_match(folder, cfg, a, b, games, anchors.board_size)
        if doc.get("format") != MATCH_FORMAT or not doc.get("complete"):
            raise RuntimeError(f"{folder}: the match did not finish")
        rated, _ = _results_games(folder / "results.json", doc)
        return [(g.black, g.white, g.score) for g in rated]

    return play


def _seed(*parts: int) -> int:
    """A 31-bit seed from ``parts`` (the same parts, the same seed, on any machine)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] >> 1)


# ---------------------------------------------------------------------------------------------
# Calibration


def calibration_pairs(names: Sequence[str], games: Mapping[int, int] | None = None,
                      other: int = CALIBRATION_OTHER_GAMES) -> list[tuple[str, str, int]]:
    """(a, b, games) of every pair of ``names`` (the ladder, weakest first): ``games[d]`` games
    for anchors ``d`` rungs apart, ``other`` for the rest; two GNU Go levels play one game a
    colour (GNU Go plays the same game again)."""
    games = dict(CALIBRATION_GAMES if games is None else games)
    out = []
    for (i, a), (j, b) in itertools.combinations(enumerate(names), 2):
        n = games.get(j - i, other)
        if a.startswith("gnugo-") and b.startswith("gnugo-"):
            n = min(n, 2)
        out.append((a, b, n))
    return out


def calibrate(ladder: Sequence[tuple[str, str]], board_size: int, komi: float, work_dir: Path,
              rules: str = "chinese", games: Mapping[int, int] | None = None,
              other_games: int = CALIBRATION_OTHER_GAMES, seed: int = 1, parallel: int = 4,
              zero: str = ZERO, referee: str | None = REFEREE, resign: float = DEFAULT_RESIGN, jobs: int = 1,
              play_games: PlayGames | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Plays the calibration round robin of ``ladder`` ((name, spec), weakest first) in
    ``work_dir`` (one match folder a pair; finished pairs are not played again; ``jobs`` pairs at
    once, each in a process of its own) and returns the anchors document: one Bradley-Terry fit
    with ``zero`` at 0 Elo, every game, the pairs.
    ValueError for a repeated name or a ``zero`` not on the ladder."""
    names = [n for n, _ in ladder]
    if len(set(names)) != len(names) or zero not in names:
        raise ValueError(f"the ladder needs distinct names and {zero!r}: {names}")
    setting = AnchorSet(board_size, komi, rules, tuple(Anchor(n, s) for n, s in ladder), referee, resign)
    spec = dict(ladder)
    pairs = calibration_pairs(names, games, other_games)
    work = [((a, spec[a]), (b, spec[b]), n, _seed(seed, k), work_dir / f"{a}-vs-{b}")
            for k, (a, b, n) in enumerate(pairs)]
    if play_games is None and jobs > 1:     # independent pairs, one process each: the same games
        with ProcessPoolExecutor(jobs) as ex:
            played = ex.map(_pair_games, [setting] * len(work), [parallel] * len(work), work)
            results = list(_logged(played, pairs, log))
    else:
        play = play_games or match_games(setting, parallel=parallel)
        results = list(_logged((play(*w) for w in work), pairs, log))
    all_games = [g for got in results for g in got]
    fit = bradley_terry(all_games, anchor=zero)
    anchors = []
    for name, s in ladder:
        r = fit[name]
        half = 1.96 * r.stderr
        entry: dict[str, Any] = {"name": name, "spec": s, "elo": round(r.elo, 1),
                                 "elo_ci95": [round(r.elo - half, 1), round(r.elo + half, 1)],
                                 "games": r.games, "points": r.points}
        inproc = parse_inproc(s)
        if inproc is not None:      # what the spec resolves to now: a later change shows
            entry["search"] = dataclasses.asdict(inproc.search_params(None, board_size))
        anchors.append(entry)
    return {"format": FORMAT, "board_size": board_size, "komi": komi, "rules": rules, "zero": zero,
            "referee": referee, "resign": resign, "prior_draws": 1.0, "anchors": anchors,
            "pairs": [{"a": a, "b": b, "games": len(got)} for (a, b, _), got in zip(pairs, results)],
            "games": [list(g) for g in all_games], "seed": seed}


def _pair_games(setting: AnchorSet, parallel: int, work: tuple) -> list[Game]:
    """One calibration pair's games in a worker process (:func:`match_games`)."""
    return match_games(setting, parallel=parallel)(*work)


def _logged(results: Iterable[list[Game]], pairs: Sequence[tuple[str, str, int]],
            log: Callable[[str], None]) -> Iterable[list[Game]]:
    """``results`` (the games of each pair, in order), each score logged as it comes."""
    for (a, b, _), got in zip(pairs, results):
        pts = sum(s if black == a else 1.0 - s for black, _, s in got)
        log(f"{a} vs {b}: {pts:g}/{len(got)}")
        yield got


# ---------------------------------------------------------------------------------------------
# Rating a net against the fixed anchors


@dataclass(frozen=True)
class EloFit:
    """A one-parameter fit: ``elo`` (the maximum-likelihood Elo; when the player won or lost
    every game, the finite end of its interval, and ``unbounded`` says "above" or "below"),
    the 95% likelihood-ratio interval ``lo``, ``hi`` (an open end is +-inf), ``games`` and
    ``points``."""

    elo: float
    lo: float
    hi: float
    games: int
    points: float
    unbounded: str | None = None

    @property
    def halfwidth(self) -> float:
        return (self.hi - self.lo) / 2.0


CHI2_95 = 3.841458820694124         # the 95% quantile of chi-square with one degree of freedom


def fit_elo(games: Iterable[tuple[float, float]]) -> EloFit:
    """The Elo of a player from its games against opponents of fixed Elo: ``games`` holds
    (opponent's Elo, the player's score 1, 1/2 or 0).  The maximum of the logistic likelihood,
    and the 95% interval where twice the log-likelihood is within 3.84 of it.  ValueError
    without games or for a bad score."""
    pairs = [(float(e), float(s)) for e, s in games]
    if not pairs:
        raise ValueError("no games to fit")
    if any(not 0.0 <= s <= 1.0 for _, s in pairs):
        raise ValueError("scores must be in [0, 1]")
    opp = np.array([e for e, _ in pairs]) / ELO_PER_NAT
    score = np.array([s for _, s in pairs])
    points = float(score.sum())

    def loglik(x: float) -> float:
        d = x - opp
        return float(np.sum(-score * np.logaddexp(0.0, -d) - (1.0 - score) * np.logaddexp(0.0, d)))

    def slope(x: float) -> float:       # increasing in -x: the root is the maximum
        return float(np.sum(score - 1.0 / (1.0 + np.exp(-(x - opp)))))

    span = (opp.min() - 60.0, opp.max() + 60.0)     # +-60 nats: ~10,000 Elo past the opponents
    unbounded = "above" if points == len(pairs) else "below" if points == 0 else None
    if unbounded is None:
        best = _root(slope, *span)
        top = loglik(best)
    else:
        best = span[1] if unbounded == "above" else span[0]
        top = 0.0                           # the supremum, approached at the open end

    def inside(x: float) -> float:
        return 2.0 * (top - loglik(x)) - CHI2_95

    lo = -math.inf if unbounded == "below" else _root(inside, span[0], min(best, span[1]))
    hi = math.inf if unbounded == "above" else _root(lambda x: -inside(x), max(best, span[0]), span[1])
    elo = {"above": lo, "below": hi}.get(unbounded or "", best)
    return EloFit(float(elo * ELO_PER_NAT), float(lo * ELO_PER_NAT), float(hi * ELO_PER_NAT), len(pairs), points, unbounded)


def _root(f: Callable[[float], float], a: float, b: float) -> float:
    """The root of ``f`` on [a, b] by bisection, ``f`` positive at ``a`` and negative at ``b``
    (decreasing; its end when there is no sign change)."""
    fa, fb = f(a), f(b)
    if fa <= 0:
        return a
    if fb >= 0:
        return b
    while b - a > 1e-9:
        m = 0.5 * (a + b)
        a, b = (m, b) if f(m) > 0 else (a, m)
    return 0.5 * (a + b)


def net_games(games: Iterable[Game], player: str, elos: Mapping[str, float]) -> list[tuple[float, float]]:
    """(anchor's Elo, ``player``'s score) of each game ``player`` played against an anchor of
    ``elos``; games of other players, or against non-anchors, are left out."""
    out = []
    for black, white, score in games:
        if black == player and white in elos:
            out.append((elos[white], score))
        elif white == player and black in elos:
            out.append((elos[black], 1.0 - score))
    return out


def nearest_anchor(estimate: float, anchors: Sequence[Anchor]) -> Anchor:
    """The anchor whose expected score against a player of Elo ``estimate`` is nearest 50%
    (the nearest Elo; the weaker on a tie)."""
    return min(anchors, key=lambda a: (abs(score_from_elo(estimate - a.elo) - 0.5), a.elo))


def choice_estimate(fit: EloFit | None, prior: float | None, anchors: Sequence[Anchor]) -> float:
    """Where the next batch aims: the fit's Elo (for a clean sweep, the finite end of its
    interval, which moves on as the sweep goes on), else ``prior``, else the middle of the
    ladder (the median anchor's Elo)."""
    if fit is not None:
        return fit.elo
    if prior is not None and math.isfinite(prior):
        return float(prior)
    return float(np.median([a.elo for a in anchors]))


def file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def rate_net(net: Path | str, anchors: AnchorSet | Path | str, out: Path | str, *, visits: int,
             prior: float | None = None, seed: int = 0, target_halfwidth: float = 75.0,
             max_games: int = 120, batch: int = 10, must_play: Mapping[str, int] | None = None,
             options: str = "",
             name: str | None = None, parallel: int = 5, work_dir: Path | None = None,
             play_games: PlayGames | None = None, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Rates the net ``net`` (one of our ``.pt`` files, in-process at ``visits``) against the
    fixed ``anchors`` (an :class:`AnchorSet` or its file) and returns its rating document, also
    written to ``out`` (a JSON file) after every batch.

    Batches of ``batch`` games (colours alternating) go first to the anchors of ``must_play``
    (name -> games, rounded up to whole batches), then each to the anchor nearest 50% at the
    current estimate (:func:`choice_estimate`: ``prior``, else the middle of the ladder, before
    any game) until the 95% interval's half-width is below ``target_halfwidth`` Elo or
    ``max_games`` games are played.  ``options`` are search options of the net's in-process spec
    (``rollout_weight=0``: the net and its search alone, as in self-play).  Batch ``i`` plays with the seed ``(seed, i)``.  An ``out``
    that holds batches of the same net (by content), visits, batch size, seed and anchors
    continues from them (a raised ``max_games`` or narrower target plays on); ValueError when it
    holds another net's or other settings.  Its matches' SGFs go to ``work_dir`` (default the
    folder ``out`` without its suffix plus ``-games``).  ``play_games`` replaces the game player
    (tests).

    The document: ``{"format", "net", "sha256", "name", "visits", "seed", "batch", "prior",
    "anchors": {name: elo}, "batches": [{"anchor", "games": [[black, white, score]]}],
    "results": [{"anchor", "score"}] (the net's score, game by game), "elo", "elo_ci95",
    "unbounded", "games", "points", "done"}``; ``elo_ci95``'s open end is None when the net won
    (lost) every game, and ``elo`` is then the interval's finite end.
    """
    anchor_set = anchors if isinstance(anchors, AnchorSet) else load_anchors(anchors)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    net = Path(net)
    name = name or net.stem
    elos = anchor_set.elos
    if name in elos:
        raise ValueError(f"the net's name {name!r} is an anchor's")
    must = dict(must_play or {})
    unknown = set(must) - set(elos)
    if unknown:
        raise ValueError(f"must_play names no anchor: {', '.join(sorted(unknown))}")
    ident = {"format": RATING_FORMAT, "sha256": file_digest(net), "name": name, "visits": visits, "seed": seed,
             "batch": batch, "anchors": {k: v for k, v in elos.items()}}
    if options:
        ident["options"] = options
    doc: dict[str, Any] = {**ident, "net": str(net), "prior": prior, "batches": []}
    if out.is_file():
        saved = json.loads(out.read_text())
        changed = [k for k, v in ident.items() if saved.get(k) != v]
        if changed:
            raise ValueError(f"{out}: another rating ({', '.join(changed)} differ); remove it to start again")
        doc["batches"] = saved.get("batches") or []
        doc["prior"] = saved.get("prior", prior)
    work_dir = Path(work_dir) if work_dir is not None else out.with_name(out.stem + "-games")
    play = play_games or match_games(anchor_set, visits, parallel)
    me = (name, f"inproc:{net}:visits={visits}" + (f",{options}" if options else ""))
    by_name = {a.name: a for a in anchor_set.anchors}

    def summary() -> tuple[EloFit | None, list[Game]]:
        games = [tuple(g) for b in doc["batches"] for g in b["games"]]
        pairs = net_games(games, name, elos)
        return (fit_elo(pairs) if pairs else None), games   # type: ignore[return-value]

    def next_anchor(fit: EloFit | None, played: int) -> Anchor | None:
        for a, n in must.items():
            if sum(len(b["games"]) for b in doc["batches"] if b["anchor"] == a) < n:
                return by_name[a]
        narrow = fit is not None and math.isfinite(fit.halfwidth) and fit.halfwidth < target_halfwidth
        if narrow or played >= max_games:
            return None
        return nearest_anchor(choice_estimate(fit, doc["prior"], anchor_set.anchors), anchor_set.anchors)

    while True:
        fit, games = summary()
        anchor = next_anchor(fit, len(games))
        if anchor is None:
            break
        i = len(doc["batches"])
        folder = work_dir / f"batch-{i:03d}-vs-{anchor.name}"
        if folder.exists():
            shutil.rmtree(folder)           # an interrupted batch: played again from its start
        got = play(me, (anchor.name, anchor.spec), batch, _seed(seed, i), folder)
        doc["batches"].append({"anchor": anchor.name, "games": [list(g) for g in got]})
        fit, games = summary()
        _finish(doc, fit, games, name, done=False)
        atomic_write_json(out, doc)
        if log is not None:
            pts = sum(s for _, s in net_games(got, name, elos))
            log(f"{name}: batch {i} vs {anchor.name} {pts:g}/{len(got)}; {describe(doc)}")
    _finish(doc, fit, games, name, done=True)
    atomic_write_json(out, doc)
    return doc


def _finish(doc: dict[str, Any], fit: EloFit | None, games: list[Game], name: str, done: bool) -> None:
    """Sets the rating fields of ``doc`` from ``fit``."""
    def num(x: float) -> float | None:
        return round(x, 1) if math.isfinite(x) else None

    doc["results"] = [{"anchor": b["anchor"], "score": s} for b in doc["batches"]
                      for _, s in net_games([tuple(g) for g in b["games"]], name, doc["anchors"])]
    doc["games"] = len(doc["results"])
    doc["points"] = sum(r["score"] for r in doc["results"])
    doc["elo"] = None if fit is None else num(fit.elo)
    doc["elo_ci95"] = [None, None] if fit is None else [num(fit.lo), num(fit.hi)]
    doc["unbounded"] = None if fit is None else fit.unbounded
    doc["done"] = done


def colour_split(doc: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """A rating file's games by anchor and the net's colour: {anchor: {"black": [points, games],
    "white": [points, games]}}, the net's points (its batches list each game as [black, white,
    Black's score]; a file without them gives {})."""
    out: dict[str, dict[str, list[float]]] = {}
    for batch in doc.get("batches", []):
        split = out.setdefault(batch["anchor"], {"black": [0.0, 0], "white": [0.0, 0]})
        for black, _white, score in batch["games"]:
            side = "black" if black == doc["name"] else "white"
            split[side][0] += score if side == "black" else 1.0 - score
            split[side][1] += 1
    return out


def describe(doc: dict[str, Any]) -> str:
    """``Elo +123 [+50, +196], 60 games`` of a rating document."""
    def f(x: float | None) -> str:
        return "open" if x is None else f"{x:+.0f}"
    if doc.get("elo") is None:
        return "no games"
    lo, hi = doc["elo_ci95"]
    return f"Elo {f(doc['elo'])} [{f(lo)}, {f(hi)}], {doc['games']} games ({doc['points']:g} points)"


# ---------------------------------------------------------------------------------------------
# Command line


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.experiments.anchors", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2].split("Every game")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("calibrate", help="rate the anchors once: a round robin, one Bradley-Terry fit, the "
                                         "anchors file to commit (resumable: finished pairs are kept)")
    c.add_argument("--board-size", type=int, default=7)
    c.add_argument("--komi", type=float, default=9.0)
    c.add_argument("--rules", default="chinese")
    c.add_argument("--out", type=Path, required=True, help="the anchors file, e.g. experiments/anchors/7x7-komi9.json")
    c.add_argument("--work-dir", type=Path, required=True, help="the matches' folders (SGFs, results)")
    c.add_argument("--neighbour-games", type=int, default=CALIBRATION_GAMES[1], help="games of neighbours (%(default)s)")
    c.add_argument("--second-games", type=int, default=CALIBRATION_GAMES[2],
                   help="games of anchors two rungs apart (%(default)s)")
    c.add_argument("--other-games", type=int, default=CALIBRATION_OTHER_GAMES, help="games of the other pairs "
                   "(%(default)s; two GNU Go levels play at most 2)")
    c.add_argument("--parallel", type=int, default=4, help="games at once in a pair's match (%(default)s)")
    c.add_argument("--jobs", type=int, default=1, help="pairs at once, a process each (%(default)s)")
    c.add_argument("--seed", type=int, default=1)
    r = sub.add_parser("rate", help="rate one net against the fixed anchors (adaptive; resumable: the net's "
                                    "JSON keeps every finished batch)")
    r.add_argument("net", type=Path, help="one of our .pt checkpoints")
    r.add_argument("--visits", type=int, required=True, help="the net's visits a move")
    r.add_argument("--anchors", type=Path, required=True, help="the anchors file (calibrate)")
    r.add_argument("--out", type=Path, required=True, help="the net's rating JSON")
    r.add_argument("--prior", type=float, default=None, help="the Elo to start from (default: mid-ladder)")
    r.add_argument("--target-halfwidth", type=float, default=75.0, help="stop at this 95%% half-width (%(default)s)")
    r.add_argument("--max-games", type=int, default=120, help="stop after this many games (%(default)s)")
    r.add_argument("--batch", type=int, default=10, help="games a batch, colours alternating (%(default)s)")
    r.add_argument("--parallel", type=int, default=5, help="games at once (%(default)s)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--options", default="", help="search options of the net, e.g. rollout_weight=0")
    for p in (c, r):
        p.add_argument("--threads", type=int, default=1, help="torch threads (%(default)s)")
    a = ap.parse_args(argv)
    import torch
    torch.set_num_threads(max(1, a.threads))

    def log(msg: str) -> None:
        print(msg, flush=True)

    if a.command == "rate":
        doc = rate_net(a.net, a.anchors, a.out, visits=a.visits, prior=a.prior, seed=a.seed,
                       target_halfwidth=a.target_halfwidth, max_games=a.max_games, batch=a.batch,
                       parallel=a.parallel, options=a.options, log=log)
        print(f"{doc['name']}: {describe(doc)}")
        return 0
    ladder = LADDERS.get(a.board_size)
    if ladder is None:
        ap.error(f"no ladder for {a.board_size}x{a.board_size} (known: {', '.join(map(str, LADDERS))})")
    doc = calibrate(ladder, a.board_size, a.komi, a.work_dir, rules=a.rules,
                    games={1: a.neighbour_games, 2: a.second_games}, other_games=a.other_games, seed=a.seed,
                    parallel=a.parallel, jobs=a.jobs, log=log)
    doc.update(date=datetime.date.today().isoformat(), commit=_git_commit(), cpu=cpu_label(),
               command=" ".join(["python -m tools.experiments.anchors", *map(shlex.quote, argv if argv is not None else sys.argv[1:])]))
    atomic_write_json(a.out, doc)
    for x in doc["anchors"]:
        lo, hi = x["elo_ci95"]
        print(f"{x['name']:14s} {x['elo']:+8.1f} [{lo:+.1f}, {hi:+.1f}]  {x['games']:4d} games  {x['spec']}")
    print(f"{len(doc['games'])} games; wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
