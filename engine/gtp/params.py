"""The engine's parameter commands: ``goengine-param`` (GoGui's parameter dialog: list the
settings, or set one), KataGo's ``kata-set-param`` / ``kata-get-param`` for the search options
of :mod:`engine.play.searchopts`, and ``cputime``.  They change the session only through its public
setters (:class:`engine.gtp.commands.GTPEngine`)."""
from __future__ import annotations

import dataclasses
import time

from engine.play import searchopts
from engine.gtp.protocol import GTPError, float_arg, gtp_command, int_arg, memory_arg
from engine.play.memory import format_memory

_LISTED = ("c_puct", "fpu_reduction")       # search options listed with the engine's own
OPTIONS = tuple(k for k in searchopts.OPTIONS if k not in _LISTED)
PARAMS = ("visits", "playouts", "time", "resign", "ponder", "lag_buffer", "batch", "batch_ramp",
          "analysis_min_visits", "judge_playouts", "c_puct", "fpu_reduction", "lcb_z", "max_memory",
          "rules", *OPTIONS)


class ParamCommands:
    """The parameter handlers of one session (its ``config``, ``game`` and setters)."""

    def __init__(self, session):
        self.session = session

    @gtp_command("goengine-param")
    def cmd_goengine_param(self, args: list[str]) -> str:
        """Without arguments: GoGui's parameter list; ``goengine-param KEY VALUE`` sets one."""
        session = self.session
        cfg = session.config
        if not args:
            def opt(v):
                return 0 if v is None else v
            return "\n".join([
                f"[string] visits {opt(cfg.play.visits)}",
                f"[string] playouts {opt(cfg.playouts)}",
                f"[string] time {opt(cfg.seconds):g}",
                f"[string] resign {cfg.play.resign:g}",
                f"[bool] ponder {int(cfg.ponder)}",
                f"[string] lag_buffer {cfg.lag_buffer:g}",
                f"[string] batch {cfg.batch}",
                f"[string] batch_ramp {cfg.batch_ramp}",
                f"[string] analysis_min_visits {cfg.analysis_min_visits}",
                f"[string] judge_playouts {cfg.judge_playouts}",
                f"[string] c_puct {cfg.search.c_puct:g}",
                f"[string] fpu_reduction {cfg.search.fpu_reduction:g}",
                f"[string] lcb_z {cfg.search.lcb_z:g}",
                f"[string] max_memory {format_memory(cfg.search.max_memory)}",
                *(f"[string] {k} {getattr(cfg.search, k):g}" for k in OPTIONS),
                f"[list/chinese/tromp-taylor/japanese] rules {session.game.rules.name}",
            ])
        if len(args) != 2 or args[0] not in PARAMS:
            raise GTPError("syntax error")
        key, value = args
        if key == "visits":
            cfg.play.visits = int_arg(value, 0) or None
        elif key == "playouts":
            cfg.playouts = int_arg(value, 0) or None
        elif key == "time":
            t = float_arg(value)
            cfg.seconds = t if t > 0 else None
        elif key == "resign":
            r = float_arg(value)
            if not 0 <= r < 1:
                raise GTPError("syntax error")
            cfg.play.resign = r
        elif key == "ponder":
            if value.lower() not in ("0", "1", "true", "false"):
                raise GTPError("syntax error")
            cfg.ponder = value.lower() in ("1", "true")
        elif key == "lag_buffer":
            session.set_lag_buffer(max(0.0, float_arg(value)))
        elif key == "batch":
            session.set_batch(max(1, int_arg(value, 1)))
        elif key == "batch_ramp":
            session.set_batch_ramp(int_arg(value, 0))
        elif key == "analysis_min_visits":
            cfg.analysis_min_visits = int_arg(value, 0)
        elif key == "judge_playouts":
            session.set_judge_playouts(max(1, int_arg(value, 1)))
        elif key == "rules":
            session.set_rules(session.rules_named(value))
        else:
            if key in searchopts.OPTIONS:
                try:
                    v = searchopts.option_value(key, value)[1]
                except ValueError:
                    raise GTPError("syntax error") from None
            else:
                v = memory_arg(value) if key == "max_memory" else float_arg(value)
            session.set_search(dataclasses.replace(cfg.search, **{key: v}))
        return ""

    @gtp_command("cputime")
    def cmd_cputime(self, args: list[str]) -> str:
        return f"{time.process_time():.3f}"

    @gtp_command("kata-set-param")
    def cmd_kata_set_param(self, args: list[str]) -> str:
        """``kata-set-param NAME VALUE``: a search option of :mod:`engine.play.searchopts` by KataGo's
        config name (staticScoreUtilityFactor...) or ours; the same as goengine-param."""
        if len(args) != 2 or not searchopts.is_option(args[0]):
            raise GTPError("syntax error")
        return self.cmd_goengine_param([searchopts.option_field(args[0]), args[1]])

    @gtp_command("kata-get-param")
    def cmd_kata_get_param(self, args: list[str]) -> str:
        """``kata-get-param NAME``: the search option's current value."""
        if len(args) != 1 or not searchopts.is_option(args[0]):
            raise GTPError("syntax error")
        return f"{getattr(self.session.config.search, searchopts.option_field(args[0])):g}"
