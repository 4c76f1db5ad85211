"""``analyze N[#k]`` (issue 42 item 3): the robot's three best moves at a position
of a finished board, each with its score and principal variation, by mail.

Who may ask: anyone, as for ``show`` and ``history`` (a finished board is public,
and an analysis of it helps nobody in a game in play).  A board in play is
refused, whoever asks: analyze must never be engine help in a live game.  So is a
game whose rules have no analysing engine (``BoardRules.can_analyse``).

The search is CPU-heavy, so it runs the way a solver hint does (:mod:`.hints`):

1. The handler checks the board and the ply, counts the sender's requests and
   writes an ``analyses`` row ('pending', :mod:`..store.analyses`) in the mail's
   transaction; it answers nothing yet (the sender gets one mail: the answer).
2. The robots' worker pool (``app/robots.RobotPlayer``, one analysis at a time)
   runs :func:`compute`, a pure function of the position, within ANALYSIS_NODES
   nodes: never on the event loop, never inside a transaction.
3. :meth:`pbmserv_terrace.service.Service.analysis_answer` writes the answer mail
   and marks the row 'sent' in one transaction, only while it is 'pending': a
   result computed twice is mailed once, and ``serve`` looks for 'pending' rows
   at each start, so a crash loses no request.

What keeps it from burning the CPU: at most PER_HOUR requests per sender address
in an hour (counted from the rows: a restart forgets nothing, several workers
share the count; the address is lower-cased), and at most QUEUE_LIMIT waiting in
all (then "the server is busy"), of which at most STRANGER_SLOTS from addresses
that are no player's (a From is easily forged: made-up senders cannot crowd the
players out).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ..commands import Command
from ..gametypes import board_rules, game_title
from ..gametypes.analysis import PositionAnalysis
from ..gametypes.view import Replayed, replay
from ..render import render
from ..store import Analyses, Analysis, Game, MoveRecord
from ..store.analyses import FAILED, PENDING, SENT
from ..store.repos import Moves
from .args import need
from .boards import load_game, web_line
from .context import CommandError, Ctx, Mail
from .robots import RobotTurn
from .spec import command

ANALYSIS_NODES = 150_000
"""the search's budget for one analysis (about 3 s of one core on 8x8)"""
PER_HOUR = 6
"""analyses one sender address may ask for in an hour"""
QUEUE_LIMIT = 12
"""analyses waiting in all, at most (then: the server is busy, try later)"""
STRANGER_SLOTS = 4
"""of those, at most this many asked from addresses that are no player's confirmed
address: anyone may ask, but a forger who makes up a new From for every request
(each under its own PER_HOUR) cannot fill the queue the players share"""
LINES = 3
"""the best moves an analysis names"""
ASKED = "analyses_asked"
"""session.info key: the ids of the rows this transaction wrote"""
WORK = "#analysis"
"""the first half of an analysis's work key (never a game's name)"""


@dataclass(frozen=True, slots=True)
class AnalysisTurn(RobotTurn):
    """An analysis to compute: its row (``analysis_id``), and once read
    (:func:`turn_of`) what the engine needs: ``tpn`` the position after ``ply``
    plies, ``history`` the earlier positions it may repeat."""

    analysis_id: int = 0

    @property
    def key(self) -> tuple[str, int]:
        return (WORK, self.analysis_id)


def _plies(moves: Sequence[MoveRecord]) -> list[tuple[int, int, str]]:
    return [(m.ply, m.seat, m.move) for m in moves]


def _has_choice(pos: Any) -> bool:
    """Whether the side to move in ``pos`` has a move to choose."""
    return not pos.is_over() and pos.to_move in pos.armies()


