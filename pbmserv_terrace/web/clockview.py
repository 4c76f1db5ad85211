"""Time left on the web (issue 40 item 7): each board's clocks, a player's boards
waiting for them, their deadlines — computed from the archive's rows by the one
clock arithmetic the service uses (:mod:`..clocks`: the same :class:`~..clocks.Turn`
the service's ``deadlines.turn_of`` builds, the same ``left``, ``runs_out_at`` and
``vacation_end``), never a second one.

What a page may say is what the board pages already say (the archive is public):
time left, when a clock runs out, "on vacation" and "out of time".  A vacation's
end is never shown (it only feeds the arithmetic), and a player on vacation has
no deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .. import clocks
from ..clocks import clock_of, duration
from ..store.archive import GameRow, SeatClock
from .boardview import army_to_move, facts

TIME_STEP = 60.0
"""seconds a page that shows a time left is served at most without being made again
(the finest unit ``clocks.duration`` shows is a minute)"""


@dataclass(frozen=True, slots=True)
class Timers:
    """The server's timer settings the web needs (``[timers]``)."""

    forfeit_days: float = 21.0
    """``forfeittime``: days without a move before a forfeit, on boards that set none"""
    vacation_days: float = 30.0
    """``vacation_days``: the yearly vacation allowance"""


@dataclass(frozen=True, slots=True)
class SeatTime:
    """One player's clock as a board page shows it."""

    userid: str
    seat: int
    text: str
    """"9d 4h", "out of time"; "" for a player whose time is not shown (not to move
    on a board without a bank)"""
    state: str
    """"to move" (the clock that runs), "on vacation" (to move, the clock stopped), "" (waiting)"""
    out: bool


@dataclass(frozen=True, slots=True)
class BoardTime:
    """The clocks of an active board at one moment."""

    game_id: int
    to_move: str
    """the userid of the player to move"""
    left: float
    """seconds before the player to move runs out (negative: run out); frozen while away"""
    deadline: datetime | None
    """when the player to move runs out (past when out of time); None while on vacation"""
    away: bool
    out: bool
    banks: bool
    """a ``--clock`` board: every player's bank is shown"""
    started: datetime
    """since when the clock of the player to move runs (its turn's start)"""
    summary: str
    """the board's clock in one sentence"""
    seats: tuple[SeatTime, ...]

    def seat(self, seat: int) -> SeatTime | None:
        return next((s for s in self.seats if s.seat == seat), None)

    @property
    def left_text(self) -> str:
        """The time left of the player to move, as a list shows it."""
        if self.out:
            return "out of time"
        return duration(self.left) + (" (on vacation)" if self.away else "")

    @property
    def shown(self) -> tuple[str, ...]:
        """Everything a page shows of these clocks (two moments with the same words
        make the same page)."""
        return (self.summary, *(f"{s.seat}:{s.text}:{s.state}" for s in self.seats))


def turn_of(game: GameRow, clock: SeatClock, timers: Timers) -> clocks.Turn:
    """The state of the clock of ``clock``'s seat (to move), as the service's
    ``deadlines.turn_of`` builds it from its rows."""
    end = clocks.vacation_end(clock.vacation_since, clock.vacation_until, clock.vacation_used_seconds,
                              clock.vacation_year, timers.vacation_days)  # fmt: skip
    return clocks.Turn(game.clock_from or game.last_move_at, clock.turn_seconds, clock.clock_seconds, clock.bank_seconds,
                       clock.vacation_since, end, clock.zone)  # fmt: skip


def is_away(turn: clocks.Turn, now: datetime) -> bool:
    """The player is on vacation at ``now`` (their clocks stand still)."""
    return turn.vacation_end is not None and now < turn.vacation_end


def runs_out(turn: clocks.Turn, left: float, now: datetime, weekends: bool) -> datetime:
    """When a clock with ``left`` seconds at ``now`` runs out (the service's
    ``deadlines.forfeit_at``), to the second."""
    at = now + timedelta(seconds=left) if left <= 0 else clocks.runs_out_at(now, left, weekends=weekends, zone=turn.zone)
    return (at + timedelta(microseconds=500_000)).replace(microsecond=0)


def mover_seat(game: GameRow) -> int | None:
    """The seat to move on an active board game's board (None when it cannot be told)."""
    army = army_to_move(game.position, game.game_type)
    seat = next((s for s in game.seats if s.seat == army), None)
    return seat.seat if seat is not None and seat.active else None


