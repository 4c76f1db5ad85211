"""Backups the operator can trust (issue 43): the whole database as JSON lines.

A backup is one consistent snapshot, read while the server runs on:

- SQLite: one deferred read transaction (``BEGIN``, never ``BEGIN IMMEDIATE``) on
  a WAL database sees the database as it was at its first read, and writers go on
  beside it (the WAL keeps growing until the backup ends: a checkpoint cannot pass
  a reader).
- PostgreSQL: one ``REPEATABLE READ READ ONLY`` transaction: every table as of
  one moment, nothing locked for writers.

Rows are streamed (server-side cursors, ``BATCH`` rows at a time) into
``FILE.tmp`` beside ``FILE`` (created 0600: the rows hold password hashes and the
reply-key secret), which is flushed, fsynced and renamed over ``FILE``, then the
folder is fsynced: ``FILE`` is always a whole backup, an older one or none.

The format: a header line ``{"format": BACKUP_FORMAT, "version": 2, "schema":
REVISION, "tables": [...], ...}``, one line per row ``{"t": TABLE, "r": {COLUMN:
VALUE}}`` (times as ``{"$dt": ISO}``, bytes as ``{"$b64": ...}``), tables parents
first, and a trailer ``{"end": BACKUP_FORMAT, "counts": {TABLE: ROWS}, ...}``.
Version 1 (before issue 43) had no trailer; both restore.

A restore streams the rows back in batches, in one transaction, and before
committing checks what it loaded: each table's row count against the trailer,
every foreign key, and every game's ply against its number of moves.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Column, MetaData, Table, func, insert, inspect, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from .db import READ_ONLY, Database, utcnow
from .models import Base, Game, MoveRecord, User

BACKUP_FORMAT = "pbmserv-terrace-backup"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
BATCH = 1000
"""rows fetched from a cursor, or inserted, at a time"""

Progress = Callable[[str, int], None]
"""called with a table's name and its row count once the table is written or loaded"""


class BackupError(Exception):
    """A backup that cannot be written, or a file that does not restore."""


@dataclass
class Summary:
    schema: str
    counts: dict[str, int] = field(default_factory=dict)
    version: int = FORMAT_VERSION
    checked: list[str] = field(default_factory=list)
    """what a restore verified, in words"""

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


def encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode()}
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict) and "$dt" in value:
        return datetime.fromisoformat(value["$dt"])
    if isinstance(value, dict) and "$b64" in value:
        return base64.b64decode(value["$b64"])
    return value


