"""A reply is serialised once, cheaply, into the bytes every delivery sends
(issue 18): :func:`message_bytes` gives exactly what the ``email`` package's
compat32 generator gives, the Maildir gets those bytes, SMTP the same bytes with
CRLF line ends, and a board mail's two copies share the picture's encoding."""

from __future__ import annotations

import asyncio
import email
import email.policy
import random
from datetime import datetime
from email.message import Message
from pathlib import Path
from typing import Any

import aiosmtplib
import aiosmtplib.protocol as aiosmtplib_protocol
import pytest
from aiosmtpd.controller import Controller
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmserv_terrace.config import load_config
from pbmserv_terrace.mail.delivery import MaildirDelivery, SmtpDelivery, transmit
from pbmserv_terrace.mail.message import COMPAT32, Outgoing, build_message, message_bytes, smtp_data
from pbmserv_terrace.testing.postgres import free_port

PNG = bytes(range(256)) * 90  # stands for a picture: 23 kB, any bytes


def reply(**kw: object) -> Message:
    args = {"sender": "pbm@srv.test", "sender_name": "PBM Server", "recipient": "ann@x.test",
            "subject": "Terrace Board 101 bob **", "body": "board\n", "message_id": "<r1@srv.test>",
            "in_reply_to": "<m1@x.test>", "date": datetime(2026, 1, 2, 3, 4, 5),
            "reply_to": "pbm+aaaaaziaaaaqaaeyicput25iqaq5gfy@srv.test"}  # fmt: skip
    args.update(kw)
    return build_message(**args)  # type: ignore[arg-type]


BOARD = {"html": "<p>Board</p>\n<img src='cid:pic@srv'>\n" + "<p>line</p>\n" * 200, "images": [("pic@srv", PNG)]}
REPLIES = {
    "plain": {},
    "board mail": BOARD,
    "non-ASCII and long lines": {
        "subject": "Zug von Jörg ♜",
        "body": "Grüße\n" + "x" * 1500 + "\n",
        "sender_name": "Spiel-Server ä",
        "html": "<p>ä</p>",
        "images": [("p@s", PNG)],
    },
    "long headers fold": {
        "subject": "word " * 60,
        "sender_name": "A very long server name " * 4,
        "in_reply_to": "<" + "m" * 120 + "@x.test>",
    },
    "line ends of every kind, From lines": {
        "body": "a\r\nb\rc\nFrom here\n\n.\n",
        "html": "x\r\ny\rz\nFrom t",
        "images": [("p@s", b"")],
    },
    "no Reply-To, no In-Reply-To": {"reply_to": None, "in_reply_to": None},
}


@pytest.mark.parametrize("kind", list(REPLIES))
def test_message_bytes_are_the_email_packages_bytes(kind: str) -> None:
    msg = reply(**REPLIES[kind])
    data = message_bytes(msg)
    assert data == msg.as_bytes(policy=email.policy.compat32)
    assert data == msg.as_bytes()  # the message's own policy is compat32's too
    parsed = email.message_from_bytes(data, policy=email.policy.default)
    assert parsed["Message-ID"] == "<r1@srv.test>" and not parsed.defects


def test_the_short_cut_folds_headers_as_compat32_does() -> None:
    rng = random.Random(18)
    alphabet = "abcXYZ019 <>@.;,=\"'()-_+/:\t  "
    values = ["", " ", "a", "a  b", " lead", "trail ", "x" * 76, "y" * 90, "z " * 40, "<a@b> (c)"]
    values += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 120))) for _ in range(3000)]
    # one long word, as a long Message-ID in In-Reply-To: compat32 moves it to a line of its own
    word = "".join(chr(c) for c in range(33, 127))
    values += ["".join(rng.choice(word) for _ in range(rng.randrange(50, 200))) for _ in range(1000)]
    for value in values:
        for name in ("To", "Subject", "Message-ID", "X-Auto-Response-Suppress"):
            for linesep in ("\n", "\r\n"):
                ours, stdlib = COMPAT32.clone(linesep=linesep), email.policy.compat32.clone(linesep=linesep)
                assert ours.fold_binary(name, value) == stdlib.fold_binary(name, value), (name, value)


_TEXT = st.lists(st.sampled_from(["a", " ", "\n", "\r", "\r\n", "From ", ".", "ä", "♜", "=", ";", "x" * 90]), max_size=30).map(
    "".join
)


