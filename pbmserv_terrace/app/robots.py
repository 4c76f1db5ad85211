"""Robots off the request path (issue 17): the engine runs in worker processes,
the move is applied by :meth:`Service.robot_move` in its own transaction.

``serve`` runs a :class:`RobotPlayer`: boards where a robot is to move are queued
(all of them at start, then those each committed mail reports), computed in a
``ProcessPoolExecutor`` of ``[server] robot_workers`` processes, and applied.  A
board is worked on by one task at a time; a crash or restart at any point leaves
the board with the robot to move, so it is found again and computed once more,
and :meth:`Service.robot_move` plays a (board, ply) at most once.

``handle`` (pipe mode) has no daemon: :func:`play_inline` makes the robots' moves
in the same invocation, after the person's mail has committed.

The same queue and pool make solitaire hints (issue 36, :mod:`..service.hints`):
a board whose player asked for one comes as a :class:`HintTurn`, the pool runs
the solver, :meth:`Service.hint_answer` sends the board mail with the hint.  The
service's hint desk is told which boards are queued and done, so its bound on
waiting hints counts them.

And game reviews (issue 42, :mod:`..service.reviews`): a finished board whose
review is owed comes as a :class:`ReviewTurn` (from the mail that ended it, the
robot's last move's loop, or the start's rescan), the pool runs the engine's
review within the operator's budget, :meth:`Service.review_answer` mails it once.
A review the engine fails on is marked failed (never retried forever); one a
dead pool or a stop interrupted stays owed and is made at the next start.

Robots' moves come first (issue 42): a review is made in short steps
(:func:`..service.reviews.step`, one position's search each: 0.1-0.5 s where the
whole review of a long game takes 10 s), each a job of its own, and the pool's
places are handed out by priority (:class:`Places`): a robot's move or a hint (a
person waits for it) takes the next place free, before the next step of any
review and before an analysis.  So with one worker a robot's move asked during a
review waits for the step being computed, not for the review.  An analysis
(``analyze``) is one job (its search keeps its tables from one iteration to the
next; 150,000 nodes, about 3-4 s): a robot's move asked while one runs waits for
it, but never for the analyses and review steps queued behind it.

The worker processes die with ``serve`` (issue 36): a ``serve`` killed with
SIGKILL used to leave its engine worker (and with it multiprocessing's resource
tracker, which lives until the last holder of its pipe ends) running under PID 1.
Each worker asks the kernel for SIGKILL when its parent dies (:func:`die_with`,
PR_SET_PDEATHSIG); the tracker then reads the end of its pipe and exits.
They run at ``ROBOT_NICE``: when both want the CPU, ``serve``'s mail comes first.

The workers start with ``serve`` (issue 38): each is given :func:`warm` at once,
and reading that task imports the engine, the solver and the service's modules
(seconds on a busy box), so the first robot move after a start waits for its
search only (it came 16 s after the challenge; later moves 0.2-5 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import multiprocessing
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..lifecycle import pool_worker
from ..service import HandleResult, Service
from ..service.analysis import ANALYSIS_NODES, AnalysisTurn
from ..service.analysis import compute as analysis_of
from ..service.hints import HINT_SECONDS, desk_of, solve
from ..service.reviews import budget, compute, data_of, step
from ..service.robots import HintTurn, ReviewTurn, RobotTurn, think, to_say

ROBOT_NICE = 5
"""the engine workers' niceness: a robot's move or a hint waits for the CPU while
``serve`` answers mail (issue 36: 30 hints at once held honest replies back)"""

FIRST, LATER = 0, 1
"""the pool's priorities (:class:`Places`): a robot's move or a hint, that a person
waits for, before a review's step or an analysis"""

log = logging.getLogger("pbmserv.robots")
MAX_INLINE_PLIES = 200
"""pipe mode: robot plies one invocation makes at most (a guard; games of only
robots cannot be made, so a person is soon to move again)"""


async def play_inline(service: Service, turns: Iterable[RobotTurn]) -> list[HandleResult]:
    """Pipe mode: make the robots' moves on these boards now, in this process, one
    transaction each, until a person is to move (or the game ends).  Errors are
    logged, never raised: the person's mail has already committed."""
    results: list[HandleResult] = []
    queue = list(turns)
    while queue and len(results) < MAX_INLINE_PLIES:
        turn = queue.pop(0)
        if isinstance(turn, AnalysisTurn):
            answered = await _analysis_inline(service, turn)
            if answered is not None:
                log.info(answered.log_line())
                results.append(answered)
            continue
        try:
            if isinstance(turn, HintTurn):
                result = await _hint_inline(service, turn)
                if result is None:
                    continue
            elif isinstance(turn, ReviewTurn):
                result = await service.review_answer(turn, _review(service, turn))
            else:
                move, comment = think(turn.game_type, turn.tpn, turn.level, turn.ply, turn.history)
                result = await service.robot_move(turn, move, to_say(turn, comment))
        except Exception:
            log.exception(
                "robot %s on %s %d: the move failed; it is made at the next chance", turn.userid, turn.game_type, turn.board
            )
            continue
        log.info(result.log_line())
        results.append(result)
        queue += [t for t in result.robot_turns if t.key not in {q.key for q in queue}]
    return results


