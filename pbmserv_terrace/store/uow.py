"""The Unit of Work: one transaction per inbound command.

Everything a command does — the game change, the replies queued in the outbox,
the processed Message-ID — goes through the repositories of one UnitOfWork and is
committed together by :meth:`UnitOfWork.commit`, or not at all: leaving the
``async with`` block without committing (or by an exception) rolls it all back.

    async with UnitOfWork(db) as uow:
        game = await uow.games.get("terrace", 101, lock=True)
        ...
        await uow.commit()
"""

from __future__ import annotations

import contextlib
from types import TracebackType

from sqlalchemy.ext.asyncio import AsyncSession

from .db import Database
from .repos import Games, History, Inbound, Moves, Outbox, Ratings, Secrets, Users, Watchers


class UnitOfWork:
    session: AsyncSession
    users: Users
    games: Games
    moves: Moves
    watchers: Watchers
    ratings: Ratings
    history: History
    inbound: Inbound
    outbox: Outbox
    secrets: Secrets

    def __init__(self, db: Database) -> None:
        self.db = db
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> UnitOfWork:
        self.session = await self._stack.enter_async_context(self.db.session())
        await self.session.begin()
        s = self.session
        self.users, self.games, self.moves = Users(s), Games(s), Moves(s)
        self.watchers, self.ratings, self.history = Watchers(s), Ratings(s), History(s)
        self.inbound, self.outbox, self.secrets = Inbound(s), Outbox(s), Secrets(s)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # db.session() rolls back whatever was not committed.
        await self._stack.aclose()

    async def flush(self) -> None:
        await self.session.flush()

    async def commit(self) -> None:
        await self.session.commit()
