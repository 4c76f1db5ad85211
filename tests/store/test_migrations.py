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


def test_one_board_series_starts_after_every_number_any_game_issued(db_url):
    """Migration 0009 (issue 38): boards of every game share one series, and the
    series starts after every number issued, so nothing is renumbered and no new
    board repeats an old number of any game."""
    from sqlalchemy import text

    from pbmserv_terrace.store import UnitOfWork

    async def scenario():
        db = Database(db_url)
        await db.migrate("0008")
        async with db.engine.begin() as conn:
            await conn.execute(text("DELETE FROM board_counters"))
            for game_type, next_number in (("terrace", 108), ("patience", 104), ("terrace6x6", 102)):
                await conn.execute(text("INSERT INTO board_counters (game_type, next_number) VALUES (:g, :n)"),
                                   {"g": game_type, "n": next_number})  # fmt: skip
        await db.migrate()
        async with UnitOfWork(db) as uow:
            numbers = [await uow.games.next_board_number(g) for g in ("terrace6x6", "patience", "terrace")]
            await uow.commit()
        assert numbers == [108, 109, 110]
        await db.downgrade("0008")
        async with db.engine.connect() as conn:
            rows = dict((await conn.execute(text("SELECT game_type, next_number FROM board_counters"))).all())
        assert rows == {"terrace": 111, "patience": 111, "terrace6x6": 111}, "each game's counter passes the shared one"
        await db.close()

    asyncio.run(scenario())


def test_migrate_returns_the_revisions_it_applied(db_url):
    """Issue 43: ``migrate`` says what it did; reading the revision changes nothing."""
    from pbmserv_terrace.store.db import head_revision, known_revisions

    async def scenario():
        db = Database(db_url)
        assert await db.schema_revision() is None
        applied = await db.migrate("0002")
        assert [r.revision for r in applied] == ["0001", "0002"] and applied[0].title == "initial schema"
        assert await db.schema_revision() == "0002"
        assert [r.revision for r in await db.migrate()] == known_revisions()[2:]
        assert await db.migrate() == [] and await db.schema_revision() == head_revision()
        await db.close()

    asyncio.run(scenario())
