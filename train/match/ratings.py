"""Ratings of a run's networks from every game they played: ``python -m train.match.ratings RUN_DIR``.

Games are collected from the run directory (``train.rundir`` layout):

- **match results** (``train.match`` results JSON, anywhere under RUN_DIR): every game, by the
  engines' display names (an in-process checkpoint plays under its model id, ``model-0001000``);
- **SGF records** anywhere under RUN_DIR with two different players (PB, PW) and a result (RE):
  the gating games (``gating/<candidate>/g*.sgf``, PB/PW = model ids) and the SGFs of matches
  whose results file is gone.

Skipped: the self-play folder (``sgf/``: one model plays both colours, or two models of a
mid-game switch, ``PB[a,b]``), the SGFs that a results file already lists (each game counts
once), records without a decisive or drawn result (``RE[?]``, ``RE[Void]``).

All games are fitted at once with Bradley-Terry (:func:`train.match.stats.bradley_terry`, logistic
Elo) so that nets that never met are still rated through common opponents. The anchor (Elo 0)
is the first model, the checkpoint with the lowest step that played; without models, the first
player by name. Every model's **training time** is its checkpoint's ``created`` time
(``engine.nets.weights`` metadata; the file's mtime when absent) minus that of the run's first
checkpoint, in hours of wall-clock time.

Output: a table on stdout and ``RUN_DIR/ratings.json`` (written atomically)::

    {"format": "train.ratings v1", "run_dir": ..., "updated": <unix time>,
     "anchor": "model-0000000", "prior_draws": 1.0, "games": 412,
     "files": {"results": 2, "sgf": 380}, "start_time": <first checkpoint's unix time>,
     "players": [{"name": "model-0000200", "model": true, "step": 200, "created": <unix time>,
                  "hours": 1.25, "elo": 85.3, "stderr": 40.1, "games": 80, "points": 45.0},
                 {"name": "GNU Go 3.8", "model": false, "step": null, ...}, ...]}

``players`` lists the models by step, then the other players by Elo. ``train.report`` can plot
``elo`` (with ``stderr``) against ``hours`` or ``step``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from engine import sgf
from engine.nets import weights
from train.rundir import RunDir, atomic_write_json
from train.match.stats import bradley_terry

RATINGS_FILE = "ratings.json"
FORMAT = "train.ratings v1"
MATCH_FORMAT = "train.match results v1"
_MODEL_NAME = re.compile(r"^model-(\d{7,})$")


@dataclass(frozen=True)
class RatedGame:
    """One game between two players: ``score`` is Black's (1 win, 0.5 draw, 0 loss)."""

    black: str
    white: str
    score: float
    source: str                     # the file it came from


def score_from_result(result: str | None) -> float | None:
    """Black's score for an SGF RE value: ``B+...`` 1, ``W+...`` 0, ``0``/``Draw``/``Jigo``
    0.5; None for anything else (``?``, ``Void``, empty)."""
    text = (result or "").strip().lower()
    if text.startswith("b+"):
        return 1.0
    if text.startswith("w+"):
        return 0.0
    if text in ("0", "draw", "jigo", "b+0", "w+0"):
        return 0.5
    return None


def _walk(root: Path, skip: set[Path], suffix: str) -> Iterator[Path]:
    """Files ending in ``suffix`` under ``root`` in name order, outside the ``skip`` folders."""
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if here / d not in skip and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(suffix) and not name.startswith("."):
                yield here / name


def _results_games(path: Path, doc: dict[str, Any]) -> tuple[list[RatedGame], set[Path]]:
    """The games of a match results document and the SGF paths it lists."""
    engines = doc.get("engines") or {}
    games: list[RatedGame] = []
    listed: set[Path] = set()
    for g in doc.get("games") or []:
        try:
            black = engines[g["black"]]["name"]
            white = engines[g["white"]]["name"]
        except (KeyError, TypeError):
            continue
        winner = g.get("winner")
        score = 0.5 if winner is None else 1.0 if winner == g["black"] else 0.0
        if black != white:
            games.append(RatedGame(black, white, score, str(path)))
        if g.get("sgf"):
            sgf = Path(g["sgf"])
            listed.add(sgf.resolve())
            listed.add((path.parent / sgf.name).resolve())   # the default: beside the results
    return games, listed


def collect_games(run_dir: str | os.PathLike) -> tuple[list[RatedGame], dict[str, int]]:
    """Every rateable game under ``run_dir`` (see the module docstring) and counts of the files
    used: ``{"results": ..., "sgf": ..., "skipped_sgf": ...}``."""
    rd = RunDir(run_dir)
    skip = {rd.sgf, rd.games, rd.models, rd.logs, rd.plots}
    games: list[RatedGame] = []
    listed: set[Path] = set()
    counts = {"results": 0, "sgf": 0, "skipped_sgf": 0}
    for path in _walk(rd.root, skip, ".json"):
        if path.name == RATINGS_FILE:
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("format") == MATCH_FORMAT:
            found, sgfs = _results_games(path, doc)
            games += found
            listed |= sgfs
            counts["results"] += 1
    for path in _walk(rd.root, skip, ".sgf"):
        if path.resolve() in listed:
            continue
        try:
            record = sgf.read_game(path.read_bytes())
        except (OSError, ValueError):
            counts["skipped_sgf"] += 1
            continue
        black, white = (record.black or "").strip(), (record.white or "").strip()
        score = score_from_result(record.result)
        if not black or not white or black == white or "," in black + white or score is None:
            counts["skipped_sgf"] += 1
            continue
        games.append(RatedGame(black, white, score, str(path)))
        counts["sgf"] += 1
    return games, counts


