"""The GTP server: ``python -m engine`` speaks the Go Text Protocol on stdin/stdout.

:mod:`engine.gtp.protocol` reads lines, parses commands, frames replies and holds the command
table; :mod:`engine.gtp.commands` is one session (:class:`GTPEngine`, the game commands);
:mod:`engine.gtp.analysis` holds the analysis commands (lz-analyze, kata-analyze, GoGui's) and
:mod:`engine.gtp.params` the parameter commands, each using the session's public methods only.
The names other modules use are re-exported here.
"""
from engine.gtp.analysis import AnalysisOptions
from engine.gtp.commands import (ENGINE_NAME, MAX_SGF_BYTES, EngineConfig, GTPEngine,
                                 game_from_sgf, game_to_sgf)
from engine.gtp.protocol import (MAX_LINE_BYTES, MAX_NUMBER_CHARS, CommandTable, GTPError, GTPServer,
                                 InputReader, LongLine, gtp_command, is_interrupt, parse_command)
from engine.play.movepolicy import RESIGN
from engine.play.settings import DEFAULT_VISITS

__all__ = [
    "AnalysisOptions", "CommandTable", "DEFAULT_VISITS", "ENGINE_NAME", "EngineConfig", "GTPEngine", "GTPError",
    "GTPServer", "InputReader", "LongLine", "MAX_LINE_BYTES", "MAX_NUMBER_CHARS", "MAX_SGF_BYTES",
    "RESIGN", "game_from_sgf", "gtp_command", "game_to_sgf", "is_interrupt", "parse_command",
]
