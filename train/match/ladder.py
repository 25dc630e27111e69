"""The strength ladder: a run's checkpoints on one Elo scale anchored at GNU Go (and Pachi).

``python -m train.ladder RUN_DIR`` rates checkpoints of a run (during training, as a
low-priority process with ``--follow``, or afterwards) against fixed anchors and against each
other:

- every chosen checkpoint plays ``--games`` games against GNU Go 3.8 at each ``--levels``
  (default 1, 5 and 10; ``--chinese-rules``, komi 7, colours alternating, a GNU Go level-0
  referee counting dead stones); a level is skipped once the checkpoint scored less than
  ``--skip-below`` against the level below it (it would lose every game: no information);
- ``--pachi-playouts N ...`` adds Pachi 12.90 anchors ``pachi-<N>`` (``PACHI -t =N threads=1``,
  ``--pachi`` or ``$PACHI``, else /work/pachi/pachi), played like the GNU Go levels, after them
  in order of playouts (or alone with an empty ``--levels``); the same skip rule runs over all
  anchors.  Pachi refuses fewer than 500 playouts a move;
- consecutive chosen checkpoints play ``--pair-games`` games against each other, which ties
  the checkpoints that GNU Go cannot tell apart (all losing, or all winning) into the scale;
- every game is a ``train.match`` match in ``RUN_DIR/ladder/<black>-vs-<white>/`` (SGFs and a
  results JSON); finished matches are never replayed, so the command resumes where it stopped.

Ratings: one Bradley-Terry fit (:func:`train.match.stats.bradley_terry`) of every ladder game, with
``gnugo-L1`` = 0.  Each checkpoint is placed at the **CPU-hours** the run had spent when it was
written (the ``cpu_s`` of every stage process in ``metrics.jsonl``, summed over processes and
sessions; for records written before CPU seconds were logged, wall-clock time x the run's
threads) and at the self-play **games** played by then.  Output: ``RUN_DIR/ladder/ladder.json``,
a table, and ``RUN_DIR/plots/ladder.png`` (Elo against CPU-hours and against games, GNU Go
levels as horizontal lines; :func:`train.report.plot_ladder`).

``--brier`` also scores how well the newest rated checkpoint's value head predicts the winners
of its games against GNU Go: the mean squared error of its Black winrate before every move
against the result (a constant 50% scores 0.25).

Examples::

    python -m train.ladder runs/9x9 --checkpoints 8 --games 20
    python -m train.ladder runs/7x7 --komi 9 --levels 1 10 --pachi-playouts 500 2000
    nice python -m train.ladder runs/9x9 --follow 600 --games 10    # beside a training run
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from engine import sgf
from engine.nets import weights
from engine.core import BLACK, Game, Rules
from engine.nets.loading import load_evaluator
from engine.play.settings import PlaySettings
from engine.play.settings_cli import add_dataclass_arguments, dataclass_from_args, described
from train.match.config import EngineSpec, GameSettings, MatchConfig, inproc_play
from train.match.ratings import MATCH_FORMAT, _checkpoint_time, _results_games
from train.report import plot_ladder
from train.rundir import RunDir, atomic_write_json
from train.match.schedule import probe_engines, run_match
from train.match.stats import bradley_terry
from train.usage import Usage

FORMAT = "train.ladder v1"
ANCHOR = "gnugo-L1"
GNUGO = "/usr/games/gnugo --mode gtp --chinese-rules --level {level}"
REFEREE = "/usr/games/gnugo --mode gtp --chinese-rules --level 0"
PACHI_DEFAULT = "/work/pachi/pachi"
PACHI_MIN_PLAYOUTS = 500            # Pachi >= 12.10 refuses -t =N below this (GJ_MINGAMES)
# The titles of python -m train.ladder's option groups.
ANCHORS, CHECKPOINTS, GAMES, MACHINE = "anchors", "checkpoints", "games", "machine"


@dataclass
class LadderConfig:
    """What the ladder plays: ``python -m train.ladder``'s options (:func:`build_parser`) give these
    fields.  ``play`` is how the checkpoints search and play (visits, resignation, the move cap:
    None, the match's)."""

    levels: tuple[int, ...] = described((1, 5, 10), "GNU Go levels (default 1 5 10; none: Pachi anchors only)",
                                        nargs="*", group=ANCHORS)
    games: int = described(20, "games per checkpoint and level (default 20)", group=GAMES)
    pair_games: int = described(10, "games between consecutive rated checkpoints (default 10; 0: none)", group=GAMES)
    play: PlaySettings = field(default_factory=inproc_play, metadata={
        "options": {"visits": "visits"},
        "helps": {"visits": "root visits per move of the checkpoints (as python -m engine)"},
        "kw": {"visits": {"group": GAMES}}})
    checkpoints: int = described(6, "evenly spaced checkpoints to rate (default 6)", group=CHECKPOINTS)
    every_steps: int = described(0, "instead: every checkpoint whose training step is a multiple of this",
                                 group=CHECKPOINTS)
    rules: Rules = described(Rules.default(komi=7.0), komi_help="komi in points", group=GAMES)   # no --rules
    gnugo: str = described(GNUGO, "GNU Go command, {level} is replaced (default: %(default)s)", group=ANCHORS)
    pachi: str | None = described(None, "Pachi binary (default: $PACHI, else /work/pachi/pachi if present)",
                                  metavar="PATH", group=ANCHORS)
    pachi_playouts: tuple[int, ...] = described((), "Pachi anchors pachi-<N>: N playouts a move, one thread "
                                                    f"(N >= {PACHI_MIN_PLAYOUTS})", nargs="+", metavar="N",
                                                group=ANCHORS)
    referee: str | None = described(REFEREE, "dead-stone referee command, or 'none' for the Tromp-Taylor count "
                                             "(default: %(default)s)", group=GAMES)
    parallel: int = described(1, "games at once (default 1)", group=MACHINE)
    skip_below: float = described(0.05, "skip a level when the checkpoint scored less than this fraction (0..1) "
                                        "against the level below (default 0.05)", group=ANCHORS)
    seed: int = described(1, "seed of the random openings (default 1)", group=GAMES)
    progress: bool = False


def level_name(level: int) -> str:
    return f"gnugo-L{level}"


def default_pachi() -> str | None:
    """``$PACHI``, else /work/pachi/pachi where it exists."""
    return os.environ.get("PACHI") or (PACHI_DEFAULT if os.path.isfile(PACHI_DEFAULT) else None)


def anchors(cfg: LadderConfig) -> list[tuple[str, str]]:
    """The fixed opponents, weakest first: ``(name, command)`` of each GNU Go level as given,
    then ``pachi-<N>`` for each Pachi playout count, fewest first."""
    out = [(level_name(lv), cfg.gnugo.format(level=lv)) for lv in cfg.levels]
    for n in sorted(set(cfg.pachi_playouts)):
        if not cfg.pachi:
            raise ValueError("Pachi anchors need --pachi PATH (or $PACHI)")
        out.append((f"pachi-{n}", f"{shlex.quote(cfg.pachi)} -t ={n} threads=1"))
    return out


# ---------------------------------------------------------------------------------------------
# Which checkpoints


def choose_checkpoints(rd: RunDir, cfg: LadderConfig) -> list[tuple[int, Path]]:
    """The checkpoints to rate: every ``every_steps`` steps, or ``checkpoints`` evenly spaced
    ones; the first and the newest always."""
    models = rd.list_models()
    if not models:
        return []
    if cfg.every_steps > 0:
        picked = [m for m in models if m[0] % cfg.every_steps == 0]
    else:
        k = max(2, cfg.checkpoints)
        if len(models) <= k:
            picked = list(models)
        else:
            idx = sorted({round(i * (len(models) - 1) / (k - 1)) for i in range(k)})
            picked = [models[i] for i in idx]
    for m in (models[0], models[-1]):
        if m not in picked:
            picked.append(m)
    return sorted(picked)


# ---------------------------------------------------------------------------------------------
# Playing


def match_dir(rd: RunDir, black: str, white: str) -> Path:
    return rd.root / "ladder" / f"{black}-vs-{white}"


def _results(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((path / "results.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _score_of(doc: dict[str, Any], label: str) -> tuple[float, int]:
    """(points, games) of engine ``label`` in a match results document."""
    points, games = 0.0, 0
    for g in doc.get("games") or []:
        games += 1
        w = g.get("winner")
        points += 0.5 if w is None else 1.0 if w == label else 0.0
    return points, games


def play(rd: RunDir, cfg: LadderConfig, a: tuple[str, str], b: tuple[str, str], games: int,
         size: int) -> dict[str, Any]:
    """Plays (or finishes) the match of engine ``a`` against ``b``, each ``(name, command)``;
    returns its results document.  A complete match is not replayed."""
    return play_match(match_dir(rd, a[0], b[0]), cfg, a, b, games, size)


def play_match(out: Path, cfg: LadderConfig, a: tuple[str, str], b: tuple[str, str], games: int,
               size: int) -> dict[str, Any]:
    """:func:`play` into the match directory ``out`` (SGFs and results.json)."""
    done = _results(out)
    if done is not None and done.get("complete") and len(done.get("games") or []) >= games:
        return done
    config = MatchConfig(
        engines=(EngineSpec(a[0], a[1]), EngineSpec(b[0], b[1])), games=games,
        settings=GameSettings(size=size, rules=cfg.rules, play=cfg.play),
        sgf_dir=out, results_path=out / "results.json", parallel=cfg.parallel,
        referee=cfg.referee, seed=cfg.seed, progress=cfg.progress)
    engines = probe_engines(config)
    for label, entry in engines.items():
        entry["name"] = label               # the ladder's names: model ids, gnugo-L<level>, pachi-<N>
    return run_match(config, engines)


def run_ladder(rd: RunDir, cfg: LadderConfig, log=print) -> list[tuple[int, Path]]:
    """Plays every missing ladder game of the chosen checkpoints; returns them."""
    size = int(rd.read_config().get("board_size", 9))
    chosen = choose_checkpoints(rd, cfg)
    fixed = anchors(cfg)
    previous: tuple[str, str] | None = None
    for step, path in chosen:
        me = (RunDir.model_id(path), f"inproc:{path}:visits={cfg.play.visits}")
        for i, anchor in enumerate(fixed):
            if i > 0:
                doc = _results(match_dir(rd, me[0], fixed[i - 1][0]))
                pts, n = _score_of(doc, me[0]) if doc else (0.0, 0)
                if n and pts / n < cfg.skip_below:
                    rest = ", ".join(name for name, _ in fixed[i:])
                    log(f"{me[0]}: skips {rest} ({pts:g}/{n} against the level below)")
                    break           # the levels only get stronger
            doc = play(rd, cfg, me, anchor, cfg.games, size)
            pts, n = _score_of(doc, me[0])
            log(f"{me[0]} vs {anchor[0]}: {pts:g}/{n}")
        if previous is not None and cfg.pair_games > 0:
            doc = play(rd, cfg, me, previous, cfg.pair_games, size)
            pts, n = _score_of(doc, me[0])
            log(f"{me[0]} vs {previous[0]}: {pts:g}/{n}")
        previous = me
    return chosen


# ---------------------------------------------------------------------------------------------
# Rating


def ladder_games(rd: RunDir) -> list[tuple[str, str, float]]:
    """(black, white, Black's score) of every ladder game."""
    out = []
    root = rd.root / "ladder"
    for path in sorted(root.glob("*/results.json")) if root.is_dir() else []:
        doc = _results(path.parent)
        if doc is None or doc.get("format") != MATCH_FORMAT:
            continue
        games, _ = _results_games(path, doc)
        out += [(g.black, g.white, g.score) for g in games]
    return out


def cpu_hours_at(records: list[dict[str, Any]], when: float, threads: int = 2) -> float:
    """CPU-hours the run had spent at unix time ``when``: per writing process (pid), the last
    ``cpu_s`` it logged by then, summed; stretches of records without ``cpu_s`` count their
    wall-clock time x ``threads``."""
    legacy = 0.0
    last_legacy: float | None = None
    for r in records:
        t = r.get("time")
        if t is None or t > when:
            continue
        if r.get("cpu_s") is not None and r.get("pid") is not None:
            last_legacy = None
        else:
            if last_legacy is not None and 0 < t - last_legacy < 600:
                legacy += (t - last_legacy) * threads
            last_legacy = t
    return (Usage(records, until=when).cpu_seconds + legacy) / 3600.0


def games_at(records: list[dict[str, Any]], when: float) -> int:
    """Self-play games on disk at unix time ``when`` (the largest count the trainer saw)."""
    best = 0
    for r in records:
        if r.get("source") == "trainer" and r.get("time", math.inf) <= when and r.get("games") is not None:
            best = max(best, int(r["games"]))
    return best


def rate(rd: RunDir, prior_draws: float = 1.0, threads: int = 2) -> dict[str, Any]:
    """The ladder document: Bradley-Terry Elo of every player with ``gnugo-L1`` = 0 (or, when
    no GNU Go game was played yet, the first checkpoint = 0), checkpoints with their step,
    CPU-hours and games (a run started with --init-weights adds its --init-cpu-hours and
    --init-games: the cost from zero).  ValueError when there are no games."""
    games = ladder_games(rd)
    if not games:
        raise ValueError(f"{rd.root}: no ladder games yet")
    checkpoints = {RunDir.model_id(p): (step, p) for step, p in rd.list_models()}
    games, unrated = _drop_unbounded_opponents(games, set(checkpoints))
    players = {g[0] for g in games} | {g[1] for g in games}
    anchor = ANCHOR if ANCHOR in players else sorted(players & set(checkpoints),
                                                     key=lambda n: checkpoints[n][0])[0]
    fitted = bradley_terry(games, anchor=anchor, prior_draws=prior_draws)
    records = rd.read_metrics()
    config = rd.read_config() if rd.config_path.is_file() else {}
    base_hours = float(config.get("init_cpu_hours") or 0.0)   # what made --init-weights
    base_games = int(config.get("init_games") or 0)
    rows = []
    for name, r in fitted.items():
        row: dict[str, Any] = {"name": name, "elo": r.elo, "stderr": r.stderr, "games": r.games,
                               "points": r.points, "model": name in checkpoints}
        if name in checkpoints:
            step, path = checkpoints[name]
            created = _checkpoint_time(path) or 0.0
            row.update(step=step,
                       cpu_hours=round(base_hours + cpu_hours_at(records, created, threads), 4),
                       selfplay_games=base_games + games_at(records, created))
        rows.append(row)
    rows.sort(key=lambda r: (not r["model"], r.get("step") or 0, -r["elo"]))
    return {"format": FORMAT, "run_dir": str(rd.root), "updated": time.time(), "anchor": anchor,
            "prior_draws": prior_draws, "games": len(games), "players": rows, "unrated": unrated}


def _drop_unbounded_opponents(games: list[tuple[str, str, float]], models: set[str]
                              ) -> tuple[list[tuple[str, str, float]], dict[str, str]]:
    """Games without the GNU Go levels (other than the anchor) that won or lost every game they
    played: their rating is bounded on one side only (e.g. level 10 when only a random net met
    it), so the fit would place them by its prior alone, and a plot would draw level 10 below
    level 1.  Returns the kept games and {name: why} for the dropped levels."""
    points: dict[str, list[float]] = {}
    for black, white, score in games:
        points.setdefault(black, []).append(score)
        points.setdefault(white, []).append(1.0 - score)
    unrated = {}
    for name, got in points.items():
        if name in models or name == ANCHOR:
            continue
        share = sum(got) / len(got)
        if share in (0.0, 1.0):
            unrated[name] = f"{'won' if share else 'lost'} all its {len(got)} games: not rated"
    kept = [g for g in games if g[0] not in unrated and g[1] not in unrated]
    return kept, unrated


def format_table(doc: dict[str, Any]) -> str:
    lines = [f"{'player':<16} {'step':>7} {'CPU-h':>7} {'games':>7} {'Elo':>8} {'95%':>7} {'played':>6}"]
    for p in doc["players"]:
        ci = "anchor" if p["name"] == doc["anchor"] else f"+-{1.96 * p['stderr']:.0f}"
        step = "-" if p.get("step") is None else str(p["step"])
        cpu = "-" if p.get("cpu_hours") is None else f"{p['cpu_hours']:.2f}"
        sp = "-" if p.get("selfplay_games") is None else str(p["selfplay_games"])
        lines.append(f"{p['name']:<16} {step:>7} {cpu:>7} {sp:>7} {p['elo']:>+8.0f} {ci:>7} {p['games']:>6}")
    for name, why in sorted(doc.get("unrated", {}).items()):
        lines.append(f"{name:<16} {why}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# How well the value head predicts the games


def brier(rd: RunDir, model: str) -> dict[str, Any] | None:
    """Brier score of ``model``'s Black winrate (raw network, before every move) against the
    winners of its ladder games with GNU Go, and of a constant 50% (0.25)."""
    path = dict((RunDir.model_id(p), p) for _, p in rd.list_models()).get(model)
    if path is None:
        return None
    files = [f for folder in sorted((rd.root / "ladder").glob(f"{model}-vs-gnugo-L*"))
             for f in sorted(folder.glob("*.sgf"))]
    result = brier_of_games(path, files)
    return None if result is None else {"model": model, **result}


def brier_of_games(weights_path: Path | str, sgf_files: Sequence[Path]) -> dict[str, Any] | None:
    """Brier score of the net in ``weights_path`` (raw network, Black's winrate before every
    move) against the winners of the games in ``sgf_files`` (unreadable files and games
    without a winner are left out), and of a constant 50% (0.25); None without any position."""
    ev = load_evaluator(weights_path, precision=None, symmetries="random", seed=0,
                        net=weights.load(weights_path))
    errors: list[float] = []
    games = 0
    for f in sgf_files:
        try:
            rec = sgf.read_game(Path(f).read_bytes())
        except (OSError, ValueError):
            continue
        result = (rec.result or "").upper()
        if not result.startswith(("B+", "W+")):
            continue
        black_won = 1.0 if result.startswith("B+") else 0.0
        game = Game(rec.size, Rules.default(rec.komi))
        planes = []
        for color, point in rec.moves:
            planes.append((game.features(ev.feature_set), game.to_move))
            game.play(point, color)
        if not planes:
            continue
        out = ev.evaluate(np.stack([p for p, _ in planes]))
        for v, (_, to_move) in zip(out.value, planes):
            p_black = (float(v) + 1) / 2 if to_move == BLACK else (1 - float(v)) / 2
            errors.append((p_black - black_won) ** 2)
        games += 1
    if not errors:
        return None
    return {"games": games, "positions": len(errors), "brier": float(np.mean(errors)), "constant": 0.25}


# ---------------------------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m train.ladder``."""
    ap = argparse.ArgumentParser(prog="python -m train.ladder", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("Examples::")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path, help="the training run whose checkpoints are rated")
    groups = {title: ap.add_argument_group(title) for title in (ANCHORS, CHECKPOINTS, GAMES, MACHINE)}
    add_dataclass_arguments(ap, LadderConfig(pachi=default_pachi()), groups)
    groups[CHECKPOINTS].add_argument("--follow", type=float, default=0.0, metavar="SECONDS",
                                     help="keep going: every SECONDS rate the new checkpoints (Ctrl-C to stop; "
                                          "default 0: once)")
    machine = groups[MACHINE]
    machine.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    machine.add_argument("--run-threads", type=int, default=2,
                         help="cores of the training run, for CPU-hours of records without CPU seconds (default 2)")
    machine.add_argument("--nice", type=int, default=10, help="lower this process's priority by this (default 10)")
    output = ap.add_argument_group("output")
    output.add_argument("--rate-only", action="store_true", help="play nothing: fit, print, plot")
    output.add_argument("--brier", action="store_true",
                        help="Brier score of the newest rated checkpoint's winrate on its GNU Go games")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    a = ap.parse_args(argv)
    if a.pachi_playouts and not a.pachi:
        ap.error("--pachi-playouts needs --pachi PATH or $PACHI (no /work/pachi/pachi)")
    if any(n < PACHI_MIN_PLAYOUTS for n in a.pachi_playouts):
        ap.error(f"--pachi-playouts: Pachi refuses fewer than {PACHI_MIN_PLAYOUTS} playouts a move")
    rd = RunDir(a.run_dir)
    if not (rd.root / "config.json").is_file():
        print(f"train.ladder: {a.run_dir}: not a run directory (no config.json)", file=sys.stderr)
        return 2
    if a.nice:
        try:
            os.nice(a.nice)
        except OSError:
            pass
    torch.set_num_threads(max(1, a.threads))
    try:
        cfg = dataclass_from_args(a, LadderConfig, referee=None if a.referee.lower() == "none" else a.referee)
    except ValueError as exc:
        ap.error(f"--komi: {exc}")
    while True:
        if not a.rate_only:
            try:
                run_ladder(rd, cfg, log=lambda s: print(s, flush=True))
            except KeyboardInterrupt:
                print("train.ladder: interrupted; the finished games are kept", file=sys.stderr)
                a.follow = 0
        try:
            doc = rate(rd, threads=a.run_threads)
        except ValueError as exc:
            print(f"train.ladder: {exc}", file=sys.stderr)
            return 1
        if a.brier:
            rated = [p["name"] for p in doc["players"] if p["model"]]
            b = brier(rd, rated[-1]) if rated else None
            doc["brier"] = b
            if b:
                print(f"Brier score of {b['model']}'s winrate on {b['games']} GNU Go games "
                      f"({b['positions']} positions): {b['brier']:.4f} (constant 50%: 0.25)")
        atomic_write_json(rd.root / "ladder" / "ladder.json", doc)
        png = plot_ladder(doc, rd.plots / "ladder.png")
        print(f"{doc['games']} games, anchor {doc['anchor']} = 0")
        print(format_table(doc))
        print(f"wrote {rd.root / 'ladder' / 'ladder.json'} and {png}")
        if a.follow <= 0:
            return 0
        try:
            time.sleep(a.follow)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
