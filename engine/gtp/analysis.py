"""The analysis commands of the GTP engine: Leela Zero's ``lz-analyze`` and
``lz-genmove_analyze``, KataGo's ``kata-analyze`` and ``kata-genmove_analyze`` (streamed
``info`` lines until any input line arrives), and GoGui's analyze commands (policy heatmap and
labels, ownership, visit counts, principal variation).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from engine import coords, scoring
from engine.core import WHITE, Game, color_name, other, parse_color
from engine.gtp.protocol import DIGITS, GTPError, color_arg, gtp_command, int_arg, nargs
from engine.play.movepolicy import RESIGN
from engine.play.player import SearchResult


@dataclass
class AnalysisOptions:
    color: int
    interval: float = 1.0             # seconds between info lines; 0: only the final line
    minmoves: int = 0
    maxmoves: int = 0                 # 0: no limit
    ownership: bool = False
    avoid: dict = field(default_factory=dict)   # colour -> {point: until depth} (avoid / allow)


def _fmt(x: float, digits: int = 6) -> str:
    """A float that always has a decimal point and never reads ``-0.0``."""
    return f"{round(float(x), digits) + 0.0:.{digits}f}"


def softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Probabilities of ``logits`` over the points where ``mask`` is true (0 elsewhere)."""
    z = np.where(mask, logits.astype(np.float64), -np.inf)
    if not np.isfinite(z).any():
        return np.zeros_like(z)
    z = np.exp(z - z[np.isfinite(z)].max())
    return z / z.sum()


def policy(evaluator, game: Game, color: int) -> np.ndarray:
    """Move probabilities (N*N+1) of ``evaluator``'s network for ``color`` to move in ``game``,
    legal moves only."""
    g = game.copy()
    g.set_to_move(color)
    fs = getattr(evaluator, "feature_set", "rich")
    ev = evaluator.evaluate(g.features(fs)[None])
    return softmax(np.asarray(ev.policy[0]), g.legal_mask(color))


def root_winrate(tree) -> float:
    """The root's winrate for the side to move, 0..1."""
    return min(1.0, max(0.0, (tree.value + 1.0) / 2.0))


def candidate_winrate_lcb(c, root_wr: float) -> tuple[float, float]:
    """(winrate, lcb) of a root child for the side to move, 0..1: an unvisited child shows the
    root's winrate, and its lcb (also a child of one visit) is 0."""
    wr = min(1.0, max(0.0, c.winrate)) if c.visits else root_wr
    lcb = min(1.0, max(0.0, (c.lcb + 1.0) / 2.0)) if c.visits > 1 else 0.0
    return wr, min(lcb, wr)


def evaluate_after_moves(evaluator, game: Game, moves: list[int]):
    """The evaluator's outputs (engine.nets.evaluator.Evaluation, from the view of the side to move
    after the move, so the opponent of ``game.to_move``) for the position after each of
    ``moves``, in one call with cache keys (a searched child is served from the cache)."""
    fs = getattr(evaluator, "feature_set", "rich")
    planes, keys = [], []
    for m in moves:
        g = game.copy()
        g.play(m, game.to_move)
        planes.append(g.features(fs))
        keys.append(g.feature_key(fs))
    return evaluator.evaluate(np.stack(planes), keys=np.array(keys, np.uint64))


def score_leads(evaluator, game: Game, moves: list[int], scores: dict[int, Optional[float]]) -> None:
    """Fills ``scores`` with the mover's score lead after each of ``moves`` not in it yet
    (network score head of the position after the move, negated), None without a score head."""
    todo = [m for m in moves if m not in scores]
    if not todo:
        return
    ev = evaluate_after_moves(evaluator, game, todo)
    for i, m in enumerate(todo):
        scores[m] = None if ev.score is None else -float(ev.score[i])