@given(
    subject=_TEXT, body=_TEXT, sender_name=_TEXT, html=st.none() | _TEXT,
    message_id=st.text("abcdef0123456789@<>.-", min_size=1, max_size=100),
    in_reply_to=st.none() | st.text("abz09@<>.; ", max_size=150),
    images=st.lists(st.tuples(st.text("abc@.", min_size=1, max_size=20), st.binary(max_size=200)), max_size=2),
)  # fmt: skip
@settings(max_examples=300, deadline=None)
def test_any_reply_is_written_as_the_email_package_writes_it(**kw: Any) -> None:
    """:func:`message_bytes` writes the messages :func:`build_message` makes
    itself: byte for byte what the generator writes, whatever the text."""
    msg = reply(**kw)
    assert message_bytes(msg) == msg.as_bytes(policy=email.policy.compat32)


def test_shapes_it_does_not_write_itself_go_through_the_generator() -> None:
    empty = Message(policy=COMPAT32)
    empty["Content-Type"] = 'multipart/mixed; boundary="b1"'
    empty.set_payload([])
    with_preamble = reply(**BOARD)
    with_preamble.preamble, with_preamble.epilogue = "This is MIME.", "bye"
    forwarded = Message(policy=COMPAT32)
    forwarded["Content-Type"] = 'multipart/mixed; boundary="b2"'
    inner = Message(policy=COMPAT32)
    inner["Content-Type"] = "message/rfc822"
    inner.attach(reply())
    forwarded.attach(inner)
    raw = email.message_from_bytes("Subject: x\n\nJ\xf6rg\n".encode("latin-1"), policy=COMPAT32)  # surrogates
    unix = reply()
    unix.set_unixfrom("From pbm@srv.test Thu Jan  1 00:00:00 2026")
    no_boundary = Message(policy=COMPAT32)  # (the generator makes one up, and sets it: as_bytes then has it too)
    no_boundary["Content-Type"] = 'multipart/mixed; boundary=""'
    no_boundary.attach(reply())
    shapes = (empty, with_preamble, forwarded, raw, unix, no_boundary, reply(**{**BOARD, "html": "<p>ä</p>"}))
    for msg in shapes:
        assert message_bytes(msg) == msg.as_bytes(policy=email.policy.compat32)


@given(
    st.text('abc ;,="\t', max_size=60), st.text('abc ;,="\t', max_size=60), st.text("0123456789abcdef", min_size=24, max_size=24)
)
@settings(max_examples=500, deadline=None)
def test_a_boundary_is_folded_as_compat32_folds_it(before: str, after: str, hex_digits: str) -> None:
    value = f"{before}pbmserv-{hex_digits}{after}"
    for name in ("Content-Type", "X-Long-Header-Name-For-Folding"):
        for linesep in ("\n", "\r\n"):
            ours, stdlib = COMPAT32.clone(linesep=linesep), email.policy.compat32.clone(linesep=linesep)
            assert ours.fold_binary(name, value) == stdlib.fold_binary(name, value), (name, value)


def test_a_board_mails_copies_share_the_pictures_encoding() -> None:
    first, second = reply(**BOARD), reply(**BOARD, recipient="bob@x.test", message_id="<r2@srv.test>")
    pictures = [m.get_payload(1).get_payload(1) for m in (first, second)]
    assert pictures[0].get_payload() is pictures[1].get_payload()  # encoded once
    assert pictures[0].get_payload(decode=True) == PNG


def test_the_maildir_gets_the_bytes_and_smtp_the_same_with_crlf(tmp_path: Path) -> None:
    msg = reply(**BOARD)
    out = Outgoing.of(msg, "pbm@srv.test")
    received: list[tuple[str, list[str], bytes]] = []

    class Handler:
        async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
            received.append((envelope.mail_from, envelope.rcpt_tos, envelope.original_content))  # type: ignore[attr-defined]
            return "250 OK"

    port = free_port()
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        cfg = load_config(None, {"PBMSERV_ADDRESS": "pbm@srv.test", "PBMSERV_SMTP_HOST": "127.0.0.1",
                                 "PBMSERV_SMTP_PORT": str(port), "PBMSERV_SMTP_TLS": "none"})  # fmt: skip

        async def run() -> None:
            smtp = SmtpDelivery(cfg)
            await smtp.deliver(out, "ann@x.test")
            await smtp.deliver(msg, "ann@x.test")  # a plain Message: aiosmtplib serialises it
            await smtp.close()
            await MaildirDelivery(tmp_path).deliver(out, "Ann@X.test")

        asyncio.run(run())
    finally:
        controller.stop()
    [written] = (tmp_path / "ann@x.test" / "new").iterdir()
    # as a delivering MTA writes it: the envelope sender as Return-Path, then the bytes
    assert written.read_bytes() == out.delivered() == b"Return-Path: <pbm@srv.test>\n" + out.data
    assert [(f, r) for f, r, _ in received] == [("pbm@srv.test", ["ann@x.test"])] * 2
    assert received[0][2] == out.data.replace(b"\n", b"\r\n")
    assert received[0][2] == received[1][2]  # the same bytes either way


