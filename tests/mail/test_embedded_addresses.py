"""The embedded listener reads plain addresses in MAIL FROM and RCPT TO itself
(issue 18): whatever the argument, it gives what aiosmtpd's own parser gives,
and where that parser raises (a lone ``<``), a malformed address."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiosmtpd.smtp import SMTP
from hypothesis import example, given, settings

from pbmserv_terrace.mail.embedded import SmtpListener, SmtpSession

from .addresses import values


class _Quiet:
    """A handler with no hooks: only the parsing is looked at."""


@given(values(14))
@settings(max_examples=1500, deadline=None)
@example("<ann@x.test>")
@example(" <ann.b+c@mail.x.test> SIZE=1234 BODY=8BITMIME")
@example("<a@b>(comment) SIZE=1")
@example("<" + "l" * 65 + "@x.test>")
@example("<>")
@example("<")
@example("RCPT TO:<")
def test_an_address_is_read_as_aiosmtpd_reads_it(arg: str) -> None:
    ours = SmtpSession(_Quiet())
    try:
        theirs: object = SMTP._getaddr(ours, arg)  # aiosmtpd's own parser: the reference
    except (IndexError, ValueError):
        theirs = (None, None)  # (aiosmtpd answers "500 Error: (IndexError) ..." and logs a traceback)
    assert ours.read_address(arg) == theirs


def test_an_address_the_parser_cannot_read_is_refused_and_the_session_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """Through the real listener: ``MAIL FROM:<`` and ``RCPT TO:<`` are answered
    553 (malformed address), nothing is logged as an error, and the same
    connection then sends a mail that is handed over."""
    handed: list[bytes] = []

    async def handle(raw: bytes) -> None:
        handed.append(raw)

    async def session() -> list[str]:
        inbound = SmtpListener("127.0.0.1", 0, handle)
        await inbound.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", inbound.port)
        answers = []

        async def say(line: str) -> None:
            if line:
                writer.write(line.encode() + b"\r\n")
            reply = await asyncio.wait_for(reader.readline(), 10)
            while reply[3:4] == b"-":
                reply = await asyncio.wait_for(reader.readline(), 10)
            answers.append(reply.decode().strip())

        for line in ("", "EHLO x.test", "MAIL FROM:<", "MAIL FROM:<ann@x.test>", "RCPT TO:<", "RCPT TO:<pbm@srv.test>", "DATA"):
            await say(line)
        writer.write(b"Subject: help\r\nMessage-ID: <h1@x.test>\r\n\r\nhelp\r\n.\r\n")
        await say("")
        await say("QUIT")
        writer.close()
        await inbound.stop()
        return answers

    with caplog.at_level(logging.ERROR):
        answers = asyncio.run(session())
    codes = [a[:3] for a in answers]
    assert codes == ["220", "250", "553", "250", "553", "250", "354", "250", "221"], answers
    assert len(handed) == 1 and b"Message-ID: <h1@x.test>" in handed[0]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_the_local_part_limit_still_holds() -> None:
    ours = SmtpSession(_Quiet())
    ours.local_part_limit = 64
    long = "<" + "l" * 65 + "@x.test> SIZE=1"
    assert ours.read_address(long) == (None, None) == SMTP._getaddr(ours, long)
    assert ours.read_address("<" + "l" * 64 + "@x.test>") == ("l" * 64 + "@x.test", "")
