"""Alembic environment: async engines (aiosqlite / asyncpg).

Called two ways: from :meth:`pbmserv_terrace.store.db.Database.migrate` with an open
connection in ``config.attributes["connection"]``, or from the ``alembic`` command
line (``alembic -c alembic.ini ...``) with the URL from ``PBMSERV_DATABASE_URL``
or the ini file.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy.engine import Connection

from pbmserv_terrace.store.db import DEFAULT_DATABASE_URL, make_engine, normalise_url
from pbmserv_terrace.store.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async(url: str) -> None:
    engine = make_engine(url)
    async with engine.connect() as conn:
        await conn.run_sync(_configure)
        await conn.commit()
    await engine.dispose()


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    url = config.get_main_option("sqlalchemy.url") or os.environ.get("PBMSERV_DATABASE_URL") or DEFAULT_DATABASE_URL
    if context.is_offline_mode():
        context.configure(url=normalise_url(url), target_metadata=target_metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    asyncio.run(_run_async(url))


run()
