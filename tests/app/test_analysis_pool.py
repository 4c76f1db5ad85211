"""``analyze`` in ``serve`` (issue 42 item 3): :class:`RobotPlayer` computes each
analysis in its worker process, never on the event loop, and mails it once; the
requests a crash left pending are found by the start's rescan, and a request a
running loop is told of is answered by it."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select

from pbmserv_terrace.app import robots as app_robots
from pbmserv_terrace.app.robots import RobotPlayer
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.store import Analysis, OutboxMessage

from ..service.harness import Harness, raw_mail
from ..service.test_analyze import finished_game

HANG = 120.0
"""seconds after which a test that waits for the pool fails (a hang guard only)"""


@pytest.fixture
def h(monkeypatch):
    monkeypatch.setattr(app_robots, "ANALYSIS_NODES", 3_000)  # passed to the worker with each analysis
    harness = Harness()
    harness.signup("ann", "ben")
    finished_game(harness, plies=3)
    yield harness
    harness.close()


async def ask(h: Harness, sender: str, subject: str):
    result = await h.service.handle_mail(parse_message(raw_mail(sender, subject)))
    assert result.status == "ok" and result.replies == 0, result
    return result.robot_turns


async def answers(h: Harness) -> dict[str, list[str]]:
    """Recipient → subjects of the analysis mails queued."""
    async with h.db.session() as s:
        rows = (await s.execute(select(OutboxMessage).where(OutboxMessage.subject.like("%analysis after ply%")))).scalars()
        found: dict[str, list[str]] = {}
        for row in rows:
            found.setdefault(row.recipient, []).append(row.subject)
        return found


async def pending(h: Harness) -> int:
    async with h.db.session() as s:
        return len((await s.execute(select(Analysis).where(Analysis.state == "pending"))).scalars().all())


async def until_answered(h: Harness, player: RobotPlayer) -> None:
    async with asyncio.timeout(HANG):
        while player.analysing or await pending(h):
            await asyncio.sleep(0.05)


def test_pending_analyses_after_a_crash_and_a_new_one_are_each_mailed_once(h: Harness) -> None:
    async def scenario() -> dict[str, list[str]]:
        # two requests committed, then the crash: nobody computed them
        await ask(h, "carl@elsewhere.test", "terrace analyze 101#1")
        await ask(h, "dora@elsewhere.test", "terrace analyze 101")
        woken: list[int] = []
        first, second = RobotPlayer(h.service, 1, on_replies=lambda: woken.append(1)), RobotPlayer(h.service, 1)
        stopping = asyncio.Event()
        runs = [asyncio.create_task(p.run(stopping)) for p in (first, second)]  # both rescan at start
        await until_answered(h, first)
        await until_answered(h, second)
        # a request while they run, reported as Server._handle_one reports a committed mail's result
        first.want(await ask(h, "carl@elsewhere.test", "terrace analyze 101#2"))
        await until_answered(h, first)
        stopping.set()
        await asyncio.gather(*runs)
        assert woken
        return await answers(h)

    found = h.loop.run_until_complete(scenario())
    assert sorted(found["carl@elsewhere.test"]) == ["Terrace Board 101: analysis after ply 1", "Terrace Board 101: analysis after ply 2"]
    assert found["dora@elsewhere.test"] == ["Terrace Board 101: analysis after ply 3"]
