"""Bounces (issue 43 part 3): real-shaped delivery reports in, through the
harness: counted per reply, an address marked bouncing at the threshold gets no
more mail, its player's opponents are told, and the player's next mail clears it."""

from __future__ import annotations

import uuid
from email.utils import parseaddr
from pathlib import Path

import pytest
from sqlalchemy import select

from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.service.bounces import bounce_address, bounce_key, bounce_token, outbox_id_of, verp_token
from pbmserv_terrace.store import BounceEvent, OutboxMessage, UnitOfWork, User, utcnow

from .harness import SERVER, Harness, Reply, mine

BOUNCES = Path(__file__).parent.parent / "data" / "mail" / "bounces"
FIXTURE_VERP = "pbmserv+bounce-7-aaaaaaaaaaaaaaaa@terrace.test"
FIXTURE_ID = "<176433960900.12345.aaaaaaaaaaaa@terrace.test>"
SILENT = "Mail to ann bounces: ann gets no mail from the server until ann writes again."


# ------------------------------------------------------------------ tokens
def test_a_token_names_its_reply_and_nothing_else() -> None:
    key = bounce_key("ab" * 32)
    for outbox_id in (1, 7, 123456789):
        token = bounce_token(key, outbox_id)
        assert token == token.lower() and token.replace("-", "").isalnum()
        assert outbox_id_of(token, key) == outbox_id
        assert outbox_id_of(token.upper(), key) == outbox_id  # a mail system that upper-cases it
    token = bounce_token(key, 7)
    number, _, mac = token.partition("-")
    assert outbox_id_of(f"8-{mac}", key) is None  # another reply's number, the same MAC
    assert outbox_id_of(f"{number}-{mac[:-1]}a" if mac[-1] != "a" else f"{number}-{mac[:-1]}b", key) is None
    assert outbox_id_of(token, bounce_key("cd" * 32)) is None  # another server's key
    for junk in ("", "7", "-", "x-abc", "7-", "9" * 40 + "-" + mac):
        assert outbox_id_of(junk, key) is None


def test_the_return_path_is_the_server_address_tagged() -> None:
    key = bounce_key("ab" * 32)
    address = bounce_address("pbm@srv.test", key, 42)
    assert address == f"pbm+bounce-{bounce_token(key, 42)}@srv.test"
    assert len(address.partition("@")[0]) <= 64  # RFC 5321's local-part limit
    mail = InboundMail(sender="MAILER-DAEMON@mx.test", subject="", body="", message_id="<1@x>", recipients=[address.upper()])
    assert verp_token(mail, "pbm@srv.test") == bounce_token(key, 42)
    other = InboundMail(sender="a@b.test", subject="", body="", message_id="<1@x>", recipients=["pbm+KEY@srv.test"])
    assert verp_token(other, "pbm@srv.test") is None


# ------------------------------------------------------------------ the flow
@pytest.fixture
def h(db_url: str):  # SQLite, and PostgreSQL outside the fast tier
    h = Harness(db_url)
    h.signup("ann", "ben")
    yield h
    h.close()


def return_path(reply: Reply) -> str:
    return parseaddr(reply.headers["return-path"])[1]


def dsn(reply: Reply, shape: str = "postfix.eml", *, verp: str | None = None) -> bytes:
    """The report an MTA sends back for ``reply`` (the fixture's addresses and ids
    made this reply's)."""
    text = (BOUNCES / shape).read_text()
    for line in text.splitlines():
        if line.lower().startswith("message-id:") and FIXTURE_ID not in line:  # the report's own
            text = text.replace(line, f"Message-ID: <{uuid.uuid4().hex}@mx.test>")
            break
    text = text.replace(FIXTURE_VERP, verp if verp is not None else return_path(reply))
    text = text.replace(FIXTURE_ID, reply.headers["message-id"])
    text = text.replace("ann@players.test", reply.to)
    return text.replace("\n", "\r\n").encode()


def bounce(h: Harness, reply: Reply, shape: str = "postfix.eml", **kw: str) -> str:
    """Mail the report; it is never answered; what the server did with it."""
    assert h.raw(dsn(reply, shape, **kw)) == []
    assert h.last is not None and h.last.status == "bounce", h.last
    return h.last.detail


def help_to(h: Harness, user: str) -> Reply:
    return mine(h.send(user, "help"), user)


def bouncing(h: Harness, userid: str) -> list[str]:
    async def read() -> list[str]:
        async with UnitOfWork(h.db) as uow:
            user = await uow.users.get(userid)
            assert user is not None
            return list(user.bouncing)

    return h.loop.run_until_complete(read())


