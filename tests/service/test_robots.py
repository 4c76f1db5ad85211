"""Robot players by mail (issue 17): robot1-3 exist from migration 0004, accept
challenges, answer a move with a legal move of their own (in ``handle``, in the
same invocation after the person's mail committed), answer draw and undo at once,
are rated, and never play a ply twice."""

from __future__ import annotations

import asyncio
from email.utils import parseaddr

import pytest

from pbmserv_terrace.app.robots import play_inline
from pbmserv_terrace.elo import K_PROVISIONAL, START, expected
from pbmserv_terrace.games.terrace import parse_move, parse_tpn
from pbmserv_terrace.games.terrace.engine import accepts_draw
from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service.robots import ROBOTS_ALONE_PLIES
from pbmserv_terrace.store import Game, MoveRecord, UnitOfWork, User

from .harness import Harness, Reply, raw_mail, set_position

LOST_FOR_ROBOT = "7T/8/8/8/8/8/ddccbbaa/tabbccdd 1"
"""army 2 (the robot) has its T alone against a full army"""
WON_FOR_ROBOT = "DDCCBBAT/AABBCCDD/8/8/8/8/8/t7 1"
"""army 1 (the person) has its T alone against a full army"""


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def game_state(h: Harness, board: int = 101, game_type: str = "terrace") -> tuple[Game, list[MoveRecord]]:
    async def run() -> tuple[Game, list[MoveRecord]]:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get(game_type, board)
            assert game is not None
            moves = await uow.moves.of_game(game.id)
            uow.session.expunge_all()  # read after the transaction ends, as loaded
            return game, moves

    return h.loop.run_until_complete(run())


def assert_legal_replay(h: Harness, board: int = 101, game_type: str = "terrace") -> list[MoveRecord]:
    """Replay the recorded move list with the rules from the start: every ply legal,
    ending in the stored position."""
    game, moves = game_state(h, board, game_type)
    pos = parse_tpn(game.start_position)
    for record in moves:
        assert pos.to_move == record.seat
        pos = pos.play(parse_move(pos, record.move))
    assert [m.ply for m in moves] == list(range(1, game.ply + 1))
    assert parse_tpn(game.position) == pos
    return moves


def user_row(h: Harness, userid: str) -> User:
    async def run() -> User:
        async with UnitOfWork(h.db) as uow:
            user = await uow.users.get(userid)
            assert user is not None
            uow.session.expunge_all()
            return user

    return h.loop.run_until_complete(run())


def a_legal_move(h: Harness, board: int = 101, game_type: str = "terrace") -> str:
    pos = parse_tpn(game_state(h, board, game_type)[0].position)
    move = pos.legal_moves()[0]
    return f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}"


def headlines(replies: list[Reply]) -> list[str]:
    return [r.body.splitlines()[0] for r in replies]


def test_robots_exist_from_the_migration_and_nobody_logs_in_as_one(h):
    for name, level in (("robot1", 1), ("robot2", 2), ("robot3", 3)):
        robot = user_row(h, name)
        assert robot.robot_level == level and robot.is_robot and not robot.is_deleted
        assert robot.addresses == [] and not robot.signed_off and robot.accept_challenges
        reply = h.send("mallory", f"signup {name} secret")[0].body
        assert f"{name} is one of the server's robot players; choose another userid" in reply
    for attempt in (
        "signoff robot1 !robot",
        "delete robot2 robot",
        "change password robot3 '' x",
        "change address robot1 x a@b.test",
    ):
        reply = h.send("mallory", attempt)[0].body
        assert "the userid or the password is not correct" in reply, attempt
    assert user_row(h, "robot2").robot_level == 2 and not user_row(h, "robot2").is_deleted


def test_challenge_a_robot_move_and_the_robot_answers_with_a_legal_move(h):
    new = h.send("ann", "terrace challenge ann pw-ann robot1", "teach me")
    assert [r.to for r in new] == ["ann@players.test"] and h.last is not None and h.last.robot_turns == []
    replies = h.move(101, "ann", "d2-e3")
    # the person's own move first, then the robot's, both to the person only
    assert [r.to for r in replies] == ["ann@players.test", "ann@players.test"]
    assert headlines(replies)[0] == "Terrace Board 101: ann played C-d2-e3"
    assert headlines(replies)[1].startswith("Terrace Board 101: robot1 played ")
    assert "robot1 writes:\nrobot1 " in replies[1].body  # the one-line comment in words
    assert parseaddr(replies[1].headers["reply-to"])[1].startswith("pbmserv+")  # answer it by Reply
    moves = assert_legal_replay(h)
    assert [(m.seat, m.auto) for m in moves] == [(1, False), (2, False)]
    game, _ = game_state(h)
    assert parse_tpn(game.position).to_move == 1


