"""The outbox's leases on PostgreSQL (used by :class:`~pbmserv_terrace.app.outbox.OutboxSenders`).

A reply being sent is held by a session advisory lock (``LEASE_KEY``, row id) of
its worker's own outbox connection, which runs in autocommit: no transaction stays
open while sending, and a worker that dies loses its leases with its connection.
Claims run one at a time (an advisory lock of their own), so each sees the
leases of the ones before it.  Every function here takes that connection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from .models import OutboxMessage
from .repos import table_of

LEASE_KEY = 1_329_746_008
"""PostgreSQL: a reply being sent is held by a session advisory lock (LEASE_KEY,
row id) of its worker's outbox connection"""
CLAIMS_KEY = int.from_bytes(hashlib.sha256(b"pbmserv outbox claims").digest()[:8], "big", signed=True)
_CLAIMS_LOCK = text("SELECT pg_advisory_lock(:key)")
_CLAIMS_UNLOCK = text("SELECT pg_advisory_unlock(:key)")
_CLAIM = text(
    f"""
WITH held AS MATERIALIZED (
    SELECT CAST(objid AS bigint) AS id FROM pg_locks
    WHERE locktype = 'advisory' AND classid = {LEASE_KEY} AND objsubid = 2 AND granted
), busy AS MATERIALIZED (
    SELECT DISTINCT lower(h.recipient) AS recipient FROM outbox h JOIN held ON h.id = held.id
), picked AS (
    SELECT o.id FROM outbox o
    WHERE o.state = 'pending' AND o.next_attempt_at <= :now
      AND lower(o.recipient) NOT IN (SELECT recipient FROM busy)
    ORDER BY o.next_attempt_at, o.id
    LIMIT :limit
    FOR UPDATE OF o SKIP LOCKED
)
SELECT outbox.*, pg_try_advisory_lock({LEASE_KEY}, outbox.id) AS leased FROM outbox JOIN picked ON outbox.id = picked.id
"""
)
"""PostgreSQL's claim: due replies, oldest first, none held by a worker (its
lease) nor to a recipient one is held for, each leased by this worker as it is
taken.  Claims run one at a time (``CLAIMS_KEY``), so each sees the leases of the
ones before it."""
_OUTCOMES = text(
    f"""
WITH o AS (
    SELECT * FROM unnest(CAST(:ids AS integer[]), CAST(:states AS varchar[]), CAST(:attempts AS integer[]),
                         CAST(:dues AS timestamp[]), CAST(:sent AS timestamp[]), CAST(:errors AS text[]))
             AS o(id, state, attempts, due, sent_at, error)
), written AS (
    UPDATE outbox SET state = o.state, attempts = o.attempts, next_attempt_at = o.due, sent_at = o.sent_at,
                      last_error = o.error
    FROM o WHERE outbox.id = o.id
    RETURNING outbox.id
)
SELECT count(pg_advisory_unlock({LEASE_KEY}, id)) FROM written
"""
)
"""PostgreSQL: a group's outcomes, and their leases ended, in one statement (an
implicit transaction: the rows stay locked by the UPDATE until it commits, and a
claim skips locked rows)"""
_RELEASE = text(f"SELECT count(pg_advisory_unlock({LEASE_KEY}, id)) FROM unnest(CAST(:ids AS integer[])) AS t(id)")


_OUTBOX = table_of(OutboxMessage)


async def claim(conn: AsyncConnection, now: datetime, limit: int) -> list[OutboxMessage]:
    """Due replies, oldest first, each leased by ``conn`` as it is taken (not
    attached to any session)."""
    await conn.execute(_CLAIMS_LOCK, {"key": CLAIMS_KEY})
    try:
        found = (await conn.execute(_CLAIM, {"now": now, "limit": limit})).mappings().all()
    finally:
        await conn.execute(_CLAIMS_UNLOCK, {"key": CLAIMS_KEY})
    return [OutboxMessage(**{c.name: r[c.name] for c in _OUTBOX.columns}) for r in found if r["leased"]]


async def release(conn: AsyncConnection, ids: Sequence[int]) -> None:
    """End these leases (replies claimed and not tried)."""
    await conn.execute(_RELEASE, {"ids": list(ids)})


async def write_outcomes(conn: AsyncConnection, rows: Sequence[OutboxMessage]) -> None:
    """A group's outcomes, and their leases ended, in one statement."""
    columns = {"ids": [r.id for r in rows], "states": [r.state for r in rows], "attempts": [r.attempts for r in rows],
               "dues": [r.next_attempt_at for r in rows], "sent": [r.sent_at for r in rows],
               "errors": [r.last_error for r in rows]}  # fmt: skip
    await conn.execute(_OUTCOMES, columns)
