"""Drive KataGo as an oracle for its networks' outputs, and the positions the identity test uses.

Used by tests/nets/test_kata_identity.py (and runnable: ``python tests/helpers/kata_oracle.py --model NET``)
to prove that engine.nets.katanet + the C core's ``kata7`` features evaluate KataGo model files as
KataGo does.  Two oracles, both built from KataGo's public source outside this repository:

* ``katago gtp`` (``$KATAGO``, or ``katago`` on PATH): positions are set with ``boardsize``,
  ``komi``, ``kata-set-rule`` (ko, suicide), ``clear_board`` and ``play``;
  ``kata-raw-nn b|w 0`` prints the raw network outputs for symmetry 0 from White's view
  (``whiteWin``, ``whiteLoss``, ``noResult``, ``whiteLead``, the policy over legal moves with
  ``NAN`` on illegal points, ``policyPass``, ``whiteOwnership``).  Rules: the position's
  preset (area scoring, or Japanese territory scoring with the seki tax), no button, no
  handicap bonus, ``friendlyPassOk`` false (the config written here).
* ``rawnn`` (``$KATAGO_RAWNN``): a small driver linked against KataGo's own board, history,
  feature, Eigen network and NNEvaluator code that answers ``eval`` with the same numbers
  ``kata-raw-nn`` prints (same ``NNEvaluator::evaluate`` call, symmetry 0, default input
  parameters, history cleared when another colour than the natural one is to move), as one
  JSON line.  It needs only KataGo's core, game, neuralnet and dataio objects, so it can be
  built when the full engine cannot.

KataGo's printed precision: win/loss/no-result and the policy to 6 decimals, the lead to 3.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

COLUMNS = "ABCDEFGHJKLMNOPQRST"
BLACK, WHITE = 1, 2


def rawnn_path() -> Path | None:
    """The rawnn driver: $KATAGO_RAWNN, else /work/katago/oracle/rawnn when present."""
    for p in (os.environ.get("KATAGO_RAWNN"), "/work/katago/oracle/rawnn"):
        if p and Path(p).is_file() and os.access(p, os.X_OK):
            return Path(p)
    return None


def katago_path() -> Path | None:
    """A KataGo engine binary: $KATAGO, the CPU build under /work/katago, or katago on PATH."""
    for p in (os.environ.get("KATAGO"), "/work/katago/cpp/build/katago", shutil.which("katago")):
        if p and Path(p).is_file() and os.access(p, os.X_OK):
            return Path(p)
    return None


def real_net_path() -> Path | None:
    """KaTrain's b10c384 net: $KATAGO_NET, else /work/kata/b10c384h6nbttflrs.bin.gz."""
    for p in (os.environ.get("KATAGO_NET"), "/work/kata/b10c384h6nbttflrs.bin.gz"):
        if p and Path(p).is_file():
            return Path(p)
    return None


@dataclass
class Position:
    """A position to evaluate: moves from the empty board (colour, compact point; pass = N*N),
    then optionally a side to move other than the natural one."""
    name: str
    size: int
    komi: float
    rules: str                 # a preset: "chinese", "tromp-taylor" or "japanese" (territory, seki tax)
    moves: list = field(default_factory=list)
    to_move: int | None = None

    def our_rules(self):
        from engine.rules import Rules
        return Rules.preset(self.rules, komi=self.komi)

    def natural_to_move(self) -> int:
        return BLACK if not self.moves else 3 - self.moves[-1][0]


@dataclass
class RawOutput:
    """KataGo's printed outputs, White's view; policy [N*N] (NaN = illegal), ownership [N*N]."""
    win: float
    loss: float
    no_result: float
    lead: float
    policy: np.ndarray
    policy_pass: float
    ownership: np.ndarray
    # short-term win/loss and score errors (kata-raw-nn prints them to 3 decimals; NaN when
    # the oracle or the net does not report them)
    wl_error: float = float("nan")
    score_error: float = float("nan")


