"""Work as a count, not a time (issue 36): the Python and C function calls made
while a block runs, the same on any machine however busy."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def counting() -> Iterator[list[int]]:
    """``with counting() as count:`` … ``count[0]`` is the calls made inside."""
    count = [0]

    def profile(frame: object, event: str, arg: object) -> None:
        count[0] += 1

    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(None)


def calls(fn: Callable[[], object]) -> int:
    """The calls ``fn()`` makes."""
    with counting() as count:
        fn()
    return count[0]
