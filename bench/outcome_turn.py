"""How long an outbox outcome waits for SQLite's write lock while another process
writes back to back (``serve`` working through a backlog), with and without the
turn (``store/inline.Turn``, issue 43 part 6).  Prints, for each try, the other
process's transactions committed while the outcome waited and the wait itself.

    python bench/outcome_turn.py [--tries 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import text

from pbmserv_terrace.store import Database

BACKLOG = """
import asyncio, sys
from sqlalchemy import text
from pbmserv_terrace.store import Database

async def main() -> None:
    db = Database(sys.argv[1])
    if sys.argv[2] == "off":
        db.turn = None
    while True:
        async with db.session() as s:
            await s.begin()
            await s.execute(text("UPDATE board_counters SET next_number = next_number + 1"))
            for _ in range(30):
                await s.execute(text("SELECT count(*) FROM board_counters"))
            await s.commit()

asyncio.run(main())
"""


def committed(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT sum(next_number) FROM board_counters").fetchone()[0])


async def measure(turn: bool, tries: int) -> list[tuple[int, float]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        url = f"sqlite+aiosqlite:///{path}"
        first = Database(url)
        if not turn:
            first.turn = None
        await first.migrate()
        start = committed(path)
        backlog = subprocess.Popen([sys.executable, "-c", BACKLOG, url, "on" if turn else "off"])
        found = []
        try:
            while committed(path) < start + 200:
                await asyncio.sleep(0.01)
            for _ in range(tries):
                before, began = committed(path), time.perf_counter()
                async with first.session(first=True) as s:
                    await s.execute(text("UPDATE board_counters SET next_number = next_number"))
                    await s.commit()
                found.append((committed(path) - before, time.perf_counter() - began))
                await asyncio.sleep(0.05)
        finally:
            backlog.kill()
            backlog.wait(10)
            await first.close()
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=10)
    args = parser.parse_args()
    for turn in (False, True):
        found = asyncio.run(measure(turn, args.tries))
        waits = [w * 1000 for _, w in found]
        print(f"{'with' if turn else 'without'} the turn: transactions waited for "
              f"{[n for n, _ in found]}, max {max(n for n, _ in found)}; wait ms median "
              f"{statistics.median(waits):.1f}, max {max(waits):.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
