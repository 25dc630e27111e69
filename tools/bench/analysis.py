"""Whole-game analysis throughput: ``python -m tools.bench.analysis --katago BIN --net NET``.

KaTrain's workload: every position of a game analysed at a fixed number of visits.  Our
``python -m engine analysis`` and ``katago analysis`` (KataGo's own analysis engine, its CPU
Eigen build) get the same net, the same games and the same query, one JSON line naming every
turn (``analyzeTurns``), and are timed from the query's send to the last turn's response, in
alternating rounds so both meet the same machine load.  Start-up (loading the net) and one
warm-up query are left out of the time.

Both engines batch across positions: ours searches ``--positions`` turns per search thread
and makes one forward pass over all their leaves; KataGo is given as many analysis threads
(``numAnalysisThreads``, one search thread each) and an NN batch of the same size, its
recommended setting for throughput.  Both get ``--threads`` cores (our search threads with one
torch thread each; KataGo's Eigen threads) and are pinned to the same cores with
``taskset`` when ``--cpus`` is given.

The games are in tools/bench/games/: GNU Go 3.8 (level 1, Chinese rules, komi 7) playing itself,
60 moves on 9x9 and 200 on 19x19.  ``--every K`` analyses every K-th turn only, for a quicker
figure on a slow machine (the rate is per position either way).

Prints a table and, last, one JSON line.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

from sgfmill import sgf

GAMES = {9: Path(__file__).with_name("games") / "gnugo-9x9-60.sgf",
         19: Path(__file__).with_name("games") / "gnugo-19x19-200.sgf"}
COLUMNS = "ABCDEFGHJKLMNOPQRST"


def game_moves(path: Path) -> tuple[int, list[list[str]]]:
    """(size, [[colour, vertex], ...]) of an SGF game, in the analysis protocol's form."""
    game = sgf.Sgf_game.from_bytes(path.read_bytes())
    size = game.get_size()
    moves = []
    for node in game.get_main_sequence()[1:]:
        colour, point = node.get_move()
        if colour is None:
            continue
        if point is None:
            moves.append([colour.upper(), "pass"])
        else:
            row, col = point
            moves.append([colour.upper(), f"{COLUMNS[col]}{row + 1}"])
    return size, moves


def query(qid: str, size: int, moves: list[list[str]], visits: int, turns: list[int]) -> dict:
    return {"id": qid, "moves": moves, "rules": "chinese", "komi": 7, "boardXSize": size,
            "boardYSize": size, "maxVisits": visits, "analyzeTurns": turns}


def katago_config(path: Path, threads: int, positions: int, log_dir: Path, size: int) -> None:
    """KataGo's analysis settings for throughput on one board size: NN buffers of that size
    (``requireMaxBoardSize``; by default KataGo pads every board to 19x19, which costs a 9x9
    position about 4x), ``positions`` analysis threads of one search thread each."""
    path.write_text("\n".join([
        f"maxBoardSizeForNNBuffer = {size}", "requireMaxBoardSize = true",
        f"logDir = {log_dir}", "logToStderr = false", "logAllRequests = false",
        "logAllResponses = false", "logSearchInfo = false",
        f"numAnalysisThreads = {positions}", "numSearchThreadsPerAnalysisThread = 1",
        f"nnMaxBatchSize = {positions}", "nnCacheSizePowerOfTwo = 20",
        "nnMutexPoolSizePowerOfTwo = 14", "numNNServerThreadsPerModel = 1",
        f"numEigenThreadsPerModel = {threads}", "reportAnalysisWinratesAs = BLACK",
        "analysisPVLen = 10", ""]))


