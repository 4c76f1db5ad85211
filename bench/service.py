"""Move commands per second through the service layer, in-process (issue 6).

Each command is a whole ``terrace move`` mail: parse, authenticate (password cache
warm), lock the game, play, write the move, render the board mail for both
players, queue two replies, record the Message-ID, commit.  Measured with 100,
10,000 and 100,000 games in the database, on SQLite and on PostgreSQL; also the
cost of a password-cache miss (one scrypt check) and the resident memory of a
``serve`` process on the 100,000-game SQLite database.

Targets: >= 1,000/s on SQLite, >= 500/s on PostgreSQL; largest size within 1.5x of
the smallest; serve RSS <= 150 MB with 100,000 games.
Each size is measured with batches of 1, 10 and 50 mails per transaction
(``Service.handle_batch``, what ``serve`` does with the mails that are ready).
Run: python bench/service.py [--moves 300] [--sizes 100,10000,100000] [--only sqlite|postgres] [--batches 1,10,50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import update

from pbmserv_terrace.app import heap
from pbmserv_terrace.config import load_config
from pbmserv_terrace.games.terrace import format_move, start_position
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.service import HandleResult, Service
from pbmserv_terrace.service.passwords import hash_password, verify_password
from pbmserv_terrace.store import Database, OutboxMessage, User
from pbmserv_terrace.testing.postgres import PostgresCluster, free_port

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store import seed

PLAYED_GAMES = 50


def sequences(moves_per_game: int) -> list[list[str]]:
    out = []
    for g in range(PLAYED_GAMES):
        rng, pos, seq = random.Random(g), start_position("long"), []
        for _ in range(moves_per_game):
            move = rng.choice([m for m in pos.legal_moves() if pos.board[m.to] == 0])
            seq.append(format_move(pos, move))
            pos = pos.play(move)
        out.append(seq)
    return out


async def measure(name: str, url: str, sizes: list[int], moves: int, batches: list[int]) -> list[float]:
    db = Database(url)
    await db.migrate()
    heap.settle()  # as serve does once it has started
    # the bench plays each player far faster than the per-sender limit allows
    cfg = load_config(None, {"PBMSERV_DATABASE_URL": url, "PBMSERV_ADDRESS": "pbmserv@bench.test",
                             "PBMSERV_SERVER_RATE_LIMIT_PER_MINUTE": "1000000"})  # fmt: skip
    service = Service(db, cfg)
    have, rates, serial = 0, [], 0
    for size in sizes:
        t = time.perf_counter()
        await seed(db, have, size)
        if have == 0:  # real password hashes, one for everybody (hashing 2000 would take a minute)
            async with db.engine.begin() as conn:
                await conn.execute(update(User).values(password_hash=hash_password("pw")))
        have = size
        print(f"[{name}] seeded {size:>7} games in {time.perf_counter() - t:.1f} s", flush=True)
        # the games played are spread over the whole table; their seats' users are warmed in the cache
        boards = [101 + (i * size) // PLAYED_GAMES for i in range(PLAYED_GAMES)]
        players = await players_of(db, boards)
        for userid in {u for pair in players for u in pair}:
            service.passwords.check(userid, (await _stored(db, userid)), "pw")
        plans = sequences(moves // PLAYED_GAMES + 2)
        for batch in batches:
            start, cpu = time.perf_counter(), time.process_time()
            done = 0
            for k in range(moves // PLAYED_GAMES):
                mails = []
                for g, board in enumerate(boards):
                    mover = players[g][k % 2]
                    serial += 1
                    mails.append(InboundMail(sender=f"{mover}@example.org", body="", message_id=f"<svc{serial}@bench>",
                                             subject=f"terrace move {board} {mover} pw {plans[g][k]}"))  # fmt: skip
                for i in range(0, len(mails), batch):
                    # a round's moves are on different boards: a batch is what a burst makes ready
                    results = await service.handle_batch(mails[i : i + batch])
                    assert all(isinstance(r, HandleResult) and r.status == "ok" for r in results), results
                    done += len(results)
            rate = done / (time.perf_counter() - start)
            cpu_ms = (time.process_time() - cpu) * 1000 / done
            rates.append(rate)
            # this process's CPU per command (the database's own, PostgreSQL's, not counted) says
            # the same on a busy box, where the rate falls with what the other processes take
            print(f"[{name}] {size:>7} games, batches of {batch:>2}: {rate:,.0f} move commands/s, "
                  f"{cpu_ms:.2f} ms CPU each in this process", flush=True)  # fmt: skip
            await _reset(db, boards)
    async with db.engine.begin() as conn:
        # the replies the bench queued are nobody's: serve (serve_rss) would send
        # them all, and at SIGTERM drain what is due before it exits
        await conn.execute(update(OutboxMessage).values(state="sent"))
    await db.close()
    target = 1000 if name == "sqlite" else 500
    for j, batch in enumerate(batches):
        per_size = rates[j :: len(batches)]
        print(f"[{name}] batches of {batch}: largest/smallest time per command = {per_size[0] / per_size[-1]:.2f}x "
              f"(target <= 1.5x); rate target >= {target}/s")  # fmt: skip
    return rates


async def players_of(db: Database, boards: list[int]) -> list[tuple[str, str]]:
    out = []
    async with db.session() as s:
        from pbmserv_terrace.store.repos import Games

        for board in boards:
            game = await Games(s).get("terrace", board)
            assert game is not None
            out.append((game.seats[0].user.userid, game.seats[1].user.userid))
    return out


async def _stored(db: Database, userid: str) -> str:
    async with db.session() as s:
        from pbmserv_terrace.store.repos import Users

        user = await Users(s).get(userid)
        assert user is not None
        return user.password_hash


async def _reset(db: Database, boards: list[int]) -> None:
    """Put the played boards back at their start so the next size plays the same moves."""
    from sqlalchemy import delete, select

    from pbmserv_terrace.games.terrace.notation import format_tpn
    from pbmserv_terrace.store import Game, MoveRecord

    start = format_tpn(start_position("long"))
    async with db.engine.begin() as conn:
        ids = (await conn.execute(select(Game.id).where(Game.board_number.in_(boards)))).scalars().all()
        await conn.execute(delete(MoveRecord).where(MoveRecord.game_id.in_(ids), MoveRecord.ply > 10))
        await conn.execute(update(Game).where(Game.id.in_(ids)).values(position=start, ply=10))


def scrypt_cost() -> float:
    stored = hash_password("pw")
    t = time.perf_counter()
    for _ in range(5):
        verify_password("pw", stored)
    return (time.perf_counter() - t) / 5 * 1000


def serve_rss(url: str) -> float:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update({"PBMSERV_DATABASE_URL": url, "PBMSERV_EMBEDDED_LISTEN_PORT": str(port), "PBMSERV_SCHEDULER_INTERVAL": "1"})
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=tmp, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            time.sleep(8)  # started, migrated, one scheduler pass over the 100,000 games' deadlines
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
            return float("nan")
        finally:
            proc.terminate()
            proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--moves", type=int, default=300)
    parser.add_argument("--sizes", default="100,10000,100000")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--batches", default="1,10,50", help="mails per transaction (Service.handle_batch)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    print(f"password cache miss (one scrypt check, n=2**14 r=8 p=1): {scrypt_cost():.1f} ms; hits cost an HMAC (microseconds)")
    if args.only != "postgres":
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite+aiosqlite:///{tmp}/bench.db"
            asyncio.run(measure("sqlite", url, sizes, args.moves, batches))
            print(f"serve resident memory with {sizes[-1]} games (SQLite): {serve_rss(url):.0f} MB (target <= 150 MB)")
    if args.only != "sqlite":
        with PostgresCluster() as pg:
            asyncio.run(measure("postgres", pg.create_database(), sizes, args.moves, batches))


if __name__ == "__main__":
    main()
