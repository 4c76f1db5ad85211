"""Workers that add up (issue 18 item 5): several ``serve`` processes on one
PostgreSQL database and one Dovecot mailbox share the work through the inbound
queue, keep each board's mails in order, lose nothing and apply nothing twice
when they are killed, and share the throttle and the guessing guard."""

from __future__ import annotations

import asyncio
import random
import re
import threading
import time
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import delete, func, make_url, select

from pbmserv_terrace.config import load_config
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.service import Service
from pbmserv_terrace.store import Database, ProcessedMessage, QueuedMail
from pbmserv_terrace.store.queue import CHANNEL, InboundQueue, NewMail, claimable

from ..mailservers import SERVER, ServeProcess, addr
from .test_crash_consistency import replay, state, stream

pytestmark = [pytest.mark.postgres]
NO_LIMIT = 1_000_000
"""commands a sender may mail a minute, where a test's stream must never be throttled"""


def workers(tmp_path: Path, dovecot, relay, url: str, n: int = 3, server_extra: str = "") -> list[ServeProcess]:
    out = []
    for k in range(n):
        (tmp_path / f"w{k}").mkdir()
        proc = ServeProcess(tmp_path / f"w{k}", dovecot, relay, url)
        if server_extra:
            proc.config.write_text(proc.config.read_text().replace("[imap]", f"{server_extra}\n\n[imap]", 1))
        out.append(proc)
    return out


def handled_by(procs: list[ServeProcess]) -> list[int]:
    """How many mails each worker's log says it handled."""
    return [len(re.findall(r" result=", p.log.read_text(errors="replace"))) for p in procs]


# ------------------------------------------------------------- the claim rule
def test_claimable_keeps_delivery_order_per_key():
    rows = [(1, ["board:1", "from:a"]), (2, ["board:2", "from:b"]), (3, ["board:1", "from:c"]), (4, ["board:3", "from:c"])]
    # 3 waits for 1 (board 1); 4 waits for 3 (sender c), although 3 itself waits
    assert claimable(rows) == [1, 2]
    assert claimable(rows[1:]) == [2, 3]
    # a mail that may touch anything goes alone, first, and holds back all after it
    assert claimable([(5, None), (6, ["x"])]) == [5]
    assert claimable([(6, ["x"]), (7, None), (8, ["y"])]) == [6]
    assert claimable([]) == []


class Notices:
    """Counts the queue's NOTIFYs (what wakes the workers' claimers)."""

    def __init__(self) -> None:
        self.count = 0
        self.conn = None

    async def start(self, db: Database) -> None:
        url = make_url(db.url)
        self.conn = await asyncpg.connect(host=url.host, port=url.port, user=url.username, database=url.database)
        await self.conn.add_listener(CHANNEL, lambda *_: self._seen())

    def _seen(self) -> None:
        self.count += 1

    async def taken(self) -> int:
        """How many came since the last call."""
        await asyncio.sleep(0.3)
        n, self.count = self.count, 0
        return n

    async def close(self) -> None:
        await self.conn.close()


