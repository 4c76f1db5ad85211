"""/healthz and /metrics of a running server (issue 13): health only reads, so it
answers while another connection holds SQLite's write lock; metrics are the
Prometheus text format."""

from __future__ import annotations

import asyncio
import json
import sqlite3

from prometheus_client.parser import text_string_to_metric_families

from pbmserv_terrace.app.health import HealthEndpoint, Metrics
from pbmserv_terrace.store import Database


async def get(port: int, path: str) -> tuple[str, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.0\r\n\r\n".encode())
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    return status, {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}, body


async def serve(db: Database, metrics: Metrics) -> tuple[HealthEndpoint, int]:
    endpoint = HealthEndpoint(db, metrics, "embedded-smtp")
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
            assert info == {"status": "ok", "pending_replies": 0, "mails": {}, "inbound": "embedded-smtp"}
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
