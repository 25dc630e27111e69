"""Matches as games of one :class:`train.games.pool.GamePool`: ``run_match(config)``.

Every game of a match (or a round robin, or a ladder rung) is a :class:`train.games.pool.GameSpec`:
board, rules, fixed handicap, a random opening shared by both games of a colour-swapped pair,
and per colour the player and its :class:`train.games.pool.MoveLimit`.  Our nets in this process
(``inproc:``) are batched agents shared by every game, so all their searches batch into one
forward pass per net per step; each GTP engine is a turn agent (:class:`train.match.gtp_agent.GTPAgent`),
one process per pool slot, polled while the other games search.  ``--parallel`` is the number
of slots.  Finished games are counted by a referee engine when one is given
(:func:`train.match.referee.count_record`), written as SGF, and summarised into the results JSON
(:mod:`train.match.report`) after every game; an SPRT that is decided stops new games.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from engine import coords
from engine.core import BLACK, WHITE, Game
from engine.fileio import atomic_write
from train.match.gtp_agent import GTPAgent
from train.games.gtp_client import GTPClient, GTPError
from train.match.inproc import InProcessNets
from train.match.config import EngineSpec, GameSettings, MatchConfig, ScheduledGame
from train.match.report import FORMAT, game_entry, pair_summary, score_line, settings_entry, summarize
from train.games.pool import Agent, FinishedGame, GamePool, GameSpec, MoveLimit, PlaySettings, Player, Slot
from train.games.records import GameRecord, write_sgf
from train.match.referee import GTPReferee, Referee, count_record

def random_opening(settings: GameSettings, moves: int, rng: random.Random) -> list[int]:
    """``moves`` uniformly random legal non-pass points, played alternately.

    Starts after the handicap stones (White first when there are any). Stops
    early if a side has no legal point. Play the same list in both games of a
    colour-swapped pair to compare engines on equal openings.
    """
    game = Game(settings.size, settings.rules)
    handicap = coords.fixed_handicap(settings.size, settings.handicap)
    for point in handicap:
        game.play(point, BLACK)
    if handicap:
        game.set_to_move(WHITE)
    opening: list[int] = []
    pass_point = settings.size * settings.size
    for _ in range(moves):
        legal = [p for p in game.legal_moves() if p != pass_point]
        if not legal:
            break
        point = rng.choice(legal)
        game.play(point)
        opening.append(point)
    return opening


def make_schedule(engines: Sequence[EngineSpec], games: int) -> list[ScheduledGame]:
    """All games in start order: round by round over every pair, colours alternating.

    For a pair (a, b), ``a`` is Black in even rounds and White in odd ones.
    """
    pairs = list(itertools.combinations([e.label for e in engines], 2))
    schedule = []
    for rnd in range(games):
        for pair_index, (a, b) in enumerate(pairs):
            black, white = (a, b) if rnd % 2 == 0 else (b, a)
            schedule.append(ScheduledGame(len(schedule), pair_index, rnd, black, white))
    return schedule


def probe_engines(config: MatchConfig) -> dict[str, dict[str, Any]]:
    """Start each engine once; return label -> {command, gtp_name, gtp_version, name}.

    ``name`` is the display name for SGFs: ``"<name> <version>"`` (in-process
    engines: ``InProcessSpec.display_name``), with ``" [label]"`` appended when
    engines would otherwise share a name. In-process entries also hold
    ``in_process`` (True), ``weights``, ``visits`` and the checkpoint ``step``.
    Raises EngineError or GTPError if a GTP engine cannot start, ValueError if
    an in-process engine's weights cannot be loaded or cannot play the size.
    """
    info: dict[str, dict[str, Any]] = {}
    for spec in config.engines:
        inproc = spec.inproc
        if inproc is not None:
            meta = InProcessNets.check(inproc, config.settings.size)
            info[spec.label] = {
                "command": spec.command,
                "gtp_name": "",
                "gtp_version": "",
                "name": inproc.display_name,
                "in_process": True,
                "weights": inproc.weights,
                "visits": config.inproc_visits(inproc),
                "step": meta.get("step"),
            }
            continue
        with GTPClient(spec.command, default_timeout=300.0, label=spec.label) as client:
            gtp_name = client.send("name")
            try:
                version = client.send("version")
            except GTPError:
                version = ""
        info[spec.label] = {
            "command": spec.command,
            "gtp_name": gtp_name,
            "gtp_version": version,
            "name": f"{gtp_name} {version}".strip() or spec.label,
        }
    counts = Counter(entry["name"] for entry in info.values())
    for label, entry in info.items():
        if counts[entry["name"]] > 1:
            entry["name"] = f"{entry['name']} [{label}]"
    return info


def play_game(black: Player, white: Player, settings: GameSettings, opening: Sequence[int] = (),
              referee: Referee | None = None, play: PlaySettings | None = None, seed: int = 0) -> GameRecord:
    """One game in a one-slot pool, counted by ``referee`` when given (see
    :func:`train.match.referee.count_record`); returns its record.  Both players get the handicap and
    ``opening`` (colours alternating, White first after a handicap); ``settings.move_time_limit``
    is each colour's limit.  ``play`` (default: no resignation, no policy targets)
    sets how agents search and play (their own search parameters apart).  ValueError for an illegal opening; the players are not closed."""
    limit = MoveLimit(seconds=settings.move_time_limit)
    play = play or PlaySettings(max_moves=settings.move_cap, record_policy=False)
    specs = [GameSpec(settings.size, settings.rules, black, white, play, seed=seed, handicap=settings.handicap,
                      opening=tuple(opening), black_limit=limit, white_limit=limit)]
    (game,) = GamePool(1, lambda slot: specs.pop() if specs else None).run()
    return count_record(game.record(), game.game, referee)


def match_play(config: MatchConfig) -> PlaySettings:
    """How the in-process engines of a match search and play: its ``play`` with its move cap."""
    return dataclasses.replace(config.play, max_moves=config.settings.move_cap)


def _opening_for(config: MatchConfig, rnd: int) -> list[int]:
    """The random opening of round ``rnd`` (shared by rounds 2k and 2k+1 and all pairs)."""
    if config.random_moves <= 0:
        return []
    rng = random.Random(f"{config.seed}/{rnd // 2}")
    return random_opening(config.settings, config.random_moves, rng)


def _sgf_name(scheduled: ScheduledGame) -> str:
    def clean(label: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:40]

    return f"{scheduled.index:04d}-{clean(scheduled.black)}-vs-{clean(scheduled.white)}.sgf"


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, indent=2) + "\n").encode()
    atomic_write(path, lambda f: f.write(data))


class ResumeError(ValueError):
    """``--resume`` with a results file that is unreadable or belongs to another match."""


# What must agree for the games of a results file to count in this match (games_per_pair may
# grow; parallel and the SGF folder may change).
_RESUME_SETTINGS = ("size", "komi", "rules", "handicap", "max_moves", "move_time", "move_time_limit",
                    "random_moves", "seed", "referee", "visits", "resign")


def _read_results(path: Path) -> dict[str, Any] | None:
    """The results document at ``path`` (None when there is none); ResumeError when unreadable."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResumeError(f"{path}: not a readable results file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ResumeError(f"{path}: not a {FORMAT!r} document")
    return doc