def board_time(game: GameRow, now: datetime, timers: Timers) -> BoardTime | None:
    """The clocks of ``game`` (a board game's board read with its clocks) at ``now``;
    None when it is not being played."""
    if game.status != "active" or not game.clocks:
        return None
    seat_no = mover_seat(game)
    by_seat = {c.seat: c for c in game.clocks}
    names = {s.seat: s.userid for s in game.seats}
    if seat_no is None or seat_no not in by_seat:
        return None
    turn = turn_of(game, by_seat[seat_no], timers)
    weekends = bool(game.options.get("weekends"))
    left = clocks.left(turn, now, game.options, timers.forfeit_days)
    away = is_away(turn, now)
    deadline = None if away else runs_out(turn, left, now, weekends)
    clock = clock_of(game.options)
    mover = names[seat_no]
    out = left <= 0 or (clock is not None and by_seat[seat_no].flagged_at is not None)
    seats = []
    for s in game.seats:
        if not s.active:
            continue
        state = ("on vacation" if away else "to move") if s.seat == seat_no else ""
        if s.seat == seat_no:
            text, flag = ("out of time" if out else duration(left)), out
        elif clock is not None:
            c = by_seat.get(s.seat)
            bank = clock.bank if c is None or c.bank_seconds is None else c.bank_seconds
            flag = bank <= 0 or (c is not None and c.flagged_at is not None)
            text = "out of time" if flag else duration(bank)
        else:
            text, flag = "", False
        seats.append(SeatTime(s.userid, s.seat, text, state, flag))
    when = f" ({deadline:%Y-%m-%d %H:%M} UTC)" if deadline is not None else ""
    off = ", weekends off" if weekends else ""
    if clock is not None:
        summary = f"Clock: {clock.text()}{off}. "
        if out:
            summary += f"{mover} is out of time" + ("." if clock.auto else f"{when}: the opponent may claim the win.")
        elif away:
            summary += f"{mover} is on vacation: the clock stands still."
        else:
            summary += f"{mover}'s bank runs out in {duration(left)}{when}."
    else:
        if out:
            summary = f"{mover} is out of time{when}: the board is forfeited at the next timer run."
        elif away:
            summary = f"{mover} is on vacation: the clock stands still ({duration(left)} left)."
        else:
            summary = f"{mover} has {duration(left)} left to move{when}{off}."
    return BoardTime(game.id, mover, left, deadline, away, out, clock is not None, turn.started, summary, tuple(seats))


@dataclass(frozen=True, slots=True)
class Waiting:
    """A board waiting for a player: their move, or a vote only they can answer."""

    game: GameRow
    time: BoardTime
    why: str
    """"to move", "draw vote", "undo vote" (joined by ", ")"""
    their_move: bool
    userid: str
    """the player it waits for"""

    @property
    def opponents(self) -> tuple[str, ...]:
        """The others still playing on the board, in seat order."""
        return tuple(s.userid for s in self.game.seats if s.userid != self.userid and s.active)


def waiting_for(userid: str, games: list[GameRow], now: datetime, timers: Timers) -> list[Waiting]:
    """The boards among ``games`` that wait for ``userid``: it is their move, or a draw
    offer or undo request waits for their vote; the soonest deadline first (boards of a
    player on vacation, which have none, after the others, by time left), then by board."""
    out = []
    for game in games:
        time = board_time(game, now, timers)
        if time is None:
            continue
        board = facts(game)
        mine = next((s for s in board.seats if s.userid == userid and s.active), None)
        if mine is None:
            continue
        reasons = []
        their_move = time.to_move == userid
        if their_move:
            reasons.append("to move")
        if game.draw_votes and mine in board.waiting_for(game.draw_votes):
            reasons.append("draw vote")
        if game.undo_votes and mine in board.waiting_for(game.undo_votes):
            reasons.append("undo vote")
        if reasons:
            out.append(Waiting(game, time, ", ".join(reasons), their_move, userid))
    return sorted(out, key=_soonest)


def _soonest(w: Waiting) -> tuple[bool, datetime, float, str, int]:
    deadline = w.time.deadline
    return (deadline is None, deadline or datetime.max, w.time.left, w.game.game_type, w.game.board_number)
