"""Issue 6: a stream of 500 mails from 20 players in 50 games; ``serve`` is killed
with SIGKILL at 30 random moments and restarted each time.  Afterwards every
command was applied exactly once (the database equals an in-process replay of the
same mails), no mail is lost or left unprocessed, every mail got its reply, and no
reply was queued twice.  Real Dovecot, real PostgreSQL."""

from __future__ import annotations

import asyncio
import random
import re
import time

import pytest
from sqlalchemy import select

from pbmserv_terrace.config import load_config
from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service import Service
from pbmserv_terrace.store import Database, Game, MoveRecord, OutboxMessage, ProcessedMessage, User

from ..mailservers import SERVER, ServeProcess
from ..service.policy import choose, text

pytestmark = [pytest.mark.reliability, pytest.mark.postgres]
CONFIRM_KEY = re.compile(r"^confirm [a-z0-9]+$")


def stream(seed: int = 11, total: int = 500) -> list[bytes]:
    rng = random.Random(seed)
    players = [f"p{i:02d}" for i in range(20)]
    mails: list[tuple[str, str, str]] = [(p, f"signup {p} pw-{p}", "") for p in players]
    games = []
    for g in range(50):
        w, b = rng.sample(players, 2)
        mails.append((w, f"terrace challenge {w} pw-{w} {b}", ""))
        games.append([101 + g, w, b, start_position("long")])
    while len(mails) < total:
        active = [g for g in games if g[3].outcome() is None]
        board, w, b, pos = rng.choice(active)
        mover, other = (w, b) if pos.to_move == 1 else (b, w)
        r = rng.random()
        if r < 0.05:
            mails.append((other, f"terrace move {board} {other} pw-{other} a1-a2", ""))  # not their turn: an error
        elif r < 0.10:
            mails.append((other, f"terrace chat {board} {other} pw-{other}", f"hello {len(mails)}"))
        elif r < 0.13:
            mails.append((other, f"terrace show {board}", ""))
        else:
            move = choose(pos, rng)
            mails.append((mover, f"terrace move {board} {mover} pw-{mover} {text(pos, move)}", ""))
            pos = pos.play(move)
            for g in games:
                if g[0] == board:
                    g[3] = pos
    return [
        (f"From: {p}@players.test\r\nTo: {SERVER}\r\nSubject: {s}\r\nMessage-ID: <crash{i}@players.test>\r\n"
         f"Content-Type: text/plain\r\n\r\n{body}\r\n").encode()
        for i, (p, s, body) in enumerate(mails)
    ]  # fmt: skip


async def state(url: str) -> dict:
    db = Database(url)
    try:
        async with db.session() as s:
            games = [
                (g.board_number, g.position, g.ply, g.status, g.result)
                for g in (await s.execute(select(Game).order_by(Game.board_number))).scalars()
            ]
            # by board number: ids are not comparable (a killed transaction burns a sequence value)
            rows = await s.execute(
                select(Game.board_number, MoveRecord.ply, MoveRecord.move).join(Game, Game.id == MoveRecord.game_id)
            )
            moves = sorted(tuple(r) for r in rows)
            users = [u.userid for u in (await s.execute(select(User).order_by(User.userid))).scalars()]
            processed = {p.message_id for p in (await s.execute(select(ProcessedMessage))).scalars()}
            outbox = [
                # (a confirmation's one-use key differs from run to run: keyed by each database's secret)
                (o.in_reply_to, o.recipient, CONFIRM_KEY.sub("confirm KEY", o.subject), o.state)
                for o in (await s.execute(select(OutboxMessage))).scalars()
            ]
        return {"games": games, "moves": moves, "users": users, "processed": processed, "outbox": outbox}
    finally:
        await db.close()


async def replay(mails: list[bytes], url: str, *, rate_limit: int | None = None) -> None:
    """Handle ``mails`` in delivery order, one by one, in this process (what a crash-free run does)."""
    env = {"PBMSERV_DATABASE_URL": url, "PBMSERV_ADDRESS": SERVER, "PBMSERV_NAME": "Test PBM Server"}
    if rate_limit is not None:
        env["PBMSERV_SERVER_RATE_LIMIT_PER_MINUTE"] = str(rate_limit)
    cfg = load_config(None, env)
    db = Database(url)
    await db.migrate()
    service = Service(db, cfg)
    for raw in mails:
        await service.handle_mail(parse_message(raw))
    await db.close()