def saved_seed(path: Path) -> int | None:
    """The opening seed of the match saved at ``path`` (None: no file yet)."""
    doc = _read_results(path)
    if doc is None:
        return None
    seed = doc.get("settings", {}).get("seed")
    if not isinstance(seed, int):
        raise ResumeError(f"{path}: no seed in its settings")
    return seed


def resumed_games(config: MatchConfig, schedule: Sequence[ScheduledGame]) -> dict[int, dict[str, Any]]:
    """The finished games of ``config.results_path`` by schedule index, for ``--resume``: {} when
    there is no file yet.  ResumeError unless the file is a match of the same engines (labels and
    commands) and settings whose every game has its place in ``schedule``."""
    doc = _read_results(config.results_path)
    if doc is None:
        return {}
    where = config.results_path
    saved, now = doc.get("settings", {}), settings_entry(config)
    changed = [f"{key} {saved.get(key)!r} -> {now[key]!r}" for key in _RESUME_SETTINGS if saved.get(key) != now[key]]
    if changed:
        raise ResumeError(f"{where}: another match's settings ({', '.join(changed)})")
    saved_engines = {label: entry.get("command") for label, entry in doc.get("engines", {}).items()}
    engines = {e.label: e.command for e in config.engines}
    if saved_engines != engines:
        raise ResumeError(f"{where}: other engines ({saved_engines} here, {engines} now)")
    finished: dict[int, dict[str, Any]] = {}
    for entry in doc.get("games", []):
        index = entry.get("index")
        if not isinstance(index, int) or not 0 <= index < len(schedule):
            raise ResumeError(f"{where}: game {index!r} is not in a schedule of {len(schedule)} games "
                              "(--games is smaller than the saved match's)")
        scheduled = schedule[index]
        if (entry.get("black"), entry.get("white"), entry.get("round")) != (scheduled.black, scheduled.white, scheduled.round):
            raise ResumeError(f"{where}: game {index} has other players or round than this schedule")
        finished[index] = entry
    return finished


