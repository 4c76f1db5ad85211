"""Pure parts of the mail layer: building replies, reading UID SEARCH answers,
and the outbox senders (order per recipient, several at once)."""

from __future__ import annotations

import asyncio
import email
import email.policy
from datetime import datetime
from email.message import Message
from types import SimpleNamespace

import pytest

from pbmserv_terrace.app.outbox import OutboxSenders
from pbmserv_terrace.config import load_config
from pbmserv_terrace.mail.imap import ImapError, ImapMailbox
from pbmserv_terrace.mail.message import Outgoing, build_message
from pbmserv_terrace.store import Database, UnitOfWork, utcnow


def text(msg: Message) -> str:
    return str(msg.get_content()).replace("\r\n", "\n")  # type: ignore[attr-defined]


def reply(**kw: object) -> bytes:
    args = {"sender": "pbm@srv.test", "sender_name": "PBM Server", "recipient": "ann@x.test",
            "subject": "Terrace Board 101 bob", "body": "board\n", "message_id": "<r1@srv.test>",
            "in_reply_to": "<m1@x.test>", "date": datetime(2026, 1, 2, 3, 4, 5)}  # fmt: skip
    args.update(kw)
    return build_message(**args).as_bytes(policy=email.policy.SMTP)  # type: ignore[arg-type]


def test_reply_headers_and_plain_ascii_body():
    raw = reply()
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert msg["From"] == "PBM Server <pbm@srv.test>" and msg["To"] == "ann@x.test"
    assert msg["Message-ID"] == "<r1@srv.test>" and msg["In-Reply-To"] == msg["References"] == "<m1@x.test>"
    assert msg["Auto-Submitted"] == "auto-replied" and msg["Date"] == "Fri, 02 Jan 2026 03:04:05 -0000"
    assert msg["Content-Transfer-Encoding"] == "7bit" and text(msg) == "board\n"
    assert b"\r\n" in raw and b"\n\n" not in raw.replace(b"\r\n", b"")


def test_non_ascii_and_long_lines_are_encoded_and_decode_back():
    body = "Zug von Jörg ♜\n" + "x" * 1500 + "\n"
    msg = email.message_from_bytes(reply(subject="Terrace Board 101 jörg", body=body, sender_name="Spiel-Server ä"),
                                   policy=email.policy.default)  # fmt: skip
    assert msg["Subject"] == "Terrace Board 101 jörg" and msg["From"].addresses[0].display_name == "Spiel-Server ä"
    assert msg["Content-Transfer-Encoding"] == "quoted-printable" and text(msg) == body
    ascii_long = email.message_from_bytes(reply(body="y" * 1200 + "\n"), policy=email.policy.default)
    assert ascii_long["Content-Transfer-Encoding"] == "quoted-printable" and text(ascii_long) == "y" * 1200 + "\n"
    assert all(len(line) <= 998 for line in reply(body="y" * 5000).split(b"\r\n"))


@pytest.mark.parametrize("markup", ["<p>board</p>\n", "<p>Zug von J\u00f6rg \u265c</p>\n", "<p>" + "y" * 1200 + "</p>\n"])
def test_the_html_part_is_html_and_decodes_back(markup: str) -> None:
    msg = email.message_from_bytes(reply(html=markup, images=[("b@srv.test", b"\x89PNG")]), policy=email.policy.default)
    page = next(p for p in msg.walk() if p.get_content_type() == "text/html")
    assert text(page) == markup
    plain = markup.isascii() and len(markup) < 998
    assert page["Content-Transfer-Encoding"] == ("7bit" if plain else "quoted-printable")
    assert page.get_content_charset() == ("us-ascii" if plain else "utf-8")


def test_no_header_injection_through_any_value():
    raw = reply(subject="hi\r\nBcc: evil@x.test", in_reply_to="<a@b>\r\nBcc: evil@x.test", sender_name="S\nBcc: e@x")
    headers = raw.split(b"\r\n\r\n")[0]
    assert not any(line.lower().startswith(b"bcc") for line in headers.split(b"\r\n"))
    with pytest.raises(ValueError):
        reply(recipient="ann@x.test\r\nBcc: evil@x.test")


def test_uid_search_reading_ignores_untagged_news():
    lines = [b"57 EXISTS", b"3 EXPUNGE", b"2 4 9", b"1 RECENT", b"Search completed (0.001 + 0.000 secs)."]

    class Client:
        async def uid_search(self, *_: object) -> SimpleNamespace:
            return SimpleNamespace(result="OK", lines=lines)

    async def both() -> tuple[list[int], list[int]]:
        inbound = ImapMailbox.__new__(ImapMailbox)
        inbound.lost = asyncio.Event()
        first = await inbound._uids(Client())  # type: ignore[arg-type]
        lines[2] = b"SEARCH 5 6"
        return first, await inbound._uids(Client())  # type: ignore[arg-type]

    assert asyncio.run(both()) == ([2, 4, 9], [5, 6])


def test_imap_command_fails_at_once_when_the_connection_drops():
    async def run() -> str:
        inbound = ImapMailbox.__new__(ImapMailbox)
        inbound.lost = asyncio.Event()
        never = asyncio.get_running_loop().create_future()  # aioimaplib's command, left waiting
        asyncio.get_running_loop().call_later(0.05, inbound.lost.set)
        try:
            await asyncio.wait_for(inbound._do(never, "NOOP"), 5)
        except ImapError as exc:
            assert never.cancelled()
            return str(exc)
        return "no error"

    assert "closed the connection during NOOP" in asyncio.run(run())


class SlowDelivery:
    """Records when each reply starts and ends; several may be in flight."""

    size = 3

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.in_flight = self.peak = 0

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        message = message.message if isinstance(message, Outgoing) else message
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.events.append(("start", recipient, str(message["Subject"])))
        await asyncio.sleep(0.01)
        self.events.append(("end", recipient, str(message["Subject"])))
        self.in_flight -= 1

    async def close(self) -> None:
        return None


def test_senders_keep_each_recipients_order_and_send_several_at_once(db_url: str):
    async def run() -> SlowDelivery:
        db = Database(db_url)
        await db.migrate()
        now = utcnow()
        async with UnitOfWork(db) as uow:
            for i in range(24):
                uow.outbox.queue(message_id=f"<o{i}@srv.test>", recipient=f"p{i % 4}@x.test",
                                             subject=f"reply {i:02d}", body="b\n", state="pending", attempts=0,
                                             next_attempt_at=now, created_at=now)  # fmt: skip
            await uow.commit()
        delivery = SlowDelivery()
        cfg = load_config(None, {"PBMSERV_DATABASE_URL": db_url, "PBMSERV_ADDRESS": "pbm@srv.test"})
        result = await OutboxSenders(db, delivery, cfg, batch=2).drain()
        assert result.sent == 24
        async with UnitOfWork(db) as uow:
            assert {r.state for r in await uow.outbox.by_state("sent")} == {"sent"}
            assert await uow.outbox.pending_count() == 0
        await db.close()
        return delivery

    delivery = asyncio.run(run())
    assert 1 < delivery.peak <= 3
    for p in range(4):
        mine = [subject for kind, to, subject in delivery.events if to == f"p{p}@x.test" and kind == "start"]
        assert mine == sorted(mine) and len(mine) == 6
        # never two replies to one recipient at once
        depth = 0
        for kind, to, _ in delivery.events:
            if to == f"p{p}@x.test":
                depth += 1 if kind == "start" else -1
                assert depth <= 1