class RawNN:
    """The rawnn driver (see the module docstring)."""

    def __init__(self, binary: Path, model: Path) -> None:
        self.proc = subprocess.Popen([str(binary), str(model)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def _ask(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if not answer:
            raise RuntimeError(f"rawnn died on {line!r}")
        return answer

    def evaluate(self, pos: Position) -> RawOutput:
        r = pos.our_rules()
        self._ask(f"new {pos.size} {pos.komi} {r.ko} {int(r.suicide)} {r.scoring} {r.tax}")
        n = pos.size
        for color, point in pos.moves:
            c = "b" if color == BLACK else "w"
            where = "pass" if point == n * n else f"{point % n} {point // n}"
            if self._ask(f"play {c} {where}") != "ok":
                raise ValueError(f"{pos.name}: KataGo rejects {c} {where}")
        to_move = pos.to_move or pos.natural_to_move()
        self._ask(f"tomove {'b' if to_move == BLACK else 'w'}")
        d = json.loads(self._ask("eval"))
        pol = np.array(d["policy"], np.float64)
        pol[pol < 0] = np.nan
        return RawOutput(d["win"], d["loss"], d["noresult"], d["lead"], pol, d["pass"],
                         np.array(d["own"], np.float64))

    def close(self) -> None:
        try:
            self._ask("quit")
        except (RuntimeError, BrokenPipeError, OSError):
            pass
        self.proc.kill()
        self.proc.wait()


GTP_CONFIG = """logAllGTPCommunication = false
logSearchInfo = false
logToStderr = false
koRule = SIMPLE
scoringRule = AREA
taxRule = NONE
multiStoneSuicideLegal = false
hasButton = false
whiteHandicapBonus = 0
numSearchThreads = 1
nnRandomize = false
maxVisits = 1
# kata-raw-nn mixes the optimistic policy head in as the search would; the oracle wants the
# plain policy head, which is what the engine evaluates
policyOptimism = 0.0
rootPolicyOptimism = 0.0
"""


class KataGTP:
    """``katago gtp`` with ``kata-raw-nn`` (see the module docstring)."""

    def __init__(self, binary: Path, model: Path) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        cfg = Path(self.tmp.name) / "gtp.cfg"
        cfg.write_text(GTP_CONFIG)
        self.proc = subprocess.Popen([str(binary), "gtp", "-config", str(cfg), "-model", str(model)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, cwd=self.tmp.name)

    def _ask(self, command: str) -> str:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"katago died on {command!r}")
            if line.strip() == "" and lines:
                break
            if line.strip():
                lines.append(line.rstrip("\n"))
        head = lines[0]
        if head.startswith("?"):
            raise ValueError(f"katago: {command}: {head}")
        lines[0] = head[1:].strip()
        return "\n".join(lines).strip()

    def evaluate(self, pos: Position) -> RawOutput:
        n = pos.size
        self._ask(f"boardsize {n}")
        self._ask(f"komi {pos.komi}")
        r = pos.our_rules()
        self._ask(f"kata-set-rule ko {r.ko.upper()}")
        self._ask(f"kata-set-rule suicide {'true' if r.suicide else 'false'}")
        self._ask(f"kata-set-rule scoring {r.scoring.upper()}")
        self._ask(f"kata-set-rule tax {r.tax.upper()}")
        self._ask("clear_board")
        for color, point in pos.moves:
            vertex = "pass" if point == n * n else f"{COLUMNS[point % n]}{n - point // n}"
            self._ask(f"play {'b' if color == BLACK else 'w'} {vertex}")
        to_move = pos.to_move or pos.natural_to_move()
        text = self._ask(f"kata-raw-nn {'b' if to_move == BLACK else 'w'} 0")
        rows = text.splitlines()
        vals = {}
        i = 0
        while i < len(rows):
            parts = rows[i].split()
            if parts and parts[0] in ("policy", "whiteOwnership"):
                grid = [float("nan") if t == "NAN" else float(t)
                        for r in rows[i + 1:i + 1 + n] for t in r.split()]
                vals[parts[0]] = np.array(grid, np.float64)
                i += n + 1
                continue
            if len(parts) == 2:
                vals[parts[0]] = float(parts[1])
            i += 1
        return RawOutput(vals["whiteWin"], vals["whiteLoss"], vals["noResult"], vals["whiteLead"],
                         vals["policy"], vals["policyPass"], vals["whiteOwnership"],
                         vals.get("shorttermWinlossError", float("nan")),
                         vals.get("shorttermScoreError", float("nan")))

    def close(self) -> None:
        try:
            self._ask("quit")
        except (RuntimeError, ValueError, BrokenPipeError, OSError):
            pass
        self.proc.kill()
        self.proc.wait()
        self.tmp.cleanup()


def open_oracle(model: Path):
    """The best oracle available for ``model`` (KataGo's GTP engine, else rawnn), or None."""
    if katago_path() is not None:
        return KataGTP(katago_path(), model)
    if rawnn_path() is not None:
        return RawNN(rawnn_path(), model)
    return None


# ----------------------------------------------------------------------------------------------
# Our side


def ours(pos: Position, net) -> RawOutput:
    """The same outputs from engine.nets.katanet and the C core's kata7 features, White's view,
    with the policy renormalised over KataGo's legal moves (the oracle tells which)."""
    import torch
    from engine.core import Game, Rules
    game = Game(pos.size, Rules.preset(pos.rules, komi=pos.komi))
    for color, point in pos.moves:
        game.play(point, color)
    to_move = pos.to_move or pos.natural_to_move()
    if to_move != game.to_move:
        game.set_to_move(to_move)
    x = torch.from_numpy(game.features(net.feature_set)[None])
    with torch.inference_mode():
        post = net.postprocess_raw(net.forward_raw(x))
    logits = post["policy_logits"][0].double().numpy()
    win, loss = float(post["win"][0]), float(post["loss"][0])
    lead = float(post["lead"][0])
    own = post["ownership"][0].double().numpy()
    if to_move == BLACK:
        win, loss, lead, own = loss, win, -lead, -own
    nan = torch.tensor([float("nan")])
    return RawOutput(win, loss, float(post["no_result"][0]), lead, logits[:-1], float(logits[-1]), own,
                     float(post.get("shortterm_value_error", nan)[0]),
                     float(post.get("shortterm_score_error", nan)[0]))


def compare(pos: Position, theirs: RawOutput, mine: RawOutput) -> dict[str, float]:
    """Largest absolute differences: value (win, loss, no-result), lead, policy (probabilities
    over KataGo's legal moves and pass), ownership."""
    legal = ~np.isnan(theirs.policy)
    logits = np.concatenate([mine.policy[legal], [mine.policy_pass]])
    p = np.exp(logits - logits.max())
    p /= p.sum()
    kp = np.concatenate([theirs.policy[legal], [theirs.policy_pass]])
    return {
        "value": max(abs(theirs.win - mine.win), abs(theirs.loss - mine.loss),
                     abs(theirs.no_result - mine.no_result)),
        "lead": abs(theirs.lead - mine.lead),
        "policy": float(np.abs(p - kp).max()),
        "ownership": float(np.abs(theirs.ownership - mine.ownership).max()),
    }


# ----------------------------------------------------------------------------------------------
# Positions


def _random_moves(size: int, rules: str, count: int, seed: int) -> list:
    """A deterministic game of ``count`` random legal moves, mostly next to stones already on
    the board (fights: ataris, captures, ladders), never a single-stone suicide (KataGo
    forbids those even where multi-stone suicide is legal)."""
    from engine.core import Game, Rules
    rng = np.random.default_rng(seed)
    game = Game(size, Rules.preset(rules, komi=7))
    moves = []
    for _ in range(count):
        color = game.to_move
        legal = [p for p in game.legal_moves(color) if p < size * size and not _lone_suicide(game, p, color)]
        if not legal:
            break
        stones = game.stones().ravel()
        near = [p for p in legal if any(stones[q] for q in _nbrs(size, p))]
        pick = near if near and rng.random() < 0.75 else legal
        p = int(pick[rng.integers(len(pick))])
        game.play(p, color)
        moves.append((color, p))
    return moves


def _nbrs(size: int, p: int) -> list[int]:
    r, c = divmod(p, size)
    return [q for q, ok in ((p - size, r > 0), (p + size, r < size - 1), (p - 1, c > 0), (p + 1, c < size - 1)) if ok]


def _lone_suicide(game, p: int, color: int) -> bool:
    size = game.size
    stones = game.stones().ravel()
    for q in _nbrs(size, p):
        if stones[q] == 0 or stones[q] == color or game.liberties(q) == 1:
            return False
    return True


def _gtp(size: int, text: str) -> list:
    """'B D4 W pass ...' -> moves."""
    tok = text.split()
    out = []
    for c, v in zip(tok[::2], tok[1::2]):
        color = BLACK if c.upper() == "B" else WHITE
        point = size * size if v.lower() == "pass" else (size - int(v[1:])) * size + COLUMNS.index(v[0].upper())
        out.append((color, point))
    return out


def positions() -> list[Position]:
    """The identity test's positions: 9x9, 13x13 and 19x19; both rule sets; komi 7, 7.5, 6.5, 0,
    -3 and 5.5; both colours to move; openings, random fights (captures, ataris, ladders),
    ko, superko, passes, pass-alive groups, a working and a broken ladder, and a position
    evaluated for the colour that did not follow the last move."""
    out: list[Position] = [
        Position("empty 9x9", 9, 7.0, "chinese"),
        Position("empty 19x19 tromp-taylor", 19, 7.5, "tromp-taylor"),
        Position("empty 13x13 white to move", 13, 6.5, "chinese", to_move=WHITE),
        Position("9x9 opening", 9, 7.0, "chinese", _gtp(9, "B E5 W C3 B G4 W D7")),
        Position("ko 5-point shape", 9, 7.0, "chinese",
                 _gtp(9, "B B8 W D9 B C9 W E8 B C7 W D7 B pass W C8 B D8")),
        Position("ko positional", 9, 7.0, "tromp-taylor",
                 _gtp(9, "B B8 W D9 B C9 W E8 B C7 W D7 B pass W C8 B D8 W pass B pass")),
        Position("working ladder 9x9", 9, 7.0, "chinese",
                 _gtp(9, "B E7 W E6 B D6 W pass B F5 W pass")),
        Position("broken ladder 9x9", 9, 7.0, "chinese",
                 _gtp(9, "B E7 W E6 B D6 W H8 B F5 W B2")),
        Position("pass-alive white group", 9, 5.5, "chinese",
                 _gtp(9, "B C5 W C8 B pass W D8 B pass W E8 B pass W F8 B pass W G8 B pass W C7 B pass "
                         "W E7 B pass W G7 B pass W C6 B pass W D6 B pass W E6 B pass W F6 B pass W G6")),
        Position("after a pass", 9, 7.0, "chinese", _gtp(9, "B E5 W pass")),
        Position("after two passes", 9, 0.0, "tromp-taylor", _gtp(9, "B E5 W D5 B pass W pass")),
        Position("other colour to move", 9, 7.0, "chinese", _gtp(9, "B E5 W D4"), to_move=WHITE),
        Position("negative komi", 13, -3.0, "chinese", _gtp(13, "B D4 W K10 B K4 W D10")),
        Position("empty 19x19 japanese", 19, 6.5, "japanese"),
        Position("19x19 japanese D4 Q16", 19, 6.5, "japanese", _gtp(19, "B D4 W Q16")),
        Position("9x9 japanese opening", 9, 6.5, "japanese", _gtp(9, "B E5 W C3 B G4 W D7")),
        Position("9x9 japanese after a pass", 9, 6.5, "japanese", _gtp(9, "B E5 W pass")),
        Position("ko 5-point shape japanese", 9, 6.5, "japanese",
                 _gtp(9, "B B8 W D9 B C9 W E8 B C7 W D7 B pass W C8 B D8")),
    ]
    specs = [
        (9, "chinese", 7.0, 30), (9, "tromp-taylor", 7.5, 45), (9, "chinese", 6.5, 60),
        (9, "tromp-taylor", 0.0, 70), (9, "chinese", 7.0, 80),
        (13, "chinese", 7.5, 60), (13, "tromp-taylor", 6.5, 100), (13, "chinese", 5.5, 130),
        (19, "chinese", 7.5, 80), (19, "tromp-taylor", 7.5, 150), (19, "chinese", 6.5, 220),
        (19, "tromp-taylor", 0.0, 260), (19, "chinese", 7.0, 120),
        (9, "japanese", 6.5, 50), (19, "japanese", 6.5, 140), (13, "japanese", 6.5, 75),
    ]
    for i, (size, rules, komi, count) in enumerate(specs):
        moves = _random_moves(size, rules, count, seed=1000 + i)
        out.append(Position(f"random {size}x{size} {rules} komi {komi} {len(moves)} moves",
                            size, komi, rules, moves))
        if i % 3 == 0:   # and the same position for the other colour
            out.append(Position(f"random {size}x{size} {rules} {len(moves)} moves, other colour",
                                size, komi, rules, moves, to_move=moves[-1][0] if moves else WHITE))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="compare our KataGo-net evaluation with KataGo's")
    parser.add_argument("--model", type=Path, default=real_net_path())
    parser.add_argument("--oracle", choices=("auto", "gtp", "rawnn"), default="auto")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from engine.nets import kataweights
    net, _ = kataweights.load(args.model)
    if args.oracle == "gtp":
        oracle = KataGTP(katago_path(), args.model)
    elif args.oracle == "rawnn":
        oracle = RawNN(rawnn_path(), args.model)
    else:
        oracle = open_oracle(args.model)
    worst = {"value": 0.0, "lead": 0.0, "policy": 0.0, "ownership": 0.0}
    try:
        for pos in positions():
            d = compare(pos, oracle.evaluate(pos), ours(pos, net))
            worst = {k: max(worst[k], d[k]) for k in worst}
            print(f"{pos.name:60s} " + " ".join(f"{k} {v:.2e}" for k, v in d.items()), flush=True)
    finally:
        oracle.close()
    print("worst: " + " ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