def test_queue_claims_skip_locked_rows_and_respect_keys(pg_url):
    async def scenario() -> None:
        db = Database(pg_url)
        await db.migrate()
        notices = Notices()
        await notices.start(db)
        queue = InboundQueue(db, "box")
        await queue.add(
            7,
            [NewMail(1, "<1@x>", frozenset({"board:1"}), b"one"), NewMail(2, "<2@x>", frozenset({"board:2"}), b"two"),
             NewMail(3, "<3@x>", frozenset({"board:1"}), b"three"), NewMail(4, "<4@x>", None, b"four")],
        )  # fmt: skip
        await queue.add(7, [NewMail(1, "<1@x>", frozenset(), b"again")])  # a UID queued once
        assert await notices.taken() == 2  # each add wakes the workers
        async with queue.claim(1) as first:
            assert [raw for _, raw in first.rows] == [b"one"]
            async with queue.claim(5) as second:  # another worker: 1 is locked, 3 waits for it, 4 for all
                assert [raw for _, raw in second.rows] == [b"two"]
                second.finish(second.rows[0][0], "done")
            assert await notices.taken() == 1  # 4 waits for every earlier row
            first.finish(first.rows[0][0], "done")
        assert await notices.taken() == 1  # 3 waited for it
        async with queue.claim(5) as third:
            assert [raw for _, raw in third.rows] == [b"three"]
            raise_inside = third.rows[0][0]
        assert await notices.taken() == 0  # nothing finished
        # not finished (a worker that stopped, or died): still ready
        with pytest.raises(RuntimeError):
            async with queue.claim(5) as fourth:
                assert [row_id for row_id, _ in fourth.rows] == [raise_inside]
                fourth.finish(raise_inside, "done")
                raise RuntimeError("killed")
        async with queue.claim(5) as fifth:
            assert [raw for _, raw in fifth.rows] == [b"three"]
            fifth.finish(fifth.rows[0][0], "failed")
        assert await notices.taken() == 1
        async with queue.claim(5) as sixth:
            assert [raw for _, raw in sixth.rows] == [b"four"]
            sixth.finish(sixth.rows[0][0], "done")
        assert await notices.taken() == 0  # the last one: nobody waits
        rows = await queue.rows()
        assert [(r.uid, r.state) for r in rows] == [(1, "done"), (2, "done"), (3, "failed"), (4, "done")]
        await queue.forget([r.id for r in rows])
        assert await queue.rows() == []

        # a finished row wakes the workers only when a later ready row shares a key
        # with it, as the rows stand when it finishes (not when it was claimed)
        await queue.add(8, [NewMail(1, "<a@x>", frozenset({"board:a", "from:p"}), b"a"),
                            NewMail(2, "<b@x>", frozenset({"board:b", "from:q"}), b"b")])  # fmt: skip
        assert await notices.taken() == 1
        async with queue.claim(5) as both:
            assert [raw for _, raw in both.rows] == [b"a", b"b"]
            await queue.add(8, [NewMail(3, "<c@x>", frozenset({"board:c", "from:q"}), b"c")])  # queued meanwhile
            assert await notices.taken() == 1
            async with queue.claim(5) as none:
                assert none.rows == []  # c waits for b
            for row_id, _ in both.rows:
                both.finish(row_id, "done")
        assert await notices.taken() == 1  # c waited for b
        await queue.add(8, [NewMail(4, "<d@x>", frozenset({"board:d", "from:r"}), b"d")])
        assert await notices.taken() == 1
        async with queue.claim(1) as third:
            assert [raw for _, raw in third.rows] == [b"c"]
            third.finish(third.rows[0][0], "done")
        assert await notices.taken() == 0  # d is later but shares nothing with c
        async with queue.claim(5) as last:
            assert [raw for _, raw in last.rows] == [b"d"]
        await notices.close()
        await db.close()

    asyncio.run(scenario())


def test_a_claim_takes_what_claimable_allows(pg_url):
    """The claim's SQL applies the rule of :func:`claimable`: on random queues
    (shared keys, mails that may touch anything, finished rows among them, rows
    another claimer holds), it takes exactly the rows the rule lets go."""

    async def scenario() -> None:
        db = Database(pg_url)
        await db.migrate()
        queue = InboundQueue(db, "box")
        rng = random.Random(5)
        pool = [f"board:{n}" for n in range(6)] + [f"from:{c}" for c in "abcd"]
        for round_ in range(40):
            mails = []
            for uid in range(1, rng.randint(1, 14)):
                kind = rng.random()
                keys = None if kind < 0.08 else frozenset() if kind < 0.12 else frozenset(rng.sample(pool, rng.randint(1, 3)))
                mails.append(NewMail(uid, f"<{round_}.{uid}@x>", keys, f"{round_}.{uid}".encode()))
            await queue.add(round_, mails)
            rows = await queue.rows()
            done = [r.id for r in rows if rng.random() < 0.25]
            if done:
                async with queue.claim(0) as finisher:  # (claims nothing; finishes what it is told)
                    for row_id in done:
                        finisher.finish(row_id, "done")
            async with db.engine.connect() as conn:
                ready = [
                    (r[0], r[1])
                    for r in await conn.execute(select(QueuedMail.id, QueuedMail.keys).where(QueuedMail.state == "ready").order_by(QueuedMail.id))
                ]  # fmt: skip
            want = claimable(ready)
            async with queue.claim(1) as other:  # another worker holds the first free row
                assert [row_id for row_id, _ in other.rows] == want[:1]
                async with queue.claim(100) as claim:
                    assert [row_id for row_id, _ in claim.rows] == want[1:], (ready, want)
            # the reader's next look deletes what it filed (finished rows only) and leaves it out
            assert await queue.rows(forget=[r.id for r in rows]) == []
            assert [r.id for r in await queue.rows()] == [r.id for r in rows if r.id not in done]
            async with db.engine.begin() as conn:
                await conn.execute(delete(QueuedMail))
        await db.close()

    asyncio.run(scenario())


