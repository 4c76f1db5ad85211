"""What one reply costs to send, and where (issue 18: the gap between the
in-process service and the embedded default end to end).

The outbox is filled the way ``serve`` fills it: real ``terrace move`` mails run
through ``Service.handle_batch`` on a fresh SQLite database (bench/store.py's
games, bench/service.py's move sequences), two board mails per move, each with
its HTML part and board picture.  Then, in this one process and on the same
rows (put back to pending before each run):

- ``drain``: :class:`OutboxSenders` into Maildirs, as the embedded default sends
  (each claim of ``MaildirDelivery.claim`` composed in one hop to the composer thread, staged in one
  more, its outcomes committed, then published);
- ``compose``: :func:`to_outgoing` for each row in a loop (the picture cache
  emptied first, so each position's picture is drawn once, as in ``drain``);
- ``maildir``: the composed bytes staged and published a claim at a time
  (``MaildirDelivery.stage`` and ``publish``), one claim after the other;
- ``null``: the SMTP way (a reply at a time, each outcome committed before the
  sender's next reply) with a delivery that accepts at once: composing, claims,
  the group commit and the event loop, without a network;
- ``smtp``: the SMTP way for real: :class:`SmtpDelivery` (aiosmtplib, 4 kept
  connections) to an SMTP server in a process of its own that accepts and drops
  each mail (``testing.dovecot``'s relay with ``--discard``).  Only this
  process's CPU is counted, not the receiving server's.

Figures: replies/s and this process's CPU per reply, user and system apart (the
system time is the kernel's: file creation, fsync, thread wake-ups), and the
voluntary context switches per reply.  ``drain`` less ``compose`` and ``maildir``
is what claims, outcome commits and running side by side cost; ``smtp`` less
``null`` is what talking SMTP costs the sender.

Run: python bench/outbox.py [--games 100] [--plies 18]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

from sqlalchemy import select, update

from pbmserv_terrace.app import heap
from pbmserv_terrace.app.compose import board_picture, to_outgoing
from pbmserv_terrace.app.outbox import OutboxSenders
from pbmserv_terrace.config import Config, load_config
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.mail.delivery import MaildirDelivery, SmtpDelivery, staged_name
from pbmserv_terrace.mail.message import Outgoing
from pbmserv_terrace.service import HandleResult, Service
from pbmserv_terrace.service.passwords import hash_password
from pbmserv_terrace.store import Database, OutboxMessage, User

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service import players_of, sequences
from store import seed

SERVER = "pbmserv@bench.test"
CLAIM = MaildirDelivery.claim
"""replies per claim (a Maildir's, as the drain claims them)"""


@dataclass
class Cost:
    replies: int
    wall: float
    user: float
    system: float
    switches: int

    def line(self, name: str) -> str:
        n = self.replies
        return (f"{name:<8} {n:>5} replies  {n / self.wall:>6,.0f}/s  CPU {1000 * (self.user + self.system) / n:5.2f} ms/reply "
                f"(user {1000 * self.user / n:4.2f}, system {1000 * self.system / n:4.2f})  "
                f"{self.switches / n:5.1f} context switches/reply")  # fmt: skip


async def measured(replies: int, run: Callable[[], Awaitable[object]]) -> Cost:
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    await run()
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    return Cost(
        replies, wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, after.ru_nvcsw - before.ru_nvcsw
    )


class NullDelivery:
    """Accepts every reply at once."""

    size = MaildirDelivery.size

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        return None

    async def close(self) -> None:
        return None


async def fill(db: Database, cfg: Config, games: int, plies: int) -> int:
    """Seed ``games`` games and play ``plies`` moves in each; the replies queued."""
    await seed(db, 0, games)
    async with db.engine.begin() as conn:
        await conn.execute(update(User).values(password_hash=hash_password("pw")))
    service = Service(db, cfg)
    boards = [101 + i for i in range(games)]
    players = await players_of(db, boards)
    plans = sequences(plies)
    mails = []
    for k in range(plies):
        for g, board in enumerate(boards):
            mover = players[g][k % 2]
            mails.append(InboundMail(sender=f"{mover}@example.org", body="", message_id=f"<ob{k}.{g}@bench>",
                                     subject=f"terrace move {board} {mover} pw {plans[g % len(plans)][k]}"))  # fmt: skip
    for i in range(0, len(mails), 50):
        results = await service.handle_batch(mails[i : i + 50])
        assert all(isinstance(r, HandleResult) and r.status == "ok" for r in results), results
    async with db.session() as s:
        return len((await s.execute(select(OutboxMessage.id).where(OutboxMessage.state == "pending"))).all())


async def pending_again(db: Database) -> None:
    async with db.engine.begin() as conn:
        await conn.execute(update(OutboxMessage).values(state="pending", attempts=0, sent_at=None))


@contextlib.contextmanager
def sink() -> Iterator[int]:
    """An SMTP server that accepts and drops every mail, in a process of its own;
    yields its port."""
    proc = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace.testing.dovecot", "1", "--discard"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    port = int(proc.stdout.readline().split()[1])
    out = proc.stdout
    threading.Thread(target=lambda: collections.deque(out, maxlen=0), daemon=True).start()  # its "relayed" lines
    try:
        yield port
    finally:
        proc.stdin.close()
        proc.wait(30)


async def main(games: int, plies: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-outbox-"))
    try:
        url = f"sqlite+aiosqlite:///{work / 'bench.db'}"
        cfg = load_config(None, {"PBMSERV_DATABASE_URL": url, "PBMSERV_ADDRESS": SERVER,
                                 "PBMSERV_SERVER_RATE_LIMIT_PER_MINUTE": "1000000"})  # fmt: skip
        db = Database(url)
        await db.migrate()
        t = time.perf_counter()
        n = await fill(db, cfg, games, plies)
        print(f"queued {n} replies ({games} games x {plies} moves, two board mails a move) in {time.perf_counter() - t:.1f} s")
        heap.settle()  # as serve does once it has started

        async def drain(delivery: MaildirDelivery | NullDelivery | SmtpDelivery, config: Config = cfg) -> None:
            board_picture.cache_clear()
            result = await OutboxSenders(db, delivery, config).drain()
            await delivery.close()
            assert result.sent == n, result

        await pending_again(db)
        full = await measured(n, lambda: drain(MaildirDelivery(work / "drain")))
        async with db.session() as s:
            rows = list((await s.execute(select(OutboxMessage).order_by(OutboxMessage.id))).scalars())
            s.expunge_all()
        composed: list[Outgoing] = []

        async def compose() -> None:
            board_picture.cache_clear()
            composed.extend(to_outgoing(row, cfg) for row in rows)

        alone = await measured(n, compose)
        maildir = MaildirDelivery(work / "alone")

        async def write() -> None:
            for i in range(0, len(rows), CLAIM):
                names = [staged_name(row.id, row.message_id, row.created_at) for row in rows[i : i + CLAIM]]
                await asyncio.to_thread(maildir.stage, [(n, m.data) for n, m in zip(names, composed[i : i + CLAIM], strict=True)])
                await asyncio.to_thread(
                    maildir.publish, [(n, r.recipient) for n, r in zip(names, rows[i : i + CLAIM], strict=True)]
                )

        files = await measured(n, write)
        await pending_again(db)
        null = await measured(n, lambda: drain(NullDelivery()))
        with sink() as port:
            by_smtp = load_config(None, {"PBMSERV_DATABASE_URL": url, "PBMSERV_ADDRESS": SERVER,
                                         "PBMSERV_SERVER_RATE_LIMIT_PER_MINUTE": "1000000", "PBMSERV_SMTP_HOST": "127.0.0.1",
                                         "PBMSERV_SMTP_PORT": str(port), "PBMSERV_SMTP_TLS": "none"})  # fmt: skip
            await pending_again(db)
            smtp = await measured(n, lambda: drain(SmtpDelivery(by_smtp), by_smtp))
        await db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(full.line("drain"))
    print(alone.line("compose"))
    print(files.line("maildir"))
    print(null.line("null"))
    print(smtp.line("smtp"))

    def cpu(c: Cost) -> float:
        return 1000 * (c.user + c.system) / c.replies

    parts = cpu(alone) + cpu(files)
    print(f"per reply: compose {cpu(alone):.2f} + maildir {cpu(files):.2f} = {parts:.2f} ms apart; {cpu(full):.2f} ms in "
          f"the drain ({cpu(full) - parts:+.2f} ms for claims, outcomes and running side by side); the SMTP way's "
          f"machinery without a network: {cpu(null) - cpu(alone):.2f} ms; talking SMTP: {cpu(smtp) - cpu(null):+.2f} ms")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--plies", type=int, default=18)
    args = parser.parse_args()
    asyncio.run(main(args.games, args.plies))
