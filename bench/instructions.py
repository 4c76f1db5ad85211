"""Instructions retired per call of the hot path's pieces (issue 18), counted by
``perf stat``: a count a busy neighbour does not change, where this shared box's
speed changes twofold from one minute to the next and time cannot tell a 5 %
change from that drift.

Each piece runs in a child Python twice, ``0`` and ``--calls`` times after the
same set-up (the data is made before the counted loop either way); the
difference divided by the calls is the piece's cost:
- ``reply``: a board mail's reply built and serialised (``build_message`` +
  ``message_bytes``), a new Message-ID each time, as the outbox does per reply;
- ``smtp-address``: the embedded listener reading a ``MAIL FROM``/``RCPT TO``
  argument (``SmtpSession.read_address``, aiosmtpd's ``_getaddr`` hook), and aiosmtpd's own parser on the same
  arguments (``aiosmtpd``), in the same tree;
- ``parse``: ``parse_message`` of a move mail as bench/embedded.py's players
  send it;
- ``picture``: ``board_png`` over a stream of games' positions, each with its
  last move and Terrace! rings (bands cached as the outbox's encoder keeps them).
``--against DIR`` counts the same pieces in another checkout as well (e.g. a
``git worktree`` of an older commit), in the same run, and prints the ratio.
Needs ``perf`` (Debian ``linux-perf``) and counters the kernel lets it read.
Run: python bench/instructions.py [--calls 2000] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

PIECES = ("reply", "smtp-address", "aiosmtpd", "parse", "picture")

CHILD = r"""
import random, sys
from datetime import datetime
piece, calls = sys.argv[1], int(sys.argv[2])
if piece == "reply":
    from pbmserv_terrace.mail.message import build_message, message_bytes
    from pbmserv_terrace.games.terrace.picture import board_png, threatened_squares
    from pbmserv_terrace.games.terrace import render_board, start_position
    pos = start_position("long")
    rng = random.Random(18)
    for _ in range(12):
        pos = pos.play(rng.choice(pos.legal_moves()))
    png = board_png(pos, None, threatened=threatened_squares(pos))
    body = "Terrace Board 101: bob to move\n\n" + render_board(pos) + "\n" + "  5. d2-e3  c7-d6\n" * 10
    html = "<!DOCTYPE html>\n<html><body>\n" + '<p style="margin:0 0 2px 0;color:#1A1A1A;">line</p>\n' * 120 + "</body></html>\n"
    for k in range(calls):
        message_bytes(build_message(sender="pbmserv@bench.test", sender_name="PBM Server", recipient="ann@x.test",
                                    subject="Terrace Board 101 bob **", body=body, message_id=f"<r{k}@bench.test>",
                                    in_reply_to="<m1@x.test>", date=datetime(2026, 1, 2), reply_to="pbm+key@bench.test",
                                    html=html, images=[("board-terrace-101@pbmserv", png)]))
elif piece in ("smtp-address", "aiosmtpd"):
    from aiosmtpd.smtp import SMTP
    try:
        from pbmserv_terrace.mail.embedded import SmtpSession as Listener
    except ImportError:
        try:  # (a tree from before the session was public)
            from pbmserv_terrace.mail.embedded import _Listener as Listener
        except ImportError:  # (a tree from before the listener read addresses itself)
            Listener = SMTP
    class Quiet: pass
    smtp = Listener(Quiet())
    read = smtp._getaddr if piece == "smtp-address" else (lambda arg: SMTP._getaddr(smtp, arg))
    for k in range(calls):
        read(f"<u{k}@example.org> SIZE=1234")
elif piece == "parse":
    from pbmserv_terrace.mail.message import parse_message, with_envelope_recipients
    for k in range(calls):
        raw = (f"From: u{k} <u{k}@example.org>\r\nTo: pbmserv@bench.test\r\n"
               f"Subject: terrace move {101 + k % 100} u{k} pw d2-e3\r\n"
               f"Message-ID: <b{k}@players.bench>\r\nDate: Fri, 27 Nov 2026 14:00:00 +0000\r\n\r\n\r\n").encode()
        parse_message(with_envelope_recipients(raw, ["pbmserv@bench.test"]))
elif piece == "picture":
    from pbmserv_terrace.games.terrace.picture import board_png, threatened_squares
    from pbmserv_terrace.games.terrace import start_position
    rng = random.Random(18)
    stream = []
    while len(stream) < max(calls, 1):
        pos = start_position("long")
        for _ in range(40):
            moves = pos.legal_moves()
            if not moves:
                break
            move = rng.choice(moves)
            captured = move.to if pos.board[move.to] else None
            pos = pos.play(move)
            stream.append((pos, move, captured, threatened_squares(pos)))
    for pos, move, captured, threatened in stream[:calls]:
        board_png(pos, move, captured=captured, threatened=threatened)
"""


def count(tree: Path, piece: str, calls: int) -> int:
    """Instructions retired by the child Python for ``calls`` calls of ``piece``."""
    with tempfile.NamedTemporaryFile("r", suffix=".perf") as out:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        command = ["perf", "stat", "-x,", "-e", "instructions", "-o", out.name, sys.executable, "-c", CHILD, piece, str(calls)]
        subprocess.run(command, env=env, cwd=tree, check=True)  # (cwd: ``-c`` puts it first on sys.path)
        for line in out.read().splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("instructions"):
                return int(fields[0])
    raise RuntimeError(f"perf printed no instruction count for {piece}")


def per_call(tree: Path, piece: str, calls: int) -> float:
    return (count(tree, piece, calls) - count(tree, piece, 0)) / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--against", type=Path, help="another checkout, counted the same way")
    args = parser.parse_args()
    trees = [("this tree", HERE)] + ([("against", args.against.resolve())] if args.against else [])
    print(f"instructions per call ({args.calls} calls less none, perf stat)")
    for piece in PIECES:
        calls = args.calls if piece != "picture" else max(1, args.calls // 4)
        figures = [per_call(tree, piece, calls) for _, tree in trees]
        line = f"{piece:<13} " + "  ".join(f"{name}: {f / 1000:8.1f} k" for (name, _), f in zip(trees, figures, strict=True))
        if len(figures) == 2 and figures[0] > 0:
            line += f"  ({figures[1] / figures[0]:.2f}x this tree's)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
