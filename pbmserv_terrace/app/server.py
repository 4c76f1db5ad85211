"""``pbmserv-terrace serve``: inbound mail → service → outbox → delivery, plus the
timer scheduler and a health endpoint, in one asyncio process (and the replies
sent from a second one: :mod:`.sender`).

Mail comes in by a transport (:mod:`.transports`: IMAP when configured, else the
embedded SMTP listener) and replies go out by a delivery (SMTP when configured,
else local Maildirs); the server runs whichever it is given.  On PostgreSQL several ``serve`` processes share
one mailbox: one reads it into the database's inbound queue and every one claims
mails from it (:meth:`Server.claim_loop`, :mod:`..store.queue`).  SIGTERM/SIGINT stop accepting new mail, let the
mail in hand finish, send what is due, and exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable

from sqlalchemy.exc import InterfaceError, OperationalError

from ..config import Config
from ..inbound import InboundMail
from ..service import HandleResult, Service
from ..store import Database, InboundQueue
from ..web import listen_socket
from ..web.clockview import Timers
from ..web.process import serve_beside
from .batching import Expected, GroupCommit
from .health import HealthEndpoint, LoopMonitor, Metrics
from .ordering import KeyedRunner
from .parsing import MailReader
from .pipe import save_failed
from .robots import RobotPlayer
from .sender import SenderProcess, send_here
from .transports import INBOUND, MailIn, Sink

log = logging.getLogger("pbmserv.serve")
BATCH_LIMIT = 50
"""the most mails one transaction handles (:mod:`.batching`)"""
CLAIMERS = 3
"""claim transactions a worker keeps going at once (PostgreSQL queue)"""
CLAIM_POLL = 2.0
"""seconds: a worker looks at the queue this often even when no NOTIFY came"""
PARSED_KEEP = 500
"""mails parsed by the queue's reader (:meth:`Server.describe`) kept for this
process's claims, at most (a mail another worker claims is forgotten later)"""


