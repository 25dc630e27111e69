"""The GTP engine's command table: ``python -m engine`` speaks the Go Text Protocol on
stdin/stdout through :class:`GTPEngine`.

The protocol (framing, parsing, the command table, input while thinking) is
:mod:`engine.gtp.protocol`.  The session's own handlers are here; the analysis commands
(:mod:`engine.gtp.analysis`) and the parameter commands (:mod:`engine.gtp.params`) are concerns
of their own that use the session's public methods, and the table holds all three.
Resignation, passing and clean-up moves are decided by :mod:`engine.play.movepolicy` after each
search.  Pondering (``--ponder``) searches after our genmove until the next line arrives.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Optional, TextIO

import numpy as np

import engine
from engine import coords, scoring, sgf
from engine.play import movepolicy
from engine.core import (BLACK, EMPTY, WHITE, Game, IllegalMoveError, Rules, SearchParams,
                         color_name, other)
from engine.gtp.analysis import AnalysisCommands, policy
from engine.gtp.config import EngineConfig
from engine.gtp.params import ParamCommands
from engine.gtp.protocol import (DIGITS, VERTEX_SHAPE, CommandTable, GTPError, GTPServer, color_arg, float_arg,
                                 gtp_command, int_arg, nargs)
from engine.play.movepolicy import RESIGN
from engine.play.player import Player, SearchResult
from engine.play.settings import default_visits
from engine.errors import StartupError
from engine.rules import client_rules, kata_rules, net_rules_note, rules_from_kata
from engine.play.timecontrol import TimeControl

ENGINE_NAME = "goengine"
# Answered while the network is still loading: what GUIs send first to identify the engine.
NEEDS_NO_NET = frozenset(("protocol_version", "name", "version", "known_command", "list_commands",
                          "quit", "boardsize", "komi"))
MAX_SGF_BYTES = 8 << 20


class GTPEngine(GTPServer):
    """One GTP session.  ``evaluator_for(size)`` returns the evaluator to play ``size`` with
    (ValueError when the size is not supported); everything else comes from ``config``.

    Its command table holds the session's handlers, then :attr:`analysis`'s, then
    :attr:`params`'s; ``list_commands`` lists them in that order (:attr:`COMMANDS`)."""

    COMMANDS: tuple[str, ...] = ()      # set below from the three concerns' handlers

    def __init__(self, evaluator_for: Callable[[int], Any], config: EngineConfig | None = None,
                 stdin=None, stdout: TextIO | None = None, stderr: TextIO | None = None,
                 log: TextIO | None = None, ready: Callable[["GTPEngine"], None] | None = None):
        self.config = config or EngineConfig()
        super().__init__(stdin, stdout, stderr, log, quiet=self.config.quiet)
        self.evaluator_for = evaluator_for
        self._players: dict[int, Player] = {}
        self.clock = TimeControl(lag=self.config.lag_buffer)
        self.handicap: list[int] = []       # handicap stones set by a handicap command or SGF
        self.resigned: int | None = None    # colour that resigned, for printsgf
        self._low_moves: dict[int, tuple[int, int]] = {}  # colour -> (own moves in a row that would resign, move number)
        self._judgement: tuple[Any, scoring.Judgement] | None = None
        self._ponder_next = False
        self.evaluator = None
        self.player: Player | None = None
        self.game = Game(self.config.size, self.config.rules)
        # ready(self): waits for a network still loading (python -m engine loads it in the
        # background) and sets evaluator_for and config; the first command that needs the net
        # calls it.  Until then only NEEDS_NO_NET commands run.
        self._ready = ready
        self.board_size_set = False         # a boardsize command was answered
        self.startup_failed = False
        if ready is None:
            self._use_evaluator(self.config.size)
        self.analysis = AnalysisCommands(self)
        self.params = ParamCommands(self)
        for concern in (self, self.analysis, self.params):
            self.commands.add(concern)

    def execute(self, cmd_id: Optional[str], name: str, args: list[str]) -> tuple[bool, str]:
        if self._ready is not None and name not in NEEDS_NO_NET and name in self.commands:
            ready, self._ready = self._ready, None
            try:
                ready(self)
                self._use_evaluator(self.game.size)
            except StartupError as exc:       # already said on stderr; the engine cannot play
                self.startup_failed = self._quit = True
                return False, str(exc)
            except ValueError as exc:         # the net cannot play this size
                self._ready = lambda engine: None
                return False, str(exc)
        return super().execute(cmd_id, name, args)

    def warm_up(self) -> None:
        """One evaluation of the current position, so the first genmove does not pay for the
        network's first call (allocation, kernel selection, CUDA start-up) on its clock."""
        fs = getattr(self.evaluator, "feature_set", "rich")
        self.evaluator.evaluate(self.game.features(fs)[None])

    def idle(self) -> None:
        """Ponders after our genmove (``--ponder``) until the next line arrives."""
        if self._ponder_next and self.config.ponder and not self.inputs.has_input():
            self._ponder()
        self._ponder_next = False

    def _use_evaluator(self, size: int) -> None:
        """Selects the evaluator (and Player) for ``size``; ValueError if unsupported."""
        ev = self.evaluator_for(size)
        key = id(ev)
        if key not in self._players:
            self._players[key] = Player(ev, self.config.search, batch=self.config.batch,
                                        seed=self.config.seed, threads=self.config.threads,
                                        ramp=self.config.batch_ramp)
        self.evaluator = ev
        self.player = self._players[key]

    def _vertex(self, text: str) -> int:
        try:
            return coords.from_gtp(text, self.game.size)
        except ValueError:
            if VERTEX_SHAPE.fullmatch(text):
                raise GTPError("illegal move") from None   # a vertex, but not on this board
            raise GTPError("syntax error") from None

    def _vtx(self, point: int) -> str:
        return coords.to_gtp(point, self.game.size)

    # -- game state -------------------------------------------------------------------------
    def _new_game(self, size: int, rules: Rules) -> None:
        self.game = Game(size, rules)
        self.handicap = []
        self.resigned = None
        self.clock.reset()
        if self.player is not None:
            self.player.clear()

    def set_rules(self, rules: Rules) -> None:
        """Replays the game under ``rules`` (komi is part of the rules)."""
        if rules == self.game.rules:
            return
        game = Game(self.game.size, rules)
        try:
            game.play_many(self.game.moves)
        except IllegalMoveError:
            raise GTPError(f"the game has a move that is illegal under {rules.name} rules") from None
        game.set_to_move(self.game.to_move)
        self.game = game
        note = net_rules_note(rules, getattr(self.evaluator, "feature_set", "rich"))
        if note:
            self.info(note)

    def _handicap_count(self) -> int:
        return movepolicy.handicap_count(self.game, self.handicap)

    def _judge(self, game: Game | None = None) -> scoring.Judgement:
        game = self.game if game is None else game
        key = (game.size, tuple(game.moves), game.rules, game.to_move)
        if self._judgement is not None and self._judgement[0] == key:
            return self._judgement[1]
        verdict = scoring.judge(game, self.evaluator, playouts=self.config.judge_playouts,
                                seed=self.config.seed)
        self._judgement = (key, verdict)
        return verdict

    # -- core commands ----------------------------------------------------------------------
    @gtp_command("protocol_version")
    def cmd_protocol_version(self, args: list[str]) -> str:
        return "2"

    @gtp_command("name")
    def cmd_name(self, args: list[str]) -> str:
        return ENGINE_NAME

    @gtp_command("version")
    def cmd_version(self, args: list[str]) -> str:
        return engine.__version__

    @gtp_command("known_command")
    def cmd_known_command(self, args: list[str]) -> str:
        nargs(args, 1)
        return "true" if args[0] in self.commands else "false"

    @gtp_command("list_commands")
    def cmd_list_commands(self, args: list[str]) -> str:
        return "\n".join(self.commands.names())

    @gtp_command("quit")
    def cmd_quit(self, args: list[str]) -> str:
        self._quit = True
        return ""

    @gtp_command("boardsize")
    def cmd_boardsize(self, args: list[str]) -> str:
        nargs(args, 1)
        size = int_arg(args[0])
        try:
            if not 2 <= size <= 19:
                raise ValueError
            if self._ready is None:
                self._use_evaluator(size)
        except ValueError:
            raise GTPError("unacceptable size") from None
        self.board_size_set = True
        self._new_game(size, self.game.rules)
        return ""

    @gtp_command("clear_board")
    def cmd_clear_board(self, args: list[str]) -> str:
        self._new_game(self.game.size, self.game.rules)
        return ""

    @gtp_command("komi")
    def cmd_komi(self, args: list[str]) -> str:
        nargs(args, 1)
        komi = float_arg(args[0])
        if abs(komi) > 1000:
            raise GTPError("syntax error")
        self.set_rules(self.game.rules.with_komi(komi))
        return ""

    @gtp_command("play")
    def cmd_play(self, args: list[str]) -> str:
        nargs(args, 2)
        color = color_arg(args[0])
        point = self._vertex(args[1])
        self.game.play(point, color)
        self.resigned = None
        return ""

    @gtp_command("genmove")
    def cmd_genmove(self, args: list[str]) -> str:
        nargs(args, 1)
        color = color_arg(args[0])
        move, _ = self.genmove(color, ponder=True)
        return "resign" if move == RESIGN else self._vtx(move)

    @gtp_command("reg_genmove")
    def cmd_reg_genmove(self, args: list[str]) -> str:
        nargs(args, 1)
        color = color_arg(args[0])
        move, _ = self.genmove(color, play=False)
        return "resign" if move == RESIGN else self._vtx(move)

    @gtp_command("undo")
    def cmd_undo(self, args: list[str]) -> str:
        nargs(args, 0)
        if not self.game.moves:
            raise GTPError("cannot undo")
        self.game.undo()
        self.resigned = None
        return ""

    @gtp_command("gg-undo")
    def cmd_gg_undo(self, args: list[str]) -> str:
        nargs(args, 0, 1)
        n = int_arg(args[0], 0) if args else 1
        if n > len(self.game.moves):
            raise GTPError("cannot undo")
        for _ in range(n):
            self.game.undo()
        return ""

    @gtp_command("showboard")
    def cmd_showboard(self, args: list[str]) -> str:
        g = self.game
        lines = str(g).split("\n")
        lines.append(f"{'Black' if g.to_move == BLACK else 'White'} to move, move {len(g.moves) + 1}, "
                     f"komi {g.rules.komi:g}, {g.rules.name} rules")
        lines.append(f"captures: Black {g.captures(BLACK)}, White {g.captures(WHITE)}")
        return "\n" + "\n".join(lines)

    @gtp_command("final_score")
    def cmd_final_score(self, args: list[str]) -> str:
        return self._judge().result()

    @gtp_command("final_status_list")
    def cmd_final_status_list(self, args: list[str]) -> str:
        nargs(args, 1)
        status = args[0].lower()
        if status not in ("alive", "dead", "seki"):
            raise GTPError("syntax error")
        groups = self._judge().groups(status)
        return "\n".join(" ".join(self._vtx(p) for p in g) for g in groups)

    # -- handicap ---------------------------------------------------------------------------
    def _place_handicap(self, points: list[int]) -> str:
        for p in points:
            self.game.play(p, BLACK)
        self.game.set_to_move(WHITE)
        self.handicap = list(points)
        return " ".join(self._vtx(p) for p in points)

    def _require_empty(self) -> None:
        if self.game.moves or (self.game.stones() != EMPTY).any():
            raise GTPError("board not empty")

    @gtp_command("fixed_handicap")
    def cmd_fixed_handicap(self, args: list[str]) -> str:
        nargs(args, 1)
        n = int_arg(args[0])
        self._require_empty()
        try:
            if n == 0:
                raise ValueError("no handicap")
            points = coords.fixed_handicap(self.game.size, n)
        except ValueError:
            raise GTPError("invalid handicap") from None
        return self._place_handicap(points)

    @gtp_command("place_free_handicap")
    def cmd_place_free_handicap(self, args: list[str]) -> str:
        nargs(args, 1)
        n = int_arg(args[0])
        size = self.game.size
        self._require_empty()
        if not 2 <= n < size * size:
            raise GTPError("invalid handicap")
        try:
            points = coords.fixed_handicap(size, min(n, 9 if size % 2 == 1 else 4))
        except ValueError:
            points = []
        points = points[:n]
        if len(points) < n:
            # The rest where the policy likes Black's stones best, off the edge, not touching.
            probs = policy(self.evaluator, self.game, BLACK)[: size * size]
            taken = set(points)
            order = np.argsort(-probs, kind="stable")
            nbrs = scoring.neighbours(size)
            for relax in (False, True):
                for p in order:
                    p = int(p)
                    if len(points) >= n:
                        break
                    r, c = divmod(p, size)
                    if p in taken:
                        continue
                    if not relax and (min(r, c, size - 1 - r, size - 1 - c) == 0 or
                                      any(q in taken for q in nbrs[p])):
                        continue
                    points.append(p)
                    taken.add(p)
        return self._place_handicap(points)

    @gtp_command("set_free_handicap")
    def cmd_set_free_handicap(self, args: list[str]) -> str:
        if len(args) < 2:
            raise GTPError("syntax error")
        self._require_empty()
        points = []
        for a in args:
            try:
                p = coords.from_gtp(a, self.game.size)
            except ValueError:
                raise GTPError("bad vertex list") from None
            if p == self.game.pass_point or p in points:
                raise GTPError("bad vertex list")
            points.append(p)
        if len(points) >= self.game.size * self.game.size:
            raise GTPError("bad vertex list")
        self._place_handicap(points)
        return ""

    # -- time -------------------------------------------------------------------------------
    @gtp_command("time_settings")
    def cmd_time_settings(self, args: list[str]) -> str:
        nargs(args, 3)
        main, byo = float_arg(args[0]), float_arg(args[1])
        stones = int_arg(args[2], 0)
        try:
            self.clock.set_gtp(main, byo, stones)
        except ValueError:
            raise GTPError("syntax error") from None
        return ""

    @gtp_command("kgs-time_settings")
    def cmd_kgs_time_settings(self, args: list[str]) -> str:
        if not args:
            raise GTPError("syntax error")
        values = [float_arg(a) for a in args[1:]]
        try:
            self.clock.set_kgs(args[0], values)
        except ValueError:
            raise GTPError("syntax error") from None
        return ""

    @gtp_command("time_left")
    def cmd_time_left(self, args: list[str]) -> str:
        nargs(args, 3)
        color = color_arg(args[0])
        seconds = float_arg(args[1])
        stones = int_arg(args[2], 0)
        try:
            self.clock.time_left(color, seconds, stones)
        except ValueError:
            raise GTPError("syntax error") from None
        return ""

    # -- SGF --------------------------------------------------------------------------------
    @gtp_command("loadsgf")
    def cmd_loadsgf(self, args: list[str]) -> str:
        nargs(args, 1, 2)
        move_number, vertex = None, None
        if len(args) == 2:
            if DIGITS.fullmatch(args[1]):
                move_number = int_arg(args[1])
            else:
                vertex = args[1]
        try:
            with open(args[0], "rb") as f:
                data = f.read(MAX_SGF_BYTES + 1)
        except OSError:
            raise GTPError("cannot open file") from None
        if len(data) > MAX_SGF_BYTES:
            raise GTPError("SGF file too large")
        try:
            game, handicap = sgf.game_from_sgf(data, self.game.rules, move_number, vertex)
        except IllegalMoveError:
            raise GTPError("illegal move in SGF file") from None
        except ValueError as exc:
            raise GTPError(f"cannot load SGF: {exc}") from None
        try:
            self._use_evaluator(game.size)
        except ValueError:
            raise GTPError("unacceptable size") from None
        self.game = game
        self.handicap = handicap
        self.resigned = None
        self.clock.reset()
        if self.player is not None:
            self.player.clear()
        return "black" if game.to_move == BLACK else "white"

    @gtp_command("printsgf")
    def cmd_printsgf(self, args: list[str]) -> str:
        nargs(args, 0, 1)
        result = None
        if self.resigned is not None:
            result = f"{color_name(other(self.resigned))}+R"
        elif self.game.is_over:
            result = self._judge().result()
        text = sgf.game_to_sgf(self.game, self.handicap, result, ENGINE_NAME)
        if args:
            try:
                with open(args[0], "w", encoding="utf-8") as f:
                    f.write(text + "\n")
            except OSError:
                raise GTPError("cannot write file") from None
            return ""
        return text

    # -- rules ------------------------------------------------------------------------------
    def rules_named(self, name: str) -> Rules:
        """The rules a client names (KGS's and ours), with the game's komi."""
        key = client_rules(name)
        if key is None:
            raise GTPError("unknown rules")
        return Rules.preset(key, self.game.rules.komi)

    @gtp_command("kgs-rules")
    def cmd_kgs_rules(self, args: list[str]) -> str:
        nargs(args, 1)
        self.set_rules(self.rules_named(args[0]))
        return ""

    @gtp_command("kata-get-rules")
    def cmd_kata_get_rules(self, args: list[str]) -> str:
        nargs(args, 0)
        return json.dumps(self.game.rules.kata_json(), sort_keys=True, separators=(",", ":"))

    @gtp_command("kata-set-rules")
    def cmd_kata_set_rules(self, args: list[str]) -> str:
        """A KataGo rules name (``japanese``, ``chinese``, ``tromp-taylor``...) or JSON object;
        the komi stays unless the object gives one.  Rules this engine cannot play exactly
        are refused, with what differs."""
        if not args:
            raise GTPError("syntax error")
        text = " ".join(args)
        try:
            value = json.loads(text) if text.startswith("{") else text
            kata = kata_rules(value)
        except ValueError:
            raise GTPError(f"unknown rules {text}") from None
        komi = kata.komi if isinstance(value, dict) and "komi" in value else self.game.rules.komi
        self._set_kata_rules(kata, komi)
        return ""

    @gtp_command("kata-set-rule")
    def cmd_kata_set_rule(self, args: list[str]) -> str:
        """One part of the rules as KataGo names it: ko, scoring, tax, suicide (the others
        must keep the values this engine plays)."""
        nargs(args, 2)
        parts = self.game.rules.kata_json()
        key, value = args
        if key not in parts:
            raise GTPError(f"unknown rule {key}")
        parts[key] = value.lower() == "true" if isinstance(parts[key], bool) else value.upper()
        try:
            kata = kata_rules(parts)
        except ValueError:
            raise GTPError(f"bad value {value} for {key}") from None
        self._set_kata_rules(kata, self.game.rules.komi)
        return ""

    def _set_kata_rules(self, kata, komi: float) -> None:
        rules, notes = rules_from_kata(kata, komi, handicap=bool(self.handicap))
        if notes:
            raise GTPError("rules not changed: they cannot be played exactly ("
                           + "; ".join(notes) + ")")
        self.set_rules(rules)

    @gtp_command("goengine-rules")
    def cmd_goengine_rules(self, args: list[str]) -> str:
        nargs(args, 0, 1)
        if args:
            self.set_rules(self.rules_named(args[0]))
        return self.game.rules.name

    @gtp_command("kgs-genmove_cleanup")
    def cmd_kgs_genmove_cleanup(self, args: list[str]) -> str:
        nargs(args, 1)
        color = color_arg(args[0])
        move, _ = self.genmove(color, cleanup=True)
        return "resign" if move == RESIGN else self._vtx(move)

    # -- search -----------------------------------------------------------------------------
    def _limits(self, color: int) -> tuple[Optional[int], Optional[float], Optional[int]]:
        """(visits, seconds, playouts) for a move of ``color``."""
        cfg = self.config
        visits, seconds, playouts = cfg.play.visits, cfg.seconds, cfg.playouts
        budget = self.clock.budget(color, self.game.size, len(self.game.moves))
        if budget is not None:
            seconds = budget if seconds is None else min(seconds, budget)
        return visits, seconds, playouts

    def run_search(self, game: Game, visits: Optional[int], seconds: Optional[float],
                    playouts: Optional[int], stop=None, callback=None, interval: float = 1.0,
                    min_visits: int = 1, avoid=None) -> SearchResult:
        """Searches ``game`` within the limits (``playouts``: new visits beyond the tree's); the
        engine's default visits (:func:`engine.play.settings.default_visits`, applied here only)
        when none of them is set.  ``avoid``: moves kept out of the search
        (``lz-genmove_analyze ... avoid``)."""
        tree = self.player.sync(game)
        if visits is None and seconds is None and playouts is None:
            visits = default_visits(game.size)
        if playouts is not None:
            target = tree.visits + playouts
            visits = target if visits is None else min(visits, target)
        return self.player.search(game, visits=visits, seconds=seconds, stop=stop,
                                  callback=callback, callback_interval=max(interval, 0.01),
                                  min_visits=min_visits, avoid=avoid)

    def genmove(self, color: int, play: bool = True, cleanup: bool = False, callback=None,
                interval: float = 1.0, ponder: bool = False, avoid=None) -> tuple[int, SearchResult]:
        """Searches for ``color`` and returns (the move, RESIGN to resign; the search); plays it
        if ``play``.  ``ponder``: ponder after this reply (``--ponder``) unless it resigns."""
        t0 = time.monotonic()
        game = self.game if play else self.game.copy()
        if game.to_move != color:
            game.set_to_move(color)
        visits, seconds, playouts = self._limits(color)
        stop = self.inputs.interrupted.is_set if self.inputs is not None else None
        result = self.run_search(game, visits, seconds, playouts, stop=stop,
                                 callback=callback, interval=interval, avoid=avoid)
        move = self._choose(game, color, result, cleanup)
        if callback is not None and self.player.search_tree is not None:
            callback(self.player.search_tree)
        if play and move != RESIGN:
            game.play(move, color)
        if play:
            self.clock.charge(color, time.monotonic() - t0)
            if move == RESIGN:
                self.resigned = color
        self._summary(game.size, color, result, move, time.monotonic() - t0)
        self._ponder_next = ponder and move != RESIGN
        return move, result

    def _summary(self, size: int, color: int, result: SearchResult, move: int, seconds: float) -> None:
        if self.config.quiet and self.logfile is None:
            return
        vtx = "resign" if move == RESIGN else coords.to_gtp(move, size)
        # the line of the move played (the LCB may choose another than the most-visited child)
        chosen = next((c for c in result.children if c.move == move), None)
        pv = " ".join(coords.to_gtp(p, size) for p in (chosen.pv if chosen else [])[:12])
        self.info(f"{color_name(color)} {vtx}: {result.visits} visits ({result.playouts} new, "
                  f"{seconds:.2f}s), winrate {100 * result.winrate:.1f}%, pv {pv}")

    def _should_resign(self, game: Game, color: int, result: SearchResult) -> bool:
        return movepolicy.should_resign(movepolicy.best_winrate(result), len(game.moves), game.size,
                                        self.config.play.resign, visits=result.visits,
                                        handicap=self._handicap_count(), white=color == WHITE)

    def _resign_streak(self, game: Game, color: int, result: SearchResult) -> bool:
        """Records whether this move of ``color`` would resign; True when the last
        ``resign_turns`` own moves in a row (consecutive in this game) all would."""
        low = self._should_resign(game, color, result)
        count, last = self._low_moves.get(color, (0, -10))
        number = len(game.moves)
        count = (count + 1 if last == number - 2 else 1) if low else 0
        self._low_moves[color] = (count, number)
        return low and count >= max(1, self.config.resign_turns)

    def _choose(self, game: Game, color: int, result: SearchResult, cleanup: bool = False) -> int:
        may_resign = self._resign_streak(game, color, result)
        return movepolicy.choose_move(game, color, result, self._judge, self.config.play.resign, may_resign=may_resign,
                                      handicap=self._handicap_count(), cleanup=cleanup, say=self.info)

    def _ponder(self) -> None:
        """Searches the current position until input arrives (tree kept for the next genmove)."""
        if self.game.is_over or self.inputs is None:
            return
        try:
            self.player.search(self.game, visits=self.config.max_ponder_visits,
                               stop=self.inputs.has_input, min_visits=0)
        except Exception as exc:   # pondering is best effort
            self.info(f"pondering stopped: {exc}")

    # -- settings the parameter commands change -----------------------------------------------
    def set_lag_buffer(self, seconds: float) -> None:
        self.config.lag_buffer = seconds
        self.clock.lag = seconds

    def set_batch(self, batch: int) -> None:
        self.config.batch = batch
        for p in self._players.values():
            p.batch = batch
            p.clear()

    def set_batch_ramp(self, ramp: int) -> None:
        self.config.batch_ramp = ramp
        for p in self._players.values():
            p.ramp = ramp

    def set_judge_playouts(self, playouts: int) -> None:
        self.config.judge_playouts = playouts
        self._judgement = None

    def set_search(self, search: SearchParams) -> None:
        self.config.search = search
        for p in self._players.values():
            p.set_params(search)


GTPEngine.COMMANDS = CommandTable.names_of(GTPEngine, AnalysisCommands, ParamCommands)
