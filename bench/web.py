"""Web archive response times with 100,000 games in the database (issue 19).

Seeds users, games (80 % finished, with their history line; 20 % active), their
moves (real legal games, 16 plies each) and ratings with Core inserts, then times
requests to the real app in-process (httpx over ASGI: the app and the database, no
network): ``/boards/terrace/N``, ``/players/U``, ``/standings``.  Targets: board and
player pages <= 20 ms median, standings <= 50 ms.  The player page's first request
replays every finished game's Elo once (reported as "cold"); later requests read
only new history rows.  Run on SQLite and on a throwaway PostgreSQL cluster.

Run: python bench/web.py [--games 100000] [--requests 300] [--only sqlite|postgres]

``--load MIX`` (issue 36) measures throughput instead: the archive runs as operators
run it, in a process of its own (``pbmserv-terrace web`` on the seeded SQLite file,
the same code ``serve`` starts as its web child), and ``--clients`` (200) keep-alive
HTTP/1.1 clients on raw sockets (cheap, so the client costs the box little) ask for
pages for ``--seconds`` after a warm-up; it prints pages/s, p50, p99 and the answers
by status.  Mixes: ``home`` (/ only, what ``ab -c 200 -t 20 /`` asked), ``finished``
(finished boards of a hot set of ``--hot`` boards), ``live`` (active boards),
``cold`` (any board, uniformly: mostly cache misses), ``mix`` (the front page,
standings, players and boards together).  Target: >= 500 pages/s, p99 <= 250 ms.

Run: python bench/web.py --load home [--games 20000] [--clients 200] [--seconds 20]

``--serve`` runs ``pbmserv-terrace serve`` on the seeded file instead (embedded SMTP, the
archive in its child process) and mails ``help`` to it one mail after another (a new
SMTP connection each, timed to the ``250``, which comes after the mail's commit) for
``--seconds`` with no web load, then again while the clients load the archive: what
the web costs the mail (issue 36: on one event loop, ``ab -c 200`` on / made it 6.7 s).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import insert, select

from pbmserv_terrace.games.terrace import format_move, format_tpn, start_position
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


# ----------------------------------------------------------------- --load
MIXES = ("home", "finished", "live", "cold", "mix")


def load_paths(mix: str, games: int, hot: int, rnd: random.Random) -> Iterator[str]:
    """An endless stream of paths of ``mix`` (boards 101 .. 100 + games; the first 80 % are finished)."""
    finished = int(games * 0.8)
    hot_finished = [101 + rnd.randrange(finished) for _ in range(hot)]
    live = [101 + finished + rnd.randrange(games - finished) for _ in range(max(1, hot // 4))]
    while True:
        if mix == "home":
            yield "/"
        elif mix == "finished":
            yield f"/boards/terrace/{rnd.choice(hot_finished)}"
        elif mix == "live":
            yield f"/boards/terrace/{rnd.choice(live)}"
        elif mix == "cold":
            yield f"/boards/terrace/{101 + rnd.randrange(games)}"
        else:
            r = rnd.random()
            if r < 0.2:
                yield "/"
            elif r < 0.3:
                yield "/standings"
            elif r < 0.4:
                yield f"/players/u{rnd.randrange(USERS)}"
            elif r < 0.7:
                yield f"/boards/terrace/{rnd.choice(hot_finished)}"
            elif r < 0.9:
                yield f"/boards/terrace/{rnd.choice(live)}"
            else:
                yield f"/boards/terrace/{101 + rnd.randrange(games)}"


class Tally:
    def __init__(self) -> None:
        self.times: list[float] = []
        self.statuses: collections.Counter[int] = collections.Counter()
        self.errors = 0
        self.counting = False


async def one_client(port: int, paths: Iterator[str], until: float, tally: Tally) -> None:
    """Keep-alive GETs one after another until ``until`` (a new connection when the server closes one)."""
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    while time.perf_counter() < until:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert reader is not None
            path = next(paths)
            t = time.perf_counter()
            writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\nAccept-Encoding: identity\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            lower = head.lower()
            at = lower.find(b"content-length:")
            length = int(lower[at + 15 : lower.index(b"\r\n", at)]) if at >= 0 else 0
            await reader.readexactly(length)
            if tally.counting:
                tally.times.append(time.perf_counter() - t)
                tally.statuses[int(head[9:12])] += 1
            if b"connection: close" in lower:
                writer.close()
                reader = writer = None
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            tally.errors += tally.counting
            if writer is not None:
                writer.close()
            reader = writer = None
            await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive_measured(pid: int, port: int, mix: str, args: argparse.Namespace, tally: Tally) -> float:
    """Drive ``mix`` into ``tally``; the server's CPU seconds in the measured part."""
    paths = load_paths(mix, args.games, args.hot, random.Random(36))
    until = time.perf_counter() + args.warmup + args.seconds
    tasks = [asyncio.create_task(one_client(port, paths, until, tally)) for _ in range(args.clients)]
    await asyncio.sleep(args.warmup)
    tally.counting = True
    before = process_cpu(pid)
    await asyncio.gather(*tasks)
    return process_cpu(pid) - before


