"""/healthz and /metrics of a running server (issue 13): health only reads, so it
answers while another connection holds SQLite's write lock; metrics are the
Prometheus text format.  /healthz tells the truth (issue 43 part 7): 503 naming
each part that is down (the database, the mailbox, a stuck outbox, a lagging
event loop), 200 with its checks when all are well."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from datetime import timedelta
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pbmserv_terrace.app.health import MAILBOX_GRACE, HealthEndpoint, LoopMonitor, Metrics
from pbmserv_terrace.store import Database, UnitOfWork, utcnow
from pbmserv_terrace.testing.postgres import free_port


async def get(port: int, path: str) -> tuple[str, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.0\r\n\r\n".encode())
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    return status, {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}, body


async def serve(db: Database, metrics: Metrics, **kw: Any) -> tuple[HealthEndpoint, int]:
    metrics.inbound(True)  # (the listener is bound)
    endpoint = HealthEndpoint(db, metrics, "embedded-smtp", **kw)
    await endpoint.start("127.0.0.1", 0)
    return endpoint, endpoint.port


def test_healthz_answers_while_another_connection_holds_the_sqlite_write_lock(tmp_path):
    path = tmp_path / "h.db"

    async def run() -> None:
        db = Database(f"sqlite+aiosqlite:///{path}")
        await db.migrate()
        endpoint, port = await serve(db, Metrics())
        writer = sqlite3.connect(path, isolation_level=None)
        try:
            writer.execute("BEGIN IMMEDIATE")  # the write lock, held
            writer.execute("UPDATE board_counters SET next_number = next_number")
            status, headers, body = await asyncio.wait_for(get(port, "/healthz"), 10)
            assert status.endswith("200 OK") and headers["content-type"] == "application/json"
            info = json.loads(body)
            assert info == {"status": "ok", "pending_replies": 0, "mails": {}, "inbound": "embedded-smtp",
                            "checks": {"database": "ok", "outbox": "ok", "mailbox": "ok"}}  # fmt: skip
        finally:
            writer.execute("ROLLBACK")
            writer.close()
            endpoint.close()
            await db.close()

    asyncio.run(run())


def test_metrics_are_prometheus_text_with_mail_outcomes_latency_outbox_and_process(tmp_path):
    async def run() -> None:
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'm.db'}")
        await db.migrate()
        metrics = Metrics()
        metrics.count("ok", 0.004)
        metrics.count("ok", 0.02)
        metrics.count("error", 0.003)
        metrics.replies(5, 1)
        metrics.replies(7, 1)  # running totals: the counter follows them
        metrics.passwords(3)
        metrics.passwords(3)
        metrics.passwords(4)
        metrics.batched(1, 1)
        metrics.batched(3, 9)
        endpoint, port = await serve(db, metrics)
        try:
            status, headers, body = await get(port, "/metrics")
            missing = await get(port, "/nothing")
        finally:
            endpoint.close()
            await db.close()
        assert status.endswith("200 OK") and headers["content-type"].startswith("text/plain; version=")
        assert missing[0].endswith("404 Not Found")
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        mails = {s.labels["result"]: s.value for s in families["pbmserv_mails"].samples if s.name == "pbmserv_mails_total"}
        assert mails == {"ok": 2.0, "error": 1.0}
        latency = families["pbmserv_command_seconds"]
        assert latency.type == "histogram"
        count = [s for s in latency.samples if s.name == "pbmserv_command_seconds_count" and s.labels["result"] == "ok"]
        assert count[0].value == 2.0
        sent = [s.value for s in families["pbmserv_replies_sent"].samples if s.name == "pbmserv_replies_sent_total"]
        assert sent == [7.0]
        checks = [s.value for s in families["pbmserv_password_checks"].samples if s.name == "pbmserv_password_checks_total"]
        assert checks == [4.0]
        batches = {s.name: s.value for f in ("pbmserv_batches", "pbmserv_batched_mails") for s in families[f].samples}
        assert batches["pbmserv_batches_total"] == 3.0 and batches["pbmserv_batched_mails_total"] == 9.0
        assert families["pbmserv_outbox_pending"].samples[0].value == 0.0
        assert "process_resident_memory_bytes" in families

    asyncio.run(run())


async def health(port: int) -> tuple[str, dict[str, Any]]:
    status, _, body = await get(port, "/healthz")
    return status, json.loads(body)


async def until_down(port: int, parts: list[str]) -> tuple[str, dict[str, Any]]:
    """/healthz until it names ``parts`` (its checks are cached for a second), or the last answer after 10 s."""
    deadline = time.monotonic() + 10
    while True:
        status, info = await health(port)
        if info.get("down") == parts or time.monotonic() > deadline:
            return status, info
        await asyncio.sleep(0.1)


def test_healthz_is_503_naming_a_stuck_outbox_and_a_mailbox_that_is_down(tmp_path):
    async def run() -> list[tuple[str, dict[str, Any]]]:
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'o.db'}")
        await db.migrate()
        metrics = Metrics()
        endpoint, port = await serve(db, metrics, stuck_minutes=30)
        seen = [await health(port)]
        long_ago = utcnow() - timedelta(hours=2)
        async with UnitOfWork(db) as uow:  # a reply due two hours ago that nobody sent
            uow.outbox.queue(message_id="<late@srv.test>", recipient="ann@x.test", subject="s", body="b\n",
                             next_attempt_at=long_ago, created_at=long_ago)  # fmt: skip
            await uow.commit()
        seen.append(await until_down(port, ["outbox"]))
        metrics.inbound(False)
        metrics.inbound_since = time.monotonic() - MAILBOX_GRACE - 1  # down for longer than a reconnect
        seen.append(await until_down(port, ["outbox", "mailbox"]))
        endpoint.close()
        await db.close()
        return seen

    fine, stuck, both = asyncio.run(run())
    assert fine[0].endswith("200 OK") and fine[1]["status"] == "ok" and "down" not in fine[1]
    assert stuck[0].endswith("503 Service Unavailable") and stuck[1]["down"] == ["outbox"], stuck
    assert stuck[1]["status"] == "down" and "waited 120 min" in stuck[1]["checks"]["outbox"], stuck
    assert both[1]["down"] == ["outbox", "mailbox"] and "embedded-smtp connection has been down" in both[1]["checks"]["mailbox"]


def test_healthz_is_503_naming_the_database_when_it_does_not_answer():
    async def run() -> tuple[str, dict[str, Any], bytes]:
        db = Database(f"postgresql+asyncpg://nobody@127.0.0.1:{free_port()}/gone")  # nothing listens there
        endpoint, port = await serve(db, Metrics())
        try:
            status, info = await health(port)
            metrics = await get(port, "/metrics")  # (answers all the same)
        finally:
            endpoint.close()
            await db.close()
        return status, info, metrics[2]

    status, info, metrics = asyncio.run(run())
    assert status.endswith("503 Service Unavailable") and info["down"] == ["database"], info
    assert info["checks"]["database"].startswith("down: ") and info["pending_replies"] is None
    assert info["checks"]["outbox"] == "unknown: the database is down"
    assert b"pbmserv_mails_total" in metrics or b"pbmserv_outbox_pending" in metrics


def test_healthz_is_503_naming_an_event_loop_that_was_held(tmp_path):
    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'l.db'}")
        await db.migrate()
        metrics = Metrics()
        monitor = LoopMonitor(metrics)
        monitor.start()
        endpoint, port = await serve(db, metrics, monitor=monitor, max_lag=0.2)
        before = (await health(port))[1]
        time.sleep(0.5)  # a step that holds the loop (the stimulus, not a wait for a result)
        deadline = time.monotonic() + 10
        while monitor.recent_lag(10) <= 0.2 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        after = (await until_down(port, ["event_loop"]))[1]
        monitor.stop()
        endpoint.close()
        await db.close()
        return before, after

    before, after = asyncio.run(run())
    assert before["checks"]["event_loop"] == "ok" and before["status"] == "ok", before
    assert after["down"] == ["event_loop"] and "lagging" in after["checks"]["event_loop"], after
