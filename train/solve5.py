"""Checks a network against the solved 5x5 game: ``python -m train.solve5 WEIGHTS``.

van der Werf et al. (2003): under area scoring with positional superko, Black opening at the
centre C3 owns the whole board, so the game's value is B+25.  A net trained at komi 24.5 that
plays the game perfectly therefore

1. opens C3;
2. playing both sides without noise, ends B+0.5 (Black owns all 25 points);
3. at komi 25.5, the same self-play ends in a White win;
4. as Black at komi 24.5, never loses to a random player.

Prints one line per check and a JSON line last; exit status 0 when every check passes.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from engine import coords
from engine.core import BLACK, WHITE, Game, Rules, SearchParams


def _player(weights: str, visits: int, seed: int):
    from engine.evaluator import TorchEvaluator
    from engine.player import Player
    from engine.weights import load_any

    model, _meta = load_any(weights)
    evaluator = TorchEvaluator(model, symmetries="random", seed=seed)
    params = SearchParams(noise_epsilon=0.0, temperature=0.0, resign_threshold=-1.0)
    return Player(evaluator, params, batch=16, seed=seed)


def self_play(player, komi: float, visits: int, rules: str = "tromp-taylor") -> Game:
    """One game of the net against itself, no noise, to two passes (or 3*N*N moves)."""
    game = Game(5, Rules.preset(rules, komi))
    player.clear()
    while not game.is_over and len(game.moves) < 75:
        result = player.search(game, visits=visits)
        game.play(result.move)
    return game


def versus_random(player, komi: float, visits: int, games: int, seed: int,
                  rules: str = "tromp-taylor") -> dict:
    """The net as Black against uniformly random legal moves (pass only when nothing else)."""
    rng = np.random.default_rng(seed)
    wins = 0
    losses = []
    for g in range(games):
        game = Game(5, Rules.preset(rules, komi))
        player.clear()
        while not game.is_over and len(game.moves) < 75:
            if game.to_move == BLACK:
                move = player.search(game, visits=visits).move
            else:
                legal = [p for p in game.legal_moves() if p != game.pass_point]
                move = int(rng.choice(legal)) if legal else game.pass_point
            game.play(move)
        if game.score() > 0:
            wins += 1
        else:
            losses.append(game.moves)
    return {"games": games, "wins": wins, "losses": len(losses)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train.solve5", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("weights", help="a 5x5 network (.pt)")
    ap.add_argument("--visits", type=int, default=400)
    ap.add_argument("--random-games", type=int, default=100)
    ap.add_argument("--random-visits", type=int, default=None, help="visits against the random player (default --visits)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    t0 = time.time()
    player = _player(args.weights, args.visits, args.seed)
    out: dict = {"weights": args.weights, "visits": args.visits}

    opening = player.search(Game(5, Rules.preset("tromp-taylor", 24.5)), visits=args.visits)
    out["opening"] = coords.to_gtp(opening.move, 5)
    print(f"opening at komi 24.5: {out['opening']} (winrate {opening.winrate:.3f})")

    for komi in (24.5, 25.5):
        game = self_play(player, komi, args.visits)
        moves = " ".join(coords.to_gtp(p, 5) for _c, p in game.moves)
        area = game.area()
        out[f"selfplay_{komi}"] = {"result": game.result_string(), "moves": moves,
                                   "black_points": int((area == BLACK).sum())}
        print(f"self-play at komi {komi}: {game.result_string()} "
              f"(Black area {int((area == BLACK).sum())}/25): {moves}")

    vr = versus_random(player, 24.5, args.random_visits or args.visits, args.random_games, args.seed)
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