class AnalysisCommands:
    """The analysis handlers of one session (:class:`engine.gtp.commands.GTPEngine`).  They use
    its public members only: ``game``, ``evaluator``, ``player``, ``config``, ``inputs``,
    ``stream_begin``/``stream_line``, ``genmove`` and ``run_search``."""

    ANALYZE_COMMANDS = (
        "dboard/Policy heatmap/goengine-policy %m",
        "gfx/Policy labels/goengine-policy_gfx %m",
        "dboard/Ownership/goengine-ownership %m",
        "pspairs/Visit counts/goengine-visits %m",
        "var/Principal variation/goengine-pv %m",
        "param/Engine parameters/goengine-param",
    )

    def __init__(self, session):
        self.session = session

    def _vtx(self, point: int) -> str:
        return coords.to_gtp(point, self.session.game.size)

    def _analysis_options(self, args: list[str], need_color: bool) -> AnalysisOptions:
        i = 0
        color = self.session.game.to_move
        if args:
            try:
                color = parse_color(args[0])
                i = 1
            except ValueError:
                if need_color:
                    raise GTPError("syntax error") from None
        elif need_color:
            raise GTPError("syntax error")
        opts = AnalysisOptions(color=color)
        if i < len(args) and DIGITS.fullmatch(args[i]):
            opts.interval = int_arg(args[i]) / 100.0
            i += 1
        allowed: set[int] = set()
        while i < len(args):
            key = args[i]
            if key in ("avoid", "allow"):
                i = self._avoid_option(args, i, opts, allowed)
                continue
            if i + 1 >= len(args):
                raise GTPError("syntax error")
            value = args[i + 1]
            i += 2
            if key == "interval":
                opts.interval = int_arg(value, 0) / 100.0
            elif key == "minmoves":
                opts.minmoves = int_arg(value, 0)
            elif key == "maxmoves":
                opts.maxmoves = int_arg(value, 0)
            elif key in ("ownership", "ownershipStdev", "movesOwnership", "rootInfo", "pvVisits",
                         "pvEdgeVisits"):
                if value.lower() not in ("true", "false"):
                    raise GTPError("syntax error")
                if key == "ownership":
                    opts.ownership = value.lower() == "true"
            else:
                raise GTPError("syntax error")
        return opts

    def _avoid_option(self, args: list[str], i: int, opts: AnalysisOptions, allowed: set[int]) -> int:
        """``avoid COLOR V1,V2,... DEPTH`` / ``allow COLOR V1,... DEPTH`` (Leela Zero's and
        KataGo's): COLOR's listed moves (allow: every move but the listed ones, pass included)
        are kept out of the search for the first DEPTH moves.  Returns the next index."""
        if i + 3 >= len(args):
            raise GTPError("syntax error")
        kind, size = args[i], self.session.game.size
        try:
            color = parse_color(args[i + 1])
            points = [coords.from_gtp(v, size) for v in args[i + 2].split(",") if v]
        except ValueError:
            raise GTPError("syntax error") from None
        depth = int_arg(args[i + 3], 1)
        table = opts.avoid.setdefault(color, {})
        if kind == "avoid":
            for p in points:
                table[p] = max(table.get(p, 0), depth)
        else:
            if color in allowed:
                raise GTPError("syntax error: one allow per colour")
            allowed.add(color)
            keep = set(points)
            for p in range(size * size + 1):
                if p not in keep:
                    table[p] = max(table.get(p, 0), depth)
        return i + 4

    def _info_line(self, kind: str, tree, game: Game, opts: AnalysisOptions,
                   scores: dict[int, Optional[float]], ownership: Optional[str]) -> str:
        """One analysis line (every candidate, then ``ownership`` when asked)."""
        size = game.size
        children = tree.children()
        visited = [c for c in children if c.visits > 0]
        cands = list(visited)
        if opts.minmoves > len(cands):
            rest = sorted((c for c in children if c.visits == 0), key=lambda c: -c.prior)
            cands += rest[: opts.minmoves - len(cands)]
        if opts.maxmoves > 0:
            cands = cands[: opts.maxmoves]
        if not cands:
            return ""
        root_wr = root_winrate(tree)
        if kind == "kata":
            self._score_leads(game, [c.move for c in cands], scores)
        parts = []
        for order, c in enumerate(cands):
            wr, lcb = candidate_winrate_lcb(c, root_wr)
            pv = " ".join(coords.to_gtp(p, size) for p in (c.pv if c.visits else [c.move]))
            move = coords.to_gtp(c.move, size)
            if kind == "lz":
                parts.append(f"info move {move} visits {c.visits} winrate {round(wr * 10000)} "
                             f"prior {round(c.prior * 10000)} lcb {round(lcb * 10000)} "
                             f"order {order} pv {pv}")
            else:
                lead = scores.get(c.move)
                score = "" if lead is None else f"scoreMean {_fmt(lead, 3)} scoreLead {_fmt(lead, 3)} "
                parts.append(f"info move {move} visits {c.visits} winrate {_fmt(wr)} {score}"
                             f"prior {_fmt(c.prior)} lcb {_fmt(lcb)} order {order} pv {pv}")
        line = " ".join(parts)
        if ownership is not None:
            line += " ownership " + ownership
        return line

    def _score_leads(self, game: Game, moves: list[int], scores: dict[int, Optional[float]]) -> None:
        """Fills ``scores`` with the mover's score lead after each of ``moves`` (see
        :func:`score_leads`)."""
        score_leads(self.session.evaluator, game, moves, scores)

    def _ownership_text(self, game: Game) -> str:
        own = scoring.estimate_ownership(game, self.session.evaluator, playouts=self.session.config.judge_playouts // 2,
                                         seed=self.session.config.seed)
        if game.to_move == WHITE:
            own = -own
        return " ".join(_fmt(x) for x in own.ravel())

    def _analyze(self, kind: str, args: list[str]) -> str:
        opts = self._analysis_options(args, need_color=False)
        game = self.session.game.copy()
        if game.to_move != opts.color:
            game.set_to_move(opts.color)
        self.session.stream_begin()                  # '=' at once; the ownership may take a moment
        ownership = self._ownership_text(game) if kind == "kata" and opts.ownership else None
        scores: dict[int, Optional[float]] = {}

        def emit(tree) -> None:
            self.session.stream_line(self._info_line(kind, tree, game, opts, scores, ownership))

        result = self.session.player.search(game, visits=self.session.config.max_analysis_visits,
                                    stop=self.session.inputs.has_input if self.session.inputs else (lambda: True),
                                    callback=emit if opts.interval > 0 else None,
                                    callback_interval=max(opts.interval, 0.01),
                                    min_visits=max(1, self.session.config.analysis_min_visits),
                                    avoid=opts.avoid or None)
        del result
        emit(self.session.player.search_tree)
        if self.session.inputs is not None and not self.session.inputs.has_input():
            self.session.inputs.wait()      # the search ran out; the analysis still ends only at input
        return ""

    def _genmove_analyze(self, kind: str, args: list[str]) -> str:
        opts = self._analysis_options(args, need_color=True)
        game_before = self.session.game.copy()
        game_before.set_to_move(opts.color)
        self.session.stream_begin()
        ownership = None
        if kind == "kata" and opts.ownership:
            ownership = self._ownership_text(game_before)
        scores: dict[int, Optional[float]] = {}

        def emit(tree) -> None:
            self.session.stream_line(self._info_line(kind, tree, game_before, opts, scores, ownership))

        move, _ = self.session.genmove(opts.color, callback=emit if opts.interval > 0 else None,
                                       interval=opts.interval if opts.interval > 0 else 1.0,
                                       ponder=True, avoid=opts.avoid or None)
        if opts.interval <= 0 and self.session.player.search_tree is not None:
            emit(self.session.player.search_tree)
        return "play " + ("resign" if move == RESIGN else self._vtx(move))

    @gtp_command("lz-analyze")
    def cmd_lz_analyze(self, args: list[str]) -> str:
        return self._analyze("lz", args)

    @gtp_command("kata-analyze")
    def cmd_kata_analyze(self, args: list[str]) -> str:
        return self._analyze("kata", args)

    @gtp_command("lz-genmove_analyze")
    def cmd_lz_genmove_analyze(self, args: list[str]) -> str:
        return self._genmove_analyze("lz", args)

    @gtp_command("kata-genmove_analyze")
    def cmd_kata_genmove_analyze(self, args: list[str]) -> str:
        return self._genmove_analyze("kata", args)

    # -- GoGui ------------------------------------------------------------------------------
    @gtp_command("gogui-analyze_commands")
    def cmd_gogui_analyze_commands(self, args: list[str]) -> str:
        return "\n".join(self.ANALYZE_COMMANDS)

    @gtp_command("gogui-interrupt")
    def cmd_gogui_interrupt(self, args: list[str]) -> str:
        return ""

    def _analysis_color(self, args: list[str]) -> int:
        nargs(args, 0, 1)
        return color_arg(args[0]) if args else self.session.game.to_move

    def _board_rows(self, values: np.ndarray, fmt: Callable[[float], str]) -> str:
        size = self.session.game.size
        v = np.asarray(values).reshape(size, size)
        return "\n" + "\n".join(" ".join(fmt(x) for x in row) for row in v)

    @gtp_command("goengine-policy")
    def cmd_goengine_policy(self, args: list[str]) -> str:
        """dboard: policy probability of each point relative to the best move (1.0)."""
        probs = policy(self.session.evaluator, self.session.game, self._analysis_color(args))
        n2 = self.session.game.size ** 2
        top = probs.max() if probs.max() > 0 else 1.0
        return self._board_rows(probs[:n2] / top, lambda x: f"{x:.3f}")

    @gtp_command("goengine-policy_gfx")
    def cmd_goengine_policy_gfx(self, args: list[str]) -> str:
        """gfx: INFLUENCE by policy relative to the best move, LABEL with percentages."""
        probs = policy(self.session.evaluator, self.session.game, self._analysis_color(args))
        n2 = self.session.game.size ** 2
        top = probs.max() if probs.max() > 0 else 1.0
        order = [int(p) for p in np.argsort(-probs[:n2], kind="stable") if probs[p] > 0]
        influence = " ".join(f"{self._vtx(p)} {probs[p] / top:.2f}" for p in order)
        labels = " ".join(f"{self._vtx(p)} {100 * probs[p]:.0f}" for p in order[:10])
        lines = []
        if influence:
            lines.append("INFLUENCE " + influence)
        if labels:
            lines.append("LABEL " + labels)
        lines.append(f"TEXT pass {100 * probs[n2]:.1f}%")
        return "\n".join(lines)

    @gtp_command("goengine-ownership")
    def cmd_goengine_ownership(self, args: list[str]) -> str:
        """dboard: ownership, +1 Black to -1 White."""
        color = self._analysis_color(args)
        g = self.session.game.copy()
        g.set_to_move(color)
        own = scoring.estimate_ownership(g, self.session.evaluator, playouts=self.session.config.judge_playouts // 2,
                                         seed=self.session.config.seed)
        return self._board_rows(own, lambda x: _fmt(x, 2))

    def _visit_search(self, args: list[str]) -> tuple[Game, SearchResult]:
        color = self._analysis_color(args)
        g = self.session.game.copy()
        g.set_to_move(color)
        cfg = self.session.config
        result = self.session.run_search(g, cfg.play.visits, cfg.seconds, cfg.playouts)
        return g, result

    @gtp_command("goengine-visits")
    def cmd_goengine_visits(self, args: list[str]) -> str:
        """pspairs: root visits of every visited move."""
        _, result = self._visit_search(args)
        return " ".join(f"{self._vtx(c.move)} {c.visits}" for c in result.children if c.visits > 0)

    @gtp_command("goengine-pv")
    def cmd_goengine_pv(self, args: list[str]) -> str:
        """var: the principal variation, colour-prefixed."""
        g, result = self._visit_search(args)
        best = next((c for c in result.children if c.visits > 0), None)
        if best is None:
            return ""
        color, out = g.to_move, []
        for p in best.pv:
            out.append(f"{color_name(color).lower()} {self._vtx(p)}")
            color = other(color)
        return " ".join(out)
