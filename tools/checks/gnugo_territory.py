"""GNU Go's territory count (Japanese counting) of the 352 Pachi game ends, as test data.

Replays every game of tests/data/pachi_game_ends.jsonl into ``gnugo --mode gtp --level 0``
(without ``--chinese-rules``: GNU Go then counts territory plus prisoners), with komi 6.5
(Japanese rules' default), and asks ``final_score``.  Writes one JSON line per game, in the
same order, to tests/data/pachi_game_ends_territory.jsonl: ``{"komi": 6.5, "referee": "W+3.5"}``.

    python -m tools.checks.gnugo_territory [--gnugo /usr/games/gnugo] [--komi 6.5] [--out PATH]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from tools import REPO_ROOT
from train.games.gtp_client import GTPClient

DATA = REPO_ROOT / "tests" / "data"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tools.checks.gnugo_territory", description=__doc__.splitlines()[0])
    ap.add_argument("--gnugo", default="/usr/games/gnugo")
    ap.add_argument("--komi", type=float, default=6.5)
    ap.add_argument("--out", type=Path, default=DATA / "pachi_game_ends_territory.jsonl")
    args = ap.parse_args(argv)
    gnugo = GTPClient([args.gnugo, "--mode", "gtp", "--level", "0"], label="gnugo")
    rows = []
    for line in open(DATA / "pachi_game_ends.jsonl"):
        game = json.loads(line)
        gnugo.send("boardsize 9")
        gnugo.send("clear_board")
        gnugo.send(f"komi {args.komi}")
        for token in game["moves"].split():
            gnugo.send(f"play {token[0]} {token[1:]}")
        rows.append({"komi": args.komi, "referee": gnugo.send("final_score")})
    gnugo.close()
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.rename(args.out)
    print(f"{len(rows)} results written to {args.out}")


if __name__ == "__main__":
    main()