class JsonEngine:
    """An analysis engine process: send a query, wait for all its turns."""

    def __init__(self, name: str, argv: list[str], cwd: Path | None = None) -> None:
        self.name = name
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1, cwd=cwd)
        self.lines: list[dict] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.lines.append(obj)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def analyse(self, q: dict, timeout: float = 7200.0) -> tuple[float, list[dict]]:
        """Seconds from sending ``q`` to its last final response, and the responses."""
        want = len(q["analyzeTurns"])
        with self.cond:
            start_index = len(self.lines)
        assert self.proc.stdin is not None
        t0 = time.perf_counter()
        self.proc.stdin.write(json.dumps(q) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = [r for r in self.lines[start_index:] if r.get("id") == q["id"]]
                errors = [r for r in got if "error" in r]
                if errors:
                    raise RuntimeError(f"{self.name}: {errors[0]}")
                final = [r for r in got if not r.get("isDuringSearch")]
                if len(final) >= want:
                    return time.perf_counter() - t0, final
                if self.proc.poll() is not None:
                    self.stderr.seek(0)
                    raise RuntimeError(f"{self.name} exited: {self.stderr.read()[-2000:]}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.name}: {len(final)}/{want} turns after {timeout} s")
                self.cond.wait(min(left, 5.0))

    def close(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def pinned(argv: list[str], cpus: str | None) -> list[str]:
    return ["taskset", "-c", cpus, *argv] if cpus else argv


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.bench.analysis", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--katago", type=Path, required=True, help="KataGo binary (Eigen build)")
    p.add_argument("--net", type=Path, required=True, help="a KataGo net (.bin.gz)")
    p.add_argument("--sizes", default="9,19", help="board sizes (games in tools/bench/games/)")
    p.add_argument("--visits", type=int, default=100)
    p.add_argument("--threads", type=int, default=1, help="cores for each engine")
    p.add_argument("--positions", type=int, default=16, help="positions searched at once")
    p.add_argument("--katago-positions", type=int, default=None,
                   help="KataGo's numAnalysisThreads and NN batch (default: --positions); 1 is "
                        "its fastest setting on one core when the batch does not pay")
    p.add_argument("--every", type=int, default=1, help="analyse every K-th turn")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--cpus", default=None, help="taskset CPU list for both engines, e.g. 1")
    args = p.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="analysis-bench-"))
    cfg = work / "analysis.cfg"
    kata_positions = args.katago_positions or args.positions
    ours = JsonEngine("ours", pinned([sys.executable, "-m", "engine", "analysis", "--weights",
                                      str(args.net), "--threads", str(args.threads),
                                      "--positions", str(args.positions), "--batch",
                                      str(args.positions), "--seed", "1", "--quiet"], args.cpus),
                      cwd=REPO_ROOT)
    kata = None
    rows = []
    try:
        ours.analyse(query("warm-ours", 9, [["B", "E5"]], 8, [0, 1]))   # the net loaded
        for size in [int(s) for s in args.sizes.split(",")]:
            n, moves = game_moves(GAMES[size])
            katago_config(cfg, args.threads, kata_positions, work / "logs", size)
            kata = JsonEngine("katago", pinned([str(args.katago), "analysis", "-config",
                                                str(cfg), "-model", str(args.net)], args.cpus))
            kata.analyse(query("warm-katago", size, [], 8, [0]))
            turns = list(range(0, len(moves) + 1, args.every))
            for rnd in range(args.rounds):
                for eng in (ours, kata) if rnd % 2 == 0 else (kata, ours):
                    q = query(f"{eng.name}-{size}-{rnd}", n, moves, args.visits, turns)
                    secs, final = eng.analyse(q)
                    visits = sum(int(r.get("rootInfo", {}).get("visits", 0)) for r in final)
                    rows.append({"engine": eng.name, "size": size, "round": rnd,
                                 "positions": len(final), "seconds": round(secs, 2),
                                 "positions_per_s": round(len(final) / secs, 4),
                                 "root_visits": visits})
                    print(f"{eng.name:7s} {size}x{size} round {rnd}: {len(final)} positions "
                          f"in {secs:.1f} s = {len(final) / secs:.3f} positions/s "
                          f"({visits} root visits)", flush=True)
            kata.close()
            kata = None
    finally:
        ours.close()
        if kata is not None:
            kata.close()
    summary = {}
    for size in {r["size"] for r in rows}:
        ps = {e: sum(r["positions"] for r in rows if r["size"] == size and r["engine"] == e)
              / sum(r["seconds"] for r in rows if r["size"] == size and r["engine"] == e)
              for e in ("ours", "katago")}
        summary[str(size)] = {"ours_positions_per_s": round(ps["ours"], 4),
                              "katago_positions_per_s": round(ps["katago"], 4),
                              "ratio": round(ps["ours"] / ps["katago"], 3)}
        print(f"{size}x{size}: ours {ps['ours']:.3f} / KataGo {ps['katago']:.3f} positions/s "
              f"= {ps['ours'] / ps['katago']:.2f}x")
    print(json.dumps({"visits": args.visits, "threads": args.threads,
                      "positions": args.positions, "katago_positions": kata_positions,
                      "every": args.every, "cpus": args.cpus, "rows": rows, "summary": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
