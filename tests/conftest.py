"""Shared fixtures: a real SQLite file and a real throwaway PostgreSQL cluster;
a real Dovecot, the SMTP relay into it, its test players and ``serve`` as a
process (``tests/mailservers.py``), for the tests of ``app/``, ``mail/`` and
``cli/`` that run against real mail servers.

The PostgreSQL cluster is started once per test session (pbmserv_terrace.testing)
and removed afterwards; when it cannot start the tests that need it fail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay
from pbmserv_terrace.testing.postgres import PostgresCluster

from .mailservers import PLAYERS, SERVER, Players, ServeProcess, addr


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    with PostgresCluster() as pg:
        yield pg


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """An empty database of each kind (not migrated)."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/test.db"
    pg: PostgresCluster = request.getfixturevalue("pg_cluster")
    return pg.create_database()


@pytest.fixture
def pg_url(pg_cluster: PostgresCluster) -> str:
    return pg_cluster.create_database()


@pytest.fixture
def dovecot() -> Iterator[DovecotServer]:
    """Dovecot with the server's mailbox and the test players' (a module may
    override it, e.g. with an auth listener for Postfix)."""
    users = {SERVER: "server-secret", **{addr(p): f"imap-{p}" for p in PLAYERS}}
    with DovecotServer(users) as d:
        yield d


@pytest.fixture
def relay(dovecot: DovecotServer) -> Iterator[LmtpRelay]:
    r = LmtpRelay(dovecot).start()
    yield r
    r.stop()


@pytest.fixture
def players(dovecot: DovecotServer, relay: LmtpRelay) -> Players:
    return Players(dovecot, relay)


@pytest.fixture
def serve_factory(tmp_path: Path, dovecot: DovecotServer) -> Iterator[Callable[..., ServeProcess]]:
    started: list[ServeProcess] = []

    def make(relay: LmtpRelay, db_url: str | None = None, extra: str = "") -> ServeProcess:
        url = db_url or f"sqlite:///{tmp_path}/serve.db"
        proc = ServeProcess(tmp_path, dovecot, relay, url, extra)
        started.append(proc)
        return proc

    yield make
    for proc in started:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait(10)