# ------------------------------------------------------------------ backup
@asynccontextmanager
async def snapshot(db: Database) -> AsyncIterator[AsyncConnection]:
    """A connection inside one read-only transaction that sees one moment of the
    database and blocks no writer; rolled back at the end."""
    # SQLite: a plain BEGIN (store/db.py), a WAL snapshot from the first read
    sqlite: dict[str, Any] = {READ_ONLY: True}
    options = sqlite if db.is_sqlite else {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
    async with db.engine.connect() as conn:
        conn = await conn.execution_options(**options)
        trans = await conn.begin()
        try:
            yield conn
        finally:
            await trans.rollback()


def _present_columns(conn: Connection) -> dict[str, set[str]]:
    found = inspect(conn)
    return {name: {c["name"] for c in found.get_columns(name)} for name in found.get_table_names()}


def _ply_mismatches(rows: Any) -> list[list[Any]]:
    return sorted([str(r[0]), int(r[1]), int(r[2]), int(r[3])] for r in rows)


PLY_CHECK = (
    select(Game.game_type, Game.board_number, Game.ply, func.count(MoveRecord.id))
    .outerjoin(MoveRecord, MoveRecord.game_id == Game.id)
    .group_by(Game.id, Game.game_type, Game.board_number, Game.ply)
    .having(Game.ply != func.count(MoveRecord.id))
)
"""every game whose ply is not its number of moves (there should be none)"""


def _private_file(path: Path) -> IO[str]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # (an old .tmp left by a killed backup may have had another mode)
    return os.fdopen(fd, "w", encoding="utf-8")


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temporary_path(path: Path) -> Path:
    """Where a backup to ``path`` is written before it is renamed to ``path``."""
    return path.with_name(path.name + ".tmp")


async def write_backup(db: Database, path: Path, progress: Progress | None = None) -> Summary:
    """Write the database to ``path`` (see the module's docstring).  The schema
    may be older than this program's: the tables and columns it has are written."""
    tmp = temporary_path(path)
    try:
        async with snapshot(db) as conn:
            # (the first read: on SQLite the snapshot is taken here)
            revision = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one_or_none()
            if revision is None:
                raise BackupError("the database has no schema: there is nothing to back up")
            present = await conn.run_sync(_present_columns)
            tables = [t for t in Base.metadata.sorted_tables if t.name in present]
            summary = Summary(schema=revision)
            with _private_file(tmp) as f:
                header = {"format": BACKUP_FORMAT, "version": FORMAT_VERSION, "schema": revision,
                          "tables": [t.name for t in tables], "dialect": db.engine.dialect.name,
                          "taken_at": utcnow().isoformat()}  # fmt: skip
                f.write(json.dumps(header) + "\n")
                for table in tables:
                    summary.counts[table.name] = await _write_table(conn, f, table, present[table.name])
                    if progress is not None:
                        progress(table.name, summary.counts[table.name])
                mismatched = _ply_mismatches(await conn.execute(PLY_CHECK))
                trailer = {"end": BACKUP_FORMAT, "counts": summary.counts, "rows": summary.rows, "ply_mismatches": mismatched}
                f.write(json.dumps(trailer) + "\n")
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return summary


async def _write_table(conn: AsyncConnection, f: IO[str], table: Table, present: set[str]) -> int:
    columns = [c for c in table.c if c.name in present]
    stmt = select(*columns).order_by(*(c for c in table.primary_key.columns if c.name in present))
    result = await conn.stream(stmt.execution_options(yield_per=BATCH))
    count = 0
    name = table.name
    async for rows in result.mappings().partitions(BATCH):
        f.writelines(json.dumps({"t": name, "r": {k: encode(v) for k, v in row.items()}}) + "\n" for row in rows)
        count += len(rows)
    return count


# ----------------------------------------------------------------- restore
def read_header(f: IO[str], path: Path) -> dict[str, Any]:
    try:
        header = json.loads(f.readline() or "{}")
    except ValueError:
        header = {}
    if not isinstance(header, dict) or header.get("format") != BACKUP_FORMAT:
        raise BackupError(f"{path} is not a pbmserv-terrace backup")
    if header.get("version", 1) not in READABLE_VERSIONS:
        raise BackupError(f"{path} is a backup of format version {header.get('version')}, newer than this program reads")
    return header


async def restore_backup(db: Database, path: Path, progress: Progress | None = None) -> Summary:
    """Load the backup at ``path`` into ``db``, which must hold no users (an empty
    database gets the backup's schema first); verified before it is committed,
    then the schema is upgraded to this program's."""
    with path.open(encoding="utf-8") as f:
        header = read_header(f, path)
        schema = str(header["schema"])
        version = int(header.get("version", 1))
        await db.migrate(schema)
        summary = Summary(schema=schema, version=version)
        summary.counts = {name: 0 for name in header.get("tables", []) if name in Base.metadata.tables}
        async with db.engine.begin() as conn:
            await _empty_target(db, conn, schema)
            trailer = await _load_rows(conn, f, summary, progress)
            await _verify(db, conn, summary, trailer)
            if db.engine.dialect.name == "postgresql":
                for table in Base.metadata.sorted_tables:
                    if (
                        table.name in summary.counts
                        and "id" in table.c
                        and table.c.id.primary_key
                        and table.c.id.autoincrement is not False
                    ):
                        top = func.coalesce(select(func.max(table.c.id)).scalar_subquery(), 1)
                        await conn.execute(select(func.setval(func.pg_get_serial_sequence(table.name, "id"), top)))
    await db.migrate()
    return summary


async def _empty_target(db: Database, conn: AsyncConnection, schema: str) -> None:
    people = select(func.count()).select_from(User)
    if schema >= "0004":
        people = people.where(User.robot_level.is_(None))  # the robots come with every schema
    if (await conn.execute(people)).scalar_one():
        raise BackupError("the target database already has users; restore only into an empty database")
    if schema >= "0004":
        await conn.execute(text("DELETE FROM users"))  # the migration's robots: the backup has them
    # rows the migrations seed (board counters, the reply-key secret) come from the backup instead
    await conn.execute(text("DELETE FROM board_counters"))
    if schema >= "0003":
        await conn.execute(text("DELETE FROM server_secrets"))


def _target_tables(conn: Connection) -> dict[str, Table]:
    """The models' tables with only the columns the database has (a backup of an
    older schema is loaded into that schema) and no defaults of their own."""
    present = _present_columns(conn)
    bare = MetaData()
    return {
        t.name: Table(
            t.name, bare, *(Column(c.name, c.type, primary_key=c.primary_key) for c in t.c if c.name in present[t.name])
        )
        for t in Base.metadata.sorted_tables
        if t.name in present
    }


async def _load_rows(conn: AsyncConnection, f: IO[str], summary: Summary, progress: Progress | None) -> dict[str, Any] | None:
    """Insert the rows, a batch at a time; the trailer (None: the file has none)."""
    tables = await conn.run_sync(_target_tables)
    table: Table | None = None
    batch: list[dict[str, Any]] = []
    trailer: dict[str, Any] | None = None
    seen: set[str] = set()

    async def flush() -> None:
        if table is not None and batch:
            try:
                await conn.execute(insert(table), batch)
            except DBAPIError as exc:
                raise BackupError(f"the rows of {table.name} do not load: {exc.orig}") from None
            batch.clear()

    for number, line in enumerate(f, 2):
        if trailer is not None:
            raise BackupError(f"line {number}: rows after the end of the backup")
        try:
            item = json.loads(line)
        except ValueError:
            raise BackupError(f"line {number} is not JSON (the file is damaged or cut short)") from None
        if "end" in item:
            trailer = item
            continue
        name = item["t"]
        if table is None or name != table.name:
            await flush()
            if table is not None and progress is not None:
                progress(table.name, summary.counts[table.name])
            if name not in tables:
                raise BackupError(f"line {number}: the backup has a table {name!r} this program does not know")
            if name in seen:
                raise BackupError(f"line {number}: the rows of {name} are not together (not a backup this program wrote)")
            seen.add(name)
            table = tables[name]
            summary.counts[name] = 0
        batch.append({k: decode(v) for k, v in item["r"].items()})
        summary.counts[name] += 1
        if len(batch) >= BATCH:
            await flush()
    await flush()
    if table is not None and progress is not None:
        progress(table.name, summary.counts[table.name])
    return trailer


async def _verify(db: Database, conn: AsyncConnection, summary: Summary, trailer: dict[str, Any] | None) -> None:
    """What was loaded is what was backed up, and it holds together."""
    if trailer is not None:
        expected = {k: int(v) for k, v in trailer["counts"].items() if v}
        if expected != {k: v for k, v in summary.counts.items() if v}:
            raise BackupError(f"the backup's rows do not add up: its trailer counts {expected}, the file holds {summary.counts}")
    elif summary.version >= 2:
        raise BackupError("the backup is incomplete (it has no end line): it was cut short")
    for name, count in summary.counts.items():
        found = (await conn.execute(select(func.count()).select_from(Base.metadata.tables[name]))).scalar_one()
        if found != count:
            raise BackupError(f"{name}: {count} rows in the backup, {found} in the database after loading them")
    summary.checked.append(
        f"row counts of {len(summary.counts)} tables" + (" (as the backup's end line says)" if trailer else "")
    )
    orphans: list[str] = []
    present = await conn.run_sync(_present_columns)  # (an older schema lacks later tables and columns)
    for table in Base.metadata.sorted_tables:
        if table.name not in summary.counts:
            continue
        for fk in table.foreign_keys:
            child, parent = fk.parent, fk.column
            if child.name not in present.get(table.name, ()) or parent.name not in present.get(parent.table.name, ()):
                continue
            missing = (
                select(func.count()).select_from(table).where(child.isnot(None), ~select(parent).where(parent == child).exists())
            )
            n = (await conn.execute(missing)).scalar_one()
            if n:
                orphans.append(f"{n} {table.name} rows whose {child.name} names no {parent.table.name} row")
    if db.is_sqlite:
        problems = (await conn.execute(text("PRAGMA foreign_key_check"))).all()
        if problems and not orphans:
            orphans.append(f"{len(problems)} rows fail SQLite's foreign key check")
    if orphans:
        raise BackupError("the backup does not hold together: " + "; ".join(orphans))
    summary.checked.append("every foreign key")
    mismatched = _ply_mismatches(await conn.execute(PLY_CHECK))
    allowed = sorted(list(m) for m in (trailer or {}).get("ply_mismatches", []))
    if mismatched != allowed:
        shown = ", ".join(f"{g} {b} (ply {p}, {m} moves)" for g, b, p, m in mismatched[:5])
        raise BackupError(f"games whose ply is not their number of moves: {shown}")
    summary.checked.append(f"every game's ply against its moves ({summary.counts.get('games', 0)} games)")
