"""Clock arithmetic of a board, pure (issue 40 items 3 and 4): the ``--clock``
option (a time bank, an increment after each move, an optional cap, and whether
running out loses at once), and the seconds a clock runs between two moments —
all of them, or without Saturdays and Sundays in the player's time zone
(``--weekends``) — with its inverse, the moment a given amount has run.

All datetimes are naive UTC, as the store keeps them.  The service keeps the
state (banks, the moment the running clock started, vacations); this module only
counts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_DAYS = 365.0
"""the longest bank, increment or cap a board may have"""

_AMOUNT = r"(\d{1,4}(?:\.\d{1,3})?)([dh]?)"
_CLOCK = re.compile(rf"^{_AMOUNT}\+{_AMOUNT}(?:/{_AMOUNT})?(,auto)?$", re.IGNORECASE)
"""``BANK+INCREMENT[/CAP][,auto]``: bounded digit runs, no nesting (linear)"""

CLOCK_USAGE = "--clock=BANK+INCREMENT[/CAP][,auto] in days, or hours with h: e.g. --clock=10+2/20 or --clock=36h+12h"


@dataclass(frozen=True)
class Clock:
    """A board's time bank: every player starts with ``bank`` seconds, which run
    while it is their turn; each move adds ``increment``, up to ``cap`` (None: no
    cap).  ``auto``: a player whose bank runs out loses at once; otherwise the
    opponent is told and may claim the win."""

    bank: float
    increment: float
    cap: float | None = None
    auto: bool = False

    def as_option(self) -> dict[str, Any]:
        """How the board's options store it (JSON)."""
        return {"bank": self.bank, "increment": self.increment, "cap": self.cap, "auto": self.auto}

    def text(self) -> str:
        """The clock in words, for the board mail's options line."""
        words = f"{duration(self.bank)} bank + {duration(self.increment)} a move"
        if self.cap is not None:
            words += f", at most {duration(self.cap)}"
        return words + (", out of time loses" if self.auto else ", out of time may be claimed")

    def after_move(self, left: float) -> float:
        """The bank after a move made with ``left`` seconds in it (negative: the
        player had run out and played on; they start again from zero)."""
        bank = max(0.0, left) + self.increment
        return min(bank, self.cap) if self.cap is not None else bank


def _seconds(number: str, unit: str) -> float:
    return float(number) * (3600.0 if unit.lower() == "h" else 86400.0)


def parse_clock(value: str) -> Clock:
    """``--clock``'s value → :class:`Clock`; ValueError with the player's sentence."""
    match = _CLOCK.match(value.strip())
    if match is None:
        raise ValueError(f"cannot read --clock={value[:30]}; write {CLOCK_USAGE}")
    bank = _seconds(match[1], match[2])
    increment = _seconds(match[3], match[4])
    cap = _seconds(match[5], match[6]) if match[5] is not None else None
    limit = MAX_DAYS * 86400
    if not 0 < bank <= limit or increment > limit or (cap is not None and cap > limit):
        raise ValueError(f"the bank must be more than 0 and no amount over {MAX_DAYS:g} days ({CLOCK_USAGE})")
    if cap is not None and cap < bank:
        raise ValueError("the cap (after /) must not be smaller than the bank")
    return Clock(bank, increment, cap, auto=match[7] is not None)


def clock_of(options: dict[str, Any]) -> Clock | None:
    """The board's clock from its stored options, None on boards without one."""
    raw = options.get("clock")
    if not isinstance(raw, dict):
        return None
    cap = raw.get("cap")
    return Clock(float(raw["bank"]), float(raw["increment"]), float(cap) if cap is not None else None, bool(raw.get("auto")))


