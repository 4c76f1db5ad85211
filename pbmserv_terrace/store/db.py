"""Engines, migrations and the Unit of Work's database handle.

SQLite (the embedded default) runs in WAL mode; every transaction starts with
``BEGIN IMMEDIATE`` so a writer takes the lock up front and other writers wait
(busy timeout) instead of failing with "database is locked" half-way; in one
process an asyncio lock keeps writers in line without busy-waiting, and a writer
that must not wait behind a backlog (the outbox's outcomes) goes first across
processes (``Database.session(first=True)``: :class:`.inline.Turn`).  PostgreSQL
(asyncpg) allows many transactions at once; games are locked row by row.

The SQLite file holds password hashes and the reply-key secret: it is created
0600 whatever the umask (and an existing one readable by others is made so),
its folder 0700; SQLite gives its ``-wal`` and ``-shm`` files the database
file's mode (issue 36).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import stat
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from ..config import DEFAULT_DATABASE_URL as DEFAULT_DATABASE_URL  # (re-exported: store.DEFAULT_DATABASE_URL)
from ..config import normalise_url as normalise_url
from . import inline

if TYPE_CHECKING:  # (Alembic is imported where it is used: a current schema needs none of it)
    from alembic.config import Config
    from alembic.script import ScriptDirectory

log = logging.getLogger("pbmserv.store")
PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
SQLITE_BUSY_TIMEOUT_S = 60.0
READ_ONLY = "pbmserv_read_only"
GOES_FIRST = "pbmserv_goes_first"
"""execution option of a SQLite transaction whose writer holds the turn (:class:`.inline.Turn`)"""


def utcnow() -> datetime:
    """Now, as the naive UTC datetime every time column stores."""
    return datetime.now(UTC).replace(tzinfo=None)


_EMPTY_JSON: dict[str, Callable[[], Any]] = {"[]": list, "{}": dict}


def json_loads(text: str) -> Any:
    """The JSON columns' reader: most values are empty (no votes, no queued
    moves, no options), and a fresh empty list or dict costs far less than a parse."""
    empty = _EMPTY_JSON.get(text)
    return empty() if empty is not None else json.loads(text)


def private_sqlite_file(database: str) -> None:
    """Create the SQLite file ``database`` 0600 if it is missing (before SQLite
    would, under the umask), and take the others' and the group's access away
    from it and its ``-wal``/``-shm`` when they have any.  ``:memory:`` and
    ``file:`` URIs are left alone."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    try:
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        return
    except FileExistsError:
        pass
    except OSError:
        return  # (a folder missing or unwritable: SQLite's own error says it)
    for path in (database, database + "-wal", database + "-shm"):
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
            if mode & 0o077:
                os.chmod(path, mode & ~0o077)
                log.warning("%s was readable by other users (mode %o); made private (%o)", path, mode, mode & ~0o077)
        except OSError:
            continue


def make_engine(url: str, turn: inline.Turn | None = None, **kwargs: Any) -> AsyncEngine:
    """The engine; on SQLite, with ``turn``, every writer but one holding the turn
    waits while a writer that goes first holds it."""
    url = normalise_url(url)
    kwargs.setdefault("json_deserializer", json_loads)
    if url.startswith("sqlite"):
        database = make_url(url).database or ":memory:"
        # statements run on the loop's thread, not one aiosqlite hop each (store/inline.py)
        connect = inline.creator(database)

        async def private_connect() -> Any:
            private_sqlite_file(database)  # a few system calls per new connection (they are pooled)
            return await connect()

        engine = create_async_engine(url, async_creator=private_connect, **kwargs)

        @event.listens_for(engine.sync_engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # transaction control is ours (the inline connection opens with
            # isolation_level None): we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # a reader (Database.reading) takes no write lock; WAL lets it read beside a writer
            options = conn.get_execution_options()
            if options.get(READ_ONLY):
                conn.exec_driver_sql("BEGIN")
            else:
                driver = conn.connection.driver_connection  # the InlineConnection
                assert isinstance(driver, inline.InlineConnection)
                inline.begin_immediate(driver.raw, SQLITE_BUSY_TIMEOUT_S, None if options.get(GOES_FIRST) else turn)

        return engine
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 10)
    # No pre-ping (a round trip per transaction): a connection found dead is
    # invalidated by the error, and Service.handle_mail runs the mail again.
    kwargs.setdefault("pool_recycle", 3600)
    return create_async_engine(url, **kwargs)