def test_a_robot_in_seat_one_moves_right_after_the_challenge(h):
    replies = h.send("ann", "terrace6x6 challenge ann pw-ann robot2 ann -short")
    assert headlines(replies)[0] == "A new Terrace6x6 board (101) has been started."
    assert headlines(replies)[1].startswith("Terrace6x6 Board 101: robot2 played ")
    assert len(assert_legal_replay(h, game_type="terrace6x6")) == 1


def test_three_players_a_person_and_two_robots(h):
    h.send("ann", "terrace6x6 challenge ann pw-ann robot1 robot2")
    replies = h.move(101, "ann", a_legal_move(h, game_type="terrace6x6"), game="terrace6x6")
    lines = headlines(replies)
    assert len(replies) == 3 and all(r.to == "ann@players.test" for r in replies)
    assert "ann played" in lines[0] and "robot1 played" in lines[1] and "robot2 played" in lines[2]
    moves = assert_legal_replay(h, game_type="terrace6x6")
    assert [m.seat for m in moves] == [1, 2, 3]
    assert "It is ann's turn" in replies[2].body


def test_four_players_two_people_two_robots(h):
    h.send("ann", "terrace challenge ann pw-ann robot1 ben robot2")
    replies = h.move(101, "ann", a_legal_move(h))
    assert sorted(r.to for r in replies) == ["ann@players.test", "ann@players.test", "ben@players.test", "ben@players.test"]
    assert sum(" robot1 played " in r.body.splitlines()[0] for r in replies) == 2  # one mail to each person
    game, moves = game_state(h)
    assert [m.seat for m in moves] == [1, 2] and parse_tpn(game.position).to_move == 3  # ben's turn: robots wait
    replies = h.move(101, "ben", a_legal_move(h))
    assert [r.body.splitlines()[0].split(": ")[1].split()[:2] for r in replies[-2:]] == [["robot2", "played"]] * 2
    assert [m.seat for m in assert_legal_replay(h)] == [1, 2, 3, 4]


def test_a_game_of_only_robots_is_refused(h):
    reply = h.send("ann", "terrace challenge robot1 robot3")[0].body
    assert "a game needs at least one person" in reply
    assert h.send("ann", "terrace challenge robot1 robot2 robot3")[0].body.count("at least one person") == 1


def test_draw_accepted_only_when_the_robot_stands_worse(h):
    assert accepts_draw(parse_tpn(LOST_FOR_ROBOT), 2, level=1, ply=0)
    assert not accepts_draw(parse_tpn(WON_FOR_ROBOT), 2, level=1, ply=0)
    h.send("ann", "terrace challenge ann pw-ann robot1")
    h.send("ben", "terrace challenge ben pw-ben robot1")
    set_position(h, 101, LOST_FOR_ROBOT)
    set_position(h, 102, WON_FOR_ROBOT)
    lost = h.move(101, "ann", "propose")
    assert headlines(lost) == ["Terrace Board 101: ann proposes a draw", "Terrace Board 101: the players agree to a draw"]
    assert game_state(h, 101)[0].status == "draw"
    won = h.move(102, "ben", "propose")
    assert headlines(won) == ["Terrace Board 102: ben proposes a draw", "Terrace Board 102: robot1 rejects the draw offer"]
    game, _ = game_state(h, 102)
    assert game.status == "active" and game.draw_votes == []


def test_undo_is_always_rejected_at_once(h):
    h.send("ann", "terrace challenge ann pw-ann robot2")
    h.move(101, "ann", "d2-e3")
    replies = h.move(101, "ann", "undo")
    assert headlines(replies) == [
        "Terrace Board 101: ann asks to undo the last ply",
        "Terrace Board 101: robot2 rejects the undo request",
    ]
    game, moves = game_state(h)
    assert game.ply == 2 and len(moves) == 2 and game.undo_votes == []
    assert "accept or reject" not in replies[-1].body  # nothing left to answer


