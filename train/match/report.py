"""The results of a match: the per-game entries, per-pair counts with Elo and SPRT,
Bradley-Terry ratings, the results document (``--results``) and the printed summary.

"""
from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from engine.core import BLACK, WHITE
from engine.play.settings_cli import field_options
from train.match.config import MATCH_PLAY_OPTIONS, MatchConfig, ScheduledGame
from train.games.records import GameRecord
from train.match.stats import bradley_terry, elo_difference, sprt


def _json_number(value: float | None) -> float | str | None:
    """JSON-safe float: infinities as "+inf"/"-inf", NaN as None."""
    if value is None or math.isnan(value):
        return None
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return value


def game_entry(scheduled: ScheduledGame, record: GameRecord, sgf_path: Path) -> dict[str, Any]:
    """One game of the results document: ``scheduled`` is its ``train.match.schedule.ScheduledGame``."""
    winner = None
    if record.winner == BLACK:
        winner = scheduled.black
    elif record.winner == WHITE:
        winner = scheduled.white
    counted = record.reason in ("passes", "move cap")
    timed = range(record.opening_moves, record.length)     # moves the players chose
    seconds = {c: [float(record.seconds[t]) for t in timed if int(record.colors[t]) == c] for c in (BLACK, WHITE)}
    return {
        "index": scheduled.index,
        "round": scheduled.round,
        "black": scheduled.black,
        "white": scheduled.white,
        "result": record.result_string(),
        "winner": winner,
        "reason": record.reason,
        "score": record.final_score if counted else None,
        "scored_by": ("referee" if record.referee_score is not None else "core") if counted else None,
        "moves": record.length,
        "opening_moves": record.opening_moves,
        "handicap": len(record.setup),
        "detail": record.detail,
        "black_seconds": sum(seconds[BLACK]),
        "black_moves": len(seconds[BLACK]),
        "white_seconds": sum(seconds[WHITE]),
        "white_moves": len(seconds[WHITE]),
        "sgf": str(sgf_path),
        "fingerprint": game_fingerprint(scheduled, record),
    }


def game_fingerprint(scheduled: ScheduledGame, record: GameRecord) -> str:
    """Who played which colour, the set-up and every move: equal for a repeated game."""
    digest = hashlib.sha1(f"{scheduled.black}|{scheduled.white}|".encode())
    for array in (record.setup, record.moves, record.colors):
        digest.update(np.ascontiguousarray(array, dtype=np.int16).tobytes() + b"|")
    return digest.hexdigest()[:16]


def distinct_games(games: list[dict[str, Any]]) -> int:
    """Games whose moves no earlier game of the match repeated (older results: all count)."""
    seen = {g.get("fingerprint") or f"#{i}" for i, g in enumerate(games)}
    return len(seen)


def pair_summary(
    games: list[dict[str, Any]], a: str, b: str, config: MatchConfig
) -> dict[str, Any]:
    """Counts, Elo (and SPRT) of engine ``a`` against ``b`` over their games."""
    mine = [g for g in games if {g["black"], g["white"]} == {a, b}]
    side = {"black": Counter(), "white": Counter()}
    for g in mine:
        colour = "black" if g["black"] == a else "white"
        outcome = "draws" if g["winner"] is None else ("wins" if g["winner"] == a else "losses")
        side[colour][outcome] += 1
    wins = side["black"]["wins"] + side["white"]["wins"]
    losses = side["black"]["losses"] + side["white"]["losses"]
    draws = side["black"]["draws"] + side["white"]["draws"]
    elo = elo_difference(wins, losses, draws)
    summary: dict[str, Any] = {
        "a": a,
        "b": b,
        "games": len(mine),
        "a_wins": wins,
        "b_wins": losses,
        "draws": draws,
        "a_as_black": {k: side["black"][k] for k in ("wins", "losses", "draws")},
        "a_as_white": {k: side["white"][k] for k in ("wins", "losses", "draws")},
        "black_wins": sum(1 for g in mine if g["winner"] is not None and g["winner"] == g["black"]),
        "white_wins": sum(1 for g in mine if g["winner"] is not None and g["winner"] == g["white"]),
        "elo": {
            "elo": _json_number(elo.elo),
            "lower": _json_number(elo.lower),
            "upper": _json_number(elo.upper),
            "confidence": elo.confidence,
            "text": str(elo),
        },
    }
    if config.sprt is not None:
        result = sprt(wins, losses, draws, config.sprt[0], config.sprt[1],
                      config.sprt_alpha, config.sprt_beta)
        summary["sprt"] = {
            "elo0": result.elo0,
            "elo1": result.elo1,
            "alpha": result.alpha,
            "beta": result.beta,
            "llr": result.llr,
            "lower": result.lower,
            "upper": result.upper,
            "verdict": result.verdict,
        }
    return summary


FORMAT = "train.match results v1"


def settings_entry(config: MatchConfig) -> dict[str, Any]:
    """The results document's ``settings``: what defines the match's games besides the engines."""
    settings = config.settings
    return {
        "size": settings.size,
        "komi": settings.rules.komi,
        "rules": settings.rules.name,
        "handicap": settings.handicap,
        "max_moves": settings.move_cap,
        "move_time": config.move_time,
        "move_time_limit": settings.move_time_limit,
        "games_per_pair": config.games,
        "parallel": config.parallel,
        "random_moves": config.random_moves,
        "seed": config.seed,
        "referee": config.referee,
        "sgf_dir": str(config.sgf_dir),
        "runner": "pool",
        **field_options(config.play, MATCH_PLAY_OPTIONS),     # visits, resign (a winrate)
    }


