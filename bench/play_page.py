"""The play page (issue 39 part 2): its size and its time per request, through the
archive app and the service on SQLite (in one process, over httpx's ASGI transport:
no network, no browser), for a new board of each board game.

    python bench/play_page.py [ROUNDS]

Prints, per game: the page's bytes (uncompressed), the median and worst time of a
GET (the service's read of the key and board, the SVG, the moves) and of a move
posted and played (its transaction and the replies queued), in ms."""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.web import create_app
from pbmserv_terrace.web.play import Buckets
from tests.service.harness import Harness, mine

_PLAY = re.compile(r"https://games\.test(/play/[a-z2-7]{31})\n")
_TOKEN = re.compile(r'name="token" value="([0-9a-f]{32})"')
_MOVE = re.compile(r'type="radio" name="move" value="([^"]+)"')


def main(rounds: int) -> None:
    h = Harness()
    h.config.web.public_url = "https://games.test"
    h.signup("ann", "bob")

    async def door(key: str, move: str | None) -> dict[str, object]:
        return (await h.service.web_play(key, move)).as_dict()

    app = create_app(h.db, server_name="Bench", public_url="https://games.test", play=door)
    app.state.play.clients = app.state.play.keys = Buckets(1e9, 1e9)  # (one client asks for everything here)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://games.test")
    run = h.loop.run_until_complete
    try:
        for name, kind in GAME_TYPES.items():
            if kind.family != "board":
                continue
            gets: list[float] = []
            posts: list[float] = []
            size = 0
            for _ in range(rounds):
                m = _PLAY.search(mine(h.challenge("ann", "bob", game=name), "ann").body)
                assert m, name
                path = m.group(1)
                for _ in range(3):
                    started = time.perf_counter()
                    page = run(client.get(path))
                    gets.append(time.perf_counter() - started)
                assert page.status_code == 200, page.text[:300]
                size = max(size, len(page.content))
                token, move = _TOKEN.search(page.text), _MOVE.search(page.text)
                assert token and move
                started = time.perf_counter()
                played = run(client.post(path, data={"token": token.group(1), "confirm": "1", "move": move.group(1)}))
                posts.append(time.perf_counter() - started)
                assert played.status_code == 200 and "is played on board" in played.text, played.text[:300]
            print(f"{name:14} page {size:7,} bytes   GET median {statistics.median(gets) * 1000:6.1f} ms, "
                  f"worst {max(gets) * 1000:6.1f} ms   move median {statistics.median(posts) * 1000:6.1f} ms, "
                  f"worst {max(posts) * 1000:6.1f} ms   ({len(gets)} GETs, {len(posts)} moves)")  # fmt: skip
    finally:
        run(client.aclose())
        h.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
