"""A digest through the real mail path (issue 40): ann, with ten boards against a
person and robots, asks for one mail a day; the moves of the others wait for her
digest, which ``admin timers --at`` (what serve's scheduler runs) sends through
Dovecot; one Reply to it moves on five boards, and she gets one summary while
her opponents get their board mails.  No sleeping for a timer: the time is the
``--at``; every wait polls a mailbox or the database with a deadline."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from email.message import Message
from pathlib import Path

from pbmserv_terrace.service.digests import next_at
from pbmserv_terrace.store import utcnow

from ..mailservers import Players, ServeProcess, body

WAIT = 60.0
"""seconds before a wait gives up (a hang, not a timing check)"""


def plies(db: Path) -> dict[int, int]:
    with sqlite3.connect(db) as conn:
        return {int(n): int(p) for n, p in conn.execute("SELECT board_number, ply FROM games WHERE status = 'active'")}


def until(what: str, check) -> None:  # type: ignore[no-untyped-def]
    deadline = time.time() + WAIT
    while not check():
        if time.time() > deadline:
            raise AssertionError(f"not within {WAIT}s: {what}")
        time.sleep(0.2)


def timers_at(serve: ServeProcess, at: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    out = subprocess.run([sys.executable, "-m", "pbmserv_terrace", "admin", "timers", "--at", at, "--config", str(serve.config)],
                         cwd=serve.workdir, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_ten_boards_one_digest_one_reply_five_moves(serve_factory, relay, players: Players, tmp_path):
    serve = serve_factory(relay).start()
    db = tmp_path / "serve.db"
    for name in ("ann", "ben"):
        players.signup(name)
    players.send("ann", "change digest ann pw-ann daily 08:00")
    assert "your digest comes daily at 08:00 (UTC)" in body(players.wait("ann")[0])
    # five boards where ben moves first, five against robots where ann does
    for _ in range(5):
        players.send("ben", "terrace challenge ben pw-ben ann")
    for n in range(5):
        players.send("ann", f"terrace challenge ann pw-ann robot{1 + n % 2}")
    players.wait("ann", 10)  # the new boards come at once
    players.wait("ben", 5)
    boards = sorted(plies(db))
    assert len(boards) == 10
    with sqlite3.connect(db) as conn:
        vs_ben = sorted(n for (n,) in conn.execute(
            "SELECT g.board_number FROM games g JOIN seats s ON s.game_id = g.id JOIN users u ON u.id = s.user_id "
            "WHERE u.userid = 'ben'"))  # fmt: skip
    vs_robots = [n for n in boards if n not in vs_ben]
    for n in vs_robots:
        players.send("ann", f"terrace move {n} ann pw-ann d2-e3")
    players.wait("ann", 5)  # her own moves are answered at once
    for n in vs_ben:
        players.send("ben", f"terrace move {n} ben pw-ben d2-e3")
    players.wait("ben", 5)
    until("every opponent has moved", lambda: all(p == (1 if n in vs_ben else 2) for n, p in plies(db).items()))
    # ten moves of her opponents, and no mail to ann for any of them
    players.quiet("ann", 2.0)
    # the next morning: one digest, sent by the same code serve's timers run
    first = next_at({"times": ["08:00"], "zone": "UTC"}, utcnow())
    printed = timers_at(serve, first.isoformat())
    assert "queued  ann@players.test  Test PBM Server: digest for ann, your turn on 10 boards" in printed
    digest = players.wait("ann")[0]
    text = body(digest)
    for n in boards:
        assert f"Terrace Board {n} against" in text
    assert str(digest["Reply-To"]).count("+") == 1
    pictures = [p for p in digest.walk() if p.get_content_type() == "image/png"]
    assert len(pictures) == 10
    # the same time again sends nothing more
    assert "0 mails queued" in timers_at(serve, first.isoformat())
    # one Reply, five boards: three against ben, two against robots
    chosen = vs_ben[:3] + vs_robots[:2]
    lines = "\n".join(f"{n} {'d7-d6' if n in vs_ben else 'c2-d2'}" for n in chosen)
    players.reply("ann", digest, lines + "\n\nthanks\n")
    summary: Message = players.wait("ann")[0]
    assert str(summary["Subject"]) == "Test PBM Server: your reply to the digest, 5 of 6 lines played", body(summary)
    assert body(summary).count("      played") == 5
    got = [body(m) for m in players.wait("ben", 3)]
    assert sorted(int(t.split("Terrace Board ", 1)[1].split(":", 1)[0]) for t in got) == vs_ben[:3]
    until("the boards played", lambda: all(plies(db)[n] >= (2 if n in vs_ben else 3) for n in chosen))
    # the robots answer on their two boards; that waits for her next digest
    until("the robots answered", lambda: all(plies(db)[n] == 4 for n in vs_robots[:2]))
    players.quiet("ann", 2.0)
    nxt = timers_at(serve, (first + timedelta(days=1)).isoformat())
    assert "digest for ann, your turn on 7 boards" in nxt
    assert serve.stop() == 0


def test_a_clock_runs_out_is_claimed_by_reply_and_a_vacation_stops_every_clock(serve_factory, relay, players: Players, tmp_path):
    """Issue 40 items 3-4 through the real mail path: ben's bank runs out on board
    101 and ann claims the win by Reply to the mail that told her; meanwhile her
    vacation keeps her own bank on board 102 full until she is back."""
    serve = serve_factory(relay).start()
    db = tmp_path / "serve.db"
    for name in ("ann", "ben", "cat"):
        players.signup(name)
    players.send("ann", "terrace challenge ann pw-ann ben --clock=1+1")
    players.send("ann", "terrace challenge ann pw-ann cat --clock=3+0")
    players.wait("ben")
    players.wait("cat")
    players.wait("ann", 2)
    for who, board, move, ply in (("ann", 101, "d2-e3", 1), ("ben", 101, "e7-d6", 2), ("ann", 101, "e3-f4", 3),
                                  ("ann", 102, "d2-e3", 1), ("cat", 102, "e7-d6", 2)):  # fmt: skip
        players.send(who, f"terrace move {board} {who} pw-{who} {move}")
        until(f"{who} played on {board}", lambda b=board, p=ply: plies(db).get(b) == p)
    for name, count in (("ann", 5), ("ben", 3), ("cat", 2)):
        players.wait(name, count)
    start = utcnow()
    players.send("ann", "vacation ann pw-ann on 2")
    assert "Vacation for ann is on until" in " ".join(body(players.wait("ann")[0]).split())
    assert "ann is on vacation" in body(players.wait("cat")[0])
    assert "ann is on vacation" in body(players.wait("ben")[0])
    # four days on: ben (two days in his bank) is out of time; ann's vacation has
    # ended after two days, and her bank of three days has run only since then
    printed = timers_at(serve, (start + timedelta(days=4)).isoformat())
    assert "ben is out of time" in printed and "you are out of time" in printed and "ann is back" in printed
    assert "ann is out of time" not in printed
    mails = players.wait("ann", 2)
    told = next(m for m in mails if "ben is out of time" in str(m["Subject"]))
    assert {str(m["Subject"]).split(": ", 1)[-1] for m in players.wait("cat")} == {"ann is back"}
    players.wait("ben", 2)
    players.reply("ann", told, "claim")
    end = body(players.wait("ben")[0])
    assert "ben ran out of time; ann claimed the win." in end
    until("board 101 ended", lambda: 101 not in plies(db))
    # a day later her bank on board 102 has run out too
    printed = timers_at(serve, (start + timedelta(days=5, hours=1)).isoformat())
    assert "ann is out of time" in printed
    assert serve.stop() == 0
