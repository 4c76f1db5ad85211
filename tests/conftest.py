"""Shared fixtures: a real SQLite file and a real throwaway PostgreSQL cluster.

The PostgreSQL cluster is started once per test session (pbmserv_terrace.testing)
and removed afterwards; when it cannot start the tests that need it fail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pbmserv_terrace.testing.postgres import PostgresCluster


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
