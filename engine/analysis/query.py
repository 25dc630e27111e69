"""Reading the queries of KataGo's JSON analysis protocol (``python -m engine analysis``).

One query is one line of JSON.  :func:`parse_query` turns it into what the scheduler
(:mod:`engine.analysis.engine`) needs: an action (``query_version``, ``clear_cache``,
``terminate``, ``terminate_all``, ``query_models``) or one :class:`TurnRequest` per analysed
turn, plus the error and warning objects to write back, in KataGo's shapes::

    {"error": MESSAGE}                                  (no usable id)
    {"error": MESSAGE, "field": FIELD, "id": ID}        (the query is dropped)
    {"warning": MESSAGE, "field": FIELD, "id": ID}      (the query still runs)

Fields, bounds and messages follow KataGo 1.15's analysis engine (docs/Analysis_Engine.md):
sizes 2..19, komi a multiple of 0.5 in [-400, 400], ``maxVisits`` 1..2^50 (above the engine's
own cap it is clamped, with a warning), unknown fields warned about, an illegal move an error
naming the turn.  What this engine cannot do is said in a warning, never silently:

- boards are square (``boardXSize`` must equal ``boardYSize``);
- rules: ko rule, suicide, scoring (area or territory) and tax are honoured (KataGo's
  situational superko is played as positional superko, with a warning; a tax under area
  scoring, the button and the white handicap bonus are warned about and not applied);
- ``overrideSettings``: ``reportAnalysisWinratesAs``, ``maxVisits``, ``maxPlayouts``,
  ``maxTime``, ``cpuctExploration``/``cpuctExplorationLog``/``cpuctExplorationBase`` (the same
  growing-c_puct formula as ours), ``fpuReductionMax``, ``rootFpuReductionMax`` and
  ``analysisPVLen`` apply; other KataGo settings are ignored with a warning;
- ``avoidMoves``/``allowMoves`` apply as in KataGo (:func:`parse_avoid`);
- ``rootPolicyTemperature``, ``includeOwnershipStdev``,
  ``includeMovesOwnershipStdev``, ``includePVVisits`` and ``includeNoResultValue`` are read,
  checked and ignored with a warning.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from engine import coords
from engine.core import BLACK, WHITE, Game, IllegalMoveError, SearchParams
from engine.play.settings_cli import described, positive_int
from engine.rules import KATA_CHOICES, kata_rules, rules_from_kata

MAX_VISITS_LIMIT = 1 << 50          # KataGo's bound on maxVisits
MAX_PRIORITY = 0x3FFFFFFFFFFFFFFF   # KataGo's bound on priority: +-2^62
MIN_SIZE, MAX_SIZE = 2, 19
PERSPECTIVES = ("BLACK", "WHITE", "SIDETOMOVE")
PROTOCOL = "analysis protocol"    # the title of python -m engine analysis's own option group

# Every field KataGo reads from a query; others get an "Unexpected or unused field" warning.
EXPECTED_FIELDS = frozenset((
    "id", "action", "terminateId", "turnNumbers", "boardXSize", "boardYSize", "initialStones",
    "moves", "initialPlayer", "analyzeTurns", "priorities", "rules", "komi", "whiteHandicapBonus",
    "overrideSettings", "maxVisits", "analysisPVLen", "rootFpuReductionMax",
    "rootPolicyTemperature", "includeMovesOwnership", "includeMovesOwnershipStdev",
    "includeOwnership", "includeOwnershipStdev", "includePolicy", "includePVVisits",
    "includeNoResultValue", "reportDuringSearchEvery", "firstReportDuringSearchAfter",
    "priority", "allowMoves", "avoidMoves",
))
ACTIONS = ("query_version", "query_models", "clear_cache", "terminate", "terminate_all")

# overrideSettings keys applied to the search (KataGo name -> SearchParams field).
_PARAM_SETTINGS = {
    "cpuctExploration": "c_puct", "cpuctExplorationLog": "c_puct_factor",
    "cpuctExplorationBase": "c_puct_base", "fpuReductionMax": "fpu_reduction",
    "rootFpuReductionMax": "fpu_reduction_root",
}
# KataGo settings this engine knows but does not implement: accepted, warned about, ignored.
_IGNORED_SETTINGS = frozenset((
    "wideRootNoise", "playoutDoublingAdvantage", "ignorePreRootHistory", "antiMirror",
    "rootNumSymmetriesToSample", "humanSLProfile", "winLossUtilityFactor",
    "staticScoreUtilityFactor", "dynamicScoreUtilityFactor", "rootPolicyTemperature",
    "rootPolicyTemperatureEarly", "numSearchThreads", "useUncertainty", "subtreeValueBiasFactor",
    "useNoisePruning", "rootNoiseEnabled", "conservativePass", "useLcbForSelection",
    "lcbStdevs", "minVisitPropForLCB", "nnPolicyTemperature", "chosenMoveTemperature",
    "chosenMoveTemperatureEarly", "fpuLossProp", "rootFpuLossProp", "fpuParentWeight",
    "valueWeightExponent", "rootDesiredPerChildVisitsCoeff", "rootEndingBonusPoints",
    "rootPruneUselessMoves", "dynamicScoreCenterScale", "dynamicScoreCenterZeroWeight",
    "enablePassingHacks", "searchFactorAfterOnePass", "searchFactorAfterTwoPass",
    "maxVisitsPondering", "maxPlayoutsPondering", "maxTimePondering", "lagBuffer",
))


class QueryError(Exception):
    """A query field KataGo would refuse: the query is dropped with an error object."""

    def __init__(self, field_name: Optional[str], message: str):
        super().__init__(message)
        self.field = field_name
        self.message = message


@dataclass
class QueryDefaults:
    """What a query gets when it does not say (the command line sets these)."""

    max_visits: int = 500               # KataGo's analysis_example.cfg (--visits)
    perspective: str = described("BLACK", "reportAnalysisWinratesAs when a query does not override it "
                                          "(default BLACK)", option="report_as", type=str.upper,
                                 choices=PERSPECTIVES, group=PROTOCOL)   # KataGo's example config's
    visits_cap: int = described(5_000_000, "visits: a query's maxVisits above this is clamped, with a warning "
                                           "(default 5,000,000)", option="max_visits_cap",
                                type=positive_int, group=PROTOCOL)      # a search that long never ends here
    pv_len: int = 15                    # analysisPVLen of KataGo's example config
    max_seconds: Optional[float] = None
    search: SearchParams = field(default_factory=SearchParams)


@dataclass
class TurnRequest:
    """One position to analyse: turn ``turn`` of query ``id`` (0 = before the first move)."""

    id: str
    turn: int
    game: Game
    priority: int
    max_visits: int
    perspective: str
    pv_len: int
    params: SearchParams
    max_seconds: Optional[float] = None
    include_ownership: bool = False
    include_moves_ownership: bool = False
    include_policy: bool = False
    report_every: Optional[float] = None
    first_report_after: Optional[float] = None
    arrival: int = 0                    # ties of priority go to the earlier request
    avoid: Optional[dict[int, dict[int, int]]] = None   # avoidMoves/allowMoves (parse_avoid)
    terminated: bool = False            # set by a terminate action

    @property
    def sort_key(self) -> tuple[int, int]:
        return (-self.priority, self.arrival)


@dataclass
class ParsedQuery:
    """What one input line asks: ``messages`` to write now (errors, warnings), then either an
    ``action`` (the query object, to act on and echo) or ``requests`` (possibly none)."""

    messages: list[dict] = field(default_factory=list)
    action: Optional[dict] = None
    requests: list[TurnRequest] = field(default_factory=list)


def error(message: str, field_name: Optional[str] = None, query_id: Optional[str] = None) -> dict:
    out: dict[str, Any] = {"error": message}
    if query_id is not None:
        out["field"] = field_name
        out["id"] = query_id
    return out


def warning(message: str, field_name: str, query_id: str) -> dict:
    return {"warning": message, "field": field_name, "id": query_id}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON number {name}")


def decode_line(line: str) -> Any:
    """The JSON value of a line (NaN and Infinity are not JSON); ValueError otherwise."""
    return json.loads(line, parse_constant=_reject_constant)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(float(value)))


def _integer(query: dict, name: str, low: int, high: int, message: str) -> int:
    value = query[name]
    if not _is_int(value) or not low <= value <= high:
        raise QueryError(name, message)
    return int(value)


def _number(query: dict, name: str, low: float, high: float, message: str) -> float:
    value = query[name]
    if not _is_number(value) or not low <= float(value) <= high:
        raise QueryError(name, message)
    return float(value)


def _boolean(query: dict, name: str) -> bool:
    value = query[name]
    if not isinstance(value, bool):
        raise QueryError(name, "Must be a boolean")
    return value


def parse_player(text: Any) -> Optional[int]:
    """BLACK or WHITE from ``b``/``black``/``w``/``white`` (any case); None otherwise."""
    if not isinstance(text, str):
        return None
    return {"b": BLACK, "black": BLACK, "w": WHITE, "white": WHITE}.get(text.strip().lower())


def parse_location(text: Any, size: int, allow_pass: bool) -> Optional[int]:
    """Point of a GTP vertex (``D4``, ``pass``) or KataGo's ``(x,y)`` (x from the left, y from
    the top); None when it is not a point of this board."""
    if not isinstance(text, str):
        return None
    t = text.strip()
    point: Optional[int]
    if t.startswith("(") and t.endswith(")"):
        try:
            x, y = (int(v) for v in t[1:-1].split(","))
        except ValueError:
            return None
        point = y * size + x if 0 <= x < size and 0 <= y < size else None
    else:
        try:
            point = coords.from_gtp(t, size)
        except ValueError:
            return None
    if point == size * size and not allow_pass:
        return None
    return point


_PAIRS = 'Must be an array of pairs of the form: ["b" or "w", GTP board vertex]'


def _moves(query: dict, name: str, size: int, allow_pass: bool) -> list[tuple[int, int]]:
    items = query[name]
    if not isinstance(items, list):
        raise QueryError(name, _PAIRS)
    out = []
    for item in items:
        if not isinstance(item, list) or len(item) != 2 or not all(isinstance(x, str) for x in item):
            raise QueryError(name, _PAIRS)
        color = parse_player(item[0])
        if color is None:
            raise QueryError(name, f"Could not parse player: {item[0]}")
        point = parse_location(item[1], size, allow_pass)
        if point is None:
            raise QueryError(name, f"Could not parse board location: {item[1]}")
        out.append((color, point))
    return out


def _int_list(query: dict, name: str, message: str) -> list[int]:
    value = query[name]
    if not isinstance(value, list) or not all(_is_int(v) for v in value):
        raise QueryError(name, message)
    return [int(v) for v in value]


# -- rules ------------------------------------------------------------------------------------

# KataGo's rules (names and JSON objects) are read by engine.rules: kata_rules, rules_from_kata.


# -- the query --------------------------------------------------------------------------------

def _override_settings(query: dict, qid: str, req: dict, messages: list[dict]) -> None:
    settings = query["overrideSettings"]
    if not isinstance(settings, dict):
        raise QueryError("overrideSettings", "Must be an object")
    params = dataclasses.asdict(req["params"])
    ignored, unknown = [], []
    for key, value in settings.items():
        bad = f"Could not set settings: could not parse {key} value {json.dumps(value)}"
        if key == "reportAnalysisWinratesAs":
            if not isinstance(value, str) or value.upper() not in PERSPECTIVES:
                raise QueryError("overrideSettings", bad + " (BLACK, WHITE or SIDETOMOVE)")
            req["perspective"] = value.upper()
        elif key in ("maxVisits", "maxPlayouts"):
            if not _is_int(value) or not 1 <= value <= MAX_VISITS_LIMIT:
                raise QueryError("overrideSettings", bad)
            req["max_visits"] = int(value)
        elif key == "maxTime":
            if not _is_number(value) or value <= 0:
                raise QueryError("overrideSettings", bad)
            req["max_seconds"] = float(value)
        elif key == "analysisPVLen":
            if not _is_int(value) or not 1 <= value <= 1000:
                raise QueryError("overrideSettings", bad)
            req["pv_len"] = int(value)
        elif key in _PARAM_SETTINGS:
            if not _is_number(value) or value < 0 or (key == "cpuctExplorationBase" and value <= 0):
                raise QueryError("overrideSettings", bad)
            params[_PARAM_SETTINGS[key]] = float(value)
        elif key in _IGNORED_SETTINGS:
            ignored.append(key)
        else:
            unknown.append(key)
    req["params"] = SearchParams(**params)
    if unknown:
        messages.append(warning("Unknown config params: " + ",".join(unknown), "overrideSettings", qid))
    if ignored:
        messages.append(warning("Not supported by this engine, ignored: " + ",".join(ignored),
                                "overrideSettings", qid))


def _ignored_fields(query: dict, qid: str, messages: list[dict]) -> None:
    """Fields KataGo has that this engine checks and ignores."""
    for name in ("includeOwnershipStdev", "includeMovesOwnershipStdev", "includePVVisits",
                 "includeNoResultValue"):
        if name in query and _boolean(query, name):
            messages.append(warning(f"{name} is not supported by this engine: ignored", name, qid))
    if "rootPolicyTemperature" in query:
        _number(query, "rootPolicyTemperature", 0.01, 100.0, "Must be a number from 0.01 to 100.0")
        messages.append(warning("rootPolicyTemperature is not supported by this engine: ignored",
                                "rootPolicyTemperature", qid))


def parse_avoid(query: dict, size: int) -> Optional[dict[int, dict[int, int]]]:
    """``avoidMoves`` / ``allowMoves`` as KataGo reads them: ``{colour: {point: untilDepth}}``
    for :meth:`engine.core.Search.set_avoid`, or None when the query has neither.

    Each entry is ``{"player", "moves", "untilDepth"}``: avoidMoves keeps the player's listed
    moves out of the search for the first ``untilDepth`` moves (1: the root's choice only);
    allowMoves (one entry per player) keeps out every other move, pass included."""
    if "allowMoves" in query and "avoidMoves" in query:
        raise QueryError("allowMoves", "Cannot specify both allowMoves and avoidMoves")
    name = "allowMoves" if "allowMoves" in query else "avoidMoves" if "avoidMoves" in query else None
    if name is None:
        return None
    entries = query[name]
    shape = "Must be a list of dicts with subfields 'player', 'moves', 'untilDepth'"
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and {"player", "moves", "untilDepth"} <= set(e) for e in entries):
        raise QueryError(name, shape)
    area = size * size
    avoid: dict[int, dict[int, int]] = {}
    for entry in entries:
        player = entry["player"]
        if not isinstance(player, str) or player.upper() not in ("B", "W", "BLACK", "WHITE"):
            raise QueryError(name, "Could not parse player: " + json.dumps(player))
        color = BLACK if player.upper().startswith("B") else WHITE
        depth = entry["untilDepth"]
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= 1_000_000_000:
            raise QueryError(name, "untilDepth: Must be a positive integer")
        moves = entry["moves"]
        if not isinstance(moves, list):
            raise QueryError(name, "moves: Must be a list of board locations")
        points = []
        for text in moves:
            point = parse_location(text, size, allow_pass=True)
            if point is None:
                raise QueryError(name, "Could not parse board location: " + json.dumps(text))
            points.append(point)
        if name == "allowMoves":
            if color in avoid:
                raise QueryError(name, "Cannot specify allowMoves more than once for the same player")
            allowed = set(points)
            avoid[color] = {p: depth for p in range(area + 1) if p not in allowed}
        else:
            table = avoid.setdefault(color, {})
            for point in points:
                table[point] = depth
    return avoid


def parse_query(line: str, defaults: QueryDefaults, arrival: int = 0) -> ParsedQuery:
    """Reads one input line (see the module docstring).  Never raises for bad input."""
    out = ParsedQuery()
    try:
        query = decode_line(line)
    except (ValueError, RecursionError) as exc:
        out.messages.append(error(f"{exc} - could not parse input line as json request: {line}"))
        return out
    if not isinstance(query, dict):
        out.messages.append(error("Request line was valid json but was not an object, ignoring: "
                                  + json.dumps(query, separators=(",", ":"))))
        return out
    qid = query.get("id")
    if not isinstance(qid, str):
        out.messages.append(error('Request must have a string "id" field'))
        return out
    try:
        if isinstance(query.get("action"), str):
            _parse_action(query, qid)
            out.action = query
            return out
        out.requests = _parse_analysis(query, qid, defaults, arrival, out.messages)
    except QueryError as exc:
        out.messages.append(error(exc.message, exc.field, qid))
        out.requests = []
    return out


def _parse_action(query: dict, qid: str) -> None:
    action = query["action"]
    if action not in ACTIONS:
        raise QueryError("action", "'action' field must be 'query_version' or 'query_models' or "
                                   "'clear_cache' or 'terminate' or 'terminate_all'")
    if action == "terminate" and not isinstance(query.get("terminateId"), str):
        raise QueryError("terminateId",
                         'Requests for a terminate action must have a string "terminateId" field')
    if action in ("terminate", "terminate_all") and "turnNumbers" in query:
        _int_list(query, "turnNumbers", "If provided, must be an array of integers indicating "
                                        "turns to terminate")


def _parse_analysis(query: dict, qid: str, defaults: QueryDefaults, arrival: int,
                    messages: list[dict]) -> list[TurnRequest]:
    size_error = f"Must provide an integer from {MIN_SIZE} to {MAX_SIZE}"
    for name in ("boardXSize", "boardYSize"):
        if name not in query:
            raise QueryError(name, size_error)
        _integer(query, name, MIN_SIZE, MAX_SIZE, size_error)
    size = int(query["boardXSize"])
    if query["boardYSize"] != size:
        raise QueryError("boardYSize", "Rectangular boards are not supported by this engine: "
                                       "boardYSize must equal boardXSize")
    stones = _moves(query, "initialStones", size, False) if "initialStones" in query else []
    if "moves" not in query:
        raise QueryError("moves", "Must specify an array of [player,location] pairs")
    moves = _moves(query, "moves", size, True)
    initial_player = None
    if "initialPlayer" in query:
        initial_player = parse_player(query["initialPlayer"])
        if initial_player is None:
            raise QueryError("initialPlayer", 'Must be "b" or "w"')
    turns = [len(moves)]
    if "analyzeTurns" in query:
        turns = _int_list(query, "analyzeTurns", "Must specify an array of integers indicating turns to analyze")
        for t in turns:
            if not 0 <= t <= len(moves):
                raise QueryError("analyzeTurns", f"Invalid turn number: {t}")
    priorities: dict[int, int] = {}
    if "priorities" in query:
        values = _int_list(query, "priorities", "Must specify an array of integers indicating priorities")
        if "analyzeTurns" not in query:
            raise QueryError("priorities", "Can only specify when also specifying analyzeTurns")
        if len(values) != len(turns):
            raise QueryError("priorities", "Must be of matching length to analyzeTurns")
        for t, p in zip(turns, values):
            if abs(p) > MAX_PRIORITY:
                raise QueryError("priorities", f"Invalid priority: {p}")
            priorities[t] = p
    rules_text = ('Must specify rules string, such as "chinese" or "tromp-taylor", or a JSON '
                  'object with detailed rules parameters.')
    if "rules" not in query or not isinstance(query["rules"], (str, dict)):
        raise QueryError("rules", rules_text)
    try:
        kata = kata_rules(query["rules"])
    except ValueError:
        shown = query["rules"] if isinstance(query["rules"], str) else json.dumps(query["rules"])
        raise QueryError("rules", f"Could not parse rules: {shown}") from None
    komi = kata.komi
    if "komi" in query:
        msg = "Must be a integer or half-integer from -400.0 to 400.0"
        komi = _number(query, "komi", -400.0, 400.0, msg)
        if komi * 2 != int(komi * 2):
            raise QueryError("komi", msg)
    if "whiteHandicapBonus" in query:
        value = query["whiteHandicapBonus"]
        if not isinstance(value, str):
            raise QueryError("whiteHandicapBonus", "Must be a string")
        if value.upper() not in KATA_CHOICES["whiteHandicapBonus"]:
            raise QueryError("whiteHandicapBonus", f"Could not parse white handicap bonus rule: {value}")
        kata = dataclasses.replace(kata, white_handicap_bonus=value.upper())
    req: dict[str, Any] = {"params": defaults.search, "perspective": defaults.perspective,
                           "max_visits": defaults.max_visits, "max_seconds": defaults.max_seconds,
                           "pv_len": defaults.pv_len}
    if "overrideSettings" in query:
        _override_settings(query, qid, req, messages)
    if "maxVisits" in query:
        req["max_visits"] = _integer(query, "maxVisits", 1, MAX_VISITS_LIMIT, "Must be an integer from 1 to 2^50")
    if "analysisPVLen" in query:
        req["pv_len"] = _integer(query, "analysisPVLen", 1, 1000, "Must be an integer from 1 to 1000")
    if "rootFpuReductionMax" in query:
        value = _number(query, "rootFpuReductionMax", 0.0, 2.0, "Must be a number from 0.0 to 2.0")
        req["params"] = dataclasses.replace(req["params"], fpu_reduction_root=value)
    flags = {}
    for name in ("includeOwnership", "includeMovesOwnership", "includePolicy"):
        flags[name] = _boolean(query, name) if name in query else False
    report_every = first_report = None
    seconds = "Must be number of seconds from 0.001 to 1000000.0"
    if "reportDuringSearchEvery" in query:
        report_every = first_report = _number(query, "reportDuringSearchEvery", 0.001, 1e6, seconds)
    if "firstReportDuringSearchAfter" in query:
        first_report = _number(query, "firstReportDuringSearchAfter", 0.001, 1e6, seconds)
    priority = 0
    if "priority" in query:
        if "priorities" in query:
            raise QueryError("priority", "Cannot specify both priority and priorities")
        priority = _integer(query, "priority", -MAX_PRIORITY, MAX_PRIORITY,
                            "Must be a number between -2^62 and 2^62")
    _ignored_fields(query, qid, messages)
    avoid = parse_avoid(query, size)
    if req["max_visits"] > defaults.visits_cap:
        messages.append(warning(f"maxVisits {req['max_visits']} is above this engine's limit: "
                                f"clamped to {defaults.visits_cap}", "maxVisits", qid))
        req["max_visits"] = defaults.visits_cap

    handicap = (not any(c == WHITE for c, _ in stones)) and len(stones) > 1
    rules, notes = rules_from_kata(kata, komi, handicap)
    if notes:
        shown = query["rules"] if isinstance(query["rules"], str) else json.dumps(query["rules"])
        messages.append(warning(f"Rules {shown} are not fully supported by this engine: "
                                + "; ".join(notes), "rules", qid))
    for key in query:
        if key not in EXPECTED_FIELDS:
            messages.append(warning("Unexpected or unused field, do you have a typo?", key, qid))

    game = Game(size, rules)
    for color, point in stones:
        if not game.is_legal(point, color):
            raise QueryError("initialStones", f"Illegal initial stone: {coords.to_gtp(point, size)}")
        game.play(point, color)
    if initial_player is None:
        initial_player = moves[0][0] if moves else (WHITE if handicap else BLACK)
    game.set_to_move(initial_player)
    wanted = set(turns)
    requests = []
    for turn in range(len(moves) + 1):
        if turn in wanted:
            requests.append(TurnRequest(
                id=qid, turn=turn, game=game.copy(), priority=priorities.get(turn, priority),
                max_visits=req["max_visits"], perspective=req["perspective"], pv_len=req["pv_len"],
                params=req["params"], max_seconds=req["max_seconds"],
                include_ownership=flags["includeOwnership"],
                include_moves_ownership=flags["includeMovesOwnership"],
                include_policy=flags["includePolicy"], report_every=report_every,
                first_report_after=first_report, arrival=arrival + len(requests), avoid=avoid))
        if turn == len(moves):
            break
        color, point = moves[turn]
        try:
            game.play(point, color)
        except IllegalMoveError:
            raise QueryError("moves", f"Illegal move {turn}: {coords.to_gtp(point, size)}") from None
    return requests