async def _hint_inline(service: Service, turn: HintTurn) -> HandleResult | None:
    """Pipe mode: compute and send the hint this board waits for (None: it waits for none)."""
    try:
        current = await service.robot_turn(*turn.key)  # with the moves the solver replays
        if not isinstance(current, HintTurn):
            return None
        found = solve(current.game_type, current.variant, current.deal, current.moves, HINT_SECONDS)
        return await service.hint_answer(current, found)
    finally:
        desk_of(service).done(turn.key)


async def _analysis_inline(service: Service, turn: AnalysisTurn) -> HandleResult | None:
    """Pipe mode: compute and mail the analysis asked for (None: answered already;
    an engine failure is answered as one, a database failure leaves it pending)."""
    try:
        current = await service.analysis_turn(turn.analysis_id)
        if current is None:
            return None
        try:
            found = analysis_of(current.game_type, current.tpn, current.history, ANALYSIS_NODES)
        except Exception:
            log.exception("analysis %d of %s %d failed", turn.analysis_id, current.game_type, current.board)
            found = None
        return await service.analysis_answer(current, found)
    except Exception:
        log.exception("analysis %d: not answered now; it is made at the next start", turn.analysis_id)
        return None


def _review(service: Service, turn: ReviewTurn) -> dict[str, Any] | None:
    """Pipe mode: the review computed here (None, and logged, when the engine fails)."""
    try:
        return compute(turn.game_type, turn.start, turn.moves, budget(service.config, len(turn.moves)))
    except Exception:
        log.exception("the review of %s %d failed; it is marked failed", turn.game_type, turn.board)
        return None


def warm() -> int:
    """An engine worker's first task, given when ``serve`` starts: a worker reads
    it by importing this module, and with it everything :func:`think` and
    :func:`solve` need, before a robot has to move.  Its process id."""
    return os.getpid()