def test_three_bounces_stop_the_mail_and_the_next_mail_clears_it(h: Harness) -> None:
    h.challenge("ben", "ann")
    first = help_to(h, "ann")
    assert return_path(first).startswith("pbmserv+bounce-") and return_path(first).endswith("@terrace.test")
    assert "1 in the window" in bounce(h, first)
    assert "counted before" in bounce(h, first)  # a second report of one reply counts once
    assert "2 in the window" in bounce(h, help_to(h, "ann"), "gmail.eml")
    assert bouncing(h, "ann") == []
    # a reply still waiting in the outbox when the address is marked is not sent
    waiting = queue_reply(h, "ann@players.test")
    assert "marked bouncing" in bounce(h, help_to(h, "ann"), "microsoft.eml")
    assert bouncing(h, "ann") == ["ann@players.test"]
    assert state_of(h, waiting) == "failed"

    # ben's move: ann gets nothing, ben's board mail says why
    out = h.move(101, "ben", "d2-e3")
    assert [r.to for r in out] == ["ben@players.test"]
    assert SILENT in out[0].body
    assert SILENT in out[0].html  # the HTML part says it too
    # a mail of ann's that proves nothing (no password, no key) changes nothing
    # (its answer goes to her: an answer to her own mail)
    late = help_to(h, "ann")
    assert bouncing(h, "ann") == ["ann@players.test"]

    # ann plays: the mark goes, she is told, and the board mails reach her again
    out = h.move(101, "ann", "d7-d6")
    assert bouncing(h, "ann") == []
    told = [r for r in out if "goes out again" in r.subject]
    assert len(told) == 1 and told[0].to == "ann@players.test"
    assert "Mail to you at ann@players.test bounced 3 times" in told[0].body
    assert "it sends to that address again now" in told[0].body
    board = [r for r in out if "Board 101" in r.subject]
    assert sorted(r.to for r in board) == ["ann@players.test", "ben@players.test"]
    assert not any(SILENT in r.body for r in out)
    # a late report of a reply sent before she wrote again counts no more
    assert "before its player wrote again" in bounce(h, late, "postfix.eml")


def test_a_forged_or_unknown_bounce_changes_nothing(h: Harness) -> None:
    reply = help_to(h, "ann")
    real = return_path(reply)
    local, _, domain = real.partition("@")
    forged = local[:-1] + ("a" if local[-1] != "a" else "b") + "@" + domain
    for _ in range(4):
        assert "does not verify" in bounce(h, reply, verp=forged)
    # a report to the plain address naming a Message-ID that is not one of ours
    other = Reply(reply.to, reply.subject, reply.body, {**reply.headers, "message-id": "<made-up@terrace.test>"})
    for _ in range(4):
        assert "names no reply of ours" in bounce(h, other, "exim.eml")
    # a delay is no bounce
    for _ in range(4):
        assert "not a permanent failure" in bounce(h, reply, "postfix-delayed.eml")
    assert bouncing(h, "ann") == []
    assert events(h) == 0
    # an out-of-office reply to the return path is not a bounce either
    auto = (
        f"From: ann@players.test\r\nTo: {real}\r\nSubject: Out of office\r\nAuto-Submitted: auto-replied\r\n"
        f"Message-ID: <{uuid.uuid4().hex}@players.test>\r\n\r\nBack on Monday.\r\n"
    ).encode()
    assert h.raw(auto) == []
    assert h.last is not None and h.last.status == "bounce" and "no delivery report" in h.last.detail
    # a bounce of a reply to an address no player has confirmed counts nothing
    stranger = mine(h.send("zed@elsewhere.test", "help"), "zed@elsewhere.test")
    assert "no player's confirmed address" in bounce(h, stranger)
    assert events(h) == 0


def test_a_report_without_verp_counts_for_the_reply_it_returns(h: Harness) -> None:
    """Exim's shape to the plain address: the failed recipient and the returned
    mail's Message-ID (which only the recipient saw) name the reply."""
    for shape in ("exim.eml", "exim-plain.eml"):
        reply = help_to(h, "ann")
        text = dsn(reply, shape)
        if shape == "exim-plain.eml":  # no MIME part: its References name the reply
            text = text.replace(
                b"Subject: Mail delivery failed",
                b"References: " + reply.headers["message-id"].encode() + b"\r\nSubject: Mail delivery failed",
            )
        assert h.raw(text) == []
        assert h.last is not None and "bounced" in h.last.detail, h.last
    assert events(h) == 2


def test_admin_users_shows_a_bouncing_address(h: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from pbmserv_terrace.cli import admin

    for _ in range(3):
        bounce(h, help_to(h, "ann"))
    h.loop.run_until_complete(admin.users(h.db, argparse.Namespace(limit=50)))
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("ann") and "ann@players.test (bouncing)" in line for line in lines), lines
    assert any(line.startswith("ben") and "bouncing" not in line for line in lines), lines


# ------------------------------------------------------------------ helpers
def queue_reply(h: Harness, to_address: str) -> str:
    message_id = f"<{uuid.uuid4().hex}@terrace.test>"

    async def run() -> None:
        async with UnitOfWork(h.db) as uow:
            now = utcnow()
            uow.outbox.queue(message_id=message_id, recipient=to_address, subject="x", body="x\n",
                             next_attempt_at=now, created_at=now)  # fmt: skip
            await uow.commit()

    h.loop.run_until_complete(run())
    return message_id


def state_of(h: Harness, message_id: str) -> str:
    async def run() -> str:
        async with h.db.session() as s:
            return str((await s.execute(select(OutboxMessage.state).where(OutboxMessage.message_id == message_id))).scalar_one())

    return h.loop.run_until_complete(run())


def events(h: Harness) -> int:
    async def run() -> int:
        async with h.db.session() as s:
            return len((await s.execute(select(BounceEvent))).scalars().all())

    return h.loop.run_until_complete(run())


_ = (SERVER, User)
