"""The throttle's shared counts (PostgreSQL, several workers): a batch's mails
checked in one statement say what they would say checked one by one."""

from __future__ import annotations

import asyncio
import random

import pytest

from pbmserv_terrace.store import Database
from pbmserv_terrace.store.counters import throttle_check_many

pytestmark = [pytest.mark.postgres]


def test_a_batch_checked_at_once_says_what_one_by_one_says(pg_cluster):
    urls = pg_cluster.create_database(), pg_cluster.create_database()

    async def scenario() -> None:
        one, many = Database(urls[0]), Database(urls[1])
        for db in (one, many):
            await db.migrate()
        rng = random.Random(11)
        senders = [f"p{i}@x.test" for i in range(6)]
        sent: dict[str, list[str]] = {sender: [] for sender in senders}
        now, verdicts = 1_000_000.0, []
        for round_ in range(60):
            now += rng.choice([0.5, 2.0, 7.0, 40.0])
            batch = []
            for sender in rng.sample(senders, rng.randint(1, len(senders))):
                mine = sent[sender]
                mid = rng.choice(mine) if mine and rng.random() < 0.1 else f"<{round_}.{sender}>"  # a mail run again
                batch.append((sender, mid))
                mine.append(mid)
            alone = [(await throttle_check_many(one, [(sender, mid)], now, 3))[0] for sender, mid in batch]
            together = await throttle_check_many(many, batch, now, 3)
            assert together == alone, (round_, batch)
            verdicts += alone
        assert {"ok", "notice", "drop"} <= set(verdicts)  # every answer was tried
        with pytest.raises(ValueError):
            await throttle_check_many(many, [("a@x.test", "<1>"), ("a@x.test", "<2>")], now, 3)
        assert await throttle_check_many(many, [], now, 3) == []
        for db in (one, many):
            await db.close()

    asyncio.run(scenario())
