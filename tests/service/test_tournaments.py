"""Tournaments by mail (issue 41): a 6-player round robin and an 8-player Swiss of
people and robots played to the end through real mails, every pairing and table
checked against hand-computed ones; a crash in the middle of a round pairs
nothing twice; withdrawals, refusals."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from pbmserv_terrace.app.robots import play_inline
from pbmserv_terrace.service import Service
from pbmserv_terrace.service import tournaments as tournament_service
from pbmserv_terrace.store import Game, TournamentGame, UnitOfWork, User

from .harness import Harness, Reply, run_timers

PEOPLE = ("ann", "ben", "cat", "dan", "eve", "fay")
_GAME = re.compile(r"^  (\S+) - (\S+): board (\d+), in play$", re.MULTILINE)
_ROW = re.compile(r"^\s+(\d+)\. (\S+)\s+([\d.]+)\s+([\d.]+)(?:\s+([\d.]+))?\s+\+(\d+) =(\d+) -(\d+)$", re.MULTILINE)


@pytest.fixture
def h():
    harness = Harness()
    yield harness
    harness.close()


def round_mails(replies: list[Reply], round_no: int) -> dict[str, Reply]:
    return {r.to.split("@")[0]: r for r in replies if r.subject.endswith(f": round {round_no}")}


def games_of(mails: dict[str, Reply]) -> dict[tuple[str, str], int]:
    """(first seat, second seat) → board, from the players' round mails."""
    found: dict[tuple[str, str], int] = {}
    for mail in mails.values():
        part = mail.body.split("Your game", 1)[-1]
        for white, black, board in _GAME.findall(part):
            found[(white, black)] = int(board)
    return found


def table_of(body: str) -> list[tuple[str, float, float]]:
    """(player, points, first tie-break) in the table's order."""
    return [(m[1], float(m[2]), float(m[3])) for m in _ROW.findall(body)]


def lose(h: Harness, board: int, loser: str) -> list[Reply]:
    """``loser`` resigns at once: the other wins (a tournament board is not removed)."""
    replies = h.send(loser, f"terrace resign {board} {loser} pw-{loser}")
    assert h.last is not None and h.last.status == "ok", [r.body for r in replies]
    return replies


def draw(h: Harness, board: int, white: str, black: str) -> list[Reply]:
    h.send(white, f"terrace move {board} {white} pw-{white} propose")
    replies = h.send(black, f"terrace move {board} {black} pw-{black} accept")
    assert h.last is not None and h.last.status == "ok"
    return replies


def count_rows(h: Harness) -> int:
    async def run() -> int:
        async with h.db.session() as s:
            return int((await s.execute(select(func.count()).select_from(TournamentGame))).scalar_one())

    return h.loop.run_until_complete(run())


# FIDE's Berger table for six (seeds 1-6 = ann … fay by joining order: everyone is rated 1600)
BERGER_6 = [
    [(1, 6), (2, 5), (3, 4)],
    [(6, 4), (5, 3), (1, 2)],
    [(2, 6), (3, 1), (4, 5)],
    [(6, 5), (1, 4), (2, 3)],
    [(3, 6), (4, 2), (5, 1)],
]


