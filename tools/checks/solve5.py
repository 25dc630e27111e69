"""Checks a network against the solved 5x5 game: ``python -m tools.checks.solve5 WEIGHTS``.

van der Werf et al. (2003): under area scoring with positional superko, Black opening at the
centre C3 owns the whole board, so the game's value is B+25.  A net trained at komi 24.5 that
plays the game perfectly therefore

1. opens C3;
2. playing both sides without noise, ends B+0.5 (Black owns all 25 points);
3. at komi 25.5, the same self-play ends in a White win;
4. as Black at komi 24.5, never loses to a random player.

Every game is played by the project's game runner (:class:`train.games.pool.GamePool`): the net as a
batched agent, the random player as a turn agent.  Prints one line per check and a JSON line
last; exit status 0 when every check passes.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from engine import coords
from engine.core import BLACK, Game, Rules, SearchParams
from engine.nets.evaluator import TorchEvaluator
from engine.nets.weights import load_any
from train.games.pool import Agent, FinishedGame, GamePool, GameSpec, MoveLimit, PlaySettings

MOVE_CAP = 75                   # 3 * N * N


class RandomAgent:
    """A turn agent playing uniformly random legal moves (pass only when nothing else)."""

    model_id = "random"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.game: Game | None = None
        self.move: int | None = None

    def new_game(self, size: int, rules: Rules) -> None:
        self.game = Game(size, rules)

    def play(self, color: int, point: int) -> None:
        assert self.game is not None
        self.game.play(point, color)

    def start_genmove(self, color: int, seconds: float | None) -> None:
        assert self.game is not None
        legal = [p for p in self.game.legal_moves() if p != self.game.pass_point]
        self.move = int(self.rng.choice(legal)) if legal else self.game.pass_point

    def poll_genmove(self) -> int | None:
        move, self.move = self.move, None
        if move is not None:
            assert self.game is not None
            self.game.play(move)
        return move


def play(specs: list[GameSpec], slots: int = 16) -> list[FinishedGame]:
    """Plays ``specs`` in one pool; returns the finished games in the order of ``specs``."""
    todo = iter(enumerate(specs))

    def next_game(slot):
        item = next(todo, None)
        if item is None:
            return None
        specs[item[0]].tag = item[0]
        return specs[item[0]]

    done = list(GamePool(max(1, min(slots, len(specs))), next_game, batch=64).run())
    return sorted(done, key=lambda g: g.spec.tag)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.checks.solve5", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("weights", help="a 5x5 network (.pt)")
    ap.add_argument("--visits", type=int, default=400)
    ap.add_argument("--random-games", type=int, default=100)
    ap.add_argument("--random-visits", type=int, default=None, help="visits against the random player (default --visits)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    t0 = time.time()
    model, _meta = load_any(args.weights)
    net = Agent("net", TorchEvaluator(model, symmetries="random", seed=args.seed), SearchParams())
    settings = PlaySettings(visits=args.visits, max_moves=MOVE_CAP, record_policy=False)
    out: dict = {"weights": args.weights, "visits": args.visits}

    def rules(komi: float) -> Rules:
        return Rules.preset("tromp-taylor", komi)

    first = PlaySettings(visits=args.visits, max_moves=1, record_policy=False)
    opening, selfplay_245, selfplay_255 = play([GameSpec(5, rules(24.5), net, net, first, seed=args.seed),
                                                GameSpec(5, rules(24.5), net, net, settings, seed=args.seed),
                                                GameSpec(5, rules(25.5), net, net, settings, seed=args.seed)])
    move = opening.moves[0]
    out["opening"] = coords.to_gtp(move.point, 5)
    print(f"opening at komi 24.5: {out['opening']} (winrate {(move.value + 1) / 2:.3f})")

    for komi, fg in ((24.5, selfplay_245), (25.5, selfplay_255)):
        rec = fg.record()
        moves = " ".join(coords.to_gtp(m.point, 5) for m in fg.moves)
        black_points = int((fg.game.area() == BLACK).sum())
        out[f"selfplay_{komi}"] = {"result": rec.result_string(), "moves": moves, "black_points": black_points}
        print(f"self-play at komi {komi}: {rec.result_string()} (Black area {black_points}/25): {moves}")

    limit = MoveLimit(visits=args.random_visits or args.visits)
    games = play([GameSpec(5, rules(24.5), net, RandomAgent(args.seed * 1_000_003 + g), settings, seed=args.seed + g,
                           allow_resign=False, black_limit=limit) for g in range(args.random_games)])
    wins = sum(1 for fg in games if fg.winner == BLACK)
    vr = {"games": len(games), "wins": wins, "losses": len(games) - wins}
    out["vs_random"] = vr
    print(f"as Black vs random at komi 24.5: {vr['wins']}/{vr['games']} won")

    checks = {
        "opens C3": out["opening"] == "C3",
        "self-play komi 24.5 ends B+0.5": out["selfplay_24.5"]["result"] == "B+0.5",
        "self-play komi 25.5 is a White win": out["selfplay_25.5"]["result"].startswith("W+"),
        "never loses to random": vr["losses"] == 0,
    }
    out["checks"] = checks
    out["seconds"] = round(time.time() - t0, 1)
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    print(json.dumps(out))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