def test_robots_are_rated_at_their_pinned_strength_and_in_the_standings(h):
    """Issue 42: each level's Elo is measured (bench/robot.py) and pinned: the robot's
    row keeps it, the person is rated against it."""
    pinned = GAME_TYPES["terrace"].pinned_rating(1)
    assert pinned is not None
    h.send("ann", "terrace challenge ann pw-ann robot1")
    h.move(101, "ann", "d2-e3")  # robot1 answers: ply 2, past the first round
    end = h.send("ann", "terrace resign 101 ann pw-ann")
    assert "robot1 wins" in end[0].body and "robot1: " + str(round(pinned)) + " (a robot's rating is fixed" in end[0].body
    table = h.send("ann", "terrace standings")[0].body
    rows = {line.split()[1]: line.split()[2:6] for line in table.splitlines() if line[:4].strip().isdigit()}
    ann = round(START + K_PROVISIONAL * (0 - expected(START, pinned)))
    assert rows == {"robot1": [str(round(pinned)), "1", "0", "0"], "ann": [str(ann), "0", "1", "0"]}
    # a row that drifted (an older server, another measurement) is put back by the timers
    async def drift() -> float:
        async with UnitOfWork(h.db) as uow:
            robot = await uow.users.get("robot1")
            row = await uow.ratings.get(robot.id, "terrace")
            row.rating = 1234.0
            await uow.commit()
        await h.service.run_timers()
        async with UnitOfWork(h.db) as uow:
            return (await uow.ratings.get(robot.id, "terrace")).rating

    assert h.loop.run_until_complete(drift()) == pinned


def test_the_pinned_levels_are_in_order():
    for name in ("terrace", "terrace6x6"):
        kind = GAME_TYPES[name]
        assert kind.pinned_rating(1) < kind.pinned_rating(2) < kind.pinned_rating(3), name
    assert GAME_TYPES["terrace"].pinned_rating(None) is None


def test_a_crash_before_the_robots_move_gives_exactly_one_move_after_restart(h):
    """The person's move committed, then the process died before the robot moved
    (here: the service ran without the pipe's robot step).  Two catch-ups started
    at once (a restart racing a second worker) both compute the move; one plays it."""
    h.send("ann", "terrace challenge ann pw-ann robot1")
    result = h.loop.run_until_complete(
        h.service.handle_mail(parse_message(raw_mail("ann@players.test", "terrace move 101 ann pw-ann d2-e3")))
    )
    assert result.status == "ok" and [(t.board, t.ply, t.userid) for t in result.robot_turns] == [(101, 1, "robot1")]
    assert game_state(h)[0].ply == 1  # the robot has not moved

    async def two_catch_ups() -> list[str]:
        first, second = await asyncio.gather(
            play_inline(h.service, await h.service.robot_turns()), play_inline(h.service, await h.service.robot_turns())
        )
        return sorted(r.status for r in first + second)

    assert h.loop.run_until_complete(two_catch_ups()) == ["duplicate", "ok"]
    moves = assert_legal_replay(h)
    assert [m.seat for m in moves] == [1, 2]
    assert h.loop.run_until_complete(h.service.robot_turns()) == []  # nothing left to do
    again = h.loop.run_until_complete(play_inline(h.service, result.robot_turns))  # a stale turn: nothing happens
    assert [r.status for r in again] == ["duplicate"] and game_state(h)[0].ply == 2


def test_robots_left_alone_are_drawn_at_the_ply_limit(h):
    """Terrace has no draw rule: once the person is out, the robots may not play
    for ever; at ROBOTS_ALONE_PLIES the game ends drawn, and the person is told."""
    result = h.loop.run_until_complete(
        h.service.handle_mail(parse_message(raw_mail("ann@players.test", "terrace6x6 challenge ann pw-ann robot1 robot2 ann")))
    )
    assert [(t.userid, t.ply) for t in result.robot_turns] == [("robot1", 0)]

    async def person_out_at_the_limit() -> None:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace6x6", 101, lock=True)
            assert game is not None
            game.seats[2].active = False
            game.ply = ROBOTS_ALONE_PLIES
            await uow.commit()

    h.loop.run_until_complete(person_out_at_the_limit())
    done = h.loop.run_until_complete(play_inline(h.service, h.loop.run_until_complete(h.service.robot_turns())))
    assert [r.detail for r in done] == ["robots alone: drawn"]
    game, moves = game_state(h, game_type="terrace6x6")
    assert (
        game.status == "draw" and moves == [] and game.result == f"draw: only robots were left after {ROBOTS_ALONE_PLIES} plies"
    )
    assert h.loop.run_until_complete(h.service.robot_turns()) == []