# ------------------------------------------------------- killed, three times over
@pytest.mark.reliability
def test_three_workers_sigkilled_during_a_stream_exactly_once(serve_factory, relay, dovecot, pg_cluster, tmp_path):
    """1,400 mails from 20 players in 50 games; three workers on one mailbox and one
    PostgreSQL database; one of them, at random, is killed with SIGKILL (and
    restarted) thirty times while the stream is handled.  Afterwards the database
    equals an in-process replay of the stream in delivery order (so each board's
    moves were applied once each, in order), every mail was filed, nothing failed,
    and every reply was queued once and sent."""
    # 1,400 mails are 70 a player: the per-sender throttle (60 a
    # minute) would answer the replay, which runs in seconds, otherwise than the
    # workers, whose run takes a minute and more; it is raised for both
    mails = stream(seed=13, total=1400)
    url = pg_cluster.create_database().replace("postgresql+asyncpg", "postgresql")
    for i in range(20):
        dovecot.add_user(f"p{i:02d}@players.test", "x")
    # a backlog first, then 36 more after each kill: however fast the workers are,
    # the stream lasts through all thirty kills (delivered all at once, one run was
    # done after 21 kills and a faster one after fewer than twenty)
    pending = list(mails)
    for raw in pending[:200]:
        dovecot.deliver("x@players.test", [SERVER], raw)
    del pending[:200]
    procs = [p.start() for p in workers(tmp_path, dovecot, relay, url, server_extra=f"rate_limit_per_minute = {NO_LIMIT}")]
    rng = random.Random(7)
    kills = 0
    restarting: dict[int, threading.Thread] = {}
    while kills < 30 and (pending or dovecot.fetch_all(SERVER)):
        time.sleep(rng.uniform(0.1, 0.3))
        up = [k for k in range(3) if k not in restarting or not restarting[k].is_alive()]
        if len(up) < 2:
            continue  # two restarting: the third works on (and the next kill waits)
        k = rng.choice(up)
        procs[k].kill()
        kills += 1
        for raw in pending[:36]:
            dovecot.deliver("x@players.test", [SERVER], raw)
        del pending[:36]
        restarting[k] = threading.Thread(target=procs[k].start)  # the others go on meanwhile
        restarting[k].start()
    for thread in restarting.values():
        thread.join()
    for raw in pending:
        dovecot.deliver("x@players.test", [SERVER], raw)
    deadline = time.time() + 240
    while dovecot.fetch_all(SERVER) and time.time() < deadline:
        time.sleep(0.5)
    time.sleep(2)  # let the last replies leave
    assert [p.stop() for p in procs] == [0, 0, 0]
    print(f"kills {kills}; mails handled per worker (with reruns): {handled_by(procs)}")
    assert kills == 30, f"the stream was done after {kills} kills"
    assert dovecot.fetch_all(SERVER) == [], "mail left unprocessed"
    assert dovecot.fetch_all(SERVER, "failed") == []
    assert len(dovecot.fetch_all(SERVER, "processed")) == len(mails)
    got = asyncio.run(state(url))
    expected_url = pg_cluster.create_database()
    asyncio.run(replay(mails, expected_url, rate_limit=NO_LIMIT))
    want = asyncio.run(state(expected_url))
    assert got["users"] == want["users"]
    assert got["games"] == want["games"]
    assert got["moves"] == want["moves"]
    assert len({(b, ply) for b, ply, _ in got["moves"]}) == len(got["moves"])
    assert got["processed"] == want["processed"] and len(got["processed"]) == len(mails)
    key = lambda rows: sorted((r[0], r[1], r[2]) for r in rows)  # noqa: E731
    assert key(got["outbox"]) == key(want["outbox"])
    assert len({(r[0], r[1]) for r in got["outbox"]}) == len(got["outbox"])
    assert {r[3] for r in got["outbox"]} == {"sent"}
    assert asyncio.run(queue_rows(url)) == 0, "the queue keeps rows of filed mails"


async def queue_rows(url: str) -> int:
    db = Database(url)
    try:
        async with db.reading() as s:
            return int((await s.execute(select(func.count()).select_from(QueuedMail))).scalar_one())
    finally:
        await db.close()


