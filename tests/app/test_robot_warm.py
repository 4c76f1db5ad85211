"""The engine workers start with ``serve``, not with the first robot move (issue 38
item 15: robot1's first move came 16 s after the challenge, later ones 0.2-5 s:
the first move waited for the worker process to start and import the engine).

Measured through ``serve`` on the shared 2-core box (load ~9), from the
person's ply to the robot's (their ``played_at``): the first answer 3.8 s and
3.1 s before, 0.6 s and 0.14 s after; the later ones 0.13-0.75 s either way."""

from __future__ import annotations

import asyncio
import multiprocessing
import time

from pbmserv_terrace.app.robots import RobotPlayer, warm

from ..service.harness import Harness

HANG = 120.0
"""seconds after which the test fails (a hang guard, not a timing check)"""


def test_the_workers_start_and_import_the_engine_before_any_robot_is_to_move():
    h = Harness()
    try:
        before = {p.pid for p in multiprocessing.active_children()}

        async def run() -> tuple[float, set[int | None]]:
            player = RobotPlayer(h.service, 2)
            stopping = asyncio.Event()
            runner = asyncio.create_task(player.run(stopping))
            started = time.perf_counter()
            try:
                async with asyncio.timeout(HANG):
                    await player.warmed.wait()
                took = time.perf_counter() - started
                workers = {p.pid for p in multiprocessing.active_children()} - before
                assert player.played == 0 and not player.waiting  # nobody was to move
                return took, workers
            finally:
                stopping.set()
                await runner

        took, workers = h.loop.run_until_complete(run())
        assert len(workers) == 2, f"engine workers running before any move: {workers}"
        assert took < HANG
    finally:
        h.close()


def test_warm_names_the_worker():
    assert warm() > 0