def test_six_player_round_robin_played_to_the_end_by_mail(h):
    h.signup(*PEOPLE)
    opened = h.send("ann", "terrace tournament new ann pw-ann Winter round robin -roundrobin --players=4-6 -short")
    assert "Tournament T1 \"Winter round robin\" (round robin; -short, Terrace) is open" in opened[0].body
    for name in PEOPLE:
        assert "joined" in h.send(name, f"terrace tournament join T1 {name} pw-{name}")[0].subject
    replies = h.send("ann", "terrace tournament start 1 ann pw-ann")
    # who wins: the better seed, but fay... 5 beats 1 in round 5 and 3-4 is drawn (hand-computed below)
    for round_no, boards in enumerate(BERGER_6, start=1):
        mails = round_mails(replies, round_no)
        assert sorted(mails) == sorted(PEOPLE), [r.subject for r in replies]
        found = games_of(mails)
        expected = [(PEOPLE[w - 1], PEOPLE[b - 1]) for w, b in boards]
        assert sorted(found) == sorted(expected), (round_no, found)
        if round_no > 1:
            assert f"Standings after round {round_no - 1}:" in mails["ann"].body
        started = replies
        for w, b in boards:
            white, black = PEOPLE[w - 1], PEOPLE[b - 1]
            board = found[(white, black)]
            new_board = [r for r in started if r.subject.startswith(f"New Terrace Board {board} ")]
            assert len(new_board) == 2 and f"round {round_no} of 5" in new_board[0].body
            if {w, b} == {3, 4}:
                replies = draw(h, board, white, black)
            elif {w, b} == {1, 5}:
                replies = lose(h, board, PEOPLE[0])
            else:
                replies = lose(h, board, PEOPLE[max(w, b) - 1])
    final = [r for r in replies if "wins" in r.subject and "tournament T1" in r.subject]
    assert sorted(r.to.split("@")[0] for r in final) == sorted(PEOPLE)
    body = final[0].body
    assert "is over after 5 rounds: ann wins." in body
    # by hand: points 4, 4, 2.5, 2.5, 2, 0; Sonneborn-Berger 9, 7, 3.25, 3.25, 4, 0 (cat before dan by seed)
    assert table_of(body) == [("ann", 4, 9), ("ben", 4, 7), ("cat", 2.5, 3.25), ("dan", 2.5, 3.25), ("eve", 2, 4),
                              ("fay", 0, 0)]  # fmt: skip
    shown = h.send("eve", "terrace tournament show T1")[0].body
    assert table_of(shown) == table_of(body)
    assert "Crosstable:" in shown and "Round 5:" in shown and "Winner: ann." in shown
    assert count_rows(h) == 15
    assert "ann" in h.send("ann", "terrace history")[0].body  # ordinary boards: in the history


def test_a_crash_in_the_round_that_would_pair_the_next_pairs_nothing_twice(h, monkeypatch):
    """The last board of a round ends and the transaction that pairs the next round
    fails before its commit: nothing of it stays (the result too is undone, and the
    mail is run again); run again, the round is paired once.  The sweep of the timers
    (a restart) pairs nothing more."""
    h.signup("ann", "ben", "cat", "dan")
    h.send("ann", "terrace tournament new ann pw-ann Crash test -roundrobin")
    for name in ("ann", "ben", "cat", "dan"):
        h.send(name, f"terrace tournament join 1 {name} pw-{name}")
    replies = h.send("ann", "terrace tournament start 1 ann pw-ann")
    found = games_of(round_mails(replies, 1))
    assert sorted(found) == [("ann", "dan"), ("ben", "cat")]
    lose(h, found[("ann", "dan")], "dan")
    assert count_rows(h) == 2
    real = tournament_service.round_mail

    async def crash(*args, **kw):
        raise RuntimeError("the power fails")

    monkeypatch.setattr(tournament_service, "round_mail", crash)
    h.send("cat", f"terrace resign {found[('ben', 'cat')]} cat pw-cat")
    assert h.last is not None and h.last.status == "failed"
    assert count_rows(h) == 2  # nothing of round 2, and board 102 still in play
    monkeypatch.setattr(tournament_service, "round_mail", real)
    replies = h.send("cat", f"terrace resign {found[('ben', 'cat')]} cat pw-cat")
    assert count_rows(h) == 4 and sorted(round_mails(replies, 2)) == ["ann", "ben", "cat", "dan"]
    assert run_timers(h, 0) == [] and count_rows(h) == 4
    assert games_of(round_mails(replies, 2)) .keys() == {("dan", "cat"), ("ann", "ben")}


def test_a_restart_in_the_middle_of_a_round_changes_nothing(h):
    """A new service on the same database (a restart) mid-round: the round's
    boards and rows are as they were; the timers' sweep pairs nothing."""
    h.signup("ann", "ben", "cat")
    h.send("ann", "terrace tournament new ann pw-ann Odd three -roundrobin")
    for name in ("ann", "ben", "cat"):
        h.send(name, f"terrace tournament join 1 {name} pw-{name}")
    replies = h.send("ann", "terrace tournament start 1 ann pw-ann")
    # three players: one rests each round (Berger for 4 with the 4th a rest)
    mails = round_mails(replies, 1)
    assert "ann: rests" in mails["ann"].body
    before = count_rows(h)
    h.service = Service(h.db, h.config)
    assert run_timers(h, 0) == [] and count_rows(h) == before


