"""What board pictures cost the hot path (issue 16 item 4), in one run.

The same stream of move mails (50 games x N plies, SQLite, password cache warm)
is handled twice on fresh databases: once with every player's pictures on (the
HTML part is rendered in the mail's transaction, the PNG is not), once with them
off.  Then the outbox rows of the pictures-on run are built into messages the way
the sender does it after commit (drawing each position's PNG once, cached per
position).  Prints commands/s for both runs, their ratio (target: pictures on is
at most 20 % slower) and the send-side cost per mail.

Run: python bench/mail_pictures.py [--plies 12]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import select, update

from pbmserv_terrace.app.compose import board_picture, to_email
from pbmserv_terrace.config import load_config
from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.service import Service
from pbmserv_terrace.store import Database, OutboxMessage, User

GAMES = 50


def plans(plies: int) -> list[list[str]]:
    out = []
    for g in range(GAMES):
        rng, pos, seq = random.Random(g), start_position("long"), []
        for _ in range(plies):
            move = rng.choice([m for m in pos.legal_moves() if pos.board[m.to] == 0])
            seq.append(f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}")
            pos = pos.play(move)
        out.append(seq)
    return out


async def run(directory: Path, pictures: bool, plies: int) -> tuple[float, Database, Service]:
    url = f"sqlite+aiosqlite:///{directory / ('on.db' if pictures else 'off.db')}"
    db = Database(url)
    await db.migrate()
    service = Service(db, load_config(None, {"PBMSERV_DATABASE_URL": url, "PBMSERV_ADDRESS": "pbmserv@bench.test"}))
    serial = 0

    async def mail(sender: str, subject: str) -> None:
        nonlocal serial
        serial += 1
        result = await service.handle_mail(
            InboundMail(sender=f"{sender}@bench.test", subject=subject, body="", message_id=f"<b{serial}@x>")
        )
        assert result.status == "ok", result

    for g in range(GAMES * 2):
        await mail(f"p{g}", f"signup p{g} pw")
    async with db.engine.begin() as conn:
        await conn.execute(update(User).values(pictures=pictures))
    for g in range(GAMES):
        await mail(f"p{2 * g}", f"terrace challenge p{2 * g} p{2 * g + 1}")
    moves = plans(plies)
    start = time.perf_counter()
    for k in range(plies):
        for g in range(GAMES):
            player = f"p{2 * g + k % 2}"
            await mail(player, f"terrace move {101 + g} {player} pw {moves[g][k]}")
    return GAMES * plies / (time.perf_counter() - start), db, service


async def main_async(plies: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        off, db_off, _ = await run(Path(tmp), False, plies)
        on, db_on, service = await run(Path(tmp), True, plies)
        print(f"move mails/s, pictures off: {off:,.0f}")
        print(f"move mails/s, pictures on:  {on:,.0f}  (on/off time per mail = {off / on:.2f}x; target <= 1.20x)")
        async with db_on.session() as s:
            rows = list((await s.execute(select(OutboxMessage).where(OutboxMessage.html.is_not(None)))).scalars())
            s.expunge_all()
        board_picture.cache_clear()
        times = []
        for row in rows:
            t = time.perf_counter()
            to_email(row, service.config).as_bytes()
            times.append((time.perf_counter() - t) * 1000)
        sizes = [len(to_email(r, service.config).as_bytes()) for r in rows[-20:]]
        print(f"sending, per mail with a picture ({len(rows)} mails, the PNG drawn once per position): "
              f"median {statistics.median(times):.2f} ms, mean {statistics.mean(times):.2f} ms")  # fmt: skip
        print(
            f"mail size with picture: median {statistics.median(sizes) / 1000:.1f} kB, max {max(sizes) / 1000:.1f} kB (limit 60 kB)"
        )
        await db_off.close()
        await db_on.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plies", type=int, default=12)
    args = parser.parse_args()
    asyncio.run(main_async(args.plies))


if __name__ == "__main__":
    sys.exit(main())
