"""KataGo nets against KataGo: ``python -m tools.bench.katago speed|strength``.

``speed``: our engine's search visits/s with a KataGo net (``--threads`` search threads, torch
on one core each, fp32) against KataGo's CPU (Eigen) build on the same net and position, in
alternating rounds so both see the same machine load.  KataGo is measured either as its search
(``--katago BIN``: ``genmove`` with ``maxVisits`` and the same number of search threads, time
from KataGo's own log-free GTP answer) or, when only KataGo's evaluator is built
(``--rawnn BIN``, see tests/helpers/kata_oracle.py), as its network evaluations/s with that many
concurrent evaluations: one evaluation per visit, so an upper bound on its visits/s.

``strength``: this net at ``--visits`` against ``gnugo --level 10`` (9x9, komi 7, Chinese) via
``python -m train.match``; prints the score.

Both print a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import torch

from engine import coords
from engine.nets import weights
from engine.core import Game, Rules, color_name, parse_color
from engine.nets.evaluator import TorchEvaluator
from engine.play.player import Player
from train.games.gtp_client import GTPClient

# Opening moves (GTP) giving a middle-game-like position to search from, per size.
OPENINGS = {
    9: "B E5 W C4 B G4 W D6 B F6 W E3",
    13: "B D4 W K10 B K4 W D10 B G7 W C7",
    19: "B Q16 W D4 B Q4 W D16 B C14 W F17 B R10 W K16",
}


def _moves(size: int, text: str) -> list[tuple[int, int]]:
    """(colour, point) of an opening written ``B E5 W C4 ...``."""
    tok = text.split()
    return [(parse_color(c), coords.from_gtp(v, size)) for c, v in zip(tok[::2], tok[1::2])]


class OurEngine:
    def __init__(self, net: Path, threads: int, batch: int) -> None:
        torch.set_num_threads(1)
        model, _ = weights.load_any(net)
        self.evaluator = TorchEvaluator(model, dtype="fp32", symmetries="random", cache_size=0)
        self.player = Player(self.evaluator, batch=batch, threads=threads)

    def visits_per_second(self, size: int, visits: int) -> float:
        game = Game(size, Rules.default(komi=7.5))
        game.play_many(_moves(size, OPENINGS[size]))
        self.player.clear()
        res = self.player.search(game, visits=visits)
        return res.playouts / res.seconds


class KataGoSearch:
    """``katago gtp``: seconds of one ``genmove`` at ``maxVisits`` (tree cleared before)."""

    def __init__(self, binary: Path, net: Path, threads: int, visits: int, size: int) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        cfg = Path(self.tmp.name) / "gtp.cfg"
        cfg.write_text(
            f"logAllGTPCommunication = false\nlogSearchInfo = false\nlogToStderr = false\n"
            f"rules = chinese\nnumSearchThreads = {threads}\nmaxVisits = {visits}\n"
            f"ponderingEnabled = false\nnnCacheSizePowerOfTwo = 10\nmaxBoardSizeForNNBuffer = {size}\n"
            f"requireMaxBoardSize = true\nresignThreshold = -1.0\nnumEigenThreadsPerModel = {threads}\n")
        self.visits = visits
        self.gtp = GTPClient([str(binary), "gtp", "-config", str(cfg), "-model", str(net)],
                             default_timeout=600, label="katago", cwd=self.tmp.name)

    def visits_per_second(self, size: int, visits: int) -> float:
        self.gtp.send(f"boardsize {size}")
        self.gtp.send("clear_board")
        for color, point in _moves(size, OPENINGS[size]):
            self.gtp.send(f"play {color_name(color)} {coords.to_gtp(point, size)}")
        self.gtp.send("clear_cache")
        t0 = time.perf_counter()
        self.gtp.send("genmove b")
        return self.visits / (time.perf_counter() - t0)

    def close(self) -> None:
        self.gtp.close()
        self.tmp.cleanup()


class KataGoEvaluator:
    """rawnn ``bench``: KataGo's network evaluations/s with ``threads`` concurrent evaluations."""

    def __init__(self, binary: Path, net: Path, threads: int, size: int) -> None:
        self.proc = subprocess.Popen([str(binary), str(net), str(threads), str(size)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def _ask(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def visits_per_second(self, size: int, seconds: float) -> float:
        self._ask(f"new {size} 7.5 simple 0")
        for color, point in _moves(size, OPENINGS[size]):
            self._ask(f"play {'b' if color == 1 else 'w'} {point % size} {point // size}")
        d = json.loads(self._ask(f"bench {seconds}"))
        return d["evals"] / d["seconds"]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def bench_speed(args) -> dict:
    ours = OurEngine(args.net, args.threads, args.batch)
    out: dict = {"bench": "kata-speed", "net": str(args.net), "threads": args.threads}
    for size in args.sizes:
        visits = args.visits if size <= 9 else max(16, args.visits // 4)
        if args.katago:
            theirs = KataGoSearch(args.katago, args.net, args.threads, visits, size)
            kind = "katago search visits/s"
        else:
            theirs = KataGoEvaluator(args.rawnn, args.net, args.threads, size)
            kind = "katago evals/s (upper bound on its visits/s)"
        ours.visits_per_second(size, max(8, visits // 4))              # warm up
        a, b = [], []
        try:
            for _ in range(args.rounds):
                a.append(ours.visits_per_second(size, visits))
                if args.katago:
                    b.append(theirs.visits_per_second(size, visits))
                else:
                    b.append(theirs.visits_per_second(size, max(2.0, visits / max(a[-1], 1e-3))))
        finally:
            theirs.close()
        mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
        out[f"{size}x{size}"] = {"ours_visits_per_s": round(mean_a, 2), "katago": round(mean_b, 2),
                                 "katago_measure": kind, "ratio": round(mean_a / mean_b, 3),
                                 "rounds_ours": [round(x, 2) for x in a],
                                 "rounds_katago": [round(x, 2) for x in b]}
        print(f"{size}x{size}: ours {mean_a:7.2f} visits/s   {kind} {mean_b:7.2f}   ratio {mean_a / mean_b:.2f}",
              flush=True)
    return out


def bench_strength(args) -> dict:
    sgf = Path(args.sgf_dir)
    results = sgf / "results.json"
    cmd = [sys.executable, "-m", "train.match",
           "--black", f"inproc:{args.net}:visits={args.visits},name=kata-{args.visits}v",
           "--white", f"{args.gnugo} --mode gtp --level 10 --chinese-rules",
           "--games", str(args.games), "--size", "9", "--komi", "7", "--rules", "chinese",
           "--sgf-dir", str(sgf), "--results", str(results), "--parallel", str(args.parallel),
           "--no-progress"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    data = json.loads(results.read_text())
    return {"bench": "kata-strength", "results": data}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.bench.katago", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--net", type=Path, required=True)
    s.add_argument("--sizes", type=int, nargs="+", default=[9, 19])
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--batch", type=int, default=8)
    s.add_argument("--visits", type=int, default=64, help="per search on 9x9 (a quarter on bigger boards)")
    s.add_argument("--rounds", type=int, default=2)
    who = s.add_mutually_exclusive_group(required=True)
    who.add_argument("--katago", type=Path, help="KataGo binary (CPU/Eigen build)")
    who.add_argument("--rawnn", type=Path, help="KataGo evaluator driver (tests/helpers/kata_oracle.py)")
    t = sub.add_parser("strength")
    t.add_argument("--net", type=Path, required=True)
    t.add_argument("--visits", type=int, default=32)
    t.add_argument("--games", type=int, default=20)
    t.add_argument("--parallel", type=int, default=1)
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--gnugo", default="/usr/games/gnugo")
    t.add_argument("--sgf-dir", default=os.path.join(tempfile.gettempdir(), "kata-vs-gnugo"))
    args = p.parse_args(argv)
    out = bench_speed(args) if args.cmd == "speed" else bench_strength(args)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