@pytest.mark.slow  # the robots' own game is played out (about a minute)
def test_swiss_of_eight_people_and_robots_played_to_the_end(h):
    """Eight (six people, robot1 and robot2 seated by the organizer), three rounds.
    Hand-computed (seeds: joining order, all rated 1600):
    round 1, Dutch, colours alternating by board: ann-eve, fay-ben, cat-robot1, robot2-dan;
    the better seed wins but the robots beat the people: ann, ben, robot1, robot2 at 1;
    round 2: score group 1 (ann ben robot1 robot2) top half against bottom half,
    colours to who had black: robot1-ann, ben-robot2; group 0 (cat dan eve fay):
    eve-cat, dan-fay; the robots win again, cat and dan win;
    round 3: group 2 (robot1 robot2): each is level in colours with white last, but
    robot1 had black last → robot2-robot1; group 1 (ann ben cat dan), no repeats:
    S1 ann ben, S2 cat dan: ann (W, B: black last, wants white) - cat, and ben (B, W)
    wants black: dan-ben; group 0 eve-fay: eve (B, W) wants black: fay-eve."""
    h.signup(*PEOPLE)
    h.send("ann", "terrace tournament new ann pw-ann Swiss eight -swiss 3 --players=8")
    for name in PEOPLE:
        h.send(name, f"terrace tournament join 1 {name} pw-{name}")
    assert "robot1 is in" in h.send("ann", "terrace tournament add 1 ann pw-ann robot1")[0].body
    h.send("ann", "terrace tournament add 1 ann pw-ann robot2")
    replies = h.send("ann", "terrace tournament start 1 ann pw-ann")
    found = games_of(round_mails(replies, 1))
    assert set(found) == {("ann", "eve"), ("fay", "ben"), ("cat", "robot1"), ("robot2", "dan")}
    lose(h, found[("ann", "eve")], "eve")
    lose(h, found[("fay", "ben")], "fay")
    lose(h, found[("cat", "robot1")], "cat")
    replies = lose(h, found[("robot2", "dan")], "dan")
    found = games_of(round_mails(replies, 2))
    assert set(found) == {("robot1", "ann"), ("ben", "robot2"), ("eve", "cat"), ("dan", "fay")}
    table = table_of(round_mails(replies, 2)["ann"].body)
    assert [p for p, *_ in table] == ["ann", "ben", "robot1", "robot2", "cat", "dan", "eve", "fay"]
    lose(h, found[("robot1", "ann")], "ann")
    lose(h, found[("ben", "robot2")], "ben")
    lose(h, found[("eve", "cat")], "eve")
    replies = lose(h, found[("dan", "fay")], "fay")
    found = games_of(round_mails(replies, 3))
    assert set(found) == {("ann", "cat"), ("dan", "ben"), ("fay", "eve")}, found
    assert pairs_of_round(h, 3) == {("robot2", "robot1"), ("ann", "cat"), ("dan", "ben"), ("fay", "eve")}
    lose(h, found[("ann", "cat")], "cat")
    lose(h, found[("dan", "ben")], "dan")
    replies = lose(h, found[("fay", "eve")], "fay")
    # the robots play their game out by themselves (the robot path, in this process)
    for _ in range(20):
        turns = h.loop.run_until_complete(h.service.robot_turns())
        if not turns:
            break
        h.loop.run_until_complete(play_inline(h.service, turns))
    show = h.send("ann", "terrace tournament show 1")[0].body
    assert "over" in show.splitlines()[0], show
    rows = table_of(show)
    robot_game = 1.0 - robot_result(h, board_of(h, 3, "robot2"))  # robot1's points
    # by hand: ann 2 (beat eve, cat), ben 2 (fay, dan), cat 1, dan 1, eve 1 (cat), fay 0;
    # robot1 and robot2 2 each + their game
    points = dict((p, pts) for p, pts, _ in rows)
    assert points["ann"] == 2 and points["ben"] == 2 and points["cat"] == 1 and points["dan"] == 1
    assert points["eve"] == 1 and points["fay"] == 0
    assert points["robot1"] + points["robot2"] == 5 and points["robot1"] == 2 + robot_game
    assert rows[0][0] in ("robot1", "robot2")
    # Buchholz by hand for ann: opponents eve 1, robot1 (2 + r), cat 1
    assert dict((p, b) for p, _, b in rows)["ann"] == 4 + robot_game