def _checkpoint_time(path: Path) -> float | None:
    """Unix time a checkpoint was written: its ``created`` metadata, else the file's mtime."""
    try:
        created = weights.read_meta(path).get("created")
        if created:
            return datetime.datetime.fromisoformat(created).timestamp()
    except ValueError:          # WeightsError or a malformed date: fall back to the file
        pass
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def rate(games: Sequence[RatedGame], run_dir: str | os.PathLike,
         prior_draws: float = 1.0) -> dict[str, Any]:
    """The ratings document (see the module docstring) for ``games`` of ``run_dir``.

    Raises ValueError when there are no games or the fit fails (``prior_draws=0`` with a player
    who won or lost every game)."""
    if not games:
        raise ValueError("no games between two different players")
    rd = RunDir(run_dir)
    checkpoints = {RunDir.model_id(p): (step, p) for step, p in rd.list_models()}
    players = sorted({g.black for g in games} | {g.white for g in games})

    def step_of(name: str) -> int | None:
        if name in checkpoints:
            return checkpoints[name][0]
        m = _MODEL_NAME.match(name)
        return int(m.group(1)) if m else None

    models = sorted((step_of(n), n) for n in players if step_of(n) is not None)
    anchor = models[0][1] if models else players[0]
    fitted = bradley_terry([(g.black, g.white, g.score) for g in games], anchor=anchor,
                           prior_draws=prior_draws)
    start = _checkpoint_time(rd.list_models()[0][1]) if checkpoints else None
    rows: list[dict[str, Any]] = []
    for step, name in models:
        created = _checkpoint_time(checkpoints[name][1]) if name in checkpoints else None
        rows.append(_row(name, True, step, created, start, fitted[name]))
    others = [n for n in fitted if step_of(n) is None]          # fitted is strongest first
    rows += [_row(n, False, None, None, None, fitted[n]) for n in others]
    return {"format": FORMAT, "run_dir": str(rd.root), "updated": time.time(), "anchor": anchor,
            "prior_draws": prior_draws, "games": len(games), "start_time": start, "players": rows}


def _row(name: str, model: bool, step: int | None, created: float | None, start: float | None,
         rating: Any) -> dict[str, Any]:
    hours = (created - start) / 3600.0 if created is not None and start is not None else None
    return {"name": name, "model": model, "step": step, "created": created,
            "hours": None if hours is None else round(hours, 4),
            "elo": rating.elo, "stderr": rating.stderr, "games": rating.games,
            "points": rating.points}


def format_table(doc: dict[str, Any]) -> str:
    """The ratings as a text table, anchor marked."""
    width = max([len("player")] + [len(p["name"]) for p in doc["players"]])
    lines = [f"{'player':<{width}}  {'step':>8}  {'hours':>7}  {'Elo':>8}  {'+-':>6}  "
             f"{'games':>6}  {'points':>7}"]
    for p in doc["players"]:
        step = "-" if p["step"] is None else str(p["step"])
        hours = "-" if p["hours"] is None else f"{p['hours']:.2f}"
        se = "anchor" if p["name"] == doc["anchor"] else f"{p['stderr']:.1f}"
        lines.append(f"{p['name']:<{width}}  {step:>8}  {hours:>7}  {p['elo']:>+8.1f}  {se:>6}  "
                     f"{p['games']:>6}  {p['points']:>7g}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: 0 ok, 1 no games found, 2 bad run directory or failed fit."""
    ap = argparse.ArgumentParser(
        prog="python -m train.match.ratings",
        description="Bradley-Terry Elo of a run's nets from its gating games, match results and "
                    "SGFs; writes RUN_DIR/ratings.json.")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--json", type=Path, default=None, metavar="OUT",
                    help="also write the ratings document here")
    ap.add_argument("--prior-draws", type=float, default=1.0,
                    help="virtual drawn games per player that keep ratings finite "
                         "(train.match.stats.bradley_terry; default 1, 0: plain maximum likelihood)")
    a = ap.parse_args(argv)
    if not a.run_dir.is_dir():
        print(f"train.ratings: {a.run_dir}: no such directory", file=sys.stderr)
        return 2
    games, counts = collect_games(a.run_dir)
    if not games:
        print(f"train.ratings: {a.run_dir}: no games between two different players found",
              file=sys.stderr)
        return 1
    try:
        doc = rate(games, a.run_dir, prior_draws=a.prior_draws)
    except ValueError as exc:
        print(f"train.ratings: {exc}", file=sys.stderr)
        return 2
    doc["files"] = counts
    atomic_write_json(a.run_dir / RATINGS_FILE, doc)
    if a.json is not None:
        atomic_write_json(a.json, doc)
    print(f"{doc['games']} games ({counts['sgf']} SGFs, {counts['results']} results files; "
          f"{counts['skipped_sgf']} SGFs skipped), anchor {doc['anchor']} = 0")
    print(format_table(doc))
    print(f"wrote {a.run_dir / RATINGS_FILE}" + (f" and {a.json}" if a.json else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
