"""The floor of bench/e2e.py: a stand-in for ``serve`` that does only the mail
work every server on this path must do, so that the closed loop's figure with it
is what this box allows whatever the server costs (``bench/e2e.py --floor``).

For every move mail in the server's INBOX it does what ``serve`` does with the
mail servers, and nothing else: it reads the mail over IMAP (aioimaplib, ``UID
FETCH … BODY.PEEK[]`` of every new mail at once, IDLE in between), sends the two
players a board reply each over SMTP (aiosmtplib, ``--connections`` kept-open
connections, as ``smtp.connections``), and moves the mails to ``processed``
(``UID MOVE`` of the set).  No database, no rules, no rendering: each reply is
the same real board mail (the seeded challenge's, composed once at the start by
the outbox's own composer: text, HTML and the board picture, ~30 kB), its
recipient, Message-ID and In-Reply-To put in by byte substitution.

Its own CPU is printed by bench/e2e.py in serve's place; what the rest of the box
spends then (Dovecot, the relay, the players, PostgreSQL idle) is the part no
server can save.

Run by bench/e2e.py: python bench/floor.py IMAP_PORT SMTP_PORT ADDRESS PASSWORD DATABASE_URL [--connections 4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import signal
from email.parser import BytesHeaderParser

import aioimaplib
import aiosmtplib
from sqlalchemy import select

from pbmserv_terrace.app.compose import to_email
from pbmserv_terrace.config import load_config
from pbmserv_terrace.mail.imap import fetched_messages
from pbmserv_terrace.mail.message import message_bytes
from pbmserv_terrace.store import Database, OutboxMessage

TO, MID, IRT = b"floor-recipient@players.test", b"<floor-message-id@bench.test>", b"<floor-in-reply-to@players.test>"
NEWLINE = b"\n"


async def template(url: str, address: str) -> bytes:
    """A real board mail's bytes (the last seeded one: a new board with its
    picture), with placeholders for what differs from reply to reply."""
    db = Database(url)
    try:
        async with db.reading() as session:
            row = (
                await session.execute(
                    select(OutboxMessage)
                    .where(OutboxMessage.html.is_not(None), OutboxMessage.subject.contains("Board"))
                    .order_by(OutboxMessage.id.desc())
                    .limit(1)
                )
            ).scalar_one()
            session.expunge(row)
    finally:
        await db.close()
    row.recipient, row.message_id, row.in_reply_to = TO.decode(), MID.decode(), IRT.decode()
    data = message_bytes(to_email(row, load_config(None, {"PBMSERV_DATABASE_URL": url, "PBMSERV_ADDRESS": address})))
    for placeholder in (TO, MID, IRT):
        if placeholder not in data:
            raise SystemExit(f"the template reply lost its placeholder {placeholder!r}")
    return data


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("imap_port", type=int)
    parser.add_argument("smtp_port", type=int)
    parser.add_argument("address")
    parser.add_argument("password")
    parser.add_argument("url")
    parser.add_argument("--connections", type=int, default=4)
    args = parser.parse_args()
    reply = await template(args.url, args.address)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)

    smtp: asyncio.Queue[aiosmtplib.SMTP] = asyncio.Queue()
    for _ in range(args.connections):
        client = aiosmtplib.SMTP(hostname="127.0.0.1", port=args.smtp_port, use_tls=False, start_tls=False)
        await client.connect()
        smtp.put_nowait(client)
    serial = itertools.count()

    async def send(recipient: str, answered: bytes) -> None:
        data = reply.replace(TO, recipient.encode()).replace(IRT, answered)
        data = data.replace(MID, f"<floor{next(serial)}@bench.test>".encode())
        client = await smtp.get()
        try:
            await client.sendmail(args.address, [recipient], data)
        finally:
            smtp.put_nowait(client)

    async def answer(raw: bytes) -> None:
        head = BytesHeaderParser().parsebytes(raw.split(b"\r\n\r\n", 1)[0])
        player = str(head["From"]).split("@", 1)[0]  # w7 or b7: the board's players are w7 and b7
        answered = str(head["Message-ID"]).strip().encode()
        await asyncio.gather(*(send(f"{side}{player[1:]}@players.test", answered) for side in "wb"))

    imap = aioimaplib.IMAP4(host="127.0.0.1", port=args.imap_port, timeout=120)
    await imap.wait_hello_from_server()
    await imap.login(args.address, args.password)
    await imap.create("processed")  # (NO when it exists: fine)
    await imap.select("INBOX")
    print(f"ready: each reply {len(reply)} bytes, {reply.count(NEWLINE)} lines", flush=True)
    while not stopping.is_set():
        resp = await imap.uid("fetch", "1:*", "(UID BODY.PEEK[])")  # the INBOX holds only what is not answered yet
        mails = fetched_messages(resp.lines)
        if mails:
            await asyncio.gather(*(answer(raw) for raw in mails.values()))
            await imap.uid("move", ",".join(map(str, mails)), "processed")
            continue
        idle = await imap.idle_start(timeout=30)
        push = asyncio.ensure_future(imap.wait_server_push(timeout=30))
        stop = asyncio.ensure_future(stopping.wait())
        await asyncio.wait({push, stop}, return_when=asyncio.FIRST_COMPLETED)
        for task in (push, stop):
            task.cancel()
        imap.idle_done()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(idle, 30)
    with contextlib.suppress(Exception):
        await imap.logout()
    while not smtp.empty():
        with contextlib.suppress(Exception):
            await smtp.get_nowait().quit()


if __name__ == "__main__":
    asyncio.run(main())
