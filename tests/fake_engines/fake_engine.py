"""A tiny scripted GTP engine for tests (no Go knowledge beyond occupied points).

It plays the first free point, in reading order, whose row + column is even:
such stones never touch each other, so two fake engines never capture and
never commit suicide, and when those points run out it passes. Misbehaviour
on demand (N counts this engine's genmove commands, from 1):

  --crash-after N    exit with status 3 instead of answering the Nth genmove
  --hang-after N     never answer the Nth genmove (sleep)
  --illegal-after N  answer the Nth genmove with an occupied point
  --resign-after N   answer the Nth and every later genmove with "resign"
  --always-pass      answer every genmove with "pass"
  --move-delay S     think S seconds before answering every genmove
  --no-ids           do not echo command ids
  --chatter          print a non-GTP line before every reply
  --name NAME        reply to "name"

Test-only commands: ``fake-multiline`` (three-line reply), ``fake-fail``
(``?`` reply), ``fake-sleep SECONDS``, ``fake-exit``.
"""

from __future__ import annotations

import argparse
import sys
import time

LETTERS = "ABCDEFGHJKLMNOPQRST"
COMMANDS = [
    "protocol_version", "name", "version", "known_command", "list_commands", "quit",
    "boardsize", "clear_board", "komi", "play", "genmove", "final_score", "time_settings",
    "fake-multiline", "fake-fail", "fake-sleep", "fake-exit",
]


def parse_args(argv: list[str] | None = None, **defaults: object) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="FakeEngine")
    parser.add_argument("--crash-after", type=int, default=0)
    parser.add_argument("--hang-after", type=int, default=0)
    parser.add_argument("--illegal-after", type=int, default=0)
    parser.add_argument("--resign-after", type=int, default=0)
    parser.add_argument("--always-pass", action="store_true")
    parser.add_argument("--move-delay", type=float, default=0.0)
    parser.add_argument("--no-ids", action="store_true")
    parser.add_argument("--chatter", action="store_true")
    parser.set_defaults(**defaults)
    return parser.parse_args(argv)


def vertex(row: int, col: int, size: int) -> str:
    return f"{LETTERS[col]}{size - row}"


def parse_vertex(text: str, size: int) -> tuple[int, int] | None:
    text = text.upper()
    if text == "PASS":
        return None
    return size - int(text[1:]), LETTERS.index(text[0])


def run(args: argparse.Namespace) -> int:
    size = 19
    occupied: set[tuple[int, int]] = set()
    genmoves = 0

    def reply(ok: bool, cid: str, text: str = "") -> None:
        if args.chatter:
            sys.stdout.write("chatter: thinking...\n")
        mark = "=" if ok else "?"
        ident = "" if args.no_ids else cid
        sys.stdout.write(f"{mark}{ident} {text}".rstrip() + "\n\n")
        sys.stdout.flush()

    for raw in sys.stdin:
        words = raw.split()
        if not words or words[0].startswith("#"):
            continue
        cid = ""
        if words[0].isdigit():
            cid, words = words[0], words[1:]
        if not words:
            continue
        cmd, rest = words[0], words[1:]
        if cmd == "quit":
            reply(True, cid)
            return 0
        if cmd == "protocol_version":
            reply(True, cid, "2")
        elif cmd == "name":
            reply(True, cid, args.name)
        elif cmd == "version":
            reply(True, cid, "0.1")
        elif cmd == "list_commands":
            reply(True, cid, "\n".join(COMMANDS))
        elif cmd == "known_command":
            reply(True, cid, "true" if rest and rest[0] in COMMANDS else "false")
        elif cmd == "boardsize":
            size = int(rest[0])
            occupied.clear()
            reply(True, cid)
        elif cmd == "clear_board":
            occupied.clear()
            reply(True, cid)
        elif cmd in ("komi", "time_settings"):
            reply(True, cid)
        elif cmd == "play":
            point = parse_vertex(rest[1], size)
            if point is not None:
                occupied.add(point)
            reply(True, cid)
        elif cmd == "genmove":
            genmoves += 1
            if genmoves == args.crash_after:
                sys.stderr.write("fake engine: crashing as asked\n")
                sys.stderr.flush()
                return 3
            if genmoves == args.hang_after:
                while True:
                    time.sleep(3600)
            time.sleep(args.move_delay)
            if 0 < args.resign_after <= genmoves:
                reply(True, cid, "resign")
                continue
            if genmoves == args.illegal_after and occupied:
                row, col = sorted(occupied)[0]
                reply(True, cid, vertex(row, col, size))
                continue
            move = None
            if not args.always_pass:
                free = [(r, c) for r in range(size) for c in range(size)
                        if (r + c) % 2 == 0 and (r, c) not in occupied]
                move = free[0] if free else None
            if move is None:
                reply(True, cid, "pass")
            else:
                occupied.add(move)
                reply(True, cid, vertex(*move, size))
        elif cmd == "final_score":
            reply(True, cid, "0")
        elif cmd == "fake-multiline":
            reply(True, cid, "line one\nline two\nline three")
        elif cmd == "fake-fail":
            reply(False, cid, "failing as asked")
        elif cmd == "fake-sleep":
            time.sleep(float(rest[0]))
            reply(True, cid, "slept")
        elif cmd == "fake-exit":
            return 4
        else:
            reply(False, cid, "unknown command")
    return 0


if __name__ == "__main__":
    sys.exit(run(parse_args()))
