"""The embedded listener reads a mail's DATA in one search for its end (issue 36):
what it hands over is byte for byte what aiosmtpd's line-by-line reader gives,
the size limit still answers 552 with the session going on, and the work does
not grow with the number of lines (aiosmtpd spent 22 s and 1.1 GB of the event
loop on 12 MB of empty lines)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiosmtpd.smtp import SMTP, Envelope, Session
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pbmserv_terrace.mail.embedded import SmtpListener

from .work import counting

HEAD = b"X-Original-To: pbmserv@localhost\r\n"


class _Capture:
    def __init__(self) -> None:
        self.got: list[bytes] = []

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.got.append(envelope.original_content or b"")
        return "250 OK"


async def dialogue(port: int, data: bytes, *, extra: bytes = b"") -> list[bytes]:
    """One client session, a command at a time; ``data`` is sent after 354 as it is
    (already dot-stuffed, with its end); ``extra`` after that answer.  The answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers = [await reader.readline()]

    async def say(line: bytes) -> None:
        writer.write(line)
        await writer.drain()
        while True:
            answer = await reader.readline()
            answers.append(answer)
            if answer[3:4] != b"-":
                return

    await say(b"EHLO client.test\r\n")
    await say(b"MAIL FROM:<ann@x.test>\r\n")
    await say(b"RCPT TO:<pbmserv@localhost>\r\n")
    await say(b"DATA\r\n")
    await say(data)
    if extra:
        await say(extra)
    await say(b"QUIT\r\n")
    writer.close()
    return answers


async def both(run: Callable[[int, int, list[bytes], _Capture], Awaitable[None]], limit: int = 12 * 1024 * 1024) -> None:
    ours: list[bytes] = []

    async def handle(raw: bytes) -> None:
        ours.append(raw)

    inbound = SmtpListener("127.0.0.1", 0, handle)
    await inbound.start()
    capture = _Capture()
    theirs = await asyncio.get_running_loop().create_server(
        lambda: SMTP(capture, data_size_limit=limit, enable_SMTPUTF8=True), "127.0.0.1", 0
    )
    try:
        await run(inbound.port, theirs.sockets[0].getsockname()[1], ours, capture)
    finally:
        theirs.close()
        await inbound.stop()


LINES = st.lists(
    st.sampled_from([b"", b".", b"..", b"...", b"a.b", b" .", b"x" * 5, b"\xc3\xa9", b".\r", b"a\rb", b"a\nb", b"-- "]),
    max_size=12,
)


@given(LINES)
@settings(max_examples=120, deadline=None)
@example([])
@example([b"."])
@example([b"", b""])
def test_a_mail_is_handed_over_as_aiosmtpd_reads_it(lines):
    stuffed = b"".join((b"." + line if line.startswith(b".") else line) + b"\r\n" for line in lines) + b".\r\n"

    async def run(our_port: int, their_port: int, ours: list[bytes], capture: _Capture) -> None:
        a = await dialogue(our_port, stuffed)
        b = await dialogue(their_port, stuffed)
        assert [x[:3] for x in a] == [x[:3] for x in b]
        assert ours == [HEAD + capture.got[0]]
        assert capture.got[0] == b"".join(line + b"\r\n" for line in lines)

    asyncio.run(both(run))


def test_over_the_size_limit_is_552_and_the_session_goes_on():
    async def run(our_port: int, their_port: int, ours: list[bytes], capture: _Capture) -> None:
        big = (b"y" * 998 + b"\r\n") * 13_000 + b".\r\n"  # 13 MB
        answers = await dialogue(our_port, big, extra=b"RSET\r\n")
        assert answers[-3].startswith(b"552") and answers[-2].startswith(b"250") and ours == []
        # right at the end of one read and the start of the next: the end is still found
        for size in (65_533, 65_534, 65_535, 65_536, 131_070):
            data = b"z" * size + b"\r\n.\r\n"
            assert (await dialogue(our_port, data))[-2].startswith(b"250")
        assert [len(m) - len(HEAD) for m in ours] == [65_535, 65_536, 65_537, 65_538, 131_072]

    asyncio.run(both(run))


def test_a_pipelined_command_after_the_end_is_read_as_a_command():
    async def run(our_port: int, their_port: int, ours: list[bytes], capture: _Capture) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", our_port)
        await reader.readline()
        writer.write(b"HELO c\r\nMAIL FROM:<a@x.test>\r\nRCPT TO:<pbmserv@localhost>\r\nDATA\r\n")
        writer.write(b"hi\r\n.\r\nMAIL FROM:<b@x.test>\r\nRCPT TO:<pbmserv@localhost>\r\nDATA\r\n.\r\nQUIT\r\n")
        await writer.drain()
        text = (await asyncio.wait_for(reader.read(), 30)).decode()
        assert text.count("250 2.0.0 OK: processed") == 2 and text.rstrip().endswith("Bye")
        assert ours == [HEAD + b"hi\r\n", HEAD]

    asyncio.run(both(run))


def test_the_work_does_not_grow_with_the_number_of_lines():
    """Python calls while 200,000 empty lines are received: a handful per 64 kB
    read, not several per line (aiosmtpd's reader made ~10 per line)."""

    async def run(our_port: int, their_port: int, ours: list[bytes], capture: _Capture) -> None:
        data = b"\r\n" * 200_000 + b".\r\n"
        with counting() as count:
            await dialogue(our_port, data)
        assert len(ours) == 1 and len(ours[0]) == len(HEAD) + 400_000
        assert count[0] < 20_000, count

    asyncio.run(both(run))
