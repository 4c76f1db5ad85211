"""Counts every worker shares on PostgreSQL (issue 18 item 5): the throttle (per
sender, and per (user, sender) for mails that authenticate) and the failed
passwords of the guessing guard (each with its userid and sender, issue 36), so
that three ``serve`` processes allow what one allows.  Times are wall-clock seconds (epoch): workers
share no monotonic clock.

Each function here is one statement, run in autocommit mode
(:func:`.autocommit.autocommit`): atomic on its own, without the round trips of
``BEGIN`` and ``COMMIT``.

SQLite (one process) keeps these counts in the process (``service.guards``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Float, Index, Integer, String, bindparam, delete, insert, or_, select, text
from sqlalchemy.orm import Mapped, mapped_column

from .autocommit import autocommit
from .db import Database
from .models import Base

WINDOW = 60.0
"""seconds: the throttle's sliding window, and how long a notice silences a sender"""


class ThrottleMark(Base):
    """A mail that counted against its sender's limit, or (``userid`` set) against
    its (user, sender) limit: one row per Message-ID, so a mail run again after a
    crash counts once."""

    __tablename__ = "throttle_marks"
    __table_args__ = (Index("ix_throttle_marks_sender_at", "sender", "at"),)

    message_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    sender: Mapped[str] = mapped_column(String(320))
    userid: Mapped[str] = mapped_column(String(64), default="", server_default="")
    """'' for the per-sender count; the user a mail authenticated as (migration 0008)"""
    at: Mapped[float] = mapped_column(Float)


class ThrottleNotice(Base):
    """The last "you are over the limit" notice to a sender (or to a (user,
    sender)), and the mail it answered."""

    __tablename__ = "throttle_notices"

    sender: Mapped[str] = mapped_column(String(320), primary_key=True)
    userid: Mapped[str] = mapped_column(String(64), primary_key=True, default="", server_default="")
    message_id: Mapped[str] = mapped_column(String(255))
    at: Mapped[float] = mapped_column(Float)


