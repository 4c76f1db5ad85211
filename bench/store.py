"""Time of a move command's database work with 100, 10,000 and 100,000 games present.

The work is what the service does for one ``move`` mail: the Message-ID check, the
user lookup, the locked game load (with seats), the game update, the move row, two
outbox rows, the processed Message-ID, commit.  Run on SQLite and on a throwaway
PostgreSQL cluster.  Target (issue 3): the largest within 1.5x of the smallest.

Run: python bench/store.py [--commands 400] [--sizes 100,10000,100000] [--only sqlite|postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert, select

from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.games.terrace.notation import format_tpn
from pbmserv_terrace.store import Database, Game, MoveRecord, Seat, UnitOfWork, User, utcnow
from pbmserv_terrace.testing.postgres import PostgresCluster

START = format_tpn(start_position("long"))
USERS = 2000


async def seed(db: Database, have: int, want: int) -> None:
    now = utcnow()
    async with db.engine.begin() as conn:
        if have == 0:
            await conn.execute(
                insert(User.__table__),
                [
                    {
                        "userid": f"u{i}",
                        "password_hash": "x",
                        "addresses": [f"u{i}@example.org"],
                        "signed_off": False,
                        "accept_challenges": True,
                        "seek": 0,
                        "vacation": False,
                        "notify_all": False,
                        "created_at": now,
                    }
                    for i in range(USERS)
                ],
            )
        ids = (await conn.execute(select(User.id).order_by(User.id))).scalars().all()
        batch = 5000
        for start in range(have, want, batch):
            rows = [
                {
                    "game_type": "terrace",
                    "board_number": 101 + k,
                    "variant": "long",
                    "options": {},
                    "position": START,
                    "start_position": START,
                    "ply": 0,
                    "status": "active",
                    "rated": True,
                    "draw_votes": [],
                    "undo_votes": [],
                    "created_at": now,
                    "last_move_at": now,
                }
                for k in range(start, min(want, start + batch))
            ]
            await conn.execute(insert(Game.__table__), rows)
            game_ids = (
                (
                    await conn.execute(
                        select(Game.id).where(Game.board_number >= 101 + start, Game.board_number < 101 + start + batch)
                    )
                )
                .scalars()
                .all()
            )
            seats, moves = [], []
            for gid in game_ids:
                a, b = random.sample(ids, 2)
                seats += [
                    {
                        "game_id": gid,
                        "seat": 1,
                        "user_id": a,
                        "active": True,
                        "resign_pending": False,
                        "queued_moves": [],
                        "clock_seconds": 0.0,
                    },
                    {
                        "game_id": gid,
                        "seat": 2,
                        "user_id": b,
                        "active": True,
                        "resign_pending": False,
                        "queued_moves": [],
                        "clock_seconds": 0.0,
                    },
                ]
                moves += [
                    {"game_id": gid, "ply": p, "seat": 1 + p % 2, "move": "C-d2-e3", "auto": False, "played_at": now}
                    for p in range(1, 11)
                ]
            await conn.execute(insert(Seat.__table__), seats)
            await conn.execute(insert(MoveRecord.__table__), moves)
        await conn.execute(Game.__table__.update().where(Game.board_number >= 101 + have).values(ply=10))
    # What autovacuum does soon after a bulk load on a live server: fresh statistics.
    async with db.engine.connect() as conn:
        await conn.exec_driver_sql("ANALYZE")
        await conn.commit()


async def one_move(db: Database, board: int, serial: int) -> None:
    now = utcnow()
    async with UnitOfWork(db) as uow:
        await uow.processed.seen(f"<bench{serial}@x>")
        user = await uow.users.get(f"u{serial % USERS}")
        game = await uow.games.get("terrace", board, lock=True)
        assert game is not None and user is not None
        game.ply += 1
        game.last_move_at = now
        uow.moves.add(MoveRecord(game_id=game.id, ply=game.ply, seat=1, move="C-d2-e3", auto=False, played_at=now))
        await uow.moves.last_plies(game.id, 8)
        for seat in game.seats:
            uow.outbox.queue(
                message_id=f"<r{serial}.{seat.seat}@bench>",
                recipient=seat.user.addresses[0],
                subject=f"Terrace Board {board}",
                body="x" * 1500,
                next_attempt_at=now,
                created_at=now,
            )
        uow.processed.record(f"<bench{serial}@x>", now)
        await uow.commit()


async def measure(db: Database, games: int, commands: int, serial0: int) -> float:
    boards = [101 + random.randrange(games) for _ in range(commands)]
    for i in range(20):  # warm caches
        await one_move(db, boards[i], serial0 + i)
    times = []
    for i, board in enumerate(boards):
        t = time.perf_counter()
        await one_move(db, board, serial0 + 100 + i)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


async def bench(name: str, url: str, sizes: list[int], commands: int) -> None:
    db = Database(url)
    await db.migrate()
    have = 0
    results = []
    for k, size in enumerate(sizes):
        t = time.perf_counter()
        await seed(db, have, size)
        have = size
        print(f"[{name}] seeded {size:>7} games in {time.perf_counter() - t:.1f} s", flush=True)
        ms = await measure(db, size, commands, serial0=k * 1_000_000)
        results.append(ms)
        print(f"[{name}] {size:>7} games: move command DB work median {ms:.3f} ms", flush=True)
    print(f"[{name}] largest/smallest = {results[-1] / results[0]:.2f}x (target <= 1.5x)")
    await db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=400)
    parser.add_argument("--sizes", default="100,10000,100000")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    random.seed(1)
    if args.only != "postgres":
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(bench("sqlite", f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}", sizes, args.commands))
    if args.only != "sqlite":
        with PostgresCluster() as pg:
            asyncio.run(bench("postgres", pg.create_database(), sizes, args.commands))


if __name__ == "__main__":
    main()
