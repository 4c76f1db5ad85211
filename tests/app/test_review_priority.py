"""Robots' moves come first (issue 42): with ``serve``'s one engine worker busy with
the review of a long game, a robot's move asked meanwhile is made between two of the
review's steps, not after the review.  The order of what the pool finished is read
from the mails it queued (the outbox's ids) and from the loop's own counters when it
said so: no clock is read."""

from __future__ import annotations

import asyncio
import random

import pytest
from sqlalchemy import select

from pbmserv_terrace.app import robots as app_robots
from pbmserv_terrace.app.robots import FIRST, LATER, Places, RobotPlayer
from pbmserv_terrace.gametypes import board_rules
from pbmserv_terrace.gametypes.review import ReviewStep
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service.reviews import step
from pbmserv_terrace.service.robots import ReviewTurn
from pbmserv_terrace.store import OutboxMessage, ReviewRecord, UnitOfWork

from ..service.harness import Harness, raw_mail

HANG = 180.0
"""seconds after which the test fails (a hang guard only, never a timing check)"""
PLIES = 60
"""the long game's plies before its resignation: the review has PLIES + 1 positions to search"""


@pytest.fixture
def h():
    harness = Harness()
    harness.config.server.review_nodes = 1_500  # (the harness has reviews off for the other tests)
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def long_game(h: Harness, board: int) -> None:
    """ann and ben play PLIES seeded random moves (none that ends the game) by mail."""
    h.challenge("ann", "ben")

    async def start() -> str:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace", board)
            assert game is not None
            return game.position

    rules = board_rules("terrace")
    pos = rules.load(h.loop.run_until_complete(start()))
    rng = random.Random(42)
    for ply in range(PLIES):
        moves = [m for m in pos.legal_moves() if pos.play(m).outcome() is None]
        move = rng.choice(moves)
        h.move(board, ("ann", "ben")[ply % 2], rules.format_move(pos, move))
        assert h.last is not None and h.last.status == "ok", h.last
        pos = rules.play(pos, move)


async def handle(h: Harness, sender: str, subject: str) -> list:
    """The mail's own transaction, as ``serve`` handles it (the pool's work is left
    to the running :class:`RobotPlayer`); the work it reports."""
    result = await h.service.handle_mail(parse_message(raw_mail(f"{sender}@players.test", subject)))
    assert result.status == "ok", result.detail
    return result.robot_turns


async def queued(h: Harness) -> list[tuple[int, str, str]]:
    async with UnitOfWork(h.db) as uow:
        rows = (await uow.session.execute(select(OutboxMessage).order_by(OutboxMessage.id))).scalars().all()
        return [(r.id, r.recipient, r.subject) for r in rows]


async def until(check, what: str) -> None:
    async with asyncio.timeout(HANG):
        while not await check():
            await asyncio.sleep(0.02)


def test_a_robot_move_asked_during_a_long_review_is_made_before_the_review_ends(h: Harness) -> None:
    long_game(h, 101)
    h.challenge("ann", "robot1")  # board 102: ann to move

    async def scenario() -> None:
        # ann (to move) resigns: the review of board 101 is owed (the pool's part is left to the loop)
        turns = await handle(h, "ann", "terrace resign 101 ann pw-ann")
        review = next(t for t in turns if isinstance(t, ReviewTurn))
        assert len(review.moves) == PLIES
        said: list[tuple[int, int, int]] = []
        player: RobotPlayer

        def on_replies() -> None:
            """When a job's mails were queued: (robots' moves played, reviews answered, the review's steps done)."""
            said.append((player.played, player.reviewed, player.reviewing.get(review.game_id, -1)))

        player = RobotPlayer(h.service, 1, on_replies=on_replies)  # one engine worker, as the default
        stopping = asyncio.Event()
        run = asyncio.create_task(player.run(stopping))
        player.want(turns)
        await player.warmed.wait()

        async def reviewing() -> bool:
            return player.reviewing.get(review.game_id, 0) >= 3

        await until(reviewing, "the review under way")
        before = await queued(h)
        # ann moves on board 102 while the review is under way: robot1 is to move
        wanted = await handle(h, "ann", "terrace move 102 ann pw-ann d2-e3")
        assert [t.key for t in wanted] == [("terrace", 102)]
        player.want(wanted)

        async def both_done() -> bool:
            return player.played == 1 and player.reviewed == 1 and not player.reviewing

        await until(both_done, "the robot's move and the review")
        stopping.set()
        await run

        # when the robot's move's mails were queued the review had not been answered and
        # still had steps to go; its mails came after
        assert said[0][:2] == (1, 0), said
        assert 3 <= said[0][2] < PLIES + 1, said
        assert said[1][:2] == (1, 1), said
        after = [row for row in await queued(h) if row not in before]
        robot = [i for i, _, subject in after if "Terrace Board 102" in subject and "review" not in subject]
        reviews = [i for i, _, subject in after if "Board 101: the review of your game" in subject]
        assert robot and len(reviews) == 2, after
        assert max(robot) < min(reviews), after

    h.loop.run_until_complete(scenario())