class PasswordFailure(Base):
    """A wrong password for a userid (known or not) from a sender, for the guessing guard."""

    __tablename__ = "password_failures"
    __table_args__ = (
        Index("ix_password_failures_userid_at", "userid", "at"),
        Index("ix_password_failures_sender_at", "sender", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    userid: Mapped[str] = mapped_column(String(64))
    sender: Mapped[str] = mapped_column(String(320), default="", server_default="")
    """the From of the mail (migration 0008)"""
    at: Mapped[float] = mapped_column(Float)


_THROTTLE = text(
    """WITH p AS (
    SELECT m.sender, m.userid, m.mid, m.n, CAST(:now AS double precision) AS now
    FROM unnest(CAST(:senders AS varchar[]), CAST(:userids AS varchar[]), CAST(:mids AS varchar[]))
         WITH ORDINALITY AS m(sender, userid, mid, n)
), c AS (
    SELECT p.*, (SELECT count(*) FROM throttle_marks t
                 WHERE t.sender = p.sender AND t.userid = p.userid AND t.at > p.now - CAST(:window AS double precision)
                   AND t.message_id <> p.mid) AS seen
    FROM p
), mark AS (
    INSERT INTO throttle_marks (message_id, sender, userid, at)
    SELECT c.mid, c.sender, c.userid, c.now FROM c WHERE c.seen < CAST(:limit AS bigint)
    ON CONFLICT (message_id) DO NOTHING
), note AS (
    INSERT INTO throttle_notices (sender, userid, message_id, at)
    SELECT c.sender, c.userid, c.mid, c.now FROM c WHERE c.seen >= CAST(:limit AS bigint)
    ON CONFLICT (sender, userid) DO UPDATE SET message_id = excluded.message_id, at = excluded.at
    WHERE throttle_notices.at <= excluded.at - CAST(:window AS double precision)
    RETURNING sender, userid
)
SELECT c.seen, (c.sender, c.userid) IN (SELECT sender, userid FROM note),
       (SELECT t.message_id FROM throttle_notices t WHERE t.sender = c.sender AND t.userid = c.userid)
FROM c ORDER BY c.n
"""
)


async def throttle_check_many(
    db: Database, mails: Sequence[tuple[str, str]], now: float, limit: int, userids: Sequence[str] | None = None
) -> list[str]:
    """ok, notice (the first mail over the limit within WINDOW) or drop, for each
    mail (sender, Message-ID), counting the sender's other mails of the last
    WINDOW seconds that were let through; in one statement, for mails of
    different senders (as a batch's mails are: mails of one sender are handled
    one at a time, their conflict keys share the sender, so two never race).
    Run again for the same Message-ID, it says the same (a mail redone after a
    crash neither counts twice nor loses its notice).  ``userids``: per mail, the
    user it authenticated as, to count it per (user, sender) instead ('' = the
    sender's own count)."""
    users = list(userids) if userids is not None else [""] * len(mails)
    if len({(sender, user) for (sender, _), user in zip(mails, users, strict=True)}) != len(mails):
        raise ValueError("one mail per sender")
    if not mails:
        return []
    params = {"senders": [m[0] for m in mails], "userids": users, "mids": [m[1] for m in mails], "now": now,
              "window": WINDOW, "limit": limit}  # fmt: skip
    async with autocommit(db).connect() as conn:
        rows = (await conn.execute(_THROTTLE, params)).all()
    return [
        "ok" if int(seen) < limit else "notice" if noticed or notice_of == mid else "drop"
        for (seen, noticed, notice_of), (_, mid) in zip(rows, mails, strict=True)
    ]


_FAILURES = (
    select(PasswordFailure.userid, PasswordFailure.sender, PasswordFailure.at)
    .where(
        or_(
            PasswordFailure.userid.in_(bindparam("userids", expanding=True)),
            PasswordFailure.sender.in_(bindparam("senders", expanding=True)),
        ),
        PasswordFailure.at > bindparam("since"),
    )
    .order_by(PasswordFailure.at, PasswordFailure.id)
)
_FAILED = insert(PasswordFailure).values(userid=bindparam("userid"), sender=bindparam("sender"), at=bindparam("at"))
_SUCCEEDED = delete(PasswordFailure).where(
    PasswordFailure.userid == bindparam("userid"), PasswordFailure.sender == bindparam("sender")
)
_FORGET = text(
    """WITH marks AS (DELETE FROM throttle_marks WHERE at < CAST(:marks_before AS double precision)),
notices AS (DELETE FROM throttle_notices WHERE at < CAST(:marks_before AS double precision))
DELETE FROM password_failures WHERE at < CAST(:failures_before AS double precision)
"""
)


async def password_failures(
    db: Database, userids: Sequence[str], since: float, senders: Sequence[str] = ()
) -> list[tuple[str, str, float]]:
    """(userid, sender, time) of the wrong passwords after ``since`` for these
    userids or from these senders, oldest first."""
    if not userids and not senders:
        return []
    async with autocommit(db).connect() as conn:
        rows = await conn.execute(_FAILURES, {"userids": list(userids), "senders": list(senders), "since": since})
        return [(str(userid), str(sender), float(at)) for userid, sender, at in rows]


async def password_failed(db: Database, userid: str, sender: str, at: float) -> None:
    async with autocommit(db).connect() as conn:
        await conn.execute(_FAILED, {"userid": userid, "sender": sender, "at": at})


async def password_succeeded(db: Database, userid: str, sender: str) -> None:
    """Forget the (user, sender)'s failures (those of other senders stay)."""
    async with autocommit(db).connect() as conn:
        await conn.execute(_SUCCEEDED, {"userid": userid, "sender": sender})


async def forget_old(db: Database, now: float, keep_failures: float) -> None:
    """Drop throttle rows older than two windows and failures older than ``keep_failures`` seconds."""
    async with autocommit(db).connect() as conn:
        await conn.execute(_FORGET, {"marks_before": now - 2 * WINDOW, "failures_before": now - keep_failures})