def test_sigkill_thirty_times_exactly_once(serve_factory, relay, dovecot, pg_cluster, tmp_path):
    mails = stream()
    assert len(mails) == 500
    url = pg_cluster.create_database().replace("postgresql+asyncpg", "postgresql")
    for i in range(20):
        dovecot.add_user(f"p{i:02d}@players.test", "x")
    for raw in mails:
        dovecot.deliver("x@players.test", [SERVER], raw)
    serve = serve_factory(relay, db_url=url)
    rng = random.Random(5)
    kills = 0
    serve.start()
    while kills < 30 and dovecot.fetch_all(SERVER):
        time.sleep(rng.uniform(0.05, 0.4))  # serve is really up when start() returns: kill it soon
        serve.kill()
        kills += 1
        serve.start()
    deadline = time.time() + 180
    while dovecot.fetch_all(SERVER) and time.time() < deadline:
        time.sleep(0.5)
    time.sleep(2)  # let the last replies leave
    assert serve.stop() == 0
    assert kills == 30, f"the stream was done after {kills} kills"
    assert dovecot.fetch_all(SERVER) == [], "mail left unprocessed"
    assert dovecot.fetch_all(SERVER, "failed") == []
    got = asyncio.run(state(url))
    expected_url = pg_cluster.create_database()
    asyncio.run(replay(mails, expected_url))
    want = asyncio.run(state(expected_url))
    assert got["users"] == want["users"]
    assert got["games"] == want["games"]
    assert got["moves"] == want["moves"]
    assert got["processed"] == want["processed"] and len(got["processed"]) == 500
    # every mail answered exactly as in the replay; no reply queued twice; all sent
    key = lambda rows: sorted((r[0], r[1], r[2]) for r in rows)  # noqa: E731
    assert key(got["outbox"]) == key(want["outbox"])
    assert len({(r[0], r[1]) for r in got["outbox"]}) == len(got["outbox"])
    states = {r[3] for r in got["outbox"]}
    assert states == {"sent"}, [(r, r[3]) for r in got["outbox"] if r[3] != "sent"][:5]


def test_three_workers_one_mailbox_same_result(serve_factory, relay, dovecot, pg_cluster, tmp_path):
    """Issue 6: three serve processes on one mailbox and one PostgreSQL database, the
    same stream: the same exactly-once result, no game with two moves at one ply."""
    mails = stream(seed=12)
    url = pg_cluster.create_database().replace("postgresql+asyncpg", "postgresql")
    for i in range(20):
        dovecot.add_user(f"p{i:02d}@players.test", "x")
    for raw in mails:
        dovecot.deliver("x@players.test", [SERVER], raw)
    workers = []
    for k in range(3):
        (tmp_path / f"w{k}").mkdir()
        workers.append(ServeProcess(tmp_path / f"w{k}", dovecot, relay, url).start())
    rng = random.Random(3)
    time.sleep(2)
    victim = workers[rng.randrange(3)]  # one worker dies mid-stream; the others carry on
    victim.kill()
    deadline = time.time() + 240
    while dovecot.fetch_all(SERVER) and time.time() < deadline:
        time.sleep(0.5)
    time.sleep(2)
    for w in workers:
        if w is not victim:
            assert w.stop() == 0
    assert dovecot.fetch_all(SERVER) == [] and dovecot.fetch_all(SERVER, "failed") == []
    got = asyncio.run(state(url))
    expected_url = pg_cluster.create_database()
    asyncio.run(replay(mails, expected_url))
    want = asyncio.run(state(expected_url))
    assert got["games"] == want["games"] and got["moves"] == want["moves"]
    assert len({(b, ply) for b, ply, _ in got["moves"]}) == len(got["moves"])
    assert got["processed"] == want["processed"]
    key = lambda rows: sorted((r[0], r[1], r[2]) for r in rows)  # noqa: E731
    assert key(got["outbox"]) == key(want["outbox"])
