"""Nothing twice after a crash (issue 43 part 6): between the MTA's 250 and the
commit of that outcome a sender does nothing else, and the outcome's transaction
goes first.  On SQLite a writer that goes first (``Database.session(first=True)``,
the outbox's outcomes) waits for at most the transaction that runs, however busy
the other writers are (``serve`` working through a backlog left the sender
process waiting for seconds: a restart's first reply was still unrecorded at the
next SIGKILL, three kills in a row).  An outcome that could not be written is
kept and written before anything else, and its reply is never sent again."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import subprocess
import sys
import time
from email.message import Message
from pathlib import Path
from typing import Any

from sqlalchemy import event, text

from pbmserv_terrace.app.outbox import OutboxSenders
from pbmserv_terrace.mail.message import Outgoing
from pbmserv_terrace.store import Database

from .test_outbox_sending import queue, states

BACKLOG = """
import asyncio, sys
from sqlalchemy import text
from pbmserv_terrace.store import Database

async def main() -> None:
    db = Database(sys.argv[1])
    while True:  # serve through a backlog: one transaction after the other
        async with db.session() as s:
            await s.begin()
            await s.execute(text("UPDATE board_counters SET next_number = next_number + 1"))
            for _ in range(30):
                await s.execute(text("SELECT count(*) FROM board_counters"))
            await s.commit()

asyncio.run(main())
"""


def committed(path: Path) -> int:
    """The backlog's transactions so far (each adds one)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT sum(next_number) FROM board_counters").fetchone()[0])


def test_a_writer_that_goes_first_waits_for_one_transaction_not_for_a_backlog(tmp_path):
    """Another process writes back to back, as ``serve`` does through a backlog;
    an outcome's transaction asked for meanwhile gets in after the one that was
    running (and any that began as it asked), five times over.  Without the turn
    it waited for up to ~100 of them (over 0.5 s) here."""
    path = tmp_path / "turn.db"
    url = f"sqlite+aiosqlite:///{path}"

    async def run() -> list[int]:
        first = Database(url)
        await first.migrate()
        start = committed(path)
        backlog = subprocess.Popen([sys.executable, "-c", BACKLOG, url])
        waited: list[int] = []
        try:
            deadline = time.monotonic() + 60
            while committed(path) < start + 200 and time.monotonic() < deadline:  # under way
                await asyncio.sleep(0.01)
            for _ in range(5):
                before = committed(path)
                async with first.session(first=True) as s:
                    await s.execute(text("UPDATE board_counters SET next_number = next_number"))
                    await s.commit()
                waited.append(committed(path) - before)
        finally:
            backlog.kill()
            backlog.wait(10)
            await first.close()
        return waited

    waited = asyncio.run(run())
    assert sum(waited) <= 25, waited  # (without the turn: one of the five waited for 102)


class Counting:
    """One connection that takes every reply (and counts each Message-ID it takes)."""

    size = 1

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        msg = message.message if isinstance(message, Outgoing) else message
        self.sent.append(str(msg["Message-ID"]))

    async def close(self) -> None:
        return None


def test_an_outcome_that_could_not_be_written_is_written_first_and_never_sent_again(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path}/o.db"

    async def run() -> tuple[list[str], dict[str, str], list[str]]:
        db, cfg = await queue(url, 3, recipients=3)
        failures = [1]
        steps: list[str] = []

        def outcome(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if "UPDATE OUTBOX SET STATE" in " ".join(statement.upper().split()):
                steps.append("outcome")
                if failures:
                    failures.pop()
                    raise OSError("the database is away")  # the first outcome cannot be written
            elif "FROM OUTBOX" in statement.upper() and "NEXT_ATTEMPT_AT <=" in statement.upper():
                steps.append("claim")

        event.listen(db.engine.sync_engine, "before_cursor_execute", outcome)
        delivery = Counting()
        senders = OutboxSenders(db, delivery, cfg, batch=1)
        try:
            await senders.step()
        except Exception as exc:
            assert "away" in str(exc)
        await senders.drain()  # the kept outcome is written first; the reply is not sent again
        found = await states(db)
        await db.close()
        return delivery.sent, found, steps

    sent, found, steps = asyncio.run(run())
    assert sorted(sent) == ["<o00@srv.test>", "<o01@srv.test>", "<o02@srv.test>"], sent
    assert set(found.values()) == {"sent"}, found
    assert steps[:4] == ["claim", "outcome", "outcome", "claim"], steps  # the failed outcome again, before any claim
