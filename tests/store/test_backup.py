"""Backups (issue 43): one snapshot while the server writes on, a file that is
whole or absent, and a restore that checks what it loaded — on both databases."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select, text, update

from pbmserv_terrace.store import Database, Game, MoveRecord, Seat, User
from pbmserv_terrace.store.db import head_revision
from pbmserv_terrace.store.backup import BackupError, restore_backup, temporary_path, write_backup

T0 = datetime(2025, 1, 1, 12, 0)


def fresh_url(db_url: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if db_url.startswith("sqlite"):
        return f"sqlite+aiosqlite:///{tmp_path}/fresh.db"
    return str(request.getfixturevalue("pg_cluster").create_database())


async def add_game(db: Database, number: int, plies: int) -> int:
    """A board of ann and ben with ``plies`` moves, in one transaction."""
    async with db.session() as s:
        users = (await s.execute(select(User).where(User.userid.in_(["ann", "ben"])).order_by(User.userid))).scalars().all()
        game = Game(game_type="terrace", board_number=number, variant="normal", options={}, position="p", start_position="p",
                    ply=plies, created_at=T0, last_move_at=T0)  # fmt: skip
        s.add(game)
        await s.flush()
        s.add_all(Seat(game_id=game.id, seat=i + 1, user_id=u.id, queued_moves=[]) for i, u in enumerate(users))
        s.add_all(MoveRecord(game_id=game.id, ply=p, seat=2 - p % 2, move=f"m{p}", played_at=T0) for p in range(1, plies + 1))
        await s.commit()
        return game.id


async def play_one(db: Database, game_id: int) -> None:
    """One more ply of a board: its move row and its ply, in one transaction (as the service writes them)."""
    async with db.session() as s:
        ply = (await s.execute(select(Game.ply).where(Game.id == game_id))).scalar_one() + 1
        s.add(MoveRecord(game_id=game_id, ply=ply, seat=2 - ply % 2, move=f"m{ply}", played_at=T0))
        await s.execute(update(Game).where(Game.id == game_id).values(ply=ply))
        await s.commit()


async def club(db: Database, games: int = 5) -> list[int]:
    await db.migrate()
    async with db.session() as s:
        s.add_all(User(userid=name, password_hash="$x", addresses=[f"{name}@x.test"], created_at=T0) for name in ("ann", "ben"))
        await s.commit()
    return [await add_game(db, 101 + i, 4 + i) for i in range(games)]


class Writer(threading.Thread):
    """Plays moves and opens boards in a database of its own, on its own loop,
    ``steps`` transactions each time it is asked to (:meth:`write`)."""

    def __init__(self, url: str, games: list[int]) -> None:
        super().__init__(daemon=True)
        self.url, self.games = url, games
        self.asked = threading.Semaphore(0)
        self.done = threading.Semaphore(0)
        self.stop = False
        self.commits = 0
        self.error: BaseException | None = None

    def write(self, steps: int = 6) -> None:
        for _ in range(steps):
            self.asked.release()
        for _ in range(steps):
            # a writer blocked by the backup would never get here (the old backup
            # held SQLite's write lock from start to end)
            assert self.done.acquire(timeout=60), "the writer was blocked while the backup ran"

    def run(self) -> None:
        asyncio.run(self.main())

    async def main(self) -> None:
        db = Database(self.url)
        number = 500
        try:
            while True:
                await asyncio.to_thread(self.asked.acquire)
                if self.stop:
                    return
                if self.commits % 3 == 2:
                    number += 1
                    self.games.append(await add_game(db, number, 3))  # a new board: its seats and moves refer to it
                else:
                    await play_one(db, self.games[self.commits % len(self.games)])
                self.commits += 1
                self.done.release()
        except BaseException as exc:
            self.error = exc
            self.done.release()
        finally:
            await db.close()


async def plies_and_moves(db: Database) -> list[tuple[int, int, int]]:
    async with db.engine.connect() as conn:
        stmt = (
            select(Game.board_number, Game.ply, func.count(MoveRecord.id))
            .outerjoin(MoveRecord, MoveRecord.game_id == Game.id)
            .group_by(Game.id, Game.board_number, Game.ply)
            .order_by(Game.board_number)
        )
        return [tuple(r) for r in (await conn.execute(stmt)).all()]  # type: ignore[misc]


def test_a_backup_taken_while_moves_stream_in_restores_whole(db_url, request, tmp_path):
    """Between each two tables the backup writes, another connection commits new
    moves and new boards: the backup is still one moment (no move without its
    board's ply, no seat without its board), and a fresh database takes it."""
    path = tmp_path / "club.jsonl"
    target = fresh_url(db_url, request, tmp_path)

    async def scenario():
        db = Database(db_url)
        games = await club(db)
        writer = Writer(db_url, games)
        writer.start()
        written: list[str] = []

        def between_tables(table: str, rows: int) -> None:
            written.append(table)
            writer.write()  # (blocks the backup's loop: the writer runs in its own thread)

        summary = await write_backup(db, path, between_tables)
        writer.stop = True
        writer.asked.release()
        writer.join(30)
        assert writer.error is None, writer.error
        assert {"games", "seats", "moves", "users"} <= set(written) and writer.commits >= 6 * len(written)
        now = await plies_and_moves(db)
        await db.close()

        fresh = Database(target)
        restored = await restore_backup(fresh, path)
        assert restored.counts == summary.counts and restored.rows == summary.rows
        assert any("foreign key" in c for c in restored.checked) and any("ply" in c for c in restored.checked)
        back = await plies_and_moves(fresh)
        assert back and all(ply == moves for _, ply, moves in back), back
        assert len(back) == 5 and sum(m for *_, m in back) == sum(4 + i for i in range(5)), "the moment the backup began"
        assert len(now) > len(back) and sum(m for *_, m in now) > sum(m for *_, m in back), "the writes went on meanwhile"
        async with fresh.engine.connect() as conn:
            orphans = await conn.execute(text("SELECT count(*) FROM seats WHERE game_id NOT IN (SELECT id FROM games)"))
            assert orphans.scalar_one() == 0
        # the restored database goes on: new rows get new ids
        await add_game(fresh, 900, 2)
        await fresh.close()

    asyncio.run(scenario())
    lines = path.read_text().splitlines()
    header, trailer = json.loads(lines[0]), json.loads(lines[-1])
    assert header["version"] == 2 and header["schema"] and trailer["rows"] == len(lines) - 2
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, "the backup holds password hashes"


def test_a_backup_is_whole_or_absent(tmp_path):
    """A backup that fails half-way leaves the old file as it was and no .tmp; a
    .tmp left by a killed backup is replaced, never taken for a backup."""
    url = f"sqlite+aiosqlite:///{tmp_path}/club.db"
    path = tmp_path / "club.jsonl"
    path.write_text("the previous backup\n")
    temporary_path(path).write_text("a half backup of a killed run\n")
    os.chmod(temporary_path(path), 0o644)

    async def scenario():
        db = Database(url)
        await club(db)

        def dies(table: str, rows: int) -> None:
            if table == "games":
                raise RuntimeError("simulated: the disk is full")

        with pytest.raises(RuntimeError, match="simulated"):
            await write_backup(db, path, dies)
        assert path.read_text() == "the previous backup\n" and not temporary_path(path).exists()
        await write_backup(db, path)
        await db.close()

    asyncio.run(scenario())
    assert json.loads(path.read_text().splitlines()[-1])["end"] and not temporary_path(path).exists()
    assert [p.name for p in tmp_path.iterdir() if "jsonl" in p.name] == ["club.jsonl"]


def damaged(path: Path, to: Path, edit) -> Path:
    lines = path.read_text().splitlines()
    to.write_text("\n".join(edit(lines)) + "\n")
    return to


def test_restore_checks_what_it_loaded_and_loads_nothing_it_refuses(tmp_path):
    path = tmp_path / "club.jsonl"

    def drop_a_move(lines):
        trailer = json.loads(lines[-1])
        trailer["counts"]["moves"] -= 1
        trailer["rows"] -= 1
        i = next(i for i, line in enumerate(lines) if line.startswith('{"t": "moves"'))
        return lines[:i] + lines[i + 1 : -1] + [json.dumps(trailer)]

    def version_1(lines):
        header = json.loads(lines[0])
        header["version"] = 1
        return [json.dumps(header), *lines[1:-1]]

    cases = [
        (lambda lines: lines[:-1], "incomplete"),  # cut short: no end line
        (lambda lines: [*lines[:-3], lines[-3][:20], lines[-1]], "not JSON"),
        (lambda lines: lines[:2] + lines[3:], "do not add up"),
        (drop_a_move, "ply is not their number of moves"),
    ]

    async def scenario():
        db = Database(f"sqlite+aiosqlite:///{tmp_path}/club.db")
        await club(db)
        await write_backup(db, path)
        await db.close()
        for n, (edit, message) in enumerate(cases):
            target = Database(f"sqlite+aiosqlite:///{tmp_path}/t{n}.db")
            with pytest.raises(BackupError, match=message):
                await restore_backup(target, damaged(path, tmp_path / f"d{n}.jsonl", edit))
            async with target.engine.connect() as conn:
                assert (await conn.execute(text("SELECT count(*) FROM games"))).scalar_one() == 0, "nothing was loaded"
            await target.close()
        # a backup of the format before issue 43 (no end line) still restores, checked
        old = Database(f"sqlite+aiosqlite:///{tmp_path}/old.db")
        summary = await restore_backup(old, damaged(path, tmp_path / "v1.jsonl", version_1))
        assert summary.version == 1 and summary.counts["games"] == 5 and any("ply" in c for c in summary.checked)
        await old.close()

    asyncio.run(scenario())


def test_a_backup_of_an_older_schema_restores_and_is_upgraded(db_url, request, tmp_path):
    """Backing up before upgrading: the backup writes the schema it finds."""
    path = tmp_path / "old.jsonl"
    target = fresh_url(db_url, request, tmp_path)

    async def scenario():
        db = Database(db_url)
        await db.migrate("0007")
        async with db.engine.begin() as conn:
            await conn.execute(text("INSERT INTO users (userid, password_hash, addresses, signed_off, accept_challenges, seek, "
                                    "vacation, notify_all, created_at) VALUES ('ann', '$x', '[]', false, true, 0, false, false, "
                                    "'2025-01-01 00:00:00')"))  # fmt: skip
        summary = await write_backup(db, path)
        assert summary.schema == "0007" and "confirmations" not in summary.counts
        await db.close()
        fresh = Database(target)
        restored = await restore_backup(fresh, path)
        assert restored.schema == "0007" and await fresh.schema_revision() == head_revision()
        async with fresh.engine.connect() as conn:
            assert (await conn.execute(text("SELECT userid FROM users WHERE robot_level IS NULL"))).scalars().all() == ["ann"]
        await fresh.close()

    asyncio.run(scenario())