def summarize(
    config: MatchConfig,
    engines: dict[str, dict[str, str]],
    games: list[dict[str, Any]],
    *,
    complete: bool,
    stopped_by_sprt: bool = False,
) -> dict[str, Any]:
    """The results document (what ``--results`` holds) for the games played so far."""
    labels = [e.label for e in config.engines]
    pairs = [pair_summary(games, a, b, config) for a, b in itertools.combinations(labels, 2)]
    per_engine: dict[str, dict[str, Any]] = {}
    for label in labels:
        seconds = sum(g["black_seconds"] for g in games if g["black"] == label)
        seconds += sum(g["white_seconds"] for g in games if g["white"] == label)
        moves = sum(g["black_moves"] for g in games if g["black"] == label)
        moves += sum(g["white_moves"] for g in games if g["white"] == label)
        per_engine[label] = {
            **engines[label],
            "games": sum(1 for g in games if label in (g["black"], g["white"])),
            "moves": moves,
            "seconds": seconds,
            "seconds_per_move": seconds / moves if moves else None,
        }
    ratings: dict[str, Any] = {}
    bt_games = [
        (g["black"], g["white"], 0.5 if g["winner"] is None else float(g["winner"] == g["black"]))
        for g in games
    ]
    if bt_games:
        for name, rating in bradley_terry(bt_games, anchor=labels[0]).items():
            ratings[name] = {"elo": rating.elo, "stderr": rating.stderr,
                             "games": rating.games, "points": rating.points}
    return {
        "format": FORMAT,
        "complete": complete,
        "stopped_by_sprt": stopped_by_sprt,
        "settings": settings_entry(config),
        "engines": per_engine,
        "games_played": len(games),
        "distinct_games": distinct_games(games),
        "average_game_length": (sum(g["moves"] for g in games) / len(games)) if games else None,
        "reasons": dict(Counter(g["reason"] for g in games)),
        "pairs": pairs,
        "ratings": ratings,
        "games": games,
    }


def score_line(games: list[dict[str, Any]], labels: list[str]) -> str:
    """Running score for the progress bar: "A 3 - B 2 (=1)" or points per engine."""
    points = Counter({label: 0.0 for label in labels})
    draws = 0
    for g in games:
        if g["winner"] is None:
            draws += 1
            points[g["black"]] += 0.5
            points[g["white"]] += 0.5
        else:
            points[g["winner"]] += 1.0
    text = " - ".join(f"{label} {points[label]:g}" for label in labels)
    return text + (f" ({draws} drawn)" if draws else "")


def _fmt_seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f} s"


def format_summary(results: dict[str, Any]) -> str:
    """The end-of-match report printed by the command line."""
    lines = []
    engines = results["engines"]
    for label, entry in engines.items():
        lines.append(f"{label}: {entry['name']}  ({entry['command']})")
    lines.append(
        f"{results['games_played']} games, average length "
        + (f"{results['average_game_length']:.1f} moves" if results["games_played"] else "n/a")
        + ", endings: "
        + ", ".join(f"{k} {v}" for k, v in sorted(results["reasons"].items()))
    )
    distinct = results.get("distinct_games", results["games_played"])
    if distinct < results["games_played"]:
        lines.append(
            f"WARNING: only {distinct} distinct games among {results['games_played']}: deterministic "
            "engines repeat their games, and the intervals below count every repeat as new "
            "evidence.  Use --random-moves K (or engines that randomise).")
    for pair in results["pairs"]:
        a, b = pair["a"], pair["b"]
        ab, aw = pair["a_as_black"], pair["a_as_white"]
        lines.append(
            f"{a} vs {b}: {a} {pair['a_wins']} wins, {b} {pair['b_wins']} wins, "
            f"{pair['draws']} draws ({pair['games']} games)"
        )
        lines.append(
            f"  {a} as Black: {ab['wins']}-{ab['losses']}-{ab['draws']}   "
            f"{a} as White: {aw['wins']}-{aw['losses']}-{aw['draws']}   (W-L-D); "
            f"Black won {pair['black_wins']}, White won {pair['white_wins']}"
        )
        lines.append(f"  Elo {a} - {b}: {pair['elo']['text']}")
        if "sprt" in pair:
            s = pair["sprt"]
            lines.append(
                f"  SPRT(elo0={s['elo0']:g}, elo1={s['elo1']:g}, alpha={s['alpha']:g}, "
                f"beta={s['beta']:g}): LLR {s['llr']:.2f} [{s['lower']:.2f}, {s['upper']:.2f}]"
                f" -> {s['verdict']}"
                + (" (stopped early)" if results.get("stopped_by_sprt") else "")
            )
    if len(engines) > 2 and results["ratings"]:
        anchor = next(iter(engines))
        lines.append(f"Bradley-Terry ratings (anchor {anchor} = 0):")
        for label, rating in results["ratings"].items():
            lines.append(
                f"  {label:>12}: {rating['elo']:+8.1f} +- {rating['stderr']:.1f}  "
                f"({rating['points']:g}/{rating['games']})"
            )
    lines.append(
        "Average time per move: "
        + ", ".join(
            f"{label} {_fmt_seconds(entry['seconds_per_move'])}" for label, entry in engines.items()
        )
    )
    return "\n".join(lines)