class MatchPlayers:
    """The players of a match's games: one batched agent per in-process engine (shared by every
    slot) and one GTP agent per GTP engine and pool slot (a GTP engine plays one game at a time)."""

    def __init__(self, config: MatchConfig, names: dict[str, str]) -> None:
        self.config = config
        self.names = names
        self.nets = InProcessNets(config.seed)
        self.specs = {e.label: e for e in config.engines}
        self.agents: dict[str, Agent] = {}
        self.gtp: dict[tuple[int, str], GTPAgent] = {}

    def player(self, slot: int, label: str) -> Player:
        inproc = self.specs[label].inproc
        if inproc is not None:
            if label not in self.agents:
                # Agents sharing an evaluator (the same net twice) share forward passes too.
                evaluator = self.nets.evaluator(inproc)
                params = inproc.search_params(getattr(evaluator, "feature_set", None), self.config.settings.size)
                self.agents[label] = Agent(self.names[label], evaluator, params)
            return self.agents[label]
        if (slot, label) not in self.gtp:
            self.gtp[(slot, label)] = GTPAgent(
                self.specs[label].command, label=label, name=self.names[label],
                move_time=self.config.move_time, command_timeout=self.config.command_timeout)
        return self.gtp[(slot, label)]

    def limit(self, label: str) -> MoveLimit:
        """In-process engines search their visits, at most ``move_time`` seconds; GTP engines
        forfeit beyond ``move_time + time_margin``."""
        inproc = self.specs[label].inproc
        if inproc is not None:
            return MoveLimit(visits=self.config.inproc_visits(inproc), seconds=self.config.move_time)
        return MoveLimit(seconds=self.config.settings.move_time_limit)

    def kill(self) -> None:
        for agent in self.gtp.values():
            agent.kill()

    def close(self) -> None:
        for agent in self.gtp.values():
            agent.close()


def run_match(config: MatchConfig, engines: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Play the whole match; write SGFs and the results JSON; return the results.

    ``engines`` is ``probe_engines(config)`` (probed here when None). Results
    are rewritten after every game, so an interrupted match leaves a valid
    (``"complete": false``) file. With an SPRT, no new games start once the
    verdict over the earliest-started finished games is decided; games in
    flight still finish and count. Ctrl-C kills the engines and returns the
    partial results (the caller sees ``complete`` false).  With ``config.resume`` the finished
    games of the results file count and only the others are played (:func:`resumed_games`;
    ResumeError before any engine starts when the file is another match's).
    """
    schedule = make_schedule(config.engines, config.games)
    finished: dict[int, dict[str, Any]] = resumed_games(config, schedule) if config.resume else {}
    if engines is None:
        engines = probe_engines(config)
    names = {label: entry["name"] for label, entry in engines.items()}
    labels = [e.label for e in config.engines]
    pending = [scheduled for scheduled in schedule if scheduled.index not in finished]
    settings = config.settings
    rules = settings.rules
    players = MatchPlayers(config, names)
    referee = GTPReferee(config.referee) if config.referee else None
    play = match_play(config)
    config.sgf_dir.mkdir(parents=True, exist_ok=True)
    dispatched = 0

    def sprt_decided() -> bool:
        """Whether the SPRT is decided over the finished games counted in start order: a
        decision never waits on, nor skips, a long game that started earlier."""
        if config.sprt is None or len(labels) != 2:
            return False
        started = itertools.takewhile(lambda i: i in finished, itertools.count())
        prefix = [finished[i] for i in started]
        return pair_summary(prefix, labels[0], labels[1], config)["sprt"]["verdict"] != "continue"

    stopping = stopped_by_sprt = sprt_decided()      # a resumed match may be decided already
    interrupted = False

    def next_game(slot: Slot) -> GameSpec | None:
        nonlocal dispatched
        if stopping or dispatched >= len(pending):
            return None
        scheduled = pending[dispatched]
        dispatched += 1
        seed = int(np.random.SeedSequence([config.seed, scheduled.index]).generate_state(1)[0])
        return GameSpec(settings.size, rules, players.player(slot.index, scheduled.black),
                        players.player(slot.index, scheduled.white), play, seed=seed, tag=scheduled,
                        handicap=settings.handicap, opening=_opening_for(config, scheduled.round),
                        black_limit=players.limit(scheduled.black), white_limit=players.limit(scheduled.white))

    def ordered() -> list[dict[str, Any]]:
        return [finished[i] for i in sorted(finished)]

    def on_game(game: FinishedGame) -> None:
        nonlocal stopping, stopped_by_sprt
        scheduled = game.spec.tag
        record = count_record(game.record(), game.game, referee)
        sgf_path = config.sgf_dir / _sgf_name(scheduled)
        write_sgf(sgf_path, record, application="train.match")
        finished[scheduled.index] = game_entry(scheduled, record, sgf_path)
        games = ordered()
        _write_json(config.results_path, summarize(config, engines, games, complete=False))
        bar.update(1)
        bar.set_postfix_str(score_line(games, labels))
        if not stopping and sprt_decided():
            stopping = stopped_by_sprt = True

    pool = GamePool(max(1, min(config.parallel, len(pending))), next_game, batch_ramp=config.batch_ramp)
    bar = tqdm(total=len(schedule), initial=len(finished), unit="game", disable=not config.progress,
               dynamic_ncols=True, file=sys.stderr)
    try:
        for game in pool.run():
            on_game(game)
    except KeyboardInterrupt:
        interrupted = stopping = True
        players.kill()
        pool.abandon_all()
    finally:
        bar.close()
        players.close()
        if referee is not None:
            referee.close()
    games = ordered()
    complete = not interrupted and (len(games) == len(schedule) or stopped_by_sprt)
    results = summarize(config, engines, games, complete=complete, stopped_by_sprt=stopped_by_sprt)
    results["interrupted"] = interrupted
    _write_json(config.results_path, results)
    return results
