"""Group commit: the mails that are ready are handled together.

A mail that reaches :meth:`GroupCommit.handle` joins the batch being gathered;
a batch starts as soon as a lane is free, with every mail that is waiting then
(up to ``limit``), and runs through :meth:`Service.handle_batch` in one
transaction.  Under light load a batch is one mail and nothing waits; under
load, the mails that arrive while a batch runs make up the next one, so the
fixed cost of a transaction (and on SQLite the one writer) is shared.

Under load, though, "waiting then" is often one or two mails: while a batch
runs (on SQLite its statements run on the event loop's thread), the other
clients' SMTP dialogues stand still, and afterwards their mails reach the
batcher one loop iteration apart.  So a lane that comes free does not start at
once while mails are known to be on their way (:meth:`GroupCommit.expect`: taken
in and not yet here; ``coming``: SMTP transactions begun whose data has not
arrived yet): it waits for them, up to ``gather`` seconds after the first mail
began to wait.  With nothing on its way (light load) nothing waits.  A wait that
ends with ``gather`` is told to the listener (``overdue``), which from then on
leaves the mails it was still receiving out of ``coming`` until they arrive: a
client that stalls mid-mail holds one batch for ``gather``, not every batch
while it stalls.

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

GATHER = 0.004
"""seconds: the longest a free lane waits for mails on their way"""


class Expected:
    """A mail on its way to :meth:`GroupCommit.handle` (:meth:`GroupCommit.expect`).
    :meth:`done` when it got there, or will not get there soon (it waits for a
    password check or an earlier mail, it failed, it was put back)."""

    __slots__ = ("_group",)

    def __init__(self, group: GroupCommit) -> None:
        self._group: GroupCommit | None = group

    def done(self) -> None:
        if self._group is not None:
            self._group.on_way -= 1
            self._group = None


class GroupCommit:
    def __init__(
        self,
        handle_batch: BatchHandler,
        *,
        limit: int,
        lanes: int,
        coming: Callable[[], int] = lambda: 0,
        overdue: Callable[[], None] = lambda: None,
        gather: float = GATHER,
    ) -> None:
        self.limit = max(1, limit)
        self.lanes = max(1, lanes)
        self.gather = gather
        self.on_way = 0
        """mails expected (:meth:`expect`) that have not got here yet"""
        self._coming = coming
        self._overdue = overdue
        self._handle_batch = handle_batch
        self._waiting: list[tuple[InboundMail, asyncio.Future[HandleResult]]] = []
        self._running = 0
        self._kick_planned = False
        self._waiting_since: float | None = None
        """loop time at which the first waiting mail began to wait for mails on their way"""
        self._recheck: asyncio.TimerHandle | None = None
        self.batches = 0
        """batches begun (their mails: :attr:`mails`)"""
        self.mails = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def expect(self) -> Expected:
        """Note a mail that was taken in and will soon be handed to :meth:`handle`."""
        self.on_way += 1
        return Expected(self)

    async def handle(self, mail: InboundMail, expected: Expected | None = None) -> HandleResult:
        """The mail's result once its batch committed; raises what the mail raised
        when it ran alone (see :meth:`Service.handle_batch`).  ``expected``: the
        note :meth:`expect` gave for this mail (it has arrived now)."""
        future: asyncio.Future[HandleResult] = asyncio.get_running_loop().create_future()
        self._waiting.append((mail, future))
        if expected is not None:
            expected.done()
        if not self._kick_planned:
            # after the current loop iteration: mails made ready together join one batch
            self._kick_planned = True
            asyncio.get_running_loop().call_soon(self._kick)
        return await future

    def _wait_for_more(self) -> bool:
        """Whether a free lane should wait before it starts: mails are on their way,
        the batch is not full, and the first waiting mail has not waited ``gather``."""
        if len(self._waiting) >= self.limit or not (self.on_way > 0 or self._coming() > 0):
            self._waiting_since = None
            return False
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._waiting_since is None:
            self._waiting_since = now
        if now - self._waiting_since >= self.gather:
            self._waiting_since = None
            self._overdue()  # what did not come in time is not waited for again
            return False
        if self._recheck is None:  # in case what is on its way never comes (a client hangs up)
            self._recheck = loop.call_at(self._waiting_since + self.gather, self._recheck_now)
        return True

    def _recheck_now(self) -> None:
        self._recheck = None
        self._kick()

    def _kick(self) -> None:
        self._kick_planned = False
        while self._waiting and self._running < self.lanes:
            if self._wait_for_more():
                return
            batch, self._waiting = self._waiting[: self.limit], self._waiting[self.limit :]
            self.batches += 1
            self.mails += len(batch)
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
