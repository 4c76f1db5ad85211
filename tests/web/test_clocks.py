"""Time left on the web (issue 40 item 7), against the real app over a real migrated
database (SQLite and PostgreSQL), with the rows the service leaves on boards with
clocks written directly: board pages show each player's bank on a ``--clock`` board
(the running one marked), the time before the forfeit on other boards, "on
vacation" and "out of time"; a player's page lists the boards waiting for them,
the soonest deadline first; the iCalendar feed of a player's deadlines is RFC 5545
(checked by the small parser below), has no address in it, and each event starts
at the deadline ``clocks.left`` computes."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from pbmserv_terrace import clocks
from pbmserv_terrace.games.terrace import setup_tpn
from pbmserv_terrace.store import Database, Game, Seat, UnitOfWork, User
from pbmserv_terrace.web import create_app
from pbmserv_terrace.web.clockview import Timers
from pbmserv_terrace.web.ical import escape_text, fold
from pbmserv_terrace.web.site import Page

DAY, HOUR = 86400.0, 3600.0
NOW = datetime(2026, 6, 10, 12, 0, 0)  # a Wednesday
PUBLIC_URL = "https://games.example.test"
CLOCK = {"bank": 10 * DAY, "increment": 2 * DAY, "cap": None, "auto": False}
TIMERS = Timers(forfeit_days=21.0, vacation_days=30.0)
PLAYERS = ("ann", "ben", "cy", "eve")


def address(userid: str) -> str:
    return f"{userid}.private@players.test"


@dataclass
class Clocked:
    db: Database
    loop: asyncio.AbstractEventLoop
    boards: dict[str, int]
    """name → Terrace board number"""

    def run(self, scenario: Callable[[httpx.AsyncClient], Awaitable[Any]], *, now: datetime = NOW, live_ttl: float | None = None) -> Any:
        async def go() -> Any:
            app = create_app(self.db, server_name="Terrace <PBM> Server", public_url=PUBLIC_URL, timers=TIMERS)
            app.state.site.now = lambda: now
            if live_ttl is not None:
                app.state.site.live_ttl = live_ttl
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
                return await scenario(client)

        return self.loop.run_until_complete(go())

    def get(self, path: str, *, now: datetime = NOW) -> httpx.Response:
        async def fetch(client: httpx.AsyncClient) -> httpx.Response:
            return await client.get(path)

        response: httpx.Response = self.run(fetch, now=now)
        return response


def seat_row(seat: int, user_id: int, bank: float | None, flagged: bool) -> Seat:
    return Seat(seat=seat, user_id=user_id, active=True, bank_seconds=bank, flagged_at=NOW - timedelta(hours=1) if flagged else None)


async def build(db: Database) -> dict[str, int]:
    """Boards as the service leaves them (all at ply 0: army 1, the first seat, to move):

    - ``bank``: a --clock=10+2 board, ann (to move, 9d in her bank since NOW - 1d 4h) vs ben (11d);
    - ``plain``: no clock, ann to move vs cy, 20 days since the last move (21-day forfeit);
    - ``vote``: ben to move vs ann, no clock, a draw offer by ben waiting for ann's vote;
    - ``flagged``: a --clock board, ann's bank ran out an hour ago (flagged) vs cy;
    - ``away``: eve to move vs ann, eve on vacation since yesterday;
    - ``theirs``: cy to move vs ann (waits for cy, not for ann)."""
    start = setup_tpn("long", 8)
    async with UnitOfWork(db) as uow:
        users = {}
        for name in PLAYERS:
            user = User(userid=name, password_hash=f"argon2$x${name}", addresses=[address(name)], created_at=NOW - timedelta(days=100))
            uow.users.add(user)
            users[name] = user
        users["eve"].vacation = True
        users["eve"].vacation_since = NOW - timedelta(days=1)
        users["eve"].vacation_year = NOW.year
        users["cy"].digest = {"times": ["08:00"], "zone": "Europe/Paris"}
        await uow.flush()
        specs: list[tuple[str, tuple[str, ...], dict[str, Any], datetime, dict[int, float | None], list[int]]] = [
            ("bank", ("ann", "ben"), {"clock": CLOCK}, NOW - timedelta(days=1, hours=4), {1: 9 * DAY, 2: 11 * DAY}, []),
            ("plain", ("ann", "cy"), {}, NOW - timedelta(days=20), {}, []),
            ("vote", ("ben", "ann"), {}, NOW - timedelta(days=1), {}, [1]),
            ("flagged", ("ann", "cy"), {"clock": CLOCK}, NOW - timedelta(hours=2), {1: HOUR, 2: 12 * DAY}, []),
            ("away", ("eve", "ann"), {"clock": CLOCK}, NOW - timedelta(days=2), {1: 4 * DAY, 2: 10 * DAY}, []),
            ("theirs", ("cy", "ann"), {}, NOW - timedelta(days=3), {}, []),
        ]
        boards = {}
        for name, seats, options, since, banks, draw_votes in specs:
            game = Game(
                game_type="terrace",
                board_number=await uow.games.next_board_number("terrace"),
                variant="long",
                options=options,
                position=start,
                start_position=start,
                ply=0,
                created_at=since - timedelta(days=1),
                last_move_at=since,
                clock_from=since,
                draw_votes=draw_votes,
                seats=[seat_row(i + 1, users[u].id, banks.get(i + 1), name == "flagged" and i == 0) for i, u in enumerate(seats)],
            )
            uow.games.add(game)
            await uow.flush()
            boards[name] = game.board_number
        await uow.commit()
    return boards


@pytest.fixture
def clocked(db_url: str) -> Iterator[Clocked]:
    loop = asyncio.new_event_loop()
    db = Database(db_url)
    loop.run_until_complete(db.migrate())
    boards = loop.run_until_complete(build(db))
    yield Clocked(db, loop, boards)
    loop.run_until_complete(db.close())
    loop.close()


def players_table(page: str) -> str:
    return page.split('<table class="players">')[1].split("</table>")[0]


def cell(table: str, userid: str) -> str:
    """The time-left cell of ``userid``'s row in a board page's players table."""
    row = table.split(f'<a href="/players/{userid}">')[1].split("</tr>")[0]
    found = re.search(r'<td class="clock[^"]*">([^<]*)</td>', row)
    assert found is not None, row
    return found.group(0)


def deadline_of(name: str, *, bank: float | None, started: datetime, options: dict[str, Any]) -> datetime:
    """The deadline as the shared arithmetic computes it: NOW + clocks.left, to the second."""
    turn = clocks.Turn(started, 0.0, 0.0, bank)
    left = clocks.left(turn, NOW, options, TIMERS.forfeit_days)
    at = NOW + timedelta(seconds=left)
    return (at + timedelta(microseconds=500_000)).replace(microsecond=0)


# --------------------------------------------------------------- board pages
def test_a_clock_board_shows_both_banks_the_running_one_marked(clocked: Clocked) -> None:
    page = clocked.get(f"/boards/terrace/{clocked.boards['bank']}").text
    table = players_table(page)
    assert "<th>Time left</th>" in table
    assert cell(table, "ann") == '<td class="clock running">7d 20h (to move)</td>'  # 9d - (1d 4h)
    assert cell(table, "ben") == '<td class="clock">11d</td>'
    clock = page.split('id="clock">')[1].split("</p>")[0]
    assert clock.startswith("Clock: 10d bank + 2d a move, out of time may be claimed.")
    assert "ann&#39;s bank runs out in 7d 20h (2026-06-18 08:00 UTC)." in clock
    assert ".private@" not in page  # (no player's address)


def test_a_board_without_a_bank_shows_the_time_before_the_forfeit(clocked: Clocked) -> None:
    page = clocked.get(f"/boards/terrace/{clocked.boards['plain']}").text
    table = players_table(page)
    assert cell(table, "ann") == '<td class="clock running">1d (to move)</td>'  # 21 days, 20 gone
    assert cell(table, "cy") == '<td class="clock"></td>'
    assert "ann has 1d left to move (2026-06-11 12:00 UTC)." in page


def test_out_of_time_and_on_vacation(clocked: Clocked) -> None:
    flagged = clocked.get(f"/boards/terrace/{clocked.boards['flagged']}").text
    assert cell(players_table(flagged), "ann") == '<td class="clock running out">out of time (to move)</td>'
    assert cell(players_table(flagged), "cy") == '<td class="clock">12d</td>'
    assert "ann is out of time (2026-06-10 11:00 UTC): the opponent may claim the win." in flagged
    away = clocked.get(f"/boards/terrace/{clocked.boards['away']}").text
    # eve's bank stood still from the start of her vacation; its end is never shown
    assert cell(players_table(away), "eve") == '<td class="clock away">4d (on vacation)</td>'
    assert "eve is on vacation: the clock stands still." in away
    assert "2026-07" not in away and "until" not in away.split('id="clock"')[1].split("</p>")[0]


def test_the_time_left_follows_the_clock_without_a_commit(clocked: Clocked) -> None:
    """The same app, nothing committed in between: a later moment shows less time
    (the page's state holds the words of its clocks, not only the rows)."""
    moment = [NOW]

    async def scenario(client: httpx.AsyncClient) -> tuple[str, str]:
        site = client._transport.app.state.site  # type: ignore[attr-defined]
        site.now = lambda: moment[0]
        site.live_ttl = 0.0  # (else the page is fresh for LIVE_TTL: it is read again on each request here)
        path = f"/boards/terrace/{clocked.boards['bank']}"
        first = (await client.get(path)).text
        moment[0] = NOW + timedelta(hours=3)
        return first, (await client.get(path)).text

    first, later = clocked.run(scenario)
    assert "7d 20h (to move)" in first and "7d 17h (to move)" in later


def test_a_page_that_shows_a_time_is_not_kept_past_its_time() -> None:
    """Page.expires caps how long a kept page is served without being made again,
    whatever its ttl and however long nothing is committed."""
    page = Page.of("x", key="k", ttl=100.0, lasts=0.0)
    assert not page.fresh() and page.expires <= time.monotonic()
    kept = Page.of("x", key="k", ttl=100.0).again(100.0, None, lasts=30.0)
    assert kept.fresh() and kept.until <= kept.expires <= time.monotonic() + 30.0
    assert Page.of("x", key="k", ttl=5.0).expires == float("inf")


# -------------------------------------------------------------- player pages
def test_the_player_page_lists_the_boards_waiting_soonest_deadline_first(clocked: Clocked) -> None:
    page = clocked.get("/players/ann").text
    waiting = page.split('<section id="waiting">')[1].split("</section>")[0]
    rows = waiting.split("<tbody>")[1].split("</tr>")[:-1]
    numbers = [int(re.search(r'<a href="/boards/terrace/(\d+)">', row).group(1)) for row in rows]  # type: ignore[union-attr]
    b = clocked.boards
    # out of time an hour ago; 1 day left; 7d 20h left; a draw vote on ben's clock (20 days left)
    assert numbers == [b["flagged"], b["plain"], b["bank"], b["vote"]]
    assert "<td>draw vote</td>" in rows[3] and "ben: 20d" in rows[3]
    assert "out of time" in rows[0] and "7d 20h" in rows[2]
    assert b["away"] not in numbers and b["theirs"] not in numbers  # (waiting for eve, for cy)
    assert '<a href="/players/ann/deadlines.ics">' in page
    assert "<td>to move</td>" in rows[1]
    # eve, on vacation, is to move on one board: it waits for her, without a deadline
    eve = clocked.get("/players/eve").text.split('<section id="waiting">')[1].split("</section>")[0]
    assert "4d (on vacation)" in eve and re.search(r"<td></td></tr>", eve)


# ----------------------------------------------------------------- iCalendar
def parse_ics(data: bytes) -> list[dict[str, list[tuple[str, str]]]]:
    """A small RFC 5545 reader: checks CRLF line ends, folding at 75 octets and the
    BEGIN/END nesting; returns each component's properties (name → [(params, raw value)])
    as (the calendar, then its events)."""
    assert data.endswith(b"\r\n") and b"\n" not in data.replace(b"\r\n", b"")
    physical = data[:-2].split(b"\r\n")
    assert all(len(line) <= 75 for line in physical), [line for line in physical if len(line) > 75]
    lines: list[str] = []
    for line in physical:
        if line[:1] in (b" ", b"\t"):
            lines[-1] += line[1:].decode("utf-8")  # (each part decodes alone: no character was split)
        else:
            lines.append(line.decode("utf-8"))
    stack: list[str] = []
    components: list[dict[str, list[tuple[str, str]]]] = []
    for line in lines:
        name_params, _, value = line.partition(":")
        name, _, params = name_params.partition(";")
        assert re.fullmatch(r"[A-Z][A-Z0-9-]*", name), line
        if name == "BEGIN":
            stack.append(value)
            components.append({"@": [("", value)]})
        elif name == "END":
            assert stack and stack.pop() == value, line
        else:
            assert stack, line
            current = next(c for c in reversed(components) if c["@"][0][1] == stack[-1])
            current.setdefault(name, []).append((params, value))
    assert not stack and components[0]["@"] == [("", "VCALENDAR")]
    return components


def unescape(value: str) -> str:
    return re.sub(r"\\([\\;,nN])", lambda m: "\n" if m.group(1) in "nN" else m.group(1), value)


def utc(value: str) -> datetime:
    assert value.endswith("Z"), value
    return datetime.strptime(value, "%Y%m%dT%H%M%SZ")


def test_the_deadline_feed_is_icalendar_with_the_deadlines_of_clocks_left(clocked: Clocked) -> None:
    response = clocked.get("/players/ann/deadlines.ics")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/calendar; charset=utf-8"
    data = response.content
    assert b"@" not in data  # no address anywhere (UIDs name the host without one)
    calendar, *events = parse_ics(data)
    assert calendar["VERSION"] == [("", "2.0")] and calendar["PRODID"]
    assert all(e["@"] == [("", "VEVENT")] for e in events)
    b = clocked.boards
    by_board = {int(re.search(r"/boards/terrace/(\d+)$", e["URL"][0][1]).group(1)): e for e in events}  # type: ignore[union-attr]
    # only ann's own moves with a running clock (not the vote, not cy's or eve's boards)
    assert set(by_board) == {b["bank"], b["plain"], b["flagged"]}
    expected = {
        b["bank"]: deadline_of("bank", bank=9 * DAY, started=NOW - timedelta(days=1, hours=4), options={"clock": CLOCK}),
        b["plain"]: deadline_of("plain", bank=None, started=NOW - timedelta(days=20), options={}),
        b["flagged"]: deadline_of("flagged", bank=HOUR, started=NOW - timedelta(hours=2), options={"clock": CLOCK}),
    }
    assert expected[b["bank"]] == datetime(2026, 6, 18, 8, 0)
    for number, event in by_board.items():
        for required in ("UID", "DTSTAMP", "DTSTART", "SUMMARY", "URL"):
            assert len(event.get(required, [])) == 1, (required, event)
        assert utc(event["DTSTART"][0][1]) == expected[number]
        utc(event["DTSTAMP"][0][1])
        assert event["URL"][0][1] == f"{PUBLIC_URL}/boards/terrace/{number}"
        assert event["UID"][0][1] == f"deadline-terrace-{number}-ply-0.games.example.test"
    assert unescape(by_board[b["bank"]]["SUMMARY"][0][1]) == f"Terrace board {b['bank']}: your move (vs ben)"
    assert unescape(by_board[b["plain"]]["SUMMARY"][0][1]) == f"Terrace board {b['plain']}: your move (vs cy)"
    # the same boards a few minutes later: the same bytes (UIDs, stamps and deadlines stable)
    assert clocked.get("/players/ann/deadlines.ics", now=NOW + timedelta(minutes=7)).content == data


def test_no_deadline_while_on_vacation_and_none_for_an_unknown_player(clocked: Clocked) -> None:
    _calendar, *events = parse_ics(clocked.get("/players/eve/deadlines.ics").content)
    assert events == []  # eve is to move on "away", but her clock stands still
    assert clocked.get("/players/nobody/deadlines.ics").status_code == 404


def test_text_escaping_and_folding() -> None:
    assert escape_text("a,b;c\\d\ne\r\nf\x07") == "a\\,b\\;c\\\\d\\ne\\nf"
    line = "SUMMARY:" + "é" * 60 + "x" * 50
    folded = fold(line)
    parts = folded.encode("utf-8")[:-2].split(b"\r\n")
    assert all(len(p) <= 75 for p in parts) and all(p.startswith(b" ") for p in parts[1:])
    assert "".join(p.decode("utf-8").removeprefix(" ") for p in parts) == line
    assert fold("SHORT:x") == "SHORT:x\r\n"


# ------------------------------------------------ through the mail (harness)
def test_a_clock_board_made_by_mail_shows_on_the_web_what_its_mails_say(monkeypatch: pytest.MonkeyPatch) -> None:
    """``challenge ... --clock=10+2`` and a move through the real mail path (the
    harness, SQLite), the service's clock in the test's hand: at the moment of a
    board mail the board page shows the same times as its "Time left" line; the
    deadline feed's event starts when the bank runs out; a vacation takes it away."""
    from pbmserv_terrace.service import core

    from ..service.harness import Harness, mine

    tuesday = datetime(2026, 11, 24, 9, 0)
    moment = [tuesday]
    monkeypatch.setattr(core, "utcnow", lambda: moment[0])
    h = Harness()
    try:
        h.signup("ann", "ben")
        out = h.challenge("ann", "ben", options="--clock=10+2")
        assert "Time left: ann 10d (to move), ben 10d." in mine(out, "ann").body
        moment[0] = tuesday + timedelta(hours=12)
        out = h.move(101, "ann", "d2-e3")
        assert "Time left: ann 11d 12h, ben 10d (to move)." in mine(out, "ben").body

        async def pages(client: httpx.AsyncClient) -> tuple[str, str, bytes, bytes]:
            client._transport.app.state.site.now = lambda: moment[0]  # type: ignore[attr-defined]
            board = (await client.get("/boards/terrace/101")).text
            moment[0] += timedelta(days=1, hours=4)
            later = (await client.get("/boards/terrace/101?ply=1")).text
            ics = (await client.get("/players/ben/deadlines.ics")).content
            return board, later, ics, (await client.get("/players/ann/deadlines.ics")).content

        async def run(scenario: Callable[[httpx.AsyncClient], Awaitable[Any]]) -> Any:
            app = create_app(h.db, server_name="Terrace", public_url=PUBLIC_URL, timers=TIMERS)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
                return await scenario(client)

        board, later, ben_ics, ann_ics = h.loop.run_until_complete(run(pages))
        assert cell(players_table(board), "ann") == '<td class="clock">11d 12h</td>'
        assert cell(players_table(board), "ben") == '<td class="clock running">10d (to move)</td>'
        assert cell(players_table(later), "ben") == '<td class="clock running">8d 20h (to move)</td>'
        _calendar, event = parse_ics(ben_ics)
        assert utc(event["DTSTART"][0][1]) == tuesday + timedelta(hours=12, days=10)
        assert unescape(event["SUMMARY"][0][1]) == "Terrace board 101: your move (vs ann)"
        assert event["UID"][0][1] == "deadline-terrace-101-ply-1.games.example.test"
        assert parse_ics(ann_ics)[1:] == []  # ann waits for ben
        assert b"@" not in ben_ics
        h.send("ben", "vacation ben pw-ben on 5")

        async def away(client: httpx.AsyncClient) -> tuple[str, bytes]:
            client._transport.app.state.site.now = lambda: moment[0]  # type: ignore[attr-defined]
            return (await client.get("/boards/terrace/101")).text, (await client.get("/players/ben/deadlines.ics")).content

        board, ben_ics = h.loop.run_until_complete(run(away))
        assert cell(players_table(board), "ben") == '<td class="clock away">8d 20h (on vacation)</td>'
        assert "ben is on vacation: the clock stands still." in board
        assert parse_ics(ben_ics)[1:] == []  # the clock stands still: no deadline
    finally:
        h.close()