def chosen_ply(game: Game, steps: Sequence[Replayed], at: int | None) -> int:
    """The ply whose position ``analyze N[#k]`` analyses: ``k``, or by default the
    final position, or when that is over the last one with a move to choose.
    CommandError with the reason when there is none."""
    where = f"board {game.board_number}"
    if at is not None:
        if not 0 <= at <= game.ply:
            raise CommandError(f"{where} has {game.ply} plies; there is no ply {at} (try {game.board_number}#0 to "
                               f"{game.board_number}#{game.ply})", game_type=game.game_type, board=game.board_number)  # fmt: skip
        if not _has_choice(steps[at].pos):
            raise CommandError(
                f"the game on {where} was over after ply {at}: there is no move to choose there; "
                f"try an earlier ply ({game.board_number}#{max(0, at - 1)})",
                game_type=game.game_type, board=game.board_number,
            )  # fmt: skip
        return at
    for step in reversed(steps):
        if _has_choice(step.pos):
            return step.ply
    raise CommandError(f"{where} has no position with a move to choose", game_type=game.game_type, board=game.board_number)


def history_before(game: Game, steps: Sequence[Replayed], ply: int) -> tuple[str, ...]:
    """The positions before ply ``ply`` that the position there could repeat (the
    same material), as position strings, oldest first."""
    rules = board_rules(game.game_type)
    here = rules.material(steps[ply].pos)
    kept: list[str] = []
    for step in reversed(steps[:ply]):
        if rules.material(step.pos) != here:
            break
        kept.append(rules.dump(step.pos))
    return tuple(reversed(kept))


@command("analyze", game=True)
async def analyze(ctx: Ctx, cmd: Command) -> None:
    """``analyze N[#k]``: record the request; the answer comes from the pool."""
    words = need(cmd, 1, 1)
    game, at = await load_game(ctx, cmd, words[0], lock=False)
    title, number = game_title(game.game_type), game.board_number
    rules = board_rules(game.game_type)
    if not rules.can_analyse(len(game.seats)):
        raise CommandError(f"{title} has no engine to analyse its positions", game_type=game.game_type, board=number)
    if game.status == "active":
        raise CommandError(
            f"board {number} is still being played: analyze is for finished games only (no engine help in a game in "
            f"play); ask again when it has ended",
            game_type=game.game_type, board=number,
        )  # fmt: skip
    if game.status == "removed":
        raise CommandError(f"board {number} was removed before it was played: there is nothing to analyse",
                           game_type=game.game_type, board=number)  # fmt: skip
    steps = list(replay(game.game_type, game.start_position, _plies(await ctx.uow.moves.of_game(game.id))))
    ply = chosen_ply(game, steps, at)
    repo = Analyses(ctx.uow.session)
    address = ctx.sender.lower()
    if await repo.since(address, ctx.now - timedelta(hours=1)) >= PER_HOUR:
        raise CommandError(
            f"at most {PER_HOUR} analyses an hour from one address: this one is not made; ask again in an hour "
            "(each takes the engine seconds of the server's time)",
            game_type=game.game_type, board=number,
        )  # fmt: skip
    waiting = await repo.pending_addresses()
    if len(waiting) >= QUEUE_LIMIT:
        raise CommandError("the server is busy with other analyses: ask again in a few minutes",
                           game_type=game.game_type, board=number)  # fmt: skip
    if not await ctx.uow.users.with_address(address):
        players = {a for a in set(waiting) if await ctx.uow.users.with_address(a)}
        if sum(a not in players for a in waiting) >= STRANGER_SLOTS:
            raise CommandError(
                "the server is busy with analyses asked from addresses that are no player's: ask again in a few "
                "minutes, or sign up (signup USERID PASSWORD) and ask from your confirmed address",
                game_type=game.game_type, board=number,
            )  # fmt: skip
    row = Analysis(game_id=game.id, ply=ply, address=address, state=PENDING, requested_at=ctx.now)
    repo.add(row)
    await ctx.uow.session.flush()
    asked: set[int] = ctx.uow.session.info.setdefault(ASKED, set())
    asked.add(row.id)