@given(st.lists(st.sampled_from([b"a", b".", b"\r", b"\n", b"\r\n", b".\n", b"x.y"]), max_size=40).map(b"".join))
@settings(max_examples=500, deadline=None)
def test_smtp_data_is_what_aiosmtplib_sends_for_the_same_bytes(data: bytes) -> None:
    """Line ends, dot-stuffing and the final dot, byte for byte as aiosmtplib's
    DATA puts them (its normalisation, then its dot-stuffing regex)."""
    theirs = aiosmtplib_protocol.PERIOD_REGEX.sub(b"..", aiosmtplib_protocol.normalize_message_line_endings(data))
    assert smtp_data(data) == theirs + b".\r\n"


class Answers:
    """An SMTP server's handler that keeps what it was given and answers RCPT
    TO and DATA as told (``rcpt``, ``data``: reply lines; empty: accept)."""

    def __init__(self) -> None:
        self.rcpt, self.data = "", ""
        self.received: list[tuple[str, list[str], list[str], bytes]] = []
        self.commands: list[str] = []

    async def handle_RCPT(self, server: object, session: object, envelope: Any, address: str, options: list[str]) -> str:
        self.commands.append("RCPT")
        if self.rcpt:
            return self.rcpt
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: object, session: object, envelope: Any) -> str:
        self.commands.append("DATA")
        if self.data:
            return self.data
        self.received.append((envelope.mail_from, envelope.rcpt_tos, envelope.mail_options, envelope.original_content))
        return "250 OK"

    async def handle_RSET(self, server: object, session: object, envelope: Any) -> str:
        self.commands.append("RSET")
        return "250 OK"


def test_smtp_sends_a_reply_as_sendmail_would_and_maps_refusals_the_same() -> None:
    """The reply's transaction on a real SMTP server (aiosmtpd): the same bytes
    and envelope as aiosmtplib's ``sendmail`` with SIZE, and refusals raise what
    ``sendmail`` raises (so the outbox sorts them the same), the envelope reset."""
    msg = reply(**BOARD, body="board\n.\n..two dots\n")  # lines that need dot-stuffing
    out = Outgoing.of(msg, "pbm@srv.test")
    answers = Answers()
    port = free_port()
    controller = Controller(answers, hostname="127.0.0.1", port=port)
    controller.start()

    async def refused(client: aiosmtplib.SMTP) -> BaseException:
        try:
            await transmit(client, out, "ann@x.test")
        except Exception as exc:
            return exc
        raise AssertionError("not refused")

    try:

        async def run() -> None:
            client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port)
            await client.connect()
            await transmit(client, out, "ann@x.test")
            await client.sendmail("pbm@srv.test", ["ann@x.test"], out.data)
            ours, theirs = answers.received
            assert ours == theirs  # sender, recipients, MAIL options (SIZE), bytes
            crlf = out.data.replace(b"\n", b"\r\n")
            assert ours[2] == [f"SIZE={len(crlf)}"]  # (aiosmtpd writes the keyword in capitals)
            assert ours[3] == crlf  # the dots as they were, after un-stuffing

            answers.rcpt = "550 5.1.1 no such user"
            permanent = await refused(client)
            assert isinstance(permanent, aiosmtplib.SMTPRecipientsRefused)
            assert [r.code for r in permanent.recipients] == [550]
            assert answers.commands[-2:] == ["RCPT", "RSET"]

            answers.rcpt, answers.data = "", "451 4.3.0 try later"
            later = await refused(client)
            assert isinstance(later, aiosmtplib.SMTPDataError) and later.code == 451
            assert answers.commands[-2:] == ["DATA", "RSET"]

            answers.data = ""
            await transmit(client, out, "ann@x.test")  # the connection goes on
            assert answers.received[-1] == ours
            await client.quit()

        asyncio.run(run())
    finally:
        controller.stop()
