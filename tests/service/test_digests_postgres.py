"""Digests sent by two workers at once on PostgreSQL (issue 40): each worker's
``run_timers`` takes the users due with ``FOR UPDATE SKIP LOCKED``, so every
digest goes once — none twice, none lost — whichever worker sends it."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from pbmserv_terrace.service import Service
from pbmserv_terrace.store import Database, Digest, OutboxMessage, UnitOfWork, utcnow

from .harness import Harness

pytestmark = pytest.mark.postgres

PLAYERS = [f"p{k:02d}" for k in range(12)]


def test_two_workers_send_each_digest_once(pg_url):
    h = Harness(pg_url)
    try:
        h.signup("zed", *PLAYERS)
        for name in PLAYERS:
            h.challenge("zed", name)
            h.send(name, f"change digest {name} pw-{name} daily 08:00")
        for board in range(101, 101 + len(PLAYERS)):
            h.move(board, "zed", "d2-e3")  # held for each player's digest
        at = (utcnow() + timedelta(days=1)).replace(hour=8, minute=0, second=0, microsecond=0)

        async def both() -> list[int]:
            other = Database(pg_url)
            try:
                second = Service(other, h.config)
                return list(await asyncio.gather(h.service.run_timers(at, batch=3), second.run_timers(at, batch=3)))
            finally:
                await other.close()

        handled = h.loop.run_until_complete(both())

        async def counts() -> tuple[list[int], int]:
            async with UnitOfWork(h.db) as uow:
                per_user = (await uow.session.execute(select(func.count()).select_from(Digest).group_by(Digest.user_id))).scalars()
                mails = await uow.session.execute(
                    select(func.count()).select_from(OutboxMessage).where(OutboxMessage.subject.like("%digest for%"))
                )
                return sorted(per_user), int(mails.scalar_one())

        per_user, mails = h.loop.run_until_complete(counts())
        assert per_user == [1] * len(PLAYERS) and mails == len(PLAYERS)
        assert sum(handled) >= len(PLAYERS)
    finally:
        h.close()