def migrations_dir() -> Path:
    """The Alembic scripts: shipped inside the wheel, or ``migrations/`` in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").exists():
            return candidate
    raise FileNotFoundError("the Alembic migrations directory is missing from the installation")


def alembic_config(url: str | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if url:
        cfg.set_main_option("sqlalchemy.url", normalise_url(url).replace("%", "%%"))
    return cfg


class Revision(NamedTuple):
    """One schema revision: its id (``0009``) and what it does (its docstring's first line)."""

    revision: str
    title: str


def _scripts() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


_REVISION_LINE = re.compile(r"^(down_revision|revision)\b[^=\n]*= *(?:[\"']([\w-]+)[\"']|None)", re.MULTILINE)


@cache
def quick_head_revision() -> str | None:
    """:func:`head_revision` read from the scripts' ``revision``/``down_revision``
    lines without Alembic (issue 43: its import was a tenth of ``handle``'s CPU);
    None when they do not make one linear chain (then Alembic decides)."""
    revisions, downs = set(), set()
    for script in (migrations_dir() / "versions").glob("*.py"):
        found = {m[1]: m[2] for m in _REVISION_LINE.finditer(script.read_text(encoding="utf-8"))}
        if "revision" not in found or not found["revision"]:
            return None
        revisions.add(found["revision"])
        if found.get("down_revision"):
            downs.add(found["down_revision"])
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 and len(downs) == len(revisions) - 1 else None


def _stored_revisions(conn: Connection) -> list[str] | None:
    """The ``alembic_version`` rows (None: there is no such table, or it cannot be read)."""
    try:
        return [str(r[0]) for r in conn.exec_driver_sql("SELECT version_num FROM alembic_version")]
    except Exception:
        return None


def head_revision() -> str:
    """The newest schema revision this program knows (the one it needs)."""
    head = _scripts().get_current_head()
    assert head is not None
    return head


def known_revisions() -> list[str]:
    """Every schema revision this program knows, oldest first."""
    return [r.revision for r in reversed(list(_scripts().walk_revisions()))]


def revisions_between(lower: str | None, upper: str | None) -> list[Revision]:
    """The revisions after ``lower`` (None: an empty database) up to ``upper``
    included, oldest first: what an upgrade from ``lower`` to ``upper`` applies."""
    if upper is None or upper == lower:
        return []
    found = _scripts().iterate_revisions(upper, lower or "base")
    return [
        Revision(r.revision, (r.doc or "").strip().splitlines()[0] if r.doc else "")
        for r in reversed(list(found))
        if r.revision != lower
    ]


def _current(conn: Connection) -> str | None:
    from alembic.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def _upgrade(conn: Connection, revision: str = "head") -> tuple[str | None, str | None]:
    from alembic import command

    before = _current(conn)
    cfg = alembic_config()
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, revision)
    return before, _current(conn)


def _downgrade(conn: Connection, revision: str) -> None:
    from alembic import command

    cfg = alembic_config()
    cfg.attributes["connection"] = conn
    command.downgrade(cfg, revision)


