"""The benchmarks' discarding relay (``python -m pbmserv_terrace.testing.dovecot
PORT --discard``): a plain SMTP sink that takes every mail, answers each command
as a server would, and reports each mail that answers another (its In-Reply-To)."""

from __future__ import annotations

import asyncio
import smtplib
import subprocess
import sys

import aiosmtplib


def _mail(answered: str, lines: int) -> str:
    body = "\r\n".join(f".{i} " + "x" * 70 for i in range(lines))  # dot-stuffed on the wire
    return f"From: a@players.test\r\nTo: b@players.test\r\nSubject: s\r\nIn-Reply-To: {answered}\r\n\r\n{body}\r\n"


def test_the_sink_takes_mails_from_both_clients_and_reports_what_they_answer() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbmserv_terrace.testing.dovecot", "1", "--discard"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        port = int(proc.stdout.readline().split()[1])
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as smtp:
            assert smtp.ehlo()[0] == 250 and smtp.has_extn("size")
            smtp.sendmail("a@players.test", ["b@players.test"], _mail("<m1@players.test>", 600))
            smtp.sendmail("a@players.test", ["b@players.test"], _mail("<m2@players.test>", 1))
            assert smtp.noop()[0] == 250 and smtp.rset()[0] == 250

        async def kept_open() -> None:
            client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port, timeout=10)
            await client.connect()
            for n in (3, 4, 5):
                await client.sendmail("a@players.test", ["b@players.test"], _mail(f"<m{n}@players.test>", 500))
            await client.quit()

        asyncio.run(kept_open())
        out, _ = proc.communicate(timeout=10)  # (the sink stops at the end of its stdin)
        assert [line.split()[1] for line in out.splitlines()] == [f"<m{n}@players.test>" for n in range(1, 6)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