def test_the_pools_places_go_to_robots_moves_first_then_in_order_of_asking() -> None:
    async def scenario() -> list[str]:
        places = Places(1)
        order: list[str] = []
        release = asyncio.Event()

        async def job(name: str, priority: int) -> None:
            async with places.place(priority):
                order.append(name)
                if name == "review step 1":
                    await release.wait()

        running = asyncio.create_task(job("review step 1", LATER))
        await asyncio.sleep(0)  # it holds the one place
        waiting = [asyncio.create_task(job(name, priority)) for name, priority in
                   [("analysis", LATER), ("review step 2", LATER), ("gone", FIRST), ("robot move", FIRST), ("hint", FIRST)]]  # fmt: skip
        await asyncio.sleep(0)
        waiting[2].cancel()  # a robot's move given up (a stop): passed over
        release.set()
        await asyncio.gather(running, *waiting, return_exceptions=True)
        assert places.free == 1 and not [w for w in places.waiting if not w[2].done()]
        return order

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(scenario()) == ["review step 1", "robot move", "hint", "analysis", "review step 2"]
    finally:
        loop.close()


def test_a_review_stopped_between_its_steps_stays_owed_and_is_mailed_once_after_the_restart(h: Harness) -> None:
    long_game(h, 101)

    async def review_mails() -> list[str]:
        return [recipient for _, recipient, subject in await queued(h) if "Board 101: the review of your game" in subject]

    async def scenario() -> None:
        turns = await handle(h, "ann", "terrace resign 101 ann pw-ann")
        review = next(t for t in turns if isinstance(t, ReviewTurn))
        first = RobotPlayer(h.service, 1)
        stopping = asyncio.Event()
        run = asyncio.create_task(first.run(stopping))
        first.want(turns)

        async def under_way() -> bool:
            return first.reviewing.get(review.game_id, 0) >= 3

        await until(under_way, "the review under way")
        stopping.set()  # serve stops between two steps (or during one)
        await run
        assert first.reviewed == 0 and await review_mails() == []
        owed = [t for t in await h.service.robot_turns() if isinstance(t, ReviewTurn)]
        assert [t.game_id for t in owed] == [review.game_id]  # still owed: the next start finds it
        second = RobotPlayer(h.service, 1)  # the next start: its rescan finds the review
        stopping = asyncio.Event()
        run = asyncio.create_task(second.run(stopping))

        async def answered() -> bool:
            return second.reviewed == 1 and not second.reviewing

        await until(answered, "the review made after the restart")
        second.want(await h.service.robot_turns())  # a rescan after it: nothing more to do
        await asyncio.sleep(0)
        assert not second.reviewing
        stopping.set()
        await run
        assert sorted(await review_mails()) == ["ann@players.test", "ben@players.test"]

    h.loop.run_until_complete(scenario())


def failing_step(game_type: str, start: str, moves: tuple[str, ...], nodes: int, found: tuple[object, ...]) -> ReviewStep:
    """A review step whose engine fails at the third position (run in the worker)."""
    if len(found) >= 2:
        raise RuntimeError("the engine failed")
    return step(game_type, start, moves, nodes, found)


def test_a_review_the_engine_fails_on_in_a_step_is_marked_failed_and_mailed_to_nobody(h: Harness, monkeypatch) -> None:
    monkeypatch.setattr(app_robots, "step", failing_step)  # (the worker gets it by name, from this module)
    long_game(h, 101)

    async def scenario() -> tuple[str, list[str]]:
        turns = await handle(h, "ann", "terrace resign 101 ann pw-ann")
        player = RobotPlayer(h.service, 1)
        stopping = asyncio.Event()
        run = asyncio.create_task(player.run(stopping))
        player.want(turns)

        async def answered() -> bool:
            return player.reviewed == 1 and not player.reviewing

        await until(answered, "the review answered")
        stopping.set()
        await run
        async with UnitOfWork(h.db) as uow:
            state = (await uow.session.execute(select(ReviewRecord.state))).scalar_one()
        return state, [s for _, _, s in await queued(h) if "the review of your game" in s]

    state, mails = h.loop.run_until_complete(scenario())
    assert state == "failed" and mails == []
    assert [t for t in h.loop.run_until_complete(h.service.robot_turns()) if isinstance(t, ReviewTurn)] == []  # not retried
