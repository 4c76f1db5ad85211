"""Clocks with a time bank, claims on time, vacations that stop every clock, and
weekends off (issue 40 items 3 and 4).  Time is the test's: mails are handled at
``clock.now`` (the service's ``utcnow``) and the timers run at the same moment
(``Service.run_timers(at)``, what ``admin timers --at`` runs) — no test sleeps."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pbmserv_terrace import clocks
from pbmserv_terrace.clocks import Clock, parse_clock, running_seconds, runs_out_at
from pbmserv_terrace.service import core
from pbmserv_terrace.store import UnitOfWork

from .harness import Harness, Reply, answer, mine, to
from .test_digests import timers_at

DAY = timedelta(days=1)
FRIDAY = datetime(2026, 11, 27, 18, 0)  # a Friday, 18:00 UTC


# ---------------------------------------------------------------- pure parts
def test_the_clock_option_is_read_as_players_write_it():
    assert parse_clock("10+2/20") == Clock(10 * 86400, 2 * 86400, 20 * 86400, False)
    assert parse_clock("36h+12h") == Clock(36 * 3600, 12 * 3600, None, False)
    assert parse_clock("1.5+0,auto") == Clock(1.5 * 86400, 0, None, True)
    assert parse_clock("2+1").after_move(-3600) == 86400  # run out and played on: from the increment
    assert parse_clock("2+1/2").after_move(1.5 * 86400) == 2 * 86400  # the cap
    for bad in ("10", "10+", "+2", "0+1", "10+2/5", "999+1", "10d+2x", "1e3+1", "10+2,never", "9" * 40 + "+1"):
        with pytest.raises(ValueError):
            parse_clock(bad)


def test_weekends_stop_the_clock_in_the_players_zone():
    monday_17 = FRIDAY + timedelta(days=2, hours=23)
    assert running_seconds(FRIDAY, monday_17) == (2 * 86400 + 23 * 3600)
    # Friday 18:00-24:00 and Monday 00:00-17:00 (UTC)
    assert running_seconds(FRIDAY, monday_17, weekends=True) == 23 * 3600
    assert runs_out_at(FRIDAY, 23 * 3600, weekends=True) == monday_17
    assert runs_out_at(FRIDAY, 3600, weekends=True) == FRIDAY + timedelta(hours=1)
    # in Tokyo (UTC+9) the weekend begins at Friday 15:00 UTC: nothing runs from Friday 18:00 UTC
    # until Sunday 15:00 UTC (Monday 00:00 in Tokyo)
    sunday_15 = FRIDAY + timedelta(days=1, hours=21)
    assert running_seconds(FRIDAY, sunday_15 + timedelta(hours=2), weekends=True, zone="Asia/Tokyo") == 2 * 3600
    for start in (FRIDAY, FRIDAY + timedelta(hours=7), FRIDAY - timedelta(days=3)):
        for seconds in (60.0, 86400.0, 5 * 86400.0):
            end = runs_out_at(start, seconds, weekends=True, zone="Europe/Paris")
            assert abs(running_seconds(start, end, weekends=True, zone="Europe/Paris") - seconds) <= 1


def test_a_vacation_ends_at_its_last_day_or_when_the_allowance_is_used():
    start = datetime(2026, 6, 1)
    assert clocks.vacation_end(start, None, 0.0, 2026, 30) == start + 30 * DAY
    assert clocks.vacation_end(start, start + 3 * DAY, 0.0, 2026, 30) == start + 3 * DAY
    assert clocks.vacation_end(start, None, 25 * 86400, 2026, 30) == start + 5 * DAY
    assert clocks.vacation_end(start, None, 25 * 86400, 2025, 30) == start + 30 * DAY  # last year's days do not count
    assert clocks.vacation_end(None, None, 0.0, None, 30) is None


# ------------------------------------------------------------ through mail
class Clockwork:
    """The harness with the service's clock in the test's hand."""

    def __init__(self, h: Harness, start: datetime) -> None:
        self.h, self.now = h, start

    def later(self, delta: timedelta) -> list[Reply]:
        """Time passes; the timers run at the new moment; what they mailed."""
        self.now += delta
        return timers_at(self.h, self.now)


@pytest.fixture
def cw(monkeypatch, db_url):
    h = Harness(db_url)
    work = Clockwork(h, FRIDAY - timedelta(days=3))  # a Tuesday
    monkeypatch.setattr(core, "utcnow", lambda: work.now)
    h.signup("ann", "ben", "cat")
    yield work
    h.close()


def seat_values(h: Harness, board: int) -> dict[str, tuple[float | None, object]]:
    async def run():
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace", board)
            return {s.user.userid: (s.bank_seconds, s.flagged_at) for s in game.seats}

    return h.loop.run_until_complete(run())


def status_of(h: Harness, board: int) -> tuple[str, str | None]:
    async def run():
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace", board)
            return game.status, game.result

    return h.loop.run_until_complete(run())


def test_a_bank_runs_out_the_opponent_is_told_and_claims_the_win_by_reply(cw):
    h = cw.h
    out = h.challenge("ann", "ben", options="--clock=2+1/4")
    assert "clock: 2d bank + 1d a move, at most 4d, out of time may be claimed" in mine(out, "ben").body
    assert "Time left: ann 2d (to move), ben 2d." in mine(out, "ann").body
    cw.later(timedelta(hours=12))
    out = h.move(101, "ann", "d2-e3")
    assert "Time left: ann 2d 12h, ben 2d (to move)." in mine(out, "ben").body
    assert seat_values(h, 101)["ann"][0] == pytest.approx(2.5 * 86400)
    h.move(101, "ben", "e7-d6")
    out = h.move(101, "ann", "e3-f4")
    assert "Time left: ann 3d 12h, ben 3d (to move)." in mine(out, "ben").body
    # ben lets his bank run out: a reminder first (a day before), then the flag
    nag = cw.later(timedelta(hours=49))
    assert to(nag) == ["ben@players.test"] and "23h is left on your" in nag[0].body.replace("\n", " ")
    assert cw.later(timedelta(hours=22)) == []
    flag = cw.later(timedelta(hours=2))
    assert to(flag) == ["ann@players.test", "ben@players.test"]
    told = mine(flag, "ann")
    assert "ben is out of time" in told.subject and "claim" in told.body
    assert "ann may now" in mine(flag, "ben").body
    assert cw.later(DAY) == []  # told once; the board waits for ann's claim or ben's move
    assert status_of(h, 101) == ("active", None)
    # ann claims by Reply to the mail that told her
    out = answer(h, told, "claim")
    assert status_of(h, 101)[0] == "won" and "ann wins" in status_of(h, 101)[1]
    ended = [r for r in out if r.to == "ben@players.test" and "forfeits on time" in r.body]
    assert len(ended) == 1 and "ben ran out of time; ann claimed the win." in ended[0].body


def test_a_claim_before_the_bank_is_empty_is_refused_and_a_late_move_plays_on(cw):
    h = cw.h
    h.challenge("ann", "ben", options="--clock=1+1")
    h.move(101, "ann", "d2-e3")
    out = h.send("ann", "terrace move 101 ann pw-ann claim")
    assert "ben still has 1d on the clock" in mine(out, "ann").body and status_of(h, 101)[0] == "active"
    flag = cw.later(timedelta(days=1, hours=1))
    assert "ben is out of time" in mine(flag, "ann").subject
    out = h.move(101, "ben", "e7-d6")  # ben plays on before ann claims: his bank starts again from the increment
    assert "Time left: ann 2d (to move), ben 1d." in mine(out, "ann").body
    assert seat_values(h, 101)["ben"] == (86400, None)
    out = h.send("ann", "terrace move 101 ann pw-ann claim")
    assert "it is your own turn" in mine(out, "ann").body and status_of(h, 101)[0] == "active"
    out = h.send("ann", "terrace move 102 ann pw-ann claim")
    assert "no such board" in mine(out, "ann").body.lower() or "board 102" in mine(out, "ann").body


def test_auto_loses_at_once_and_old_boards_have_nothing_to_claim(cw):
    h = cw.h
    h.challenge("ann", "ben", options="--clock=36h+0,auto")
    h.challenge("ann", "cat")
    for board, player, move in ((101, "ann", "d2-e3"), (101, "ben", "e7-d6"), (101, "ann", "e3-f4"), (102, "ann", "d2-e3")):
        h.move(board, player, move)
    out = h.send("ann", "terrace move 102 ann pw-ann claim")
    assert "has no --clock" in mine(out, "ann").body
    ended = cw.later(timedelta(hours=37))
    assert "forfeits on time" in mine(ended, "ann").body and "ben ran out of time." in mine(ended, "ann").body
    assert status_of(h, 101)[0] == "won" and status_of(h, 102)[0] == "active"


def test_bad_clock_options_are_refused_and_nothing_opens(cw):
    h = cw.h
    for options, why in (("--clock=ten", "cannot read --clock"), ("--clock=2+1 --forfeittime=5", "no --forfeittime"),
                         ("--weekends=sat", "takes no value"), ("--clock=2+1/1", "cap")):  # fmt: skip
        out = h.challenge("ann", "ben", options=options)
        assert why in mine(out, "ann").body, options
    assert status_of_missing(h, 101)


def status_of_missing(h: Harness, board: int) -> bool:
    async def run():
        async with UnitOfWork(h.db) as uow:
            return await uow.games.get("terrace", board) is None

    return h.loop.run_until_complete(run())


def test_a_vacation_stops_every_clock_and_the_opponents_are_told(cw):
    h = cw.h
    h.challenge("ben", "ann", options="--clock=2+0")  # 101: ann moves second
    h.challenge("ann", "cat", options="--clock=2+0")  # 102: ann to move
    h.challenge("ann", "ben")  # 103: pbmserv's timers (forfeit after 21 days)
    h.move(101, "ben", "d2-e3")
    cw.later(timedelta(hours=12))
    out = h.send("ann", "vacation ann pw-ann on 10")
    assert "Vacation for ann is on until" in mine(out, "ann").body.replace("\n", " ")
    told = {r.to: r for r in out if r.to != "ann@players.test"}
    assert set(told) == {"ben@players.test", "cat@players.test"}
    assert "ann is on vacation" in told["ben@players.test"].body and "Terrace 101" in told["ben@players.test"].body
    # ten days later: no reminder, no flag, no forfeit on any board (the allowance ends it on day 10)
    assert [r for r in cw.later(timedelta(days=9)) if "ann" in r.to] == []
    status = h.send("ann", "status ann pw-ann")
    assert "Vacation:" in status[0].body and "on until" in status[0].body and "left in 2026" in status[0].body
    out = h.send("ann", "vacation ann pw-ann off")
    assert "your clocks run again" in mine(out, "ann").body
    assert "ann's vacation has ended" in mine(out, "cat").body
    banks = seat_values(h, 102)
    assert banks["ann"][0] == pytest.approx(1.5 * 86400)  # the 12 hours before the vacation were booked, no more
    out = h.send("ann", "terrace show 102")
    assert "ann 1d 12h (to move)" in out[0].body
    # the old board 103 does not forfeit at once for the days away
    assert [r for r in cw.later(timedelta(hours=1)) if "forfeit" in r.body] == []
    assert status_of(h, 103)[0] == "active"
    flag = cw.later(timedelta(hours=36))
    assert any("ann is out of time" in r.subject for r in flag)
    # the days used count: 9.5 of 30
    status = h.send("ann", "status ann pw-ann")
    assert "off (20 days left in 2026)" in status[0].body or "off (21 days left in 2026)" in status[0].body


def test_a_vacation_ends_by_itself_and_the_allowance_is_limited(cw):
    h = cw.h
    h.challenge("ann", "ben", options="--clock=1+0")
    h.send("ann", "vacation ann pw-ann on 2")
    back = cw.later(timedelta(days=2, hours=1))
    assert any("ann's vacation has ended" in r.body for r in back if r.to == "ben@players.test")
    # the clock runs from the vacation's end: a day's bank lasts until day 3
    assert not any("out of time" in r.subject for r in cw.later(timedelta(hours=22)))
    assert any("ann is out of time" in r.subject for r in cw.later(timedelta(hours=2)))
    h.send("ann", "vacation ann pw-ann on")
    cw.later(timedelta(days=29))  # the rest of the year's 30 days: it ends itself
    out = h.send("ann", "vacation ann pw-ann on")
    assert "has used the 30 vacation days of 2026" in mine(out, "ann").body


def test_weekends_off_per_board(cw):
    h = cw.h
    cw.now = FRIDAY
    h.challenge("ann", "ben", options="--clock=1+0 --weekends")
    h.move(101, "ann", "d2-e3")  # ben's clock starts on Friday 18:00 UTC
    assert not any("out of time" in r.subject for r in cw.later(timedelta(days=2, hours=22)))  # Monday 16:00
    assert any("ben is out of time" in r.subject for r in cw.later(timedelta(hours=2)))  # Monday 18:00


def test_a_tournament_gives_its_boards_the_clock(cw):
    h = cw.h
    out = h.send("ann", "terrace tournament new ann pw-ann Blitz -roundrobin --clock=36h+12h --weekends")
    assert "--clock=36h+12h --weekends" in out[0].body
    out = h.send("ann", "terrace tournament new ann pw-ann Bad -roundrobin --clock=fast")
    assert "cannot read --clock" in out[0].body
    for name in ("ben", "cat"):
        h.send(name, f"terrace tournament join 1 {name} pw-{name}")
    out = h.send("ann", "terrace tournament start 1 ann pw-ann")
    boards = [r for r in out if "Time left:" in r.body]
    assert boards and all("1d 12h" in r.body for r in boards)
    assert "clock: 1d 12h bank + 12h a move" in boards[0].body and "no clock on weekends" in boards[0].body
