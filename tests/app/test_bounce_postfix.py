"""Bounces through a real MTA (issue 43 part 3): ``serve`` sends its replies through
Postfix's submission port with its VERP return path (``pbmserv+bounce-ID-MAC@``);
a recipient Postfix accepts and Dovecot's LMTP then refuses (no such user) makes
Postfix write a delivery report to that return path, which reaches the server's
INBOX (``recipient_delimiter = +``) and is counted; at the third the address is
marked bouncing, and no bounce is ever answered.

The player's confirmed address is set to the refused one in the database, as if
it had worked once and stopped (a mailbox Dovecot never had cannot confirm)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from email.utils import make_msgid
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay
from pbmserv_terrace.testing.postfix import PostfixServer

from ..mailservers import PLAYERS, SERVER, ServeProcess, addr
from .test_postfix_loop import Loop

GHOST = "ghost@players.test"
"""in Postfix's mailbox list, unknown to Dovecot: accepted, then bounced"""


@pytest.fixture
def dovecot() -> Iterator[DovecotServer]:
    users = {SERVER: "server-secret", **{addr(p): f"imap-{p}" for p in PLAYERS}}
    with DovecotServer(users, auth_listener=True) as d:
        yield d


@pytest.fixture
def postfix(dovecot: DovecotServer) -> Iterator[PostfixServer]:
    with PostfixServer(dovecot.lmtp_port, domains=["terrace.test", "players.test"], mailboxes=[SERVER, *(addr(p) for p in PLAYERS), GHOST],
                       sasl_port=dovecot.auth_port) as pf:  # fmt: skip
        yield pf


def query(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute(sql).fetchall()


def test_a_reply_that_bounces_in_postfix_is_counted_and_the_address_marked(
    dovecot: DovecotServer, postfix: PostfixServer, tmp_path: Path
) -> None:
    relay = cast(LmtpRelay, SimpleNamespace(port=postfix.submission_port))
    smtp_login = f'user = "{SERVER}"\npassword = "server-secret"\n'
    db = tmp_path / "serve.db"
    serve = ServeProcess(tmp_path, dovecot, relay, f"sqlite:///{db}", smtp_login).start()
    loop = Loop(postfix, dovecot, db)
    try:
        loop.signup(["ann"])
        with sqlite3.connect(db, timeout=30) as conn:  # ann's address stopped working
            conn.execute("UPDATE users SET addresses = ? WHERE userid = 'ann'", (json.dumps([GHOST]),))
        for n in range(3):
            mid = make_msgid(domain="players.test")
            data = (f"From: Ann <{GHOST}>\r\nTo: {SERVER}\r\nSubject: help\r\nMessage-ID: {mid}\r\n"
                    f"Content-Type: text/plain\r\n\r\nhelp\r\n").encode()  # fmt: skip
            postfix.send(GHOST, SERVER, data)
            # each answer bounces before the next mail goes (so the count is read in order)
            deadline = time.time() + 120
            while time.time() < deadline and len(query(db, "SELECT id FROM bounces")) < n + 1:
                time.sleep(0.2)
            assert len(query(db, "SELECT id FROM bounces")) == n + 1, serve.since(0)[-4000:]
        [(bouncing,)] = query(db, "SELECT bouncing FROM users WHERE userid = 'ann'")
        assert json.loads(str(bouncing)) == [GHOST]
        log = serve.since(0)
        assert "marked bouncing" in log, log[-3000:]
        # each bounce came back to the return path of its own reply, and none was answered
        rows = query(db, "SELECT b.outbox_id, o.recipient FROM bounces b JOIN outbox o ON o.id = b.outbox_id")
        assert sorted(r[1] for r in rows) == [GHOST] * 3
        assert not [r for r in query(db, "SELECT recipient FROM outbox") if "mailer-daemon" in str(r[0]).lower()]
    finally:
        loop.boxes.close()
        serve.close()
