"""Mails of one board are applied in delivery order, INTERNALDATE then UID (issue 20,
item 5): Dovecot with Maildir may number a burst in another order than it arrived.
Here the inbox holds twelve moves whose UIDs run against their INTERNALDATEs (APPENDed
latest first), so UID order alone would answer most of them "not your turn"."""

from __future__ import annotations

import imaplib
import random
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.mail.imap import internaldates
from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay

from ..mailservers import SERVER, Players, ServeProcess, addr
from ..service.policy import choose, text


def test_internaldate_lines_are_read_in_utc_whatever_the_layout() -> None:
    lines = [b'1 FETCH (UID 5 INTERNALDATE " 7-Jul-2024 02:44:25 -0700")', b'2 FETCH (INTERNALDATE "17-Jul-2024 02:44:25 +0000" UID 9)',
             b"3 EXISTS", b"Fetch completed (0.001 + 0.000 secs)."]  # fmt: skip
    assert internaldates(lines) == {
        5: datetime(2024, 7, 7, 9, 44, 25, tzinfo=UTC),
        9: datetime(2024, 7, 17, 2, 44, 25, tzinfo=UTC),
    }


def test_moves_are_applied_by_internaldate_not_uid(
    serve_factory: Callable[..., ServeProcess], relay: LmtpRelay, players: Players, dovecot: DovecotServer, tmp_path: Path
) -> None:
    serve = serve_factory(relay).start()
    for name in ("ann", "ben"):
        players.signup(name)
    players.send("ann", "terrace challenge ann pw-ann ben")
    players.wait("ann")
    players.wait("ben")
    assert serve.stop() == 0
    pos, rng, names, moves = start_position(), random.Random(3), ["ann", "ben"], []
    for _ in range(12):
        move = choose(pos, rng)
        moves.append(text(pos, move))
        pos = pos.play(move)
    base = datetime.now(UTC).replace(microsecond=0)
    mails = []
    for i, mv in enumerate(moves):
        who = names[i % 2]
        raw = (f"From: {addr(who)}\r\nTo: {SERVER}\r\nSubject: terrace move 101 {who} pw-{who} {mv}\r\n"
               f"Message-ID: <order{i}@players.test>\r\n\r\n\r\n").encode()  # fmt: skip
        mails.append((base + timedelta(seconds=i), raw))
    with imaplib.IMAP4("127.0.0.1", dovecot.imap_port, timeout=30) as imap:
        imap.login(SERVER, "server-secret")
        for when, raw in reversed(mails):  # the latest gets the lowest UID
            status, _ = imap.append("INBOX", "", when, raw)
            assert status == "OK"
        imap.select("INBOX")
        _, data = imap.uid("fetch", "1:*", "(UID INTERNALDATE)")
        got = internaldates(line for line in data if isinstance(line, bytes))
        assert sorted(got, key=got.__getitem__) == sorted(got, reverse=True)  # UIDs really run against the dates
    serve.start()
    for name in names:
        replies = players.wait(name, 12, timeout=60)
        assert not [m["Subject"] for m in replies if "Error" in str(m["Subject"])]
    assert serve.stop() == 0
    db = sqlite3.connect(tmp_path / "serve.db")
    plies = db.execute("SELECT m.move FROM moves m JOIN games g ON g.id = m.game_id ORDER BY m.ply").fetchall()
    assert [mv for (mv,) in plies] == moves


def test_sub_addresses_reach_the_server_inbox(dovecot: DovecotServer) -> None:
    """``pbmserv+KEY@…`` (a reply key) is delivered to the server's own INBOX."""
    user, domain = SERVER.split("@")
    raw = b"From: ann@players.test\r\nSubject: plus\r\nMessage-ID: <plus1@players.test>\r\n\r\nhi\r\n"
    dovecot.deliver(addr("ann"), [f"{user}+k7x2@{domain}"], raw)
    assert [m for m in dovecot.fetch_all(SERVER) if b"<plus1@players.test>" in m]
