"""Solver hints off the mail's path (issue 36).

A solitaire's ``hint`` runs a solver for about a second.  Inside the handler it
held the mail's transaction and the event loop that takes every other mail (30
hints took 32 s, other players' mails went from 45 to 598 ms).  So a hint is
made in three steps, the way a robot's move is (:mod:`.robots`):

1. The ``hint`` handler only records the request on the board
   (``options[PENDING]``, committed with the mail) and answers nothing yet: the
   player gets one mail, the one with the hint.
2. The worker pool the robots use computes it (:func:`solve`, a pure function of
   the deal and the moves), outside any transaction.
3. :meth:`pbmserv_terrace.service.Service.hint_answer` sends the board mail with
   the hint in a transaction of its own, only if the board is still at the
   position the hint was computed for (its ply and undos): idempotent per
   (board, position), so a hint computed twice is sent once, and a request that
   a crash interrupted is found again on the board (the next start's rescan).

What keeps hints from crowding out mail (:class:`HintDesk`): at most
HINTS_PER_MINUTE requests per player a minute, one waiting hint per board, and at
most QUEUE_LIMIT hints waiting in all (then the request is refused with "the
server is busy, try again").  These counts live in the ``serve`` process (a
restart forgets them; with several PostgreSQL workers each counts its own).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ..gametypes import GAME_TYPES
from ..store import Game
from .context import CommandError

PENDING = "hint_pending"
"""the option key of a board whose player waits for a hint: ``{"by": ADDRESS}``
(the sender, when not one of the player's addresses, also gets the answer) or ``{}``"""
HINT_SECONDS = 1.0
"""the solver's time for one hint"""
HINTS_PER_MINUTE = 3
"""hint requests one player may make in a minute"""
QUEUE_LIMIT = 16
"""hints waiting for the worker pool at most (each takes about HINT_SECONDS of a worker)"""
ADMITTED_FOR = 60.0
"""seconds a request admitted by a handler counts as waiting before the pool takes it
(a transaction that was rolled back never hands it over)"""

ASKED = "hints_asked"
"""session.info key: the boards whose hint a transaction asked for (:func:`note_asked`)"""

Board = tuple[str, int]


class HintDesk:
    """The per-player quota and the bound on waiting hints, of one service.

    The handler asks :meth:`admit` (which raises the player's error); the runner
    of the pool says :meth:`queued` when it takes a board and :meth:`done` when
    the board's hint is answered (or dropped)."""

    def __init__(self, per_minute: int = HINTS_PER_MINUTE, limit: int = QUEUE_LIMIT,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.per_minute, self.limit, self.clock = per_minute, limit, clock
        self._asked: dict[str, dict[str, float]] = {}
        """userid → request → when: the requests of the last minute, by the Message-ID
        of their mail (a mail handled again, as a batch is, is not counted twice)"""
        self._admitted: dict[Board, float] = {}
        """boards admitted by a handler and not yet taken by the pool"""
        self.waiting: set[Board] = set()
        """boards the pool has taken and not yet answered"""

    def busy(self) -> bool:
        now = self.clock()
        for board in [b for b, t in self._admitted.items() if now - t > ADMITTED_FOR]:
            del self._admitted[board]
        return len(self.waiting) + len(self._admitted) >= self.limit

    def admit(self, userid: str, board: Board, request: str) -> None:
        """Count the request ``request`` (its mail's Message-ID) of ``userid`` for
        ``board``, or refuse it: over the player's quota, or the server busy."""
        now = self.clock()
        asked = {k: t for k, t in self._asked.get(userid, {}).items() if now - t < 60.0}
        key = request
        if key not in asked and len(asked) >= self.per_minute:
            raise CommandError(
                f"at most {self.per_minute} hints a minute: your hint is not given; ask again in a minute "
                "(a hint takes the solver a second of the server's time); your moves are welcome meanwhile",
                game_type=board[0], board=board[1],
            )
        if board not in self._admitted and board not in self.waiting and self.busy():
            raise CommandError("the server is busy with other players' hints: try again in a few minutes",
                               game_type=board[0], board=board[1])  # fmt: skip
        asked[key] = asked.get(key, now)
        self._asked[userid] = asked
        self._admitted.setdefault(board, now)

    def queued(self, board: Board) -> None:
        self._admitted.pop(board, None)
        self.waiting.add(board)

    def done(self, board: Board) -> None:
        self._admitted.pop(board, None)
        self.waiting.discard(board)


_DESKS: weakref.WeakKeyDictionary[Any, HintDesk] = weakref.WeakKeyDictionary()


def desk_of(service: object) -> HintDesk:
    """The hint desk of ``service`` (made on first use): the handler and the pool's
    runner of one service share it; another service (a test's) has its own."""
    desk = _DESKS.get(service)
    if desk is None:
        desk = _DESKS[service] = HintDesk()
    return desk


def note_asked(session: AsyncSession, game: Game) -> None:
    """Note in ``session`` that ``game``'s player asked for a hint: the mail's
    result then names the board (:func:`.robots.robot_turns`), and ``serve``
    gives it to the pool once the request has committed."""
    asked: set[Board] = session.info.setdefault(ASKED, set())
    asked.add((game.game_type, game.board_number))


def asked_boards(session: AsyncSession) -> list[Board]:
    """The boards :func:`note_asked` noted in ``session``."""
    return sorted(session.info.get(ASKED, ()))


def solve(game_type: str, variant: str, deal: int, moves: Sequence[str], seconds: float = HINT_SECONDS) -> str | None:
    """The hint for the deal after ``moves`` (a move text), or None when the solver
    finds none in ``seconds``.  Plain values in and out: it runs in a worker process."""
    rules = GAME_TYPES[game_type].solitaire
    return rules.hint(rules.replay(variant, deal, list(moves)), seconds)


__all__ = [
    "HINTS_PER_MINUTE",
    "HINT_SECONDS",
    "PENDING",
    "QUEUE_LIMIT",
    "HintDesk",
    "asked_boards",
    "desk_of",
    "note_asked",
    "solve",
]
