"""Issue 18: a reply written into a local Maildir shows up exactly once, however
a crash falls.  The outbox stages a claim's replies in ``<root>/.staged/``,
commits their outcomes, and only then publishes them into the recipients'
``new/`` (:class:`~pbmserv_terrace.app.outbox.OutboxSenders` on a
:class:`~pbmserv_terrace.mail.delivery.MaildirDelivery`): a crash before the commit leaves the replies
pending (staged again under the same name), one after it leaves them sent and
staged (published by the next senders' recovery).  Recovery publishes only what
is recorded as sent, drops what failed, and leaves pending replies and names
that are not ours.  SQLite and PostgreSQL.  (The Maildir's own part, file
names and syncs, is tests/mail/test_maildir_delivery.py.)"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pbmserv_terrace.app.compose import to_outgoing
from pbmserv_terrace.app.outbox import OutboxSenders
from pbmserv_terrace.config import Config, load_config
from pbmserv_terrace.mail import delivery as delivery_module
from pbmserv_terrace.mail.delivery import STAGING, MaildirDelivery, StagedFiles, maildir_name, staged_name
from pbmserv_terrace.store import Database, OutboxMessage, UnitOfWork, utcnow

from ..mail.test_maildir_delivery import delivered, delivered_ids, mid

RECIPIENTS = ("ann@x.test", "Ben@X.Test", "cat@x.test")
"""the replies go round these (Ben's folder is ``ben@x.test``: addresses are lower-cased)"""


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (not even ``except Exception``)."""


class DiesAfterStaging(MaildirDelivery):
    """The process dies once the claim's replies are staged (written and synced),
    before their outcome is committed."""

    def write_staged(self, replies: Sequence[tuple[str, bytes]]) -> StagedFiles:
        staged = super().write_staged(replies)
        sync = staged.sync

        def sync_then_die() -> list[OSError | None]:
            sync()
            raise Killed

        staged.sync = sync_then_die  # type: ignore[method-assign]
        return staged


class DiesBeforePublishing(MaildirDelivery):
    """The process dies after the outcome commit, before anything is published."""

    def publish(self, replies: Sequence[tuple[str, str]]) -> None:
        raise Killed


class DiskFillsUp:
    """The delivery module's ``os``, on a disk that fills up half-way through the
    file of the reply whose bytes hold ``marker`` (a short write, then ENOSPC)."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.full: set[int] = set()
        self.hit = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if fd in self.full:
            self.full.discard(fd)  # (the number may be another file's later)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if self.marker in bytes(data):
            self.full.add(fd)
            self.hit += 1
            return os.write(fd, bytes(data)[: len(data) // 2])
        return os.write(fd, data)


def config(db_url: str) -> Config:
    return load_config(None, {"PBMSERV_DATABASE_URL": db_url, "PBMSERV_ADDRESS": "pbm@srv.test"})


async def database(db_url: str) -> Database:
    db = Database(db_url)
    await db.migrate()
    return db


START = utcnow() - timedelta(minutes=1)


async def queue(db: Database, numbers: Sequence[int], **columns: Any) -> None:
    """Replies ``mid(i)`` round the recipients, due now; each created a millisecond
    after the one before, so their Maildir names (which start with the creation
    time) sort in the queue's order."""
    async with UnitOfWork(db) as uow:
        for i in numbers:
            row = {"message_id": mid(i), "recipient": RECIPIENTS[i % len(RECIPIENTS)], "subject": f"reply {i:02d}",
                   "body": f"body {i}\n", "state": "pending", "attempts": 0, "next_attempt_at": START,
                   "created_at": START + timedelta(milliseconds=i), **columns}  # fmt: skip
            uow.outbox.queue(**row)
        await uow.commit()


async def rows(db: Database) -> dict[str, OutboxMessage]:
    """Every reply, by Message-ID, as it is now."""
    async with UnitOfWork(db) as uow:
        found = {r.message_id: r for state in ("pending", "sent", "failed") for r in await uow.outbox.by_state(state)}
        uow.session.expunge_all()  # kept as read (the end of the unit of work would expire them)
        return found


def name_of(row: OutboxMessage) -> str:
    return staged_name(row.id, row.message_id, row.created_at)


def staged_files(root: Path) -> list[str]:
    return MaildirDelivery(root).staged()


def expected(numbers: Sequence[int]) -> list[str]:
    return sorted(mid(i) for i in numbers)


# -------------------------------------------------------------------- 1. plain
def test_a_drain_writes_every_reply_once_into_its_recipients_maildir_in_order(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "maildir"

    async def run() -> tuple[int, dict[str, OutboxMessage]]:
        db = await database(db_url)
        await queue(db, range(20))
        result = await OutboxSenders(db, MaildirDelivery(root), config(db_url), batch=4).drain()
        found = await rows(db)
        await db.close()
        return result.sent, found

    sent, found = asyncio.run(run())
    assert sent == 20
    assert {r.state for r in found.values()} == {"sent"} and {r.attempts for r in found.values()} == {1}
    assert delivered_ids(root) == expected(range(20))  # each exactly once
    boxes = delivered(root)
    assert sorted(boxes) == sorted(a.lower() for a in RECIPIENTS)
    for k, address in enumerate(RECIPIENTS):
        mine = [i for i in range(20) if i % len(RECIPIENTS) == k]
        box = boxes[address.lower()]
        # sorted by file name (creation time first): the queue's order
        assert [str(m["Message-ID"]) for m in box] == [mid(i) for i in mine]
        assert [str(m["Subject"]) for m in box] == [f"reply {i:02d}" for i in mine]
        assert {str(m["To"]) for m in box} == {address}
    assert staged_files(root) == []


# ------------------------------------------------------- 2. crash before commit
Crashed = tuple[dict[str, OutboxMessage], list[str], list[str], int, dict[str, OutboxMessage]]
"""rows after the kill, staged names then, delivered ids then, replies the next
senders sent, rows at the end"""


def crash_then_restart(db_url: str, root: Path, dying: MaildirDelivery, queued: int, more: Sequence[int] = ()) -> Crashed:
    """``queued`` replies, one claim of them all by senders that die as ``dying``
    does; then (``more`` queued) the next start's senders drain."""

    async def run() -> Crashed:
        db = await database(db_url)
        cfg = config(db_url)
        await queue(db, range(queued))
        with pytest.raises(Killed):
            await OutboxSenders(db, dying, cfg, batch=queued).step()  # one claim: all of them
        after_kill, staged_then, new_then = await rows(db), staged_files(root), delivered_ids(root)
        if more:
            await queue(db, more)
        result = await OutboxSenders(db, MaildirDelivery(root), cfg, batch=4).drain()  # the next start
        final = await rows(db)
        await db.close()
        return after_kill, staged_then, new_then, result.sent, final

    return asyncio.run(run())


def test_a_crash_after_staging_before_the_commit_stages_again_and_publishes_once(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "maildir"
    after_kill, staged_then, new_then, sent, final = crash_then_restart(db_url, root, DiesAfterStaging(root), 9)
    assert {(r.state, r.attempts) for r in after_kill.values()} == {("pending", 0)}  # nothing was recorded
    assert new_then == []
    assert staged_then == sorted(name_of(r) for r in after_kill.values())
    assert sent == 9
    assert delivered_ids(root) == expected(range(9))  # staged twice under one name: delivered once
    assert staged_files(root) == []
    assert {(r.state, r.attempts) for r in final.values()} == {("sent", 1)}


# ----------------------------------------------------- 3. crash before publish
def test_a_crash_after_the_commit_before_publishing_is_published_by_the_next_senders(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "maildir"
    # one more queued, so that the next senders also send something
    after_kill, staged_then, new_then, sent, final = crash_then_restart(db_url, root, DiesBeforePublishing(root), 6, [6])
    assert {(r.state, r.attempts) for r in after_kill.values()} == {("sent", 1)}
    assert new_then == []
    assert staged_then == sorted(name_of(r) for r in after_kill.values())
    assert sent == 1  # only the new reply was sent; the six were published, not sent again
    assert delivered_ids(root) == expected(range(7))
    boxes = delivered(root)
    for k, address in enumerate(RECIPIENTS):
        assert [str(m["Message-ID"]) for m in boxes[address.lower()]] == [mid(i) for i in range(7) if i % 3 == k]
    assert staged_files(root) == []
    assert {(r.state, r.attempts) for r in final.values()} == {("sent", 1)}


def test_the_next_senders_publish_what_was_left_staged_even_with_nothing_to_send(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "maildir"

    async def run() -> tuple[int, list[str]]:
        db = await database(db_url)
        cfg = config(db_url)
        await queue(db, range(4))
        with pytest.raises(Killed):
            await OutboxSenders(db, DiesBeforePublishing(root), cfg, batch=4).step()
        tried, _ = await OutboxSenders(db, MaildirDelivery(root), cfg).step()  # a start: nothing is due
        await db.close()
        return tried, staged_files(root)

    tried, staged = asyncio.run(run())
    assert tried == 0
    assert delivered_ids(root) == expected(range(4))
    assert staged == []


class StagedListingFails(MaildirDelivery):
    """The staging folder cannot be read the first time (recovery fails once)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.listings = 0

    def staged(self) -> list[str]:
        self.listings += 1
        if self.listings == 1:
            raise PermissionError("staging folder unreadable")
        return super().staged()


def test_a_failed_recovery_does_not_stop_sending_and_is_tried_again(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "maildir"

    async def run() -> tuple[int, int, list[str]]:
        db = await database(db_url)
        cfg = config(db_url)
        await queue(db, range(3))
        with pytest.raises(Killed):
            await OutboxSenders(db, DiesBeforePublishing(root), cfg, batch=3).step()
        await queue(db, [3])
        delivery = StagedListingFails(root)
        senders = OutboxSenders(db, delivery, cfg, batch=4)
        first, _ = await senders.step()  # recovery fails; the new reply goes anyway
        after_first = delivered_ids(root)
        await senders.step()  # recovery again: the three left staged are published
        await db.close()
        return first, delivery.listings, after_first

    first, listings, after_first = asyncio.run(run())
    assert first == 1
    assert after_first == expected([3])
    assert listings == 2
    assert delivered_ids(root) == expected(range(4))
    assert staged_files(root) == []


# ------------------------------------------------------- 4. staging fails
def test_a_reply_that_cannot_be_staged_stays_pending_and_leaves_nothing_staged(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "maildir"
    disk = DiskFillsUp(mid(4).encode())
    monkeypatch.setattr(delivery_module, "os", disk)

    async def run() -> tuple[dict[str, OutboxMessage], list[str], list[str], datetime, dict[str, OutboxMessage]]:
        db = await database(db_url)
        cfg = config(db_url)
        await queue(db, range(9))
        await OutboxSenders(db, MaildirDelivery(root), cfg, batch=3).drain()
        after, staged_then, new_then, checked = await rows(db), staged_files(root), delivered_ids(root), utcnow()
        monkeypatch.undo()  # room on the disk again; the retry is due later
        await OutboxSenders(db, MaildirDelivery(root), cfg, batch=3).drain(after[mid(4)].next_attempt_at)
        final = await rows(db)
        await db.close()
        return after, staged_then, new_then, checked, final

    after, staged_then, new_then, checked, final = asyncio.run(run())
    assert disk.hit == 1
    failed = after.pop(mid(4))
    assert (failed.state, failed.attempts) == ("pending", 1)
    assert failed.next_attempt_at > checked
    assert failed.last_error is not None and "No space left on device" in failed.last_error, failed.last_error
    assert {(r.state, r.attempts) for r in after.values()} == {("sent", 1)}
    assert staged_then == []  # the half-written file went with the error
    assert new_then == expected([i for i in range(9) if i != 4])
    # tried again when due: delivered once
    assert delivered_ids(root) == expected(range(9))
    assert (final[mid(4)].state, final[mid(4)].attempts) == ("sent", 2)
    assert staged_files(root) == []


# ------------------------------------------------- 5. what recovery leaves alone
def test_recovery_publishes_the_sent_drops_the_failed_and_leaves_the_rest(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "maildir"
    staging = root / STAGING

    async def run() -> tuple[dict[str, OutboxMessage], dict[str, bytes], dict[str, OutboxMessage]]:
        db = await database(db_url)
        cfg = config(db_url)
        await queue(db, [0], state="sent", attempts=1, sent_at=START)
        await queue(db, [1], state="failed", attempts=3, last_error="permanent: 550 no such user")
        await queue(db, [2], next_attempt_at=utcnow() + timedelta(hours=1))  # pending, not due
        await queue(db, [3])  # due: the claim that runs recovery
        before = await rows(db)
        sent, failed, waiting = before[mid(0)], before[mid(1)], before[mid(2)]
        files = {
            name_of(sent): to_outgoing(sent, cfg).data,
            name_of(failed): to_outgoing(failed, cfg).data,
            name_of(waiting): to_outgoing(waiting, cfg).data,
            "notours.txt": b"someone else's\n",
            "99999-somethingelse": b"no such reply\n",
            f"{sent.id}-{maildir_name('<other@srv.test>', sent.created_at)}": b"not this reply's name\n",
            f"{failed.id}-{maildir_name(failed.message_id, failed.created_at + timedelta(seconds=1))}": b"nor this\n",
        }
        staging.mkdir(parents=True)
        for name, data in files.items():
            (staging / name).write_bytes(data)
        await OutboxSenders(db, MaildirDelivery(root), cfg).drain()
        final = await rows(db)
        await db.close()
        return before, files, final

    before, files, final = asyncio.run(run())
    sent, failed, waiting = before[mid(0)], before[mid(1)], before[mid(2)]
    assert delivered_ids(root) == expected([0, 3])  # the sent one published, the due one sent
    left = {name: (staging / name).read_bytes() for name in staged_files(root)}
    assert left == {name: data for name, data in files.items() if name not in (name_of(sent), name_of(failed))}
    assert name_of(waiting) in left  # a pending reply's file stays (it is staged again when sent)
    assert [(final[mid(i)].state, final[mid(i)].attempts) for i in range(4)] == [
        ("sent", 1), ("failed", 3), ("pending", 0), ("sent", 1)
    ]  # fmt: skip


# ------------------------------------------- a foreign name that looks like ours
def test_a_foreign_name_with_superscript_digits_does_not_stop_sending(db_url: str, tmp_path: Path) -> None:
    """``staged_key`` tests the head with ``str.isdigit``, which ``²`` passes and
    ``int`` refuses: a stray ``²-x`` in the staging folder must be left like any
    other foreign name, not raise in recovery."""
    root = tmp_path / "maildir"

    async def run() -> int:
        db = await database(db_url)
        await queue(db, range(3))
        (root / STAGING).mkdir(parents=True)
        (root / STAGING / "²-x").write_bytes(b"someone else's\n")
        try:
            return (await OutboxSenders(db, MaildirDelivery(root), config(db_url)).drain()).sent
        finally:
            await db.close()

    assert asyncio.run(run()) == 3
    assert delivered_ids(root) == expected(range(3))
    assert staged_files(root) == ["²-x"]