def pairs_of_round(h: Harness, round_no: int) -> set[tuple[str, str]]:
    """(first seat, second seat) of every game of ``round_no``, from the database."""
    return {(w, b) for w, b, _ in rows_of_round(h, round_no)}


def rows_of_round(h: Harness, round_no: int) -> list[tuple[str, str, int]]:
    async def run() -> list[tuple[str, str, int]]:
        async with h.db.session() as s:
            rows = (await s.execute(select(TournamentGame).where(TournamentGame.round == round_no))).scalars().all()
            names = {u.id: u.userid for u in (await s.execute(select(User))).scalars()}
            boards = {g.id: g.board_number for g in (await s.execute(select(Game))).scalars()}
            return [(names[r.white_id], names[r.black_id or 0] if r.black_id else "", boards.get(r.game_id or 0, 0))
                    for r in rows]  # fmt: skip

    return h.loop.run_until_complete(run())


def board_of(h: Harness, round_no: int, white: str) -> int:
    return next(board for w, _, board in rows_of_round(h, round_no) if w == white)


def robot_result(h: Harness, board: int) -> float:
    async def run() -> float:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace", board)
            assert game is not None and game.status != "active"
            return tournament_service.board_score(game) or 0.0

    return h.loop.run_until_complete(run())


def test_withdraw_forfeits_the_game_in_play_and_no_more_pairings(h):
    h.signup("ann", "ben", "cat", "dan")
    h.send("ann", "terrace tournament new ann pw-ann Leavers -swiss 2")
    for name in ("ann", "ben", "cat", "dan"):
        h.send(name, f"terrace tournament join 1 {name} pw-{name}")
    assert "has not started: use leave" in h.send("dan", "terrace tournament withdraw 1 dan pw-dan")[0].body
    replies = h.send("ann", "terrace tournament start 1 ann pw-ann")
    found = games_of(round_mails(replies, 1))
    assert set(found) == {("ann", "cat"), ("dan", "ben")}
    assert "has started" in h.send("dan", "terrace tournament leave 1 dan pw-dan")[0].body
    assert "has started; entries are closed" in h.send("ann", "terrace tournament join 1 ann pw-ann")[0].body
    lose(h, found[("ann", "cat")], "cat")
    replies = h.send("dan", "terrace tournament withdraw 1 dan pw-dan")
    assert any("dan withdrew from the tournament in the first round; ben wins" in r.body for r in replies)
    found = games_of(round_mails(replies, 2))
    mails = round_mails(replies, 2)
    assert "dan" in mails  # told the table, paired no more
    assert all("dan" not in pair for pair in found)
    assert "cat: a bye (1 point)" in mails["cat"].body


def test_refusals_change_nothing(h):
    h.signup("ann", "ben")
    assert "give the system once" in h.send("ann", "terrace tournament new ann pw-ann Cup")[0].body
    assert "-swiss needs the number of rounds" in h.send("ann", "terrace tournament new ann pw-ann Cup -swiss")[0].body
    assert "--players needs MIN-MAX" in h.send("ann", "terrace tournament new ann pw-ann Cup -roundrobin --players=x")[0].body
    assert "not correct" in h.send("ann", "terrace tournament new ann nope Cup -knockout")[0].body
    assert "no tournament T1" in h.send("ann", "terrace tournament show 1")[0].body
    h.send("ann", "terrace tournament new ann pw-ann Cup -knockout --players=2-2")
    assert "only the organizer" in h.send("ben", "terrace tournament start 1 ben pw-ben")[0].body
    assert "needs 2 players to start" in h.send("ann", "terrace tournament start 1 ann pw-ann")[0].body
    h.send("ann", "terrace tournament join 1 ann pw-ann")
    h.send("ben", "terrace tournament join 1 ben pw-ben")
    assert "full" in h.send("ann", "terrace tournament add 1 ann pw-ann robot1")[0].body
    assert "tournament list" in h.send("ann", "terrace tournament")[0].body
    listing = h.send("ben", "terrace tournament list")[0].body
    assert "T1" in listing and "Cup" in listing and "open for entries" in listing
    assert count_rows(h) == 0


