"""The LMTP listener (issue 43): LHLO instead of HELO/EHLO, one reply per
recipient after DATA (each recipient's outcome is the mail's: 250 after the
handler returned, 451 when it raised), the embedded listener's caps, and a UNIX
socket left by a stopped server replaced while a live one is refused."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from pbmserv_terrace.mail import embedded
from pbmserv_terrace.mail.embedded import MAX_RECIPIENTS
from pbmserv_terrace.mail.lmtp import LmtpListener, socket_path

Dialogue = Callable[[str], Awaitable[list[str]]]

MAIL = "From: ann@players.test\r\nSubject: terrace show 101\r\nMessage-ID: <m1@players.test>\r\n\r\nhello\r\n.. a dot\r\n"


async def connect(listener: LmtpListener) -> tuple[Dialogue, asyncio.StreamWriter, list[str]]:
    """A client: ``say(line)`` sends a line (none for '') and returns the reply's lines."""
    if listener.path:
        reader, writer = await asyncio.open_unix_connection(listener.path)
    else:
        reader, writer = await asyncio.open_connection(listener.host, listener.port)

    async def read_reply() -> list[str]:
        lines = []
        while True:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode().rstrip("\r\n")
            lines.append(line)
            if line[3:4] != "-":
                return lines

    async def say(line: str) -> list[str]:
        if line:
            writer.write(line.encode() + b"\r\n")
        return await read_reply()

    async def replies(n: int) -> list[str]:
        return [line for _ in range(n) for line in await read_reply()]

    greeting = await say("")
    say.replies = replies  # type: ignore[attr-defined]
    return say, writer, greeting


def run(listen: str, body: Callable[[LmtpListener, list[bytes]], Awaitable[None]], fail: bool = False) -> list[bytes]:
    handed: list[bytes] = []

    async def handle(raw: bytes) -> None:
        if fail:
            raise RuntimeError("database unreachable")
        handed.append(raw)

    async def main() -> None:
        listener = LmtpListener(listen, handle, socket_mode=0o600)
        await listener.start()
        try:
            await body(listener, handed)
        finally:
            await listener.stop()

    asyncio.run(main())
    return handed


def test_socket_path_reads_both_forms() -> None:
    assert socket_path("unix:/run/pbmserv/lmtp") == "/run/pbmserv/lmtp"
    assert socket_path("/run/pbmserv/lmtp") == "/run/pbmserv/lmtp"
    assert socket_path("127.0.0.1:8024") is None


@pytest.mark.parametrize("where", ["unix", "tcp"])
def test_each_recipient_gets_the_mails_outcome_after_it_was_handled(tmp_path: Path, where: str) -> None:
    listen = f"unix:{tmp_path / 'lmtp.sock'}" if where == "unix" else "127.0.0.1:0"

    async def body(listener: LmtpListener, handed: list[bytes]) -> None:
        say, writer, greeting = await connect(listener)
        assert greeting[0].startswith("220")
        assert (await say("EHLO mta.test"))[0].startswith("500")  # LMTP has no EHLO
        assert (await say("HELO mta.test"))[0].startswith("500")
        assert (await say("LHLO mta.test"))[-1].startswith("250")
        assert (await say("MAIL FROM:<ann@players.test>"))[0].startswith("250")
        assert (await say("RCPT TO:<pbmserv@terrace.test>"))[0].startswith("250")
        assert (await say("RCPT TO:<pbmserv+KEY@terrace.test>"))[0].startswith("250")
        assert (await say("DATA"))[0].startswith("354")
        writer.write(MAIL.encode() + b".\r\n")
        outcomes = await say.replies(2)  # type: ignore[attr-defined]
        assert [line[:3] for line in outcomes] == ["250", "250"], outcomes
        assert len(handed) == 1  # one mail, handed over before the replies
        assert (await say("QUIT"))[0].startswith("221")
        writer.close()

    handed = run(listen, body)
    assert handed == [
        b"X-Original-To: pbmserv@terrace.test\r\nX-Original-To: pbmserv+KEY@terrace.test\r\n"
        + MAIL.replace("\r\n.. a dot", "\r\n. a dot").encode()
    ]
    if where == "unix":
        assert not (tmp_path / "lmtp.sock").exists()  # removed at the stop


