"""The robots of ``serve`` (issue 17): :class:`RobotPlayer` computes in a worker
process and applies through the service; started twice at once after a crash it
still plays each ply once; a mail's reported robot turn gets its move."""

from __future__ import annotations

import asyncio

import pytest

from pbmserv_terrace.app.robots import RobotPlayer
from pbmserv_terrace.games.terrace import parse_move, parse_tpn
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service.robots import RobotTurn
from pbmserv_terrace.store import UnitOfWork

from ..service.harness import Harness, raw_mail

HANG = 120.0
"""seconds after which a test that waits for the robots fails (a hang guard only)"""


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann")
    yield harness
    harness.close()


async def plies(h: Harness, board: int = 101) -> list[int]:
    """The seats of the recorded plies, after checking each is legal."""
    async with UnitOfWork(h.db) as uow:
        game = await uow.games.get("terrace", board)
        assert game is not None
        pos = parse_tpn(game.start_position)
        seats = []
        for record in await uow.moves.of_game(game.id):
            pos = pos.play(parse_move(pos, record.move))
            seats.append(record.seat)
        assert parse_tpn(game.position) == pos
        return seats


async def human_move(h: Harness, text: str) -> list[RobotTurn]:
    """The person's mail, committed by the service alone (no robot step after it);
    the robot turns it reports."""
    result = await h.service.handle_mail(parse_message(raw_mail("ann@players.test", text)))
    assert result.status == "ok", result.detail
    return result.robot_turns


async def until_idle(h: Harness, *players: RobotPlayer) -> None:
    async def idle() -> bool:
        return not any(p.waiting for p in players) and not await h.service.robot_turns()

    async with asyncio.timeout(HANG):
        while not await idle():
            await asyncio.sleep(0.05)


def test_two_robot_loops_after_a_crash_play_the_waiting_move_once(h):
    h.send("ann", "terrace challenge ann pw-ann robot2")

    async def scenario() -> tuple[list[int], int]:
        assert [t.key for t in await human_move(h, "terrace move 101 ann pw-ann d2-e3")] == [("terrace", 101)]
        assert await plies(h) == [1]  # the crash: the robot never got its turn
        first, second = RobotPlayer(h.service, 1), RobotPlayer(h.service, 1)
        stopping = asyncio.Event()
        runs = [asyncio.create_task(p.run(stopping)) for p in (first, second)]  # both find the board at start
        await until_idle(h, first, second)
        stopping.set()
        await asyncio.gather(*runs)
        return await plies(h), first.played + second.played

    seats, played = h.loop.run_until_complete(scenario())
    assert seats == [1, 2] and played == 1


def test_a_mails_robot_turn_is_played_by_the_running_loop(h):
    h.send("ann", "terrace challenge ann pw-ann robot1")

    async def scenario() -> list[int]:
        woken: list[int] = []
        player = RobotPlayer(h.service, 2, on_replies=lambda: woken.append(1))
        stopping = asyncio.Event()
        run = asyncio.create_task(player.run(stopping))
        for text in ("d2-e3", "e3-e4"):
            async with UnitOfWork(h.db) as uow:  # a legal move of ann's, whatever robot1 played
                game = await uow.games.get("terrace", 101)
                assert game is not None
                pos = parse_tpn(game.position)
            moves = pos.legal_moves()
            move = next((m for m in moves if f"{pos.geo.name(m.frm)}-{pos.geo.name(m.to)}" == text), moves[0])
            assert await h.service.robot_turns() == []  # ann to move
            # as Server._handle_one does with a committed mail's result
            player.want(await human_move(h, f"terrace move 101 ann pw-ann {pos.geo.name(move.frm)}-{pos.geo.name(move.to)}"))
            await until_idle(h, player)
        stopping.set()
        await run
        assert len(woken) == 2 and player.played == 2
        return await plies(h)

    assert h.loop.run_until_complete(scenario()) == [1, 2, 1, 2]