def asked_turns(session: AsyncSession) -> list[RobotTurn]:
    """The analyses this session's transaction asked for (work keys only: the
    pool reads each row again, :func:`turn_of`)."""
    return [_bare(i) for i in sorted(session.info.get(ASKED, ()))]


def _bare(analysis_id: int) -> AnalysisTurn:
    return AnalysisTurn(WORK, 0, 0, "", 0, "", analysis_id=analysis_id)


async def pending_turns(session: AsyncSession) -> list[RobotTurn]:
    """Every analysis not yet answered (``serve``'s start)."""
    return [_bare(row.id) for row in await Analyses(session).pending()]


async def turn_of(session: AsyncSession, analysis_id: int) -> AnalysisTurn | None:
    """The work of a pending analysis: its board's position at its ply and the
    history there (None: answered, or gone)."""
    repo = Analyses(session)
    row = await repo.get(analysis_id)
    if row is None or row.state != PENDING:
        return None
    game = await repo.board(row)
    if game is None:
        return None
    steps = list(replay(game.game_type, game.start_position, _plies(await Moves(session).of_game(game.id))))
    if row.ply >= len(steps):
        return None
    tpn = board_rules(game.game_type).dump(steps[row.ply].pos)
    return AnalysisTurn(game.game_type, game.board_number, row.ply, tpn, 0, "", history_before(game, steps, row.ply),
                        analysis_id=row.id)  # fmt: skip


def compute(game_type: str, tpn: str, history: Sequence[str], nodes: int = ANALYSIS_NODES) -> PositionAnalysis | None:
    """The best LINES moves in ``tpn``.  Plain values in and out: it runs in a
    worker process; deterministic for its arguments."""
    return board_rules(game_type).analyse(tpn, history, nodes, LINES)


def _ordinal(n: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(n, f"{n}th")


async def answer(ctx: Ctx, turn: AnalysisTurn, found: PositionAnalysis | None) -> bool:
    """Mail the analysis ``found`` of ``turn`` to whoever asked and mark its row
    answered, if it still waits (False: answered already, or gone)."""
    repo = Analyses(ctx.uow.session)
    row = await repo.get(turn.analysis_id, lock=True)
    if row is None or row.state != PENDING:
        return False
    game = await repo.board(row)
    if game is None:
        return False
    row.state, row.done_at = (SENT if found is not None else FAILED), ctx.now
    rules = board_rules(game.game_type)
    moves = await ctx.uow.moves.of_game(game.id)
    steps = list(replay(game.game_type, game.start_position, _plies(moves)))
    pos = steps[turn.ply].pos
    mover = next((s.user.userid for s in game.seats if s.seat == pos.to_move), f"army {pos.to_move}")
    played = steps[turn.ply + 1].last_move if turn.ply + 1 < len(steps) else ""
    title = game_title(game.game_type)
    subject = f"{title} Board {game.board_number}: analysis after ply {turn.ply}"
    if found is None:
        body = render("analysis.txt", failed=True, title=title, board=game.board_number, ply=turn.ply, plies=game.ply)
    else:
        rank = next((i for i, m in enumerate(found.moves, 1) if m.move == played), 0)
        body = render(
            "analysis.txt", failed=False, title=title, board=game.board_number, ply=turn.ply, plies=game.ply,
            mover=mover, found=found, played=played, played_rank=_ordinal(rank) if rank else "",
            board_text=rules.board_text(pos), width=max(len(m.move) for m in found.moves),
        )  # fmt: skip
    body += web_line(ctx, game)
    ctx.out.append(Mail([row.address], subject, body, for_sender=True))
    return True


__all__ = [
    "ANALYSIS_NODES",
    "LINES",
    "PER_HOUR",
    "QUEUE_LIMIT",
    "AnalysisTurn",
    "analyze",
    "answer",
    "asked_turns",
    "chosen_ply",
    "compute",
    "history_before",
    "pending_turns",
    "turn_of",
]