def test_a_mail_that_could_not_be_handled_is_451_for_each_recipient(tmp_path: Path) -> None:
    async def body(listener: LmtpListener, handed: list[bytes]) -> None:
        say, writer, _ = await connect(listener)
        await say("LHLO mta.test")
        await say("MAIL FROM:<ann@players.test>")
        for i in range(3):
            assert (await say(f"RCPT TO:<pbmserv+{i}@terrace.test>"))[0].startswith("250")
        await say("DATA")
        writer.write(MAIL.encode() + b".\r\n")
        outcomes = await say.replies(3)  # type: ignore[attr-defined]
        assert [line[:3] for line in outcomes] == ["451"] * 3, outcomes
        writer.close()

    run(f"unix:{tmp_path / 'lmtp.sock'}", body, fail=True)


def test_recipients_past_the_cap_are_refused(tmp_path: Path) -> None:
    async def body(listener: LmtpListener, handed: list[bytes]) -> None:
        say, writer, _ = await connect(listener)
        await say("LHLO mta.test")
        await say("MAIL FROM:<ann@players.test>")
        for i in range(MAX_RECIPIENTS):
            assert (await say(f"RCPT TO:<p{i}@terrace.test>"))[0].startswith("250")
        assert (await say("RCPT TO:<one-more@terrace.test>"))[0].startswith("452")
        await say("DATA")
        writer.write(MAIL.encode() + b".\r\n")
        outcomes = await say.replies(MAX_RECIPIENTS)  # type: ignore[attr-defined]
        assert {line[:3] for line in outcomes} == {"250"} and len(outcomes) == MAX_RECIPIENTS
        writer.close()

    handed = run(f"unix:{tmp_path / 'lmtp.sock'}", body)
    assert len(handed) == 1 and handed[0].count(b"X-Original-To:") == MAX_RECIPIENTS


def test_a_stale_socket_is_replaced_and_a_live_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "lmtp.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens: a killed server's leftover
    assert stat.S_ISSOCK(os.lstat(path).st_mode)

    async def body(listener: LmtpListener, handed: list[bytes]) -> None:
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        second = LmtpListener(f"unix:{path}", _never)
        with pytest.raises(OSError, match="another server is listening"):
            await second.start()
        await second.stop()  # (a refused start's stop leaves the live server's socket alone)
        assert path.exists()
        _, writer, greeting = await connect(listener)  # the first one still answers
        assert greeting[0].startswith("220")
        writer.close()

    run(f"unix:{path}", body)


async def _never(raw: bytes) -> None:
    raise AssertionError("not reached")


def test_a_mail_over_the_size_cap_is_refused_for_each_recipient_and_the_session_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "MAX_MESSAGE", 4096)

    async def body(listener: LmtpListener, handed: list[bytes]) -> None:
        say, writer, _ = await connect(listener)
        await say("LHLO mta.test")
        for size in (10_000, 100):
            await say("MAIL FROM:<ann@players.test>")
            await say("RCPT TO:<pbmserv@terrace.test>")
            await say("RCPT TO:<pbmserv+K@terrace.test>")
            assert (await say("DATA"))[0].startswith("354")
            writer.write(MAIL.encode() + b"x" * size + b"\r\n.\r\n")
            outcomes = await say.replies(2)  # type: ignore[attr-defined]
            assert [line[:3] for line in outcomes] == (["552", "552"] if size > 4096 else ["250", "250"]), outcomes
        writer.close()

    handed = run(f"unix:{tmp_path / 'lmtp.sock'}", body)
    assert len(handed) == 1 and handed[0].endswith(b"x" * 100 + b"\r\n")
