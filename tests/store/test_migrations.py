"""Migrations are the only way the schema is made: they agree with the models and
go up, down and up again on both databases."""

from __future__ import annotations

import asyncio

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from pbmserv_terrace.store import Base, Database


def _diff(conn):
    ctx = MigrationContext.configure(conn, opts={"compare_type": True})
    return compare_metadata(ctx, Base.metadata)


def test_models_and_migrations_agree_and_round_trip(db_url):
    async def scenario():
        db = Database(db_url)
        await db.migrate()
        async with db.engine.connect() as conn:
            assert await conn.run_sync(_diff) == []
        tables = set(await db.table_names())
        assert {"users", "games", "seats", "moves", "outbox", "processed_messages"} <= tables
        await db.downgrade("base")
        assert await db.table_names() == ["alembic_version"]
        await db.migrate()
        assert set(await db.table_names()) == tables
        async with db.engine.connect() as conn:
            assert await conn.run_sync(_diff) == []
        await db.close()

    asyncio.run(scenario())
