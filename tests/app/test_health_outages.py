"""/healthz under a running ``serve`` when what it needs goes away (issue 43 part
7): the IMAP server (Dovecot) stops, then PostgreSQL stops; each time /healthz
answers 503 naming the part that is down (``mailbox``, ``database``), ``status``
says so and exits 1, and both are back to 200 / 0 once the server is back.
Polled with deadlines, never timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay
from pbmserv_terrace.testing.postgres import PostgresCluster

from ..mailservers import ServeProcess


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def until(port: int, wanted: Callable[[int, dict[str, Any]], bool], timeout: float = 90) -> tuple[int, dict[str, Any]]:
    """/healthz until ``wanted`` says yes (the last answer after ``timeout``)."""
    deadline = time.time() + timeout
    while True:
        try:
            code, info = healthz(port)
        except OSError:
            code, info = 0, {}
        if wanted(code, info) or time.time() > deadline:
            return code, info
        time.sleep(0.2)


def status(serve: ServeProcess, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``pbmserv-terrace status --config …`` typed in another directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    return subprocess.run([sys.executable, "-m", "pbmserv_terrace", "status", "--config", str(serve.config)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.fixture
def own_pg() -> Iterator[PostgresCluster]:
    """A cluster of this test's own: it is stopped and started again under serve."""
    if os.environ.get("PBMSERV_TEST_POSTGRES_URL"):
        pytest.skip("an external PostgreSQL cannot be stopped by the test")
    with PostgresCluster() as pg:
        yield pg


def test_healthz_names_the_mailbox_while_dovecot_is_down(serve_factory, relay: LmtpRelay, dovecot: DovecotServer, tmp_path):
    serve = serve_factory(relay).start()
    port = serve.health_port
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, info = until(port, lambda c, i: c == 200)
    assert code == 200 and info["status"] == "ok" and info["checks"]["mailbox"] == "ok", info
    assert status(serve, elsewhere).returncode == 0
    dovecot.halt()
    try:
        code, info = until(port, lambda c, i: c == 503)
        assert code == 503 and info["down"] == ["mailbox"], info
        assert info["checks"]["mailbox"].startswith("down: the imap connection has been down"), info
        out = status(serve, elsewhere)
        assert out.returncode == 1 and "DOWN  mailbox: down: the imap connection" in out.stdout, out.stdout + out.stderr
    finally:
        dovecot.resume()
    code, info = until(port, lambda c, i: c == 200)  # (serve reconnects with back-off: 1, 2, 4, ... s)
    assert code == 200 and info["status"] == "ok", info
    assert status(serve, elsewhere).returncode == 0


@pytest.mark.postgres
def test_healthz_names_the_database_while_postgresql_is_down(
    serve_factory, relay: LmtpRelay, dovecot: DovecotServer, own_pg: PostgresCluster, tmp_path
):
    url = own_pg.create_database().replace("postgresql+asyncpg", "postgresql")
    serve = serve_factory(relay, db_url=url).start()
    port = serve.health_port
    code, info = until(port, lambda c, i: c == 200)
    assert code == 200 and info["checks"]["database"] == "ok", info
    own_pg.halt()
    try:
        code, info = until(port, lambda c, i: c == 503 and "database" in i.get("down", []))
        assert code == 503 and "database" in info["down"] and info["checks"]["database"].startswith("down: "), info
        assert info["pending_replies"] is None and info["checks"]["outbox"] == "unknown: the database is down"
    finally:
        own_pg.resume()
    code, info = until(port, lambda c, i: c == 200)
    assert code == 200 and info["status"] == "ok", info
    assert serve.stop() == 0