def test_knockout_of_four_by_mail(h):
    """Seeds ann ben cat dan: round 1 ann-dan and ben-cat, two games each, colours
    swapped; 1-1 between ben and cat goes to ben, the higher seed."""
    h.signup("ann", "ben", "cat", "dan")
    h.send("ann", "terrace tournament new ann pw-ann Cup -knockout")
    for name in ("ann", "ben", "cat", "dan"):
        h.send(name, f"terrace tournament join 1 {name} pw-{name}")
    replies = h.send("ann", "terrace tournament start 1 ann pw-ann")
    found = games_of(round_mails(replies, 1))
    assert set(found) == {("ann", "dan"), ("dan", "ann"), ("ben", "cat"), ("cat", "ben")}
    lose(h, found[("ann", "dan")], "dan")
    lose(h, found[("dan", "ann")], "dan")
    lose(h, found[("ben", "cat")], "ben")
    replies = lose(h, found[("cat", "ben")], "cat")
    found = games_of(round_mails(replies, 2))
    assert set(found) == {("ann", "ben"), ("ben", "ann")}
    lose(h, found[("ann", "ben")], "ann")
    replies = lose(h, found[("ben", "ann")], "ann")
    final = [r for r in replies if r.subject.endswith("ben wins")]
    assert final and "is over after 2 rounds: ben wins." in final[0].body


def test_board_mails_of_a_tournament_say_its_round(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace tournament new ann pw-ann Duel -double")
    for name in ("ann", "ben"):
        h.send(name, f"terrace tournament join 1 {name} pw-{name}")
    replies = h.send("ann", "terrace tournament start 1 ann pw-ann")
    board = next(iter(games_of(round_mails(replies, 1)).values()))
    shown = h.send("ben", f"terrace show {board}")[0].body
    assert 'A game of tournament T1 "Duel", round 1 of 2' in shown
    replies = lose(h, board, "ben")
    assert set(games_of(round_mails(replies, 2))) == {("ben", "ann")}  # colours swapped in the second cycle


def test_it_starts_by_itself_on_its_day_once_enough_have_joined(h):
    from datetime import timedelta

    from pbmserv_terrace.store import utcnow

    day = (utcnow() + timedelta(days=2)).strftime("%Y-%m-%d")
    h.signup("ann", "ben", "cat")
    opened = h.send("ann", f"terrace tournament new ann pw-ann Dated -roundrobin --players=3-8 --start={day}")
    assert f"It starts on {day} once 3 have joined" in opened[0].body
    h.send("ann", "terrace tournament join 1 ann pw-ann")
    h.send("ben", "terrace tournament join 1 ben pw-ben")
    assert "did not start on its day: 2 of the 3" in run_timers(h, 3)[0].body  # too few: the organizer is told
    h.send("cat", "terrace tournament join 1 cat pw-cat")
    assert run_timers(h, 4) == [] and count_rows(h) == 0  # no longer dated: it waits for the organizer
    h.send("ann", f"terrace tournament new ann pw-ann Dated two -roundrobin --players=2 --start={day}")
    h.send("ann", "terrace tournament join 2 ann pw-ann")
    h.send("cat", "terrace tournament join 2 cat pw-cat")
    assert run_timers(h, 1) == []  # not yet its day
    mails = run_timers(h, 3)
    assert sorted(m.to for m in mails if m.subject == "Terrace tournament T2: round 1") == ["ann@players.test",
                                                                                          "cat@players.test"]  # fmt: skip
    assert "--start must be a day still to come" in h.send("ann", "terrace tournament new ann pw-ann X -swiss 3 "
                                                                  "--start=2001-01-01")[0].body  # fmt: skip