def local_zone(name: str | None) -> ZoneInfo | tzinfo:
    """A player's time zone by IANA name (UTC when unknown or none)."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return UTC


def _weekend_spans(start: datetime, end: datetime, zone: ZoneInfo | tzinfo) -> list[tuple[datetime, datetime]]:
    """The Saturdays and Sundays (local midnight to midnight, as naive UTC) that
    meet [start, end)."""
    spans: list[tuple[datetime, datetime]] = []
    local = start.replace(tzinfo=UTC).astimezone(zone)
    # the Saturday of the week that holds ``start``, at local midnight
    day = (local - timedelta(days=(local.weekday() - 5) % 7)).date()
    while True:
        begin = datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC).replace(tzinfo=None)
        monday = day + timedelta(days=2)
        finish = datetime(monday.year, monday.month, monday.day, tzinfo=zone).astimezone(UTC).replace(tzinfo=None)
        if begin >= end:
            return spans
        if finish > start:
            spans.append((max(begin, start), min(finish, end)))
        day += timedelta(days=7)


def running_seconds(start: datetime, end: datetime, *, weekends: bool = False, zone: str | None = None) -> float:
    """The seconds a clock runs from ``start`` to ``end``: all of them, or, with
    ``weekends``, without Saturdays and Sundays in ``zone``."""
    if end <= start:
        return 0.0
    total = (end - start).total_seconds()
    if weekends:
        total -= sum((b - a).total_seconds() for a, b in _weekend_spans(start, end, local_zone(zone)))
    return max(0.0, total)


def runs_out_at(start: datetime, seconds: float, *, weekends: bool = False, zone: str | None = None) -> datetime:
    """The moment a clock started at ``start`` has run ``seconds`` (weekends
    skipped with ``weekends``): the inverse of :func:`running_seconds`."""
    if seconds <= 0:
        return start
    at = start + timedelta(seconds=seconds)
    if not weekends:
        return at
    # every weekend met on the way pushes the end later; 2 days a week at most
    while True:
        ran = running_seconds(start, at, weekends=True, zone=zone)
        short = seconds - ran
        if short <= 0.5:
            return at
        at += timedelta(seconds=short)


def duration(seconds: float) -> str:
    """``3d 4h``, ``5h 20m``, ``12m``: a time left as people write it."""
    seconds = max(0.0, seconds)
    minutes = int(seconds // 60)
    days_, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    if days_:
        return f"{days_}d {hours}h" if hours else f"{days_}d"
    if hours:
        return f"{hours}h {mins}m" if mins else f"{hours}h"
    return f"{mins}m"


# ------------------------------------------------- a player's running clock
def vacation_end(
    since: datetime | None, until: datetime | None, used_seconds: float, used_year: int | None, allowance_days: float
) -> datetime | None:
    """When a vacation begun at ``since`` ends by itself: at ``until`` (its last
    day) or when the year's allowance is used up; None when there is none."""
    if since is None:
        return None
    used = used_seconds if used_year == since.year else 0.0
    end = since + timedelta(seconds=max(0.0, allowance_days * 86400 - used))
    return min(end, until) if until is not None else end


@dataclass(frozen=True)
class Turn:
    """What the time left of the player to move depends on, as the store keeps it
    (the service's :mod:`deadlines` and the web archive both read it so)."""

    started: datetime
    """since when the clock runs (``Game.clock_from``, else the last move)"""
    turn_seconds: float
    """run earlier in this turn (before a vacation)"""
    total_seconds: float
    """run in the whole game (``--totaltime``)"""
    bank_seconds: float | None
    """the bank at ``started`` on a ``--clock`` board (None: the full bank)"""
    vacation_since: datetime | None = None
    vacation_end: datetime | None = None
    zone: str | None = None


def ran(turn: Turn, now: datetime, *, weekends: bool = False) -> float:
    """Seconds the clock has run since ``turn.started`` (none during a vacation;
    after a vacation that ended by itself, from its end)."""
    start = turn.started
    if turn.vacation_end is not None:
        if now < turn.vacation_end:
            return 0.0
        start = max(start, turn.vacation_end)
    return running_seconds(start, now, weekends=weekends, zone=turn.zone)


def left(turn: Turn, now: datetime, options: dict[str, Any], forfeit_days: float) -> float:
    """Seconds before the player to move runs out of time (negative: run out):
    the bank of a ``--clock`` board, else pbmserv's ``forfeittime`` (days without a
    move; ``forfeit_days`` when the board sets none) and ``totaltime``."""
    run = ran(turn, now, weekends=bool(options.get("weekends")))
    clock = clock_of(options)
    if clock is not None:
        return (clock.bank if turn.bank_seconds is None else turn.bank_seconds) - run
    rest = float(options.get("forfeittime", forfeit_days)) * 86400 - turn.turn_seconds - run
    total = options.get("totaltime")
    if total:
        rest = min(rest, float(total) * 86400 - turn.total_seconds - run)
    return rest