class Server:
    """The running server: inbound driver, service, outbox senders, timers, health."""

    def __init__(
        self, config: Config, db: Database | None = None, inbound: Callable[[Sink], MailIn] | None = None
    ) -> None:
        self.config = config
        self.db = db or Database(config.server.database_url)
        self.service = Service(self.db, config)
        self.metrics = Metrics()
        self.stopping = asyncio.Event()
        self.wake_outbound = asyncio.Event()
        self.runner = KeyedRunner(config.server.concurrency)
        # SQLite has one writer: one batch at a time; PostgreSQL runs two side by side
        self.batcher = GroupCommit(
            self.service.handle_batch,
            limit=BATCH_LIMIT,
            lanes=1 if self.db.is_sqlite else 2,
            coming=self._coming,
            overdue=self._overdue,
        )
        self._held: set[str] = set()
        """keys of mails put back for a later pass (later mails sharing them wait too)"""
        self._hold_all = False
        self.inbound: MailIn = (inbound or INBOUND[config.inbound])(self)
        """the transport mail comes in by (:mod:`.transports`)"""
        self.robots = RobotPlayer(self.service, config.server.robot_workers, self.wake_outbound.set)
        self._health: HealthEndpoint | None = None
        self._work = asyncio.Event()
        """the queue may hold mails this worker can claim"""
        self._claimers: list[asyncio.Task[None]] = []
        self.reader = MailReader()
        """reads raw mails (a big one in a worker process, off the event loop)"""
        self._parsed: dict[bytes, InboundMail] = {}
        """raw → the mail :meth:`describe` parsed, until :meth:`prepare` takes it"""

    # ---------------------------------------------------------------- one mail
    async def process_raw(self, raw: bytes, expected: Expected | None = None) -> HandleResult:
        """Run one raw mail through the service (see :meth:`process_batch`)."""
        return (await self.process_batch([raw], None if expected is None else [expected]))[0]

    async def process_batch(self, raws: list[bytes], expected: list[Expected] | None = None) -> list[HandleResult]:
        """Run raw mails through the service (see :meth:`submit`) and wait for them."""
        return list(await asyncio.gather(*self.submit(raws, await self.prepare(raws), expected)))

    async def prepare(self, raws: list[bytes]) -> list[tuple[InboundMail | Exception, list[asyncio.Future[bool]]]]:
        """Parse mails and start their password checks in the background."""
        parsed: list[InboundMail | Exception] = []
        for raw in raws:
            known = self._parsed.pop(raw, None)
            if known is not None:
                parsed.append(known)
                continue
            try:
                parsed.append(await self.reader.read(raw))
            except Exception as exc:
                parsed.append(exc)
        good = [m for m in parsed if isinstance(m, InboundMail)]
        try:
            checks = iter(await self.service.prewarm(good))
        except Exception:
            log.warning("password prewarm failed; the commands check passwords themselves", exc_info=True)
            checks = iter([[] for _ in good])
        return [(m, next(checks) if isinstance(m, InboundMail) else []) for m in parsed]

    def submit(
        self,
        raws: list[bytes],
        prepared: list[tuple[InboundMail | Exception, list[asyncio.Future[bool]]]],
        expected: list[Expected] | None = None,
    ) -> list[asyncio.Task[HandleResult]]:
        """Schedule mails, given in delivery order: mails that may touch the same
        things run one after the other in that order, the others side by side
        (:mod:`.ordering`).  A crash saves the mail to the ``failed`` directory
        (embedded) and is reported as ``failed`` (the IMAP loop moves the message
        to the failed folder); it never propagates.  Once shutdown has begun, the
        mails not yet begun are ``deferred`` (left where they are).  ``expected``:
        the batcher's notes for these mails (:meth:`GroupCommit.expect`), each
        done as its mail joins a batch or turns out not to come soon."""
        tasks = []
        if self.runner.in_flight == 0:
            self._held, self._hold_all = set(), False
        notes: list[Expected | None] = list(expected) if expected is not None else [None] * len(raws)
        for raw, (mail, checks), note in zip(raws, prepared, notes, strict=True):
            keys = self.service.conflict_keys(mail, self.config.server.address) if isinstance(mail, InboundMail) else frozenset()

            async def passwords(checks: list[asyncio.Future[bool]] = checks, note: Expected | None = note) -> None:
                # never hold a transaction (SQLite: the write lock) while scrypt runs
                if note is not None and not all(check.done() for check in checks):
                    note.done()  # not soon: no batch waits for it
                await asyncio.gather(*checks, return_exceptions=True)

            job = functools.partial(self._process_one, raw, mail, keys, note)
            blocked = None if note is None else note.done  # behind an earlier mail: not soon either
            tasks.append(self.runner.submit(keys, job, passwords, blocked=blocked))
        return tasks

    async def _process_one(
        self, raw: bytes, mail: InboundMail | Exception, keys: frozenset[str] | None = frozenset(), note: Expected | None = None
    ) -> HandleResult:
        try:
            return await self._handle_one(raw, mail, keys, note)
        finally:
            if note is not None:
                note.done()  # (a mail put back or failed before the batcher is not on its way either)

    async def _handle_one(
        self, raw: bytes, mail: InboundMail | Exception, keys: frozenset[str] | None, note: Expected | None
    ) -> HandleResult:
        if self.stopping.is_set():
            return HandleResult("deferred", "shutting down")  # stays in the inbox for the next start
        if self._hold_all or (self._held and (keys is None or keys & self._held)):
            # an earlier mail it depends on was put back: keep delivery order
            return HandleResult("deferred", "after a mail that was put back")
        started = time.perf_counter()
        try:
            if isinstance(mail, Exception):
                raise mail
            result = await self.batcher.handle(mail, note)
        except (OperationalError, InterfaceError, OSError) as exc:
            # the database is unreachable (or a deadlock was broken): not the mail's
            # fault; it stays where it is and is taken again later
            log.error("database unavailable (%s: %s); the mail is kept for a later pass", type(exc).__name__, exc)
            if keys is None:
                self._hold_all = True
            else:
                self._held |= keys
            result = HandleResult("deferred", "database unavailable")
        except Exception as exc:
            log.error("mail crashed its handler; kept for the operator", exc_info=exc)
            if not self.inbound.files_failed:
                path = save_failed(raw, self.config.imap.failed_folder, f"{type(exc).__name__}: {exc}")
                log.error("saved to %s", path)
            result = HandleResult("failed", f"{type(exc).__name__}: {exc}")
        self.metrics.count(result.status, time.perf_counter() - started)
        self.metrics.passwords(self.service.passwords.verifications)
        self.metrics.batched(self.batcher.batches, self.batcher.mails)
        log.info("%s id=%s", result.log_line(), mail.message_id[:200] if isinstance(mail, InboundMail) else "-")
        if result.outbox_ids:
            self.wake_outbound.set()
        if result.robot_turns:
            self.robots.want(result.robot_turns)  # committed: now the robots answer
        return result

    async def web_play(self, key: str, move: str | None) -> dict[str, object]:
        """The play pages' door (issue 39): :meth:`Service.web_play`, then, as after a
        mail, the sender woken for its replies and the robots for their turns."""
        if self.stopping.is_set():
            raise RuntimeError("the server is stopping")
        page = await self.service.web_play(key, move)
        if page.outbox_ids:
            self.wake_outbound.set()
        if page.robot_turns:
            self.robots.want(page.robot_turns)
        return page.as_dict()

    def set_inbound_connected(self, up: bool) -> None:
        self.metrics.inbound(up)  # (/metrics, and /healthz's mailbox check)

    # ------------------------------------------------- the shared queue (PostgreSQL)
    async def describe(self, raw: bytes) -> tuple[str, frozenset[str] | None]:
        """(Message-ID, conflict keys) of a raw mail, as the queue records them.  A
        mail that cannot be parsed touches nothing (its handling fails it)."""
        try:
            mail = await self.reader.read(raw)
        except Exception:
            return "", frozenset()
        # most likely claimed by this process soon: prepare() need not parse it again
        if len(self._parsed) >= PARSED_KEEP:
            del self._parsed[next(iter(self._parsed))]
        self._parsed[raw] = mail
        return mail.message_id, self.service.conflict_keys(mail, self.config.server.address)

    async def claim_loop(self, queue: InboundQueue) -> None:
        """Claim mails from the queue and handle them, until shutdown: each claim
        takes up to half of ``server.concurrency`` mails that nothing earlier holds
        back (they touch different things, so they run side by side), keeps them
        locked while they are handled, and marks them finished as it commits.  A
        mail ``deferred`` (the database unreachable, or shutdown) stays ready."""
        batch = max(1, self.config.server.concurrency // 2)
        delay = 1.0
        while not self.stopping.is_set():
            try:
                async with queue.claim(batch) as claim:
                    if claim.rows:
                        results = await self.process_batch([raw for _, raw in claim.rows])
                        for (row_id, _), result in zip(claim.rows, results, strict=True):
                            if result.status != "deferred":
                                claim.finish(row_id, "failed" if result.status == "failed" else "done")
                got, kept = len(claim.rows), len(claim.rows) - len(claim.outcome)
            except (OperationalError, InterfaceError, OSError) as exc:
                log.error(
                    "inbound queue: database unavailable (%s: %s); claiming again in %.0f s", type(exc).__name__, exc, delay
                )
                got, kept = 0, 1
            except Exception:
                log.exception("inbound queue: claiming failed; claiming again in %.0f s", delay)
                got, kept = 0, 1
            if kept and not self.stopping.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), timeout=delay)
                delay = min(delay * 2, 60.0)
                continue
            delay = 1.0
            if got == batch:
                self._work.set()  # there may be more: another claimer of ours looks too
                continue
            # fewer than asked for: nothing else was free then.  What frees more
            # (rows queued, or a finished row that held others back) is notified.
            await self._wait_for_work()

    async def _wait_for_work(self) -> None:
        """Until a NOTIFY (or a full claim of ours) says the queue may hold work and
        no other claimer of this process took that news first, or CLAIM_POLL passed:
        one claim per news, not one per claimer."""
        deadline = time.monotonic() + CLAIM_POLL
        while not self.stopping.is_set():
            if self._work.is_set():
                self._work.clear()
                return
            work = asyncio.ensure_future(self._work.wait())
            stop = asyncio.ensure_future(self.stopping.wait())
            try:
                _, pending = await asyncio.wait(
                    {work, stop}, timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                work.cancel()
                stop.cancel()
            if len(pending) == 2:
                return  # CLAIM_POLL: look anyway

    async def claims_finished(self) -> None:
        """Until the claim loops of this process have ended (after shutdown began)."""
        if self._claimers:
            await asyncio.wait(self._claimers, timeout=60)

    def start_claimers(self, queue: InboundQueue) -> list[asyncio.Task[None]]:
        """Claim mails from the shared queue until shutdown (:meth:`claim_loop`, ``CLAIMERS`` at once)."""
        self._claimers = [asyncio.create_task(self.claim_loop(queue), name=f"claim{i}") for i in range(CLAIMERS)]
        return list(self._claimers)

    def queue_news(self) -> None:
        """The shared queue may hold mails this worker can claim (a NOTIFY came)."""
        self._work.set()

    async def take(self, raw: bytes) -> None:
        """One mail from a transport that answers its sender by the outcome (the
        embedded listener: 250, or 451 when this raises)."""
        note = self.batcher.expect()
        try:
            result = await self.process_raw(raw, note)
        finally:
            note.done()
        if result.status == "deferred":
            raise RuntimeError("shutting down")

    def _coming(self) -> int:
        """Mails the transport is receiving (see :mod:`.batching`)."""
        return self.inbound.receiving()

    def _overdue(self) -> None:
        """The mails the transport is receiving were waited for in vain."""
        self.inbound.overdue()

    # ------------------------------------------------------------------- loops
    async def outbound_loop(self) -> None:
        """Send replies as mails queue them (:mod:`.sender`): from the sender
        process, or with ``server.outbox_process`` false from this one."""
        if self.config.server.outbox_process:
            await SenderProcess(self.config, self.metrics).run(self.wake_outbound, self.stopping)
        else:
            await send_here(self.db, self.config, self.wake_outbound, self.stopping,
                            lambda r: self.metrics.replies(r.sent, r.failed))  # fmt: skip

    async def scheduler_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                handled = await self.service.run_timers()
                if handled:
                    log.info("timers: %d games handled", handled)
                    self.wake_outbound.set()
                    await self.robots.rescan()  # a forfeit may have given a robot the move
            except Exception:
                log.exception("timer run failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=self.config.server.scheduler_interval)

    # ----------------------------------------------------------------- running
    async def run(self, started: Callable[[], object] | None = None) -> None:
        """Serve until :meth:`stop`.  ``started`` is called once every listener is up
        (the CLI writes its pid file then).  A port already in use raises OSError
        before anything else is left running."""
        cfg = self.config
        await self.db.migrate()
        monitor = LoopMonitor(self.metrics)  # the loop's lag on /metrics and /healthz, a warning for a step over 100 ms
        if cfg.server.health_port:
            self._health = HealthEndpoint(self.db, self.metrics, self.inbound.kind, monitor=monitor,
                                          stuck_minutes=cfg.server.health_outbox_stuck_minutes,
                                          max_lag=cfg.server.health_max_loop_lag)  # fmt: skip
            await self._health.start("127.0.0.1", cfg.server.health_port)
            log.info("health endpoint on http://127.0.0.1:%d/healthz and /metrics", cfg.server.health_port)
        monitor.start()
        try:
            await self.inbound.start()
        except OSError:
            monitor.stop()
            if self._health is not None:
                self._health.close()
            await self.db.close()
            raise
        tasks = [asyncio.create_task(self.outbound_loop(), name="outbound"),
                 asyncio.create_task(self.scheduler_loop(), name="scheduler"),
                 asyncio.create_task(self.robots.run(self.stopping), name="robots")]  # fmt: skip
        web = "off"
        if cfg.web.enabled:
            # the read-only archive beside the mail loop; a port in use costs the web, not the mail
            host, port = cfg.web.address()
            try:
                sock = listen_socket(host, port)
            except OSError as exc:
                log.error("web archive: cannot listen on %s (%s); serving mail without it", cfg.web.listen, exc.strerror or exc)
                web = f"not running (cannot listen on {cfg.web.listen})"
            else:
                # in a process of its own (web/process.py): 200 web clients cannot hold up the mail
                beside = serve_beside(self.db, sock, server_name=cfg.server.name, public_url=cfg.web.public_url,
                                      address=cfg.server.address, stop=self.stopping, play=self.web_play,
                                      timers=Timers(cfg.timers.forfeittime, cfg.timers.vacation_days))  # fmt: skip
                task = asyncio.create_task(beside, name="web")

                def web_stopped(t: asyncio.Task[None]) -> None:
                    if not t.cancelled() and t.exception() is not None:
                        log.error("web archive stopped; mail goes on", exc_info=t.exception())

                task.add_done_callback(web_stopped)
                tasks.append(task)
                web = f"http://{cfg.web.listen}/" + (f" (public address {cfg.web.public_url}/)" if cfg.web.public_url else "")
                log.info("web archive on %s", web)
        tasks.append(asyncio.create_task(self.inbound.run(), name=f"in-{self.inbound.kind}"))
        log.info("%s", self.inbound.describe(web))
        if started is not None:
            started()
        await self.stopping.wait()
        log.info("stopping: finishing the mail in hand")
        await self.inbound.stop()
        await self.runner.wait_idle()
        self.wake_outbound.set()
        _done, pending = await asyncio.wait(tasks, timeout=30)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if self._health is not None:
            self._health.close()
        monitor.stop()
        self.reader.close()
        await self.db.close()
        log.info("stopped")

    def stop(self) -> None:
        self.stopping.set()
