"""Group commit: the mails that are ready are handled together.

A mail that reaches :meth:`GroupCommit.handle` joins the batch being gathered;
a batch starts as soon as a lane is free, with every mail that is waiting then
(up to ``limit``), and runs through :meth:`Service.handle_batch` in one
transaction.  Under light load a batch is one mail and nothing waits; under
load, the mails that arrive while a batch runs make up the next one, so the
fixed cost of a transaction (and on SQLite the one writer) is shared.

Which mails may be in flight at once is decided before they get here
(:mod:`.ordering`): mails that touch the same things never meet in one batch,
so a batch's order among them does not matter beyond their arrival order,
which it keeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..inbound import InboundMail
from ..service import HandleResult

BatchHandler = Callable[[list[InboundMail]], Awaitable[list[HandleResult | Exception]]]


class GroupCommit:
    def __init__(self, handle_batch: BatchHandler, *, limit: int, lanes: int) -> None:
        self.limit = max(1, limit)
        self.lanes = max(1, lanes)
        self._handle_batch = handle_batch
        self._waiting: list[tuple[InboundMail, asyncio.Future[HandleResult]]] = []
        self._running = 0
        self._kick_planned = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle(self, mail: InboundMail) -> HandleResult:
        """The mail's result once its batch committed; raises what the mail raised
        when it ran alone (see :meth:`Service.handle_batch`)."""
        future: asyncio.Future[HandleResult] = asyncio.get_running_loop().create_future()
        self._waiting.append((mail, future))
        if not self._kick_planned:
            # after the current loop iteration: mails made ready together join one batch
            self._kick_planned = True
            asyncio.get_running_loop().call_soon(self._kick)
        return await future

    def _kick(self) -> None:
        self._kick_planned = False
        while self._waiting and self._running < self.lanes:
            batch, self._waiting = self._waiting[: self.limit], self._waiting[self.limit :]
            self._running += 1
            task = asyncio.create_task(self._run(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[tuple[InboundMail, asyncio.Future[HandleResult]]]) -> None:
        try:
            try:
                results = await self._handle_batch([mail for mail, _ in batch])
            except Exception as exc:  # handle_batch reports per mail; this is a last resort
                results = [exc] * len(batch)
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, Exception):
                    future.set_exception(result)
                else:
                    future.set_result(result)
        finally:
            self._running -= 1
            self._kick()
