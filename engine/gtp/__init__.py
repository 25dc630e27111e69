"""The GTP server (python -m engine): protocol and command table (protocol), the session's settings (config) and game commands (commands), the analysis and parameter commands (analysis, params), which call each other through public methods only.
May import engine.core, engine.rules, engine.scoring, engine.sgf, engine.coords, engine.errors and engine.play; never engine.nets or train (the session takes an evaluator factory)."""
from engine.gtp.analysis import AnalysisOptions
from engine.gtp.commands import ENGINE_NAME, MAX_SGF_BYTES, GTPEngine
from engine.gtp.config import EngineConfig, engine_play
from engine.gtp.protocol import (MAX_LINE_BYTES, MAX_NUMBER_CHARS, CommandTable, GTPError, GTPServer,
                                 InputReader, LongLine, gtp_command, is_interrupt, parse_command)
from engine.play.movepolicy import RESIGN
from engine.sgf import game_from_sgf, game_to_sgf
from engine.play.settings import DEFAULT_VISITS

__all__ = [
    "AnalysisOptions", "CommandTable", "DEFAULT_VISITS", "ENGINE_NAME", "EngineConfig", "GTPEngine", "GTPError",
    "GTPServer", "InputReader", "LongLine", "MAX_LINE_BYTES", "MAX_NUMBER_CHARS", "MAX_SGF_BYTES",
    "RESIGN", "engine_play", "game_from_sgf", "gtp_command", "game_to_sgf", "is_interrupt", "parse_command",
]
