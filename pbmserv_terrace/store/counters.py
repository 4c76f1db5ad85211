"""Counts every worker shares on PostgreSQL (issue 18 item 5): the per-sender
throttle and the failed passwords of the guessing guard, so that three ``serve``
processes allow what one allows.  Times are wall-clock seconds (epoch): workers
share no monotonic clock.

Each function here is one statement, run in autocommit mode
(:func:`.autocommit.autocommit`): atomic on its own, without the round trips of
``BEGIN`` and ``COMMIT``.

SQLite (one process) keeps these counts in the process (``service.guards``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Float, Index, Integer, String, bindparam, delete, insert, select, text
from sqlalchemy.orm import Mapped, mapped_column

from .autocommit import autocommit
from .db import Database
from .models import Base

WINDOW = 60.0
"""seconds: the throttle's sliding window, and how long a notice silences a sender"""


class ThrottleMark(Base):
    """A mail that counted against its sender's limit (one row per Message-ID, so
    a mail run again after a crash counts once)."""

    __tablename__ = "throttle_marks"
    __table_args__ = (Index("ix_throttle_marks_sender_at", "sender", "at"),)

    message_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    sender: Mapped[str] = mapped_column(String(320))
    at: Mapped[float] = mapped_column(Float)


class ThrottleNotice(Base):
    """The last "you are over the limit" notice to a sender, and the mail it answered."""

    __tablename__ = "throttle_notices"

    sender: Mapped[str] = mapped_column(String(320), primary_key=True)
    message_id: Mapped[str] = mapped_column(String(255))
    at: Mapped[float] = mapped_column(Float)


class PasswordFailure(Base):
    """A wrong password for a userid (known or not), for the guessing guard."""

    __tablename__ = "password_failures"
    __table_args__ = (Index("ix_password_failures_userid_at", "userid", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    userid: Mapped[str] = mapped_column(String(64))
    at: Mapped[float] = mapped_column(Float)


_THROTTLE = text(
    """WITH p AS (
    SELECT m.sender, m.mid, m.n, CAST(:now AS double precision) AS now
    FROM unnest(CAST(:senders AS varchar[]), CAST(:mids AS varchar[])) WITH ORDINALITY AS m(sender, mid, n)
), c AS (
    SELECT p.*, (SELECT count(*) FROM throttle_marks t
                 WHERE t.sender = p.sender AND t.at > p.now - CAST(:window AS double precision) AND t.message_id <> p.mid) AS seen
    FROM p
), mark AS (
    INSERT INTO throttle_marks (message_id, sender, at)
    SELECT c.mid, c.sender, c.now FROM c WHERE c.seen < CAST(:limit AS bigint)
    ON CONFLICT (message_id) DO NOTHING
), note AS (
    INSERT INTO throttle_notices (sender, message_id, at)
    SELECT c.sender, c.mid, c.now FROM c WHERE c.seen >= CAST(:limit AS bigint)
    ON CONFLICT (sender) DO UPDATE SET message_id = excluded.message_id, at = excluded.at
    WHERE throttle_notices.at <= excluded.at - CAST(:window AS double precision)
    RETURNING sender
)
SELECT c.seen, c.sender IN (SELECT sender FROM note), (SELECT t.message_id FROM throttle_notices t WHERE t.sender = c.sender)
FROM c ORDER BY c.n
"""
)


async def throttle_check_many(db: Database, mails: Sequence[tuple[str, str]], now: float, limit: int) -> list[str]:
    """ok, notice (the first mail over the limit within WINDOW) or drop, for each
    mail (sender, Message-ID), counting the sender's other mails of the last
    WINDOW seconds that were let through; in one statement, for mails of
    different senders (as a batch's mails are: mails of one sender are handled
    one at a time, their conflict keys share the sender, so two never race).
    Run again for the same Message-ID, it says the same (a mail redone after a
    crash neither counts twice nor loses its notice)."""
    if len({sender for sender, _ in mails}) != len(mails):
        raise ValueError("one mail per sender")
    if not mails:
        return []
    params = {"senders": [m[0] for m in mails], "mids": [m[1] for m in mails], "now": now, "window": WINDOW, "limit": limit}
    async with autocommit(db).connect() as conn:
        rows = (await conn.execute(_THROTTLE, params)).all()
    return [
        "ok" if int(seen) < limit else "notice" if noticed or notice_of == mid else "drop"
        for (seen, noticed, notice_of), (_, mid) in zip(rows, mails, strict=True)
    ]


_FAILURES = (
    select(PasswordFailure.userid, PasswordFailure.at)
    .where(PasswordFailure.userid.in_(bindparam("userids", expanding=True)), PasswordFailure.at > bindparam("since"))
    .order_by(PasswordFailure.userid, PasswordFailure.at)
)
_FAILED = insert(PasswordFailure).values(userid=bindparam("userid"), at=bindparam("at"))
_SUCCEEDED = delete(PasswordFailure).where(PasswordFailure.userid == bindparam("userid"))
_FORGET = text(
    """WITH marks AS (DELETE FROM throttle_marks WHERE at < CAST(:marks_before AS double precision)),
notices AS (DELETE FROM throttle_notices WHERE at < CAST(:marks_before AS double precision))
DELETE FROM password_failures WHERE at < CAST(:failures_before AS double precision)
"""
)


async def password_failures(db: Database, userids: Sequence[str], since: float) -> dict[str, list[float]]:
    """userid → times of its wrong passwords after ``since``, oldest first."""
    if not userids:
        return {}
    out: dict[str, list[float]] = {}
    async with autocommit(db).connect() as conn:
        for userid, at in await conn.execute(_FAILURES, {"userids": list(userids), "since": since}):
            out.setdefault(str(userid), []).append(float(at))
    return out


async def password_failed(db: Database, userid: str, at: float) -> None:
    async with autocommit(db).connect() as conn:
        await conn.execute(_FAILED, {"userid": userid, "at": at})


async def password_succeeded(db: Database, userid: str) -> None:
    async with autocommit(db).connect() as conn:
        await conn.execute(_SUCCEEDED, {"userid": userid})


async def forget_old(db: Database, now: float, keep_failures: float) -> None:
    """Drop throttle rows older than two windows and failures older than ``keep_failures`` seconds."""
    async with autocommit(db).connect() as conn:
        await conn.execute(_FORGET, {"marks_before": now - 2 * WINDOW, "failures_before": now - keep_failures})
