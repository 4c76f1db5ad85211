"""Guards in front of the commands: the per-sender throttle, the password-guessing
guard, and the dummy hash that makes an unknown userid cost what a known one does.

Both guards keep their counts in this process (see deploy/README.md)."""

from __future__ import annotations

import collections
import functools

from .passwords import hash_password


class Throttle:
    """Per-sender command counts in a sliding one-minute window (in this process).
    ``check`` says ok, notice (the first mail over the limit) or drop."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._times: dict[str, collections.deque[float]] = {}
        self._noticed: dict[str, float] = {}

    def check(self, sender: str, now: float) -> str:
        times = self._times.setdefault(sender, collections.deque())
        while times and times[0] <= now - 60:
            times.popleft()
        if len(self._times) > 50_000:  # forget quiet senders
            for key in [k for k, v in self._times.items() if not v or v[-1] <= now - 60][:10_000]:
                self._times.pop(key, None)
                self._noticed.pop(key, None)
        if len(times) >= self.per_minute:
            if self._noticed.get(sender, -1e9) > now - 60:
                return "drop"
            self._noticed[sender] = now
            return "notice"
        times.append(now)
        return "ok"


class GuessGuard:
    """Slows password guessing against one userid (known or not, alike): after
    FREE wrong passwords within WINDOW seconds, every further attempt must wait
    1, 2, 4 … (at most 60) minutes after the last failure."""

    FREE, WINDOW = 5, 900.0

    def __init__(self) -> None:
        self._failures: dict[str, list[float]] = {}

    def failed(self, userid: str, now: float) -> None:
        recent = [t for t in self._failures.get(userid, []) if t > now - self.WINDOW]
        recent.append(now)
        self._failures[userid] = recent[-64:]
        if len(self._failures) > 100_000:
            self._failures.pop(next(iter(self._failures)))

    def succeeded(self, userid: str) -> None:
        self._failures.pop(userid, None)

    def locked_for(self, userid: str, now: float) -> int:
        """Minutes still to wait (0 = may try)."""
        recent = [t for t in self._failures.get(userid, []) if t > now - max(self.WINDOW, 3600.0)]
        extra = len(recent) - self.FREE
        if extra < 0:
            return 0
        until = recent[-1] + 60.0 * min(60, 2**extra)
        return 0 if until <= now else int((until - now) // 60) + 1


@functools.cache
def dummy_hash() -> str:
    """A hash to verify against for unknown users, so they cost what a user costs."""
    return hash_password("not-a-password")