def wait_listening(port: int, server: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the web process ended (exit code {server.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the web process did not listen")


async def warm(port: int, paths: list[str]) -> None:
    """Ask for each path once (a hot set is what many ask for: it is in the cache)."""
    it = iter(paths)

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for path in it:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            lower = head.lower()
            at = lower.find(b"content-length:")
            await reader.readexactly(int(lower[at + 15 : lower.index(b"\r\n", at)]) if at >= 0 else 0)
        writer.close()

    await asyncio.gather(*(worker() for _ in range(8)))


def hot_paths(mix: str, args: argparse.Namespace) -> list[str]:
    """The distinct paths a mix asks for again and again (not ``cold``'s)."""
    if mix == "cold":
        return []
    paths = load_paths(mix, args.games, args.hot, random.Random(36))
    return sorted({next(paths) for _ in range(args.hot * 20)})


async def mail_prober(port: int, until: float, times: list[float], failures: list[str]) -> None:
    """``help`` mails one after another, each timed from connecting to the 250 after its DATA."""
    import aiosmtplib

    n = 0
    while time.perf_counter() < until:
        n += 1
        message = (f"From: probe{n}@bench.test\r\nTo: pbmserv@localhost\r\nSubject: help\r\n"
                   f"Message-ID: <probe{n}.{time.time_ns()}@bench.test>\r\n\r\nhelp\r\n")  # fmt: skip
        t = time.perf_counter()
        try:
            await aiosmtplib.send(message, sender=f"probe{n}@bench.test", recipients=["pbmserv@localhost"],
                                  hostname="127.0.0.1", port=port, timeout=60)  # fmt: skip
            times.append(time.perf_counter() - t)
        except Exception as exc:
            failures.append(type(exc).__name__)
        await asyncio.sleep(0.05)


def quantiles(times: list[float]) -> str:
    if len(times) < 2:
        return f"{len(times)} mails"
    q = statistics.quantiles(times, n=100)
    return f"{len(times)} mails, p50 {q[49] * 1000:.0f} ms, p99 {q[98] * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"


def web_child_of(pid: int) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == pid and b"pbmserv_terrace.web.process" in cmdline:
                return int(entry.name)
    return pid  # (an older serve: the archive on its own loop)


def serve_and_mail(args: argparse.Namespace, url: str, tmp: str, web_port: int) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        mail_port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update(PBMSERV_DATABASE_URL=url, PBMSERV_SERVER_NAME="bench", PBMSERV_EMBEDDED_LISTEN_PORT=str(mail_port),
               PBMSERV_WEB_LISTEN=f"127.0.0.1:{web_port}")  # fmt: skip
    server = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=tmp, env=env,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_listening(web_port, server)
        wait_listening(mail_port, server)
        time.sleep(1.0)
        web_pid = web_child_of(server.pid)
        for mix in args.load:
            asyncio.run(warm(web_port, hot_paths(mix, args)))

            async def alone() -> tuple[list[float], list[str]]:
                times: list[float] = []
                failures: list[str] = []
                await mail_prober(mail_port, time.perf_counter() + args.seconds, times, failures)
                return times, failures

            times, failures = asyncio.run(alone())
            print(f"[serve, no web load] mail: {quantiles(times)}, failures {failures[:5]}", flush=True)

            async def loaded(mix: str) -> tuple[Tally, float, list[float], list[str]]:
                tally, times, failures = Tally(), [], []
                web = asyncio.create_task(drive_measured(web_pid, web_port, mix, args, tally))
                await asyncio.sleep(args.warmup)
                await mail_prober(mail_port, time.perf_counter() + args.seconds, times, failures)
                return tally, await web, times, failures

            tally, _cpu, times, failures = asyncio.run(loaded(mix))
            pages = tally.statuses[200] + tally.statuses[304]
            q = statistics.quantiles(sorted(tally.times), n=100) if len(tally.times) >= 2 else [float("nan")] * 99
            print(f"[serve, {args.clients} web clients on {mix}] web: {pages / args.seconds:.1f} pages/s, p50 "
                  f"{q[49] * 1000:.1f} ms, p99 {q[98] * 1000:.1f} ms, statuses {dict(sorted(tally.statuses.items()))}; "
                  f"mail: {quantiles(times)}, failures {failures[:5]}", flush=True)  # fmt: skip
    finally:
        server.terminate()
        server.wait(60)


def load(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"

        async def prepare() -> None:
            db = Database(url)
            await db.migrate()
            t = time.perf_counter()
            await seed(db, args.games, random.Random(19))
            print(f"seeded {args.games} games in {time.perf_counter() - t:.1f} s", flush=True)
            await db.close()

        asyncio.run(prepare())
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if args.serve:
            serve_and_mail(args, url, tmp, port)
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        env.update(PBMSERV_DATABASE_URL=url, PBMSERV_SERVER_NAME="bench")
        server = subprocess.Popen(
            [sys.executable, "-m", "pbmserv_terrace", "web", "--listen", f"127.0.0.1:{port}"], cwd=tmp, env=env
        )
        try:
            wait_listening(port, server)
            for mix in args.load:
                asyncio.run(warm(port, hot_paths(mix, args)))
                cpu = os.times()
                tally = Tally()
                server_cpu = asyncio.run(drive_measured(server.pid, port, mix, args, tally))
                client_cpu = sum(os.times()[:2]) - sum(cpu[:2])
                times = sorted(tally.times)
                done = len(times)
                q = statistics.quantiles(times, n=100) if done >= 2 else [float("nan")] * 99
                pages = tally.statuses[200] + tally.statuses[304]
                print(
                    f"[{mix}] {args.clients} clients, {args.seconds:.0f} s: {pages / args.seconds:7.1f} pages/s, "
                    f"{done / args.seconds:7.1f} answers/s, p50 {q[49] * 1000:6.1f} ms, p99 {q[98] * 1000:6.1f} ms, "
                    f"max {times[-1] * 1000 if times else float('nan'):6.1f} ms, statuses {dict(sorted(tally.statuses.items()))}, "
                    f"errors {tally.errors}, server CPU {server_cpu / max(1, done) * 1000:.2f} ms an answer "
                    f"({server_cpu / args.seconds * 100:.0f} % of a core), client CPU {client_cpu / args.seconds * 100:.0f} %",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--load", nargs="+", choices=MIXES, help="measure throughput of these mixes instead (SQLite)")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--serve", action="store_true", help="with --load: serve and mail beside the web load")
    parser.add_argument("--hot", type=int, default=400, help="finished boards in the hot sets of --load (live: a quarter)")
    args = parser.parse_args()
    if args.load:
        load(args)
        return
    if args.only != "postgres":
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(bench("sqlite", f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}", args.games, args.requests))
    if args.only != "sqlite":
        with PostgresCluster() as pg:
            asyncio.run(bench("postgres", pg.create_database(), args.games, args.requests))


if __name__ == "__main__":
    main()
