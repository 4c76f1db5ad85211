"""Web archive response times with 100,000 games in the database (issue 19).

Seeds users, games (80 % finished, with their history line; 20 % active), their
moves (real legal games, 16 plies each) and ratings with Core inserts, then times
requests to the real app in-process (httpx over ASGI: the app and the database, no
network): ``/boards/terrace/N``, ``/players/U``, ``/standings``.  Targets: board and
player pages <= 20 ms median, standings <= 50 ms.  The player page's first request
replays every finished game's Elo once (reported as "cold"); later requests read
only new history rows.  Run on SQLite and on a throwaway PostgreSQL cluster.

Run: python bench/web.py [--games 100000] [--requests 300] [--only sqlite|postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import insert, select

from pbmserv_terrace.rules import format_move, format_tpn, start_position
from pbmserv_terrace.store import Database, FinishedGame, Game, MoveRecord, Rating, Seat, User, utcnow
from pbmserv_terrace.testing.postgres import PostgresCluster
from pbmserv_terrace.web import create_app

USERS = 2000
PLIES = 16
POOL = 64
TARGETS = {"board": 20.0, "player": 20.0, "standings": 50.0}


def game_pool(rnd: random.Random) -> list[tuple[list[str], str]]:
    """Legal two-player games of PLIES quiet plies: (moves, final TPN)."""
    pool = []
    for _ in range(POOL):
        pos, moves = start_position("long"), []
        for _ in range(PLIES):
            quiet = [m for m in pos.legal_moves() if not pos.board[m.to] and pos.play(m).outcome() is None]
            move = rnd.choice(quiet)
            moves.append(format_move(pos, move))
            pos = pos.play(move)
        pool.append((moves, format_tpn(pos)))
    return pool


async def seed(db: Database, games: int, rnd: random.Random) -> None:
    start = format_tpn(start_position("long"))
    pool = game_pool(rnd)
    t0 = utcnow() - timedelta(days=400)
    async with db.engine.begin() as conn:
        await conn.execute(
            insert(User.__table__),
            [{"userid": f"u{i}", "password_hash": "x", "addresses": [f"u{i}@example.org"], "signed_off": False,
              "accept_challenges": True, "seek": 0, "vacation": False, "notify_all": False, "created_at": t0,
              "public_comments": True} for i in range(USERS)],
        )  # fmt: skip
        user_ids = (await conn.execute(select(User.id).order_by(User.id))).scalars().all()
        await conn.execute(
            insert(Rating.__table__),
            [{"user_id": uid, "game_type": "terrace", "rating": rnd.gauss(1600, 120), "won": 40, "lost": 40, "tied": 0, "games": 80}
             for uid in user_ids],
        )  # fmt: skip
        batch = 5000
        for first in range(0, games, batch):
            numbers = range(first, min(games, first + batch))
            picks = {k: (rnd.randrange(POOL), rnd.sample(range(USERS), 2), k < games * 0.8) for k in numbers}
            rows = []
            for k in numbers:
                final = pool[picks[k][0]][1]
                when = t0 + timedelta(minutes=5 * k)
                done = picks[k][2]
                rows.append(
                    {"game_type": "terrace", "board_number": 101 + k, "variant": "long", "options": {}, "position": final,
                     "start_position": start, "ply": PLIES, "status": "won" if done else "active", "rated": True,
                     "winner_seat": 1 + k % 2 if done else None, "result": "someone wins (captured the T)" if done else None,
                     "draw_votes": [], "undo_votes": [], "comment": f"u{k % USERS} writes:\nhello <b>{k}</b>",
                     "created_at": when, "last_move_at": when + timedelta(minutes=PLIES), "finished_at": when if done else None}
                )  # fmt: skip
            await conn.execute(insert(Game.__table__), rows)
            ids = dict(
                (
                    await conn.execute(
                        select(Game.board_number, Game.id).where(
                            Game.board_number >= 101 + first, Game.board_number < 101 + first + batch
                        )
                    )
                ).all()
            )
            seats, moves_rows, history = [], [], []
            for k in numbers:
                gid, (pick, players, done) = ids[101 + k], picks[k]
                when = t0 + timedelta(minutes=5 * k)
                seats += [{"game_id": gid, "seat": s + 1, "user_id": user_ids[players[s]], "active": True, "resign_pending": False,
                           "queued_moves": [], "clock_seconds": 0.0} for s in range(2)]  # fmt: skip
                moves_rows += [{"game_id": gid, "ply": p + 1, "seat": 1 + p % 2, "move": m, "auto": False,
                                "played_at": when + timedelta(minutes=p)} for p, m in enumerate(pool[pick][0])]  # fmt: skip
                if done:
                    history.append({"game_id": gid, "game_type": "terrace", "board_number": 101 + k,
                                    "players": [f"u{players[0]}", f"u{players[1]}"], "result": "someone wins",
                                    "plies": PLIES, "finished_at": when})  # fmt: skip
            await conn.execute(insert(Seat.__table__), seats)
            await conn.execute(insert(MoveRecord.__table__), moves_rows)
            if history:
                await conn.execute(insert(FinishedGame.__table__), history)
    async with db.engine.connect() as conn:  # fresh statistics, as autovacuum would give a live server
        await conn.exec_driver_sql("ANALYZE")
        await conn.commit()


async def timed(client: httpx.AsyncClient, paths: list[str]) -> float:
    times = []
    for path in paths:
        t = time.perf_counter()
        response = await client.get(path)
        times.append(time.perf_counter() - t)
        assert response.status_code == 200, (path, response.status_code)
    return statistics.median(times) * 1000


async def bench(name: str, url: str, games: int, requests: int) -> None:
    rnd = random.Random(19)
    db = Database(url)
    await db.migrate()
    t = time.perf_counter()
    await seed(db, games, rnd)
    print(f"[{name}] seeded {games} games in {time.perf_counter() - t:.1f} s", flush=True)
    app = create_app(db, server_name="bench")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
        t = time.perf_counter()
        await client.get("/players/u0")
        print(
            f"[{name}] first player page (cold Elo replay of the history): {(time.perf_counter() - t) * 1000:.0f} ms", flush=True
        )
        await timed(client, [f"/boards/terrace/{101 + rnd.randrange(games)}" for _ in range(20)])  # warm the pool
        results = {
            "board": await timed(client, [f"/boards/terrace/{101 + rnd.randrange(games)}" for _ in range(requests)]),
            "board ?ply=k": await timed(
                client, [f"/boards/terrace/{101 + rnd.randrange(games)}?ply={rnd.randrange(PLIES)}" for _ in range(requests)]
            ),
            "player": await timed(client, [f"/players/u{rnd.randrange(USERS)}" for _ in range(requests)]),
            "standings": await timed(client, ["/standings"] * max(20, requests // 5)),
            "home": await timed(client, ["/"] * max(20, requests // 5)),
        }
    for page, ms in results.items():
        target = TARGETS.get(page.split()[0]) if page != "board ?ply=k" else TARGETS["board"]
        verdict = "" if target is None else f"  (target <= {target:.0f} ms: {'ok' if ms <= target else 'MISSED'})"
        print(f"[{name}] {page:<13} median {ms:6.2f} ms{verdict}", flush=True)
    await db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    if args.only != "postgres":
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(bench("sqlite", f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}", args.games, args.requests))
    if args.only != "sqlite":
        with PostgresCluster() as pg:
            asyncio.run(bench("postgres", pg.create_database(), args.games, args.requests))


if __name__ == "__main__":
    main()
