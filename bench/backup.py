"""What a backup and a restore cost in memory and time as the database grows
(issue 43: memory flat in the size of the database).

A synthetic club on a fresh SQLite (or, with ``--pg``, a throwaway PostgreSQL
cluster): ``--games`` boards of two players with ``--plies`` moves each, and as many
outbox rows with a 2 kB body.  For each size (the given one and ten times it)
``admin backup``'s :func:`write_backup` and ``admin restore``'s
:func:`restore_backup` (into a fresh database) run under tracemalloc.

Figures: rows, file size, seconds, tracemalloc's peak (Python allocations,
the batches included) and the process's peak RSS after each step (it only grows).

Run: python bench/backup.py [--games 200] [--plies 100] [--pg]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from pbmserv_terrace.store import Database, Game, MoveRecord, OutboxMessage, Seat, User
from pbmserv_terrace.store.backup import restore_backup, write_backup

T0 = datetime(2025, 1, 1)


async def fill(db: Database, games: int, plies: int) -> None:
    await db.migrate()
    async with db.engine.begin() as conn:
        await conn.execute(insert(User), [{"id": 100 + i, "userid": f"p{i}", "password_hash": "$x", "addresses": [f"p{i}@x.test"],
                                           "created_at": T0} for i in range(2)])  # fmt: skip
        for start in range(0, games, 100):
            ids = range(start + 1, min(games, start + 100) + 1)
            await conn.execute(insert(Game), [{"id": g, "game_type": "terrace", "board_number": 100 + g, "variant": "normal",
                                               "options": {}, "position": "p", "start_position": "p", "ply": plies,
                                               "created_at": T0, "last_move_at": T0} for g in ids])  # fmt: skip
            await conn.execute(insert(Seat), [{"game_id": g, "seat": s, "user_id": 99 + s, "queued_moves": []}
                                              for g in ids for s in (1, 2)])  # fmt: skip
            await conn.execute(insert(MoveRecord), [{"game_id": g, "ply": p, "seat": 2 - p % 2, "move": "C-d2-e3",
                                                     "played_at": T0} for g in ids for p in range(1, plies + 1)])  # fmt: skip
            await conn.execute(insert(OutboxMessage), [{"message_id": f"<{g}@x>", "recipient": "p0@x.test", "subject": "s",
                                                        "body": "x" * 2048, "next_attempt_at": T0, "created_at": T0}
                                                       for g in ids])  # fmt: skip


async def measured(what: str, step: Callable[[], Awaitable[Any]]) -> Any:
    tracemalloc.start()
    t = time.perf_counter()
    result = await step()
    seconds = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  {what:<8} {seconds:7.2f} s   tracemalloc peak {peak / 2**20:6.1f} MiB   peak RSS {rss:6.1f} MiB", flush=True)
    return result


async def one_size(urls: Callable[[str], str], folder: Path, games: int, plies: int) -> None:
    source, target = Database(urls("source")), Database(urls("target"))
    await fill(source, games, plies)
    path = folder / f"club-{games}.jsonl"
    print(f"{games} games × {plies} plies:", flush=True)
    summary = await measured("backup", lambda: write_backup(source, path))
    print(f"  {summary.rows} rows, {path.stat().st_size / 2**20:.1f} MiB file", flush=True)
    await measured("restore", lambda: restore_backup(target, path))
    await source.close()
    await target.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--plies", type=int, default=100)
    parser.add_argument("--pg", action="store_true", help="on a throwaway PostgreSQL cluster instead of SQLite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n, games in enumerate((args.games, args.games * 10)):
            if args.pg:
                from pbmserv_terrace.testing.postgres import PostgresCluster

                with PostgresCluster() as pg:
                    made = {k: pg.create_database() for k in ("source", "target")}
                    asyncio.run(one_size(made.__getitem__, folder, games, args.plies))
            else:

                def sqlite(name: str, n: int = n) -> str:
                    return f"sqlite+aiosqlite:///{folder}/{name}{n}.db"

                asyncio.run(one_size(sqlite, folder, games, args.plies))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
