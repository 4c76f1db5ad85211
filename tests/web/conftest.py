"""A migrated, filled database of each kind (SQLite file, throwaway PostgreSQL) and a
way to run requests against the real app over it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from pbmserv_terrace.store import Database
from pbmserv_terrace.web import create_app

from .fill import Filled, fill

PUBLIC_URL = "https://archive.example.test/terrace"
SERVER_ADDRESS = "games+pbm@server.example.test"
"""the server's own mail address (``[server] address``): the one address the archive shows"""


@dataclass
class Site:
    url: str
    filled: Filled
    loop: asyncio.AbstractEventLoop
    db: Database

    def run(self, scenario: Callable[..., Awaitable[Any]], *, public_url: str = "", address: str = SERVER_ADDRESS) -> Any:
        """Run ``scenario(client)`` against a fresh app over this database."""

        async def go() -> Any:
            app = create_app(self.db, server_name="Terrace <PBM> Server", public_url=public_url, address=address)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
                return await scenario(client)

        return self.loop.run_until_complete(go())

    def sql(self, coro: Awaitable[Any]) -> Any:
        return self.loop.run_until_complete(coro)


@pytest.fixture
def site(db_url: str) -> Iterator[Site]:
    loop = asyncio.new_event_loop()
    db = Database(db_url)
    loop.run_until_complete(db.migrate())
    filled = loop.run_until_complete(fill(db))
    yield Site(db_url, filled, loop, db)
    loop.run_until_complete(db.close())
    loop.close()
