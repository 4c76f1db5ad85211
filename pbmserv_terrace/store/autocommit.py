"""Statements that are a transaction on their own (PostgreSQL): run without the
``BEGIN`` and ``COMMIT`` round trips SQLAlchemy wraps around every connection's
work.  One statement in autocommit mode is still atomic (an implicit
transaction); a ``NOTIFY`` or ``pg_notify`` in it is sent when it ends."""

from __future__ import annotations

import weakref

from sqlalchemy.ext.asyncio import AsyncEngine

from .db import Database

_ENGINES: weakref.WeakKeyDictionary[Database, AsyncEngine] = weakref.WeakKeyDictionary()


def autocommit(db: Database) -> AsyncEngine:
    """``db``'s engine (same pool) with every statement committed on its own."""
    engine = _ENGINES.get(db)
    if engine is None:
        engine = _ENGINES[db] = db.engine.execution_options(isolation_level="AUTOCOMMIT")
    return engine
