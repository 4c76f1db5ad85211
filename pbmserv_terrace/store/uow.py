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

from sqlalchemy.ext.asyncio import AsyncSession, AsyncSessionTransaction

from .db import Database
from .repos import Games, History, Moves, Outbox, ProcessedMails, Ratings, Secrets, Users, Watchers


class MailUndo(Exception):
    """The mail in hand must be undone, but it shares a batch's transaction
    without a savepoint of its own: the batch is run again with one for it."""


class UnitOfWork:
    session: AsyncSession
    users: Users
    games: Games
    moves: Moves
    watchers: Watchers
    ratings: Ratings
    history: History
    processed: ProcessedMails
    outbox: Outbox
    secrets: Secrets

    def __init__(self, db: Database, *, batch: bool = False) -> None:
        self.db = db
        self.batch = batch
        """several mails share this transaction, each in its own savepoint"""
        self._stack = contextlib.AsyncExitStack()
        self._mail: AsyncSessionTransaction | None = None

    async def __aenter__(self) -> UnitOfWork:
        self.session = await self._stack.enter_async_context(self.db.session())
        await self.session.begin()
        s = self.session
        self.users, self.games, self.moves = Users(s), Games(s), Moves(s)
        self.watchers, self.ratings, self.history = Watchers(s), Ratings(s), History(s)
        self.processed, self.outbox, self.secrets = ProcessedMails(s), Outbox(s), Secrets(s)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # db.session() rolls back whatever was not committed.
        await self._stack.aclose()

    async def begin_mail(self, *, savepoint: bool) -> None:
        """A mail of a batch begins; with ``savepoint`` it gets its own, so that
        :meth:`undo_mail` can undo it alone.  Without one, its changes are
        written with the whole batch's at commit (one flush, set-based)."""
        if self.batch and savepoint:
            self._mail = await self.savepoint()

    async def end_mail(self) -> None:
        if self._mail is not None:
            await self._mail.commit()
            self._mail = None

    async def savepoint(self) -> AsyncSessionTransaction:
        """A savepoint, with everything queued so far written before it: what is
        queued after it is dropped (:meth:`forget`) when it is rolled back."""
        await self.flush()
        return await self.session.begin_nested()

    async def undo_mail(self) -> None:
        """Undo what the mail in hand changed and go on in a clean state: back to
        the mail's savepoint in a batch, else roll the transaction back and begin
        a new one (cheaper than a savepoint per mail)."""
        if self._mail is not None:
            await self._mail.rollback()
            self.forget()
            self._mail = await self.session.begin_nested()
            return
        if self.batch:
            raise MailUndo()
        await self.session.rollback()
        self.forget()
        await self.session.begin()

    def forget(self) -> None:
        """After a rollback (to a savepoint): drop what the repositories read ahead
        (those objects are expired; reading them again goes through the database)
        and the rows queued since the last flush (their work was undone)."""
        self.moves.queued.clear()
        self.outbox.queued.clear()
        self.processed.queued.clear()
        self.users.loaded.clear()
        self.games.loaded.clear()
        self.moves.recent.clear()
        self.watchers.loaded.clear()
        self.secrets.loaded.clear()

    async def flush(self) -> None:
        await self.session.flush()
        await self.moves.write()
        await self.outbox.write()
        await self.processed.write()

    async def commit(self) -> None:
        await self.flush()
        await self.session.commit()