class Places:
    """The pool's ``count`` places (one a worker process), handed out by priority
    (lowest first; within one, first come first served).  Every job holds a place
    while it runs, so the pool never queues one of its own: a job waiting for a
    place is overtaken by any job of a higher priority that comes meanwhile."""

    def __init__(self, count: int) -> None:
        self.free = count
        self.waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self.arrivals = itertools.count()

    @contextlib.asynccontextmanager
    async def place(self, priority: int) -> AsyncIterator[None]:
        """Hold a place (waiting for one) while the body runs its job."""
        await self._take(priority)
        try:
            yield
        finally:
            self._give_back()

    async def _take(self, priority: int) -> None:
        if self.free > 0:  # (a place given back goes to a waiting job first: nobody waits)
            self.free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self.waiting, (priority, next(self.arrivals), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._give_back()  # handed a place just as it was cancelled: the next job takes it
            raise

    def _give_back(self) -> None:
        while self.waiting:
            _, _, future = heapq.heappop(self.waiting)
            if not future.done():  # (a waiter cancelled meanwhile is passed over)
                future.set_result(None)
                return
        self.free += 1


class RobotPlayer:
    """The robots of ``serve``: a queue of boards, ``workers`` engine processes.

    :meth:`want` is called with the boards a mail reported (or a rescan found);
    :meth:`run` works until ``stopping`` is set.  ``on_replies`` is told when a
    robot's move queued mails (the outbound loop wakes)."""

    def __init__(self, service: Service, workers: int, on_replies: Callable[[], None] = lambda: None) -> None:
        self.service = service
        self.workers = max(1, workers)
        self.on_replies = on_replies
        self.queue: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
        self.waiting: set[tuple[str, int]] = set()
        """boards queued or being worked on"""
        self.again: set[tuple[str, int]] = set()
        """boards reported again while being worked on: looked at once more"""
        self.failed: set[tuple[str, int, int]] = set()
        """(game type, board, ply) whose move the rules refused: not retried"""
        self.played = 0
        self.analyses: asyncio.Queue[int] = asyncio.Queue()
        """analyses (their row ids) to compute, one at a time (:meth:`_analyst`)"""
        self.analysing: set[int] = set()
        """analyses queued or being computed"""
        self.warmed = asyncio.Event()
        """set once every engine worker has started and imported the engine"""
        self.places = Places(self.workers)
        self.reviews: asyncio.Queue[ReviewTurn] = asyncio.Queue()
        """reviews to make, step by step (:meth:`_reviewer`)"""
        self.reviewing: dict[int, int] = {}
        """reviews (their game ids) queued or being made → the steps done so far"""
        self.reviewed = 0
        """reviews answered (mailed, or marked failed)"""

    def want(self, turns: Iterable[RobotTurn]) -> None:
        """Queue these boards; one already queued or being worked on is looked at
        again when its current work ends (it may have changed meanwhile)."""
        for turn in turns:
            if isinstance(turn, AnalysisTurn):
                if turn.analysis_id not in self.analysing:
                    self.analysing.add(turn.analysis_id)
                    self.analyses.put_nowait(turn.analysis_id)
                continue
            if isinstance(turn, ReviewTurn):
                self._want_review(turn)
                continue
            if isinstance(turn, HintTurn):
                desk_of(self.service).queued(turn.key)  # counted among the waiting hints until done
            self._want(turn.key)

    def _want_review(self, turn: ReviewTurn) -> None:
        if turn.game_id not in self.reviewing:
            self.reviewing[turn.game_id] = 0
            self.reviews.put_nowait(turn)

    def _want(self, key: tuple[str, int]) -> None:
        if key in self.waiting:
            self.again.add(key)
            return
        self.waiting.add(key)
        self.queue.put_nowait(key)

    async def rescan(self) -> None:
        """Queue every board where a robot is to move (at start, after timers)."""
        self.want(await self.service.robot_turns())

    async def run(self, stopping: asyncio.Event) -> None:
        """Work until ``stopping``; a move being computed then is dropped (the
        board keeps its robot to move and the next start computes it again)."""
        context = multiprocessing.get_context("spawn")  # never fork a process that has threads and sockets
        # workers are started from this (the loop's) thread, on demand in submit
        pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=pool_worker, initargs=(os.getpid(), ROBOT_NICE, "pbmserv-robot"))
        tasks = [asyncio.create_task(self._warm(pool), name="robots-warm")]
        tasks += [asyncio.create_task(self._worker(pool), name=f"robot-{i}") for i in range(self.workers)]
        tasks += [asyncio.create_task(self._reviewer(pool), name=f"reviewer-{i}") for i in range(self.workers)]
        tasks.append(asyncio.create_task(self._analyst(pool), name="analyst"))
        try:
            try:
                await self.rescan()
            except Exception:
                log.exception("finding the boards where a robot is to move failed; mails will report them")
            await stopping.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            # not waiting: a move being computed is dropped, the worker exits after it
            pool.shutdown(wait=False, cancel_futures=True)

    async def _warm(self, pool: ProcessPoolExecutor) -> None:
        """Start every worker now (a pool starts one per task waiting), each
        importing the engine as it reads :func:`warm` (at ``ROBOT_NICE``)."""
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        try:
            pids = await asyncio.gather(*(loop.run_in_executor(pool, warm) for _ in range(self.workers)))
        except Exception:
            log.exception("starting the engine workers failed; they start with the first robot move")
            return
        finally:
            self.warmed.set()
        log.info("%d engine worker(s) ready in %.1f s (pids %s)", self.workers, time.perf_counter() - started,
                 " ".join(map(str, sorted(set(pids)))))  # fmt: skip

    async def _worker(self, pool: ProcessPoolExecutor) -> None:
        while True:
            key = await self.queue.get()
            try:
                await self._play(pool, key)
            except asyncio.CancelledError:
                raise
            except Exception:
                # the board keeps its robot to move: the next rescan or mail finds it
                log.exception("robot move on %s %d failed", *key)
                await asyncio.sleep(1.0)
            finally:
                self.waiting.discard(key)
                desk_of(self.service).done(key)
            if key in self.again:
                self.again.discard(key)
                self._want(key)

    async def _play(self, pool: ProcessPoolExecutor, key: tuple[str, int]) -> None:
        """While a robot is to move on this board: compute in a worker, apply."""
        loop = asyncio.get_running_loop()
        answered: RobotTurn | None = None
        while True:
            self.again.discard(key)
            turn = await self.service.robot_turn(*key)
            if turn is None or (turn.game_type, turn.board, turn.ply) in self.failed:
                return
            if isinstance(turn, ReviewTurn):
                self._want_review(turn)  # (the robot's move ended the game: its review, in steps)
                return
            if isinstance(turn, HintTurn):
                if turn == answered:
                    return  # (answered, and the board still says it waits: never a busy loop)
                answered = turn
                async with self.places.place(FIRST):
                    found = await loop.run_in_executor(pool, solve, turn.game_type, turn.variant, turn.deal, turn.moves,
                                                       HINT_SECONDS)  # fmt: skip
                result = await self.service.hint_answer(turn, found)  # (duplicate: the board moved on; looked at again)
                log.info("%s", result.log_line())
                if result.outbox_ids:
                    self.on_replies()
                continue
            async with self.places.place(FIRST):
                move, comment = await loop.run_in_executor(pool, think, turn.game_type, turn.tpn, turn.level, turn.ply,
                                                           turn.history)  # fmt: skip
            result = await self.service.robot_move(turn, move, to_say(turn, comment))
            log.info("%s", result.log_line())
            if result.status == "error":
                self.failed.add((turn.game_type, turn.board, turn.ply))
                return
            if result.status == "ok":
                self.played += 1
            if result.outbox_ids:
                self.on_replies()

    async def _reviewer(self, pool: ProcessPoolExecutor) -> None:
        """Reviews, one at a time per task (``workers`` tasks): each made and mailed
        (once) by :meth:`_make_review`."""
        while True:
            turn = await self.reviews.get()
            try:
                await self._make_review(pool, turn)
            except asyncio.CancelledError:
                raise
            except Exception:
                # (the row stays pending: the next start's rescan finds it)
                log.exception("the review of %s %d: not made now; it stays owed and is made at the next start",
                              turn.game_type, turn.board)  # fmt: skip
                await asyncio.sleep(1.0)
            finally:
                self.reviewing.pop(turn.game_id, None)

    async def _make_review(self, pool: ProcessPoolExecutor, turn: ReviewTurn) -> None:
        """Make the review of a finished board in steps, each a job of its own at the
        pool's LATER priority (a robot's move waiting takes the next place), and mail
        it (once)."""
        current = await self.service.robot_turn(turn.game_type, turn.board)
        if not isinstance(current, ReviewTurn) or current.game_id != turn.game_id:
            return  # answered meanwhile (another loop, or the same review reported twice)
        loop = asyncio.get_running_loop()
        nodes = budget(self.service.config, len(current.moves))
        started = time.perf_counter()
        found: tuple[Any, ...] = ()
        steps = 0
        try:
            while True:
                async with self.places.place(LATER):
                    done = await loop.run_in_executor(pool, step, current.game_type, current.start, current.moves, nodes, found)
                steps += 1
                self.reviewing[turn.game_id] = steps
                if done.done:
                    break
                found = done.found
            data = data_of(done)
        except BrokenProcessPool:
            raise  # (a worker died: the review stays owed and is made at the next chance)
        except Exception:
            log.exception("the review of %s %d failed; it is marked failed", current.game_type, current.board)
            data = None
        log.info("review of %s %d: %d plies at %d nodes in %d steps, %.1f s", current.game_type, current.board,
                 len(current.moves), nodes, steps, time.perf_counter() - started)  # fmt: skip
        result = await self.service.review_answer(current, data)
        log.info("%s", result.log_line())
        self.reviewed += 1
        if result.outbox_ids:
            self.on_replies()

    async def _analyst(self, pool: ProcessPoolExecutor) -> None:
        """Analyses (``analyze N[#k]``), one at a time so that they never hold more
        than one engine worker: read the row, compute in a worker, mail (once)."""
        loop = asyncio.get_running_loop()
        while True:
            analysis_id = await self.analyses.get()
            try:
                turn = await self.service.analysis_turn(analysis_id)
                if turn is None:
                    continue
                started = time.perf_counter()
                try:
                    async with self.places.place(LATER):
                        found = await loop.run_in_executor(pool, analysis_of, turn.game_type, turn.tpn, turn.history,
                                                           ANALYSIS_NODES)  # fmt: skip
                except BrokenProcessPool:
                    raise  # (a worker died: the analysis stays pending and is made at the next start)
                except Exception:
                    log.exception("analysis %d of %s %d failed; it is answered as failed", analysis_id, turn.game_type,
                                  turn.board)  # fmt: skip
                    found = None
                log.info("analysis %d of %s %d after ply %d in %.1f s", analysis_id, turn.game_type, turn.board, turn.ply,
                         time.perf_counter() - started)  # fmt: skip
                result = await self.service.analysis_answer(turn, found)
                log.info("%s", result.log_line())
                if result.outbox_ids:
                    self.on_replies()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("analysis %d: not answered now; it is made at the next start", analysis_id)
                await asyncio.sleep(1.0)
            finally:
                self.analysing.discard(analysis_id)
