"""Running mails side by side without changing what they mean.

Mails are submitted in delivery order.  Each comes with the keys of what it
touches (its sender, its boards, its users) or ``None`` when it may touch
anything.  A mail starts only after every earlier mail that shares a key has
finished; a ``None`` mail waits for every earlier mail, and every later mail waits
for it.  So mails that could see each other's effects run in delivery order, and
the rest (moves on different boards by different players) run at once, at most
``limit`` at a time.  The outcome is the same as one after the other, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


class _Entry:
    __slots__ = ("done", "keys")

    def __init__(self, keys: frozenset[str] | None) -> None:
        self.done = asyncio.Event()
        self.keys = keys


class KeyedRunner:
    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._slots = asyncio.Semaphore(self.limit)
        self._last: dict[str, _Entry] = {}
        self._last_barrier: _Entry | None = None
        self._unfinished: set[_Entry] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def in_flight(self) -> int:
        return len(self._unfinished)

    async def wait_idle(self) -> None:
        """Until every submitted mail has finished."""
        await self._idle.wait()

    def submit(
        self,
        keys: Iterable[str] | None,
        job: Callable[[], Awaitable[T]],
        before: Callable[[], Awaitable[object]] | None = None,
        *,
        blocked: Callable[[], object] | None = None,
    ) -> asyncio.Task[T]:
        """Schedule ``job`` after the earlier jobs it depends on.  ``before`` (for
        example waiting for a password check) runs first, outside the ``limit``.
        ``blocked`` is called at once if the job has earlier jobs to wait for."""
        entry = _Entry(None if keys is None else frozenset(keys))
        if entry.keys is None:
            deps = [e.done for e in self._unfinished]
            self._last_barrier = entry
        else:
            wanted = {self._last.get(k) for k in entry.keys}
            wanted.add(self._last_barrier)
            deps = [e.done for e in wanted if e is not None and not e.done.is_set()]
            for key in entry.keys:
                self._last[key] = entry
        self._unfinished.add(entry)
        self._idle.clear()
        if deps and blocked is not None:
            blocked()

        async def run() -> T:
            try:
                for dep in deps:
                    await dep.wait()
                if before is not None:
                    await before()
                async with self._slots:
                    return await job()
            finally:
                self._finish(entry)

        return asyncio.create_task(run())

    def _finish(self, entry: _Entry) -> None:
        entry.done.set()
        self._unfinished.discard(entry)
        if self._last_barrier is entry:
            self._last_barrier = None
        for key in entry.keys or ():
            if self._last.get(key) is entry:
                del self._last[key]
        if not self._unfinished:
            self._idle.set()