# ------------------------------------------------------------ shared guards
def test_three_workers_share_the_throttle(serve_factory, relay, dovecot, players, pg_cluster, tmp_path):
    """A sender over the limit (5 a minute here) gets five answers, one notice and
    nothing more, whichever of three workers handles the mails."""
    url = pg_cluster.create_database().replace("postgresql+asyncpg", "postgresql")
    procs = [p.start() for p in workers(tmp_path, dovecot, relay, url, server_extra="rate_limit_per_minute = 5")]
    for k in range(12):
        players.send("ann", f"help {k}")
        players.send("ben", "help")
        if k < 4:
            time.sleep(0.3)  # the first ones spread over the workers
    got = players.wait("ann", 6, timeout=60)
    assert sum("more than 5 commands in a minute" in str(m.get_payload()) for m in got) == 1
    players.wait("ben", 6, timeout=60)
    deadline = time.time() + 60
    while dovecot.fetch_all(SERVER) and time.time() < deadline:
        time.sleep(0.3)
    players.quiet("ann", 2.0)
    players.quiet("ben", 0.1)
    summaries = asyncio.run(processed_summaries(url))
    assert summaries[addr("ann")].count("throttled") == 7 and len(summaries[addr("ann")]) == 12
    assert summaries[addr("ben")].count("throttled") == 7
    print("mails handled per worker:", handled_by(procs))
    assert [p.stop() for p in procs] == [0, 0, 0]


async def processed_summaries(url: str) -> dict[str, list[str]]:
    db = Database(url)
    try:
        async with db.reading() as s:
            out: dict[str, list[str]] = {}
            for sender, summary in await s.execute(select(ProcessedMessage.sender, ProcessedMessage.summary)):
                out.setdefault(sender.lower(), []).append(summary)
            return out
    finally:
        await db.close()


def test_two_services_share_throttle_and_guessing_guard(pg_url):
    """In process, deterministic: two services (two workers) on one database take
    turns with one sender's mails and one userid's wrong passwords."""

    async def scenario() -> None:
        env = {"PBMSERV_DATABASE_URL": pg_url, "PBMSERV_ADDRESS": SERVER, "PBMSERV_NAME": "Test PBM Server"}
        cfg = load_config(None, env)
        cfg.server.rate_limit_per_minute = 5
        dbs = [Database(pg_url), Database(pg_url)]
        await dbs[0].migrate()
        one, two = Service(dbs[0], cfg), Service(dbs[1], cfg)

        def mail(n: int, sender: str, subject: str) -> InboundMail:
            return InboundMail(sender=addr(sender), subject=subject, body="", message_id=f"<g{n}@players.test>")

        await one.handle_mail(mail(0, "ann", "signup ann pw-ann"))
        statuses = [(await (one, two)[k % 2].handle_mail(mail(100 + k, "zed", "help"))).status for k in range(9)]
        assert statuses == ["ok"] * 5 + ["throttled"] * 4
        replies = [(await (one, two)[k % 2].handle_mail(mail(100 + k, "zed", "help"))).status for k in range(9)]
        assert replies == ["duplicate"] * 9  # a mail run again counts once

        # wrong passwords on alternating workers (from one sender: issue 36 counts
        # them per (user, sender)): five are free, then even the right password
        # from that sender is refused on either worker
        for service in (one, two):
            service.throttle.per_minute = 100  # the guard's answers, not the throttle's silence

        def message(n: int, password: str) -> InboundMail:
            return InboundMail(sender=addr("eve"), subject=f"message ann {password} ann", body="hi", message_id=f"<p{n}@x>")

        for k in range(5):
            service = (one, two)[k % 2]
            result = await service.handle_mail(message(k, "wrong"))
            assert "not correct" in result.detail, result
            await service.guessing.settle()  # type: ignore[attr-defined]
        right = message(10, "pw-ann")
        assert await two.prewarm([right]) == [[]], "a userid locked for a sender is not even warmed"
        result = await two.handle_mail(right)
        assert "too many wrong passwords" in result.detail, result
        again = message(11, "pw-ann")
        await one.prewarm([again])  # as serve does before each batch: learns the other's counts
        result = await one.handle_mail(again)
        assert "too many wrong passwords" in result.detail, result
        # ann's own address is not held by eve's guesses, on either worker
        own = InboundMail(sender=addr("ann"), subject="message ann pw-ann ann", body="hi", message_id="<p12@x>")
        await two.prewarm([own])
        result = await two.handle_mail(own)
        assert result.status == "ok", result
        for db in dbs:
            await db.close()

    asyncio.run(scenario())
