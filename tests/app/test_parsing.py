"""Big mails are read in a worker process (issue 36: off the event loop), small
ones in place; both read the same, and a dead worker loses no mail."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from pbmserv_terrace.app.parsing import READER_NICE, MailReader, read_whole
from pbmserv_terrace.mail.message import parse_message


def mail(body: str, subject: str = "help") -> bytes:
    return (
        f"From: Ann <ann@players.test>\r\nTo: pbmserv@localhost\r\nSubject: {subject}\r\n"
        f"Message-ID: <m1@players.test>\r\n\r\n{body}\r\n"
    ).encode()


BIG = mail("d2-e3\r\n" + "a comment line with change password ann OLD NEW in it\r\n" * 4000, subject="")


def test_a_big_mail_is_read_in_another_process_the_same_as_in_place() -> None:
    reader = MailReader(inline_bytes=1024)
    try:
        here = parse_message(BIG)
        there = asyncio.run(reader.read(BIG))
        (pid,) = reader.workers()
        # nicer than this process (capped at 19: the suite itself may run niced)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + READER_NICE)
        assert there == here
        assert there.parsed == here.parsed
        assert there.reply == here.reply
        # what the worker derived travels with the mail: nothing left to compute here
        assert {"parsed", "reply"} <= set(vars(there))
    finally:
        reader.close()


def test_a_small_mail_is_read_in_place() -> None:
    reader = MailReader()
    small = mail("help")
    assert asyncio.run(reader.read(small)) == parse_message(small)
    assert reader.workers() == []


def test_a_dead_worker_loses_no_mail() -> None:
    reader = MailReader(inline_bytes=1024)

    async def go() -> None:
        first = await reader.read(BIG)
        (pid,) = reader.workers()
        os.kill(pid, signal.SIGKILL)  # as the OOM killer would
        await asyncio.sleep(0.2)
        assert await reader.read(BIG) == first  # read in place while the pool is replaced
        assert await reader.read(BIG) == first  # and by a new worker after

    try:
        asyncio.run(go())
    finally:
        reader.close()


@pytest.mark.parametrize("body", ["", "d2-e3", "x\r\n" * 10])
def test_read_whole_is_parse_message(body: str) -> None:
    assert read_whole(mail(body)) == parse_message(mail(body))