class Database:
    """One database: the engine, the session factory and the SQLite writer lock."""

    def __init__(self, url: str = DEFAULT_DATABASE_URL, **engine_kwargs: Any) -> None:
        self.url = normalise_url(url)
        database = make_url(self.url).database if self.url.startswith("sqlite") else None
        self.turn = inline.Turn(database + inline.TURN_SUFFIX) if database and database != ":memory:" else None
        """SQLite: the turn of a writer that goes first (:meth:`session`)"""
        self.engine = make_engine(self.url, self.turn, **engine_kwargs)
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False, autoflush=True)
        self._writer = asyncio.Lock() if self.is_sqlite else None
        self._read_options: dict[str, Any] = {READ_ONLY: True}
        if not self.is_sqlite:
            self._read_options["isolation_level"] = "AUTOCOMMIT"

    async def migrate(self, revision: str = "head") -> list[Revision]:
        """Upgrade the schema (creating the SQLite file if needed); the revisions
        applied, oldest first (none: it was up to date)."""
        if self.is_sqlite:
            database = make_url(self.url).database
            if database and database != ":memory:":
                Path(database).parent.mkdir(PRIVATE_DIR, parents=True, exist_ok=True)
        head = quick_head_revision() if revision == "head" else None
        if head is not None:  # a schema already current (every handle, most starts): one read, no Alembic
            async with self.engine.connect() as conn:
                conn = await conn.execution_options(**self._read_options)
                if await conn.run_sync(_stored_revisions) == [head]:
                    return []
        async with self.engine.connect() as conn:
            before, after = await conn.run_sync(_upgrade, revision)
            await conn.commit()
        return revisions_between(before, after)

    async def schema_revision(self) -> str | None:
        """The database's schema revision (None: no schema yet).  A read: it
        takes no write lock and changes nothing."""
        async with self.engine.connect() as conn:
            conn = await conn.execution_options(**self._read_options)
            return await conn.run_sync(_current)

    async def downgrade(self, revision: str) -> None:
        async with self.engine.connect() as conn:
            await conn.run_sync(_downgrade, revision)
            await conn.commit()

    async def table_names(self) -> list[str]:
        async with self.engine.connect() as conn:
            return await conn.run_sync(lambda c: inspect(c).get_table_names())

    @contextlib.asynccontextmanager
    async def session(self, *, first: bool = False) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction, rolled back unless the caller commits.
        On SQLite, one writer at a time in this process; with ``first`` the
        transaction is begun at once and goes before other processes' writers
        (:class:`.inline.Turn`: it waits for at most the transaction that runs)."""
        if self._writer is not None:
            await self._writer.acquire()
        took = False
        try:
            if first and self.turn is not None:
                took = await self.turn.take(SQLITE_BUSY_TIMEOUT_S)
            async with self.sessions() as session:
                try:
                    if took:
                        await session.connection(execution_options={GOES_FIRST: True})  # (begins it)
                    yield session
                finally:
                    if session.in_transaction():
                        await session.rollback()
        finally:
            if took and self.turn is not None:
                self.turn.give_back()
            if self._writer is not None:
                self._writer.release()

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[AsyncSession]:
        """A session for a short read that may run beside the writer (it never
        waits for SQLite's write lock); rolled back at the end."""
        async with self.sessions() as session:
            # PostgreSQL: each statement on its own (read committed sees a fresh
            # snapshot per statement anyway), without the BEGIN and ROLLBACK round trips
            await session.connection(execution_options=self._read_options)
            try:
                yield session
            finally:
                await session.rollback()

    @contextlib.asynccontextmanager
    async def mailbox_lock(self, name: str) -> AsyncIterator[bool]:
        """Yield True if this process may drain mailbox ``name`` now.  On PostgreSQL
        a session advisory lock makes that one worker at a time; SQLite has one."""
        if self.is_sqlite:
            yield True
            return
        key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
        async with self.engine.connect() as conn:
            got = bool((await conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key})).scalar())
            await conn.commit()
            try:
                yield got
            finally:
                if got:
                    await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                    await conn.commit()

    async def close(self) -> None:
        await self.engine.dispose()
        if self.turn is not None:
            self.turn.close()
