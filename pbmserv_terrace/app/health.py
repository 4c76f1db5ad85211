"""``/healthz`` and ``/metrics`` of a running server, on a loopback port.

Metrics are kept with ``prometheus-client`` in a registry of this server's own
(mails handled by outcome, command latency, replies sent and failed, passwords
verified with the slow hash, the transactions mails were handled in (group
commits) and the mails in them, the outbox depth, whether the inbound connection is
up, and the process collector's CPU, memory and file descriptors) and answered
in the Prometheus text format, with ``pbmserv_build_info`` (version and Python).
``/healthz`` tells the truth (issue 43 part 7): it answers ``200`` with its
checks as JSON when all is well and ``503`` naming each part that is down
(``"down": ["database", "mailbox"]``, and a line for each in ``checks``):

- ``database``: one read (the pending replies' count and earliest due time) within
  DB_TIMEOUT seconds;
- ``mailbox``: the inbound connection (IMAP logged in and its inbox selected; the
  embedded SMTP listener bound), down for more than MAILBOX_GRACE seconds (a
  reconnect is not an outage);
- ``outbox``: the oldest due reply has waited more than ``[server]
  health_outbox_stuck_minutes`` (the senders are not sending);
- ``event_loop``: :class:`LoopMonitor` saw the loop held for more than ``[server]
  health_max_loop_lag`` seconds in the last LAG_WINDOW seconds.

The checks are cheap and run at most once a CACHE_SECONDS (requests meanwhile get
the same answer; a database that does not answer costs a request DB_TIMEOUT at
most, never the event loop).  A rotated OAuth2 refresh token that could not be
written makes ``/healthz`` say ``degraded`` (still 200) with where and why
(``pbmserv_oauth2_token_unsaved`` on ``/metrics``).  ``/healthz`` only reads: it
never takes SQLite's write lock, so it answers while mail is being handled.

:class:`LoopMonitor` watches the event loop that takes mail (issue 36): a beat
every 50 ms measures its own oversleep (``pbmserv_event_loop_lag_seconds``), and
a watchdog thread notices a beat that does not come within 100 ms and notes
where the loop's thread is then; when the loop is free again the step that held
it is logged as a warning with that place (at most one warning every 10 s, with
the number of others since; ``pbmserv_event_loop_stalls_total`` counts them
all).  asyncio's own ``slow_callback_duration`` would say which callback it was,
but it is only looked at in debug mode, which costs every callback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import platform
import sys
import threading
import time
import traceback
from collections import deque
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, PlatformCollector, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from .. import __version__
from ..mail.oauth2 import unsaved_tokens
from ..store import Database, utcnow
from ..store.repos import Outbox

log = logging.getLogger("pbmserv.health")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BEAT = 0.05
"""seconds between the loop monitor's beats"""
STALL = 0.1
"""a step that holds the event loop longer than this is logged"""
STALL_LOG_EVERY = 10.0
"""seconds: at most one stall warning this often (the others are counted)"""
STILL_STALLED = 5.0
"""seconds: a loop held this long is told while it is still held"""
CACHE_SECONDS = 1.0
"""/healthz's checks run at most this often"""
DB_TIMEOUT = 2.0
"""seconds /healthz waits for the database's answer"""
MAILBOX_GRACE = 5.0
"""seconds the inbound connection may be down (reconnecting) before /healthz says so"""
LAG_WINDOW = 10.0
"""seconds of the event loop's past that /healthz looks at"""


class Metrics:
    """The server's counters, in a registry of its own (several servers in one
    process, as in the tests, do not share counts)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.mails = Counter("pbmserv_mails", "Mails handled, by outcome", ["result"], registry=self.registry)
        self.command_seconds = Histogram(
            "pbmserv_command_seconds",
            "Time to handle one mail, in seconds",
            ["result"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.replies_sent = Counter(
            "pbmserv_replies_sent", "Replies handed to SMTP or written to a Maildir", registry=self.registry
        )
        self.replies_failed = Counter("pbmserv_replies_failed", "Replies given up on", registry=self.registry)
        self.password_checks = Counter(
            "pbmserv_password_checks",
            "Passwords verified with the slow hash (the others were answered from the cache of recent successes)",
            registry=self.registry,
        )
        self.batches = Counter(
            "pbmserv_batches",
            "Transactions mails were handled in (a batch: the mails ready together; see pbmserv_batched_mails)",
            registry=self.registry,
        )
        self.batched_mails = Counter(
            "pbmserv_batched_mails",
            "Mails handled in those transactions (divided by pbmserv_batches: the mean batch)",
            registry=self.registry,
        )
        self.outbox_pending = Gauge("pbmserv_outbox_pending", "Replies waiting in the outbox", registry=self.registry)
        self.inbound_connected = Gauge(
            "pbmserv_inbound_connected", "1 while the inbound mail connection is up", registry=self.registry
        )
        self.loop_lag = Histogram(
            "pbmserv_event_loop_lag_seconds",
            f"How late the event loop ran a callback due every {BEAT:g} s (its lag), in seconds",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.loop_stalls = Counter(
            "pbmserv_event_loop_stalls",
            f"Times the event loop was held over {STALL * 1000:.0f} ms at a stretch",
            registry=self.registry,
        )
        self.started = Gauge("pbmserv_start_time_seconds", "When this server started (Unix time)", registry=self.registry)
        self.started.set(time.time())
        self.build_info = Gauge(
            "pbmserv_build_info", "Always 1; its labels say which version runs on which Python",
            ["version", "python"], registry=self.registry,
        )  # fmt: skip
        self.build_info.labels(version=__version__, python=platform.python_version()).set(1)
        self.token_unsaved = Gauge(
            "pbmserv_oauth2_token_unsaved",
            "OAuth2 refresh tokens the provider rotated that could not be written (kept in memory; see the log)",
            registry=self.registry,
        )
        self.inbound_up = False
        self.inbound_since = time.monotonic()
        """when the inbound connection last went up or down (monotonic)"""
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self._seen: dict[str, int] = {}
        """the running totals the counters have followed so far, by name"""
        self.by_result: dict[str, int] = {}

    def count(self, status: str, seconds: float) -> None:
        self.mails.labels(result=status).inc()
        self.command_seconds.labels(result=status).observe(seconds)
        self.by_result[status] = self.by_result.get(status, 0) + 1

    def inbound(self, up: bool) -> None:
        """The inbound connection is up (or down) now."""
        self.inbound_connected.set(1 if up else 0)
        if up != self.inbound_up:
            self.inbound_up, self.inbound_since = up, time.monotonic()

    def replies(self, sent_total: int, failed_total: int) -> None:
        """The outbox senders' running totals: the counters follow them."""
        self._follow(self.replies_sent, "sent", sent_total)
        self._follow(self.replies_failed, "failed", failed_total)

    def passwords(self, checks_total: int) -> None:
        """The password cache's running total of slow-hash verifications."""
        self._follow(self.password_checks, "checks", checks_total)

    def batched(self, batches_total: int, mails_total: int) -> None:
        """The group commit's running totals of batches and the mails in them."""
        self._follow(self.batches, "batches", batches_total)
        self._follow(self.batched_mails, "batched", mails_total)

    def _follow(self, counter: Counter, name: str, total: int) -> None:
        """Move ``counter`` up to a running total kept elsewhere (it never goes down)."""
        seen = self._seen.get(name, 0)
        if total > seen:
            counter.inc(total - seen)
            self._seen[name] = total

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class HealthEndpoint:
    """A tiny HTTP/1.0 listener: ``/healthz`` (JSON, 200 or 503: see the module's
    text) and ``/metrics`` (Prometheus).  ``monitor``: the event loop's
    :class:`LoopMonitor` (none: that check is left out)."""

    def __init__(
        self,
        db: Database,
        metrics: Metrics,
        inbound: str,
        *,
        monitor: LoopMonitor | None = None,
        stuck_minutes: float = 30.0,
        max_lag: float = 5.0,
    ) -> None:
        self.db, self.metrics, self.inbound = db, metrics, inbound
        self.monitor, self.stuck_minutes, self.max_lag = monitor, stuck_minutes, max_lag
        self._server: asyncio.base_events.Server | None = None
        self._checked: tuple[float, dict[str, Any]] | None = None
        self._checking: asyncio.Task[dict[str, Any]] | None = None

    async def start(self, host: str, port: int) -> None:
        if not self.metrics.inbound_up:  # (the mailbox's grace counts from here: a start is not an outage)
            self.metrics.inbound_since = time.monotonic()
        self._server = await asyncio.start_server(self._client, host, port)

    @property
    def port(self) -> int:
        """The port listened on (the one the OS chose, when started with 0)."""
        if self._server is None:
            raise RuntimeError("not started")
        return int(self._server.sockets[0].getsockname()[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.close()

    async def checks(self) -> dict[str, Any]:
        """What /healthz answers: ``status`` (ok, degraded, down), ``down`` (the
        parts that are), ``checks`` (a line for each part), ``pending_replies``.
        At most CACHE_SECONDS old; concurrent requests share one run."""
        if self._checked is not None and time.monotonic() - self._checked[0] <= CACHE_SECONDS:
            return self._checked[1]
        if self._checking is None or self._checking.done():
            self._checking = asyncio.ensure_future(self._check())
        found = await asyncio.shield(self._checking)
        self._checked = (time.monotonic(), found)
        return found

    async def _summary(self) -> tuple[int, datetime | None]:
        async with self.db.reading() as session:
            return await Outbox(session).pending_summary()

    async def _check(self) -> dict[str, Any]:
        checks: dict[str, str] = {}
        pending: int | None = None
        try:
            pending, oldest = await asyncio.wait_for(self._summary(), DB_TIMEOUT)
        except Exception as exc:  # (TimeoutError: it did not answer in time)
            what = str(exc).strip().splitlines()[0] if str(exc).strip() else "no answer"
            checks["database"] = f"down: {type(exc).__name__}: {what}"[:300]
            checks["outbox"] = "unknown: the database is down"
        else:
            checks["database"] = "ok"
            waited = utcnow() - oldest if oldest is not None else timedelta(0)
            if waited > timedelta(minutes=self.stuck_minutes):
                checks["outbox"] = (f"down: stuck, the oldest due reply has waited {waited.total_seconds() / 60:.0f} min "
                                    f"(over {self.stuck_minutes:g})")  # fmt: skip
            else:
                checks["outbox"] = "ok"
        m = self.metrics
        off = time.monotonic() - m.inbound_since
        if m.inbound_up:
            checks["mailbox"] = "ok"
        elif off > MAILBOX_GRACE:
            checks["mailbox"] = f"down: the {self.inbound} connection has been down for {off:.0f} s"
        else:
            checks["mailbox"] = f"ok: reconnecting ({self.inbound}, down for {off:.0f} s)"
        if self.monitor is not None:
            lag = self.monitor.recent_lag(LAG_WINDOW)
            checks["event_loop"] = (
                f"down: lagging, held {lag:.2f} s at a stretch in the last {LAG_WINDOW:g} s (over {self.max_lag:g})"
                if lag > self.max_lag
                else "ok"
            )
        down = [part for part, line in checks.items() if line.startswith("down")]
        return {"down": down, "checks": checks, "pending_replies": pending}

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            path = request.decode("latin-1").split(" ")[1] if request.count(b" ") >= 2 else "/"
            if path == "/metrics":
                found = await self.checks()
                if found["pending_replies"] is not None:  # (the database down: the last count stands)
                    self.metrics.outbox_pending.set(found["pending_replies"])
                self.metrics.token_unsaved.set(len(unsaved_tokens()))
                status, body, ctype = "200 OK", self.metrics.exposition(), CONTENT_TYPE_LATEST
            elif path == "/healthz":
                found = await self.checks()
                unsaved = unsaved_tokens()
                info: dict[str, object] = {
                    "status": "down" if found["down"] else "degraded" if unsaved else "ok",
                    "pending_replies": found["pending_replies"],
                    "mails": self.metrics.by_result,
                    "inbound": self.inbound,
                    "checks": found["checks"],
                }
                if found["down"]:
                    info["down"] = found["down"]
                if unsaved:
                    info["oauth2_token_unsaved"] = unsaved  # where and why, never the token
                status = "503 Service Unavailable" if found["down"] else "200 OK"
                body, ctype = (json.dumps(info) + "\n").encode(), "application/json"
            else:
                status, body, ctype = "404 Not Found", b"not found: try /healthz or /metrics\n", "text/plain"
            head = f"HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
            writer.write(head.encode() + body)
            await writer.drain()
        except Exception:
            log.debug("health request failed", exc_info=True)
        finally:
            writer.close()


class LoopMonitor:
    """The event loop's lag and its stalls (see the module's text): :meth:`start`
    on the loop, :meth:`stop` at the end."""

    def __init__(self, metrics: Metrics, *, beat: float = BEAT, stall: float = STALL, log_every: float = STALL_LOG_EVERY):
        self.metrics, self.beat, self.stall, self.log_every = metrics, beat, stall, log_every
        self.noticed = threading.Event()
        """set by the watchdog when it finds the loop held (tests wait for it)"""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._last_beat = time.monotonic()
        self._where: tuple[float, str] = (0.0, "")
        """(the beat it came after, where the loop's thread was) when the watchdog found it held"""
        self._thread_id = 0
        self._stopped = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._next_log = 0.0
        self._unlogged = 0
        self._lags: deque[tuple[float, float]] = deque()
        """(when, lag) of the beats that came late by more than a beat, for :meth:`recent_lag`"""

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread_id = threading.get_ident()
        self._last_beat = time.monotonic()
        self._due = self._loop.time() + self.beat
        self._handle = self._loop.call_at(self._due, self._on_beat)
        self._watchdog = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)
        self._watchdog.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._handle is not None:
            self._handle.cancel()
        if self._watchdog is not None:
            self._watchdog.join(5)

    def _on_beat(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        lag = max(0.0, now - self._due)
        after, where = self._where
        place = where if after == self._last_beat else ""  # (not a note of an earlier stall's)
        self._last_beat = time.monotonic()
        self.metrics.loop_lag.observe(lag)
        if lag > self.beat:
            self._lags.append((self._last_beat, lag))
            while self._lags and self._lags[0][0] < self._last_beat - 300.0:
                self._lags.popleft()
        if lag > self.stall:
            self._stalled(lag, place)
        self._due = now + self.beat
        self._handle = self._loop.call_at(self._due, self._on_beat)

    def recent_lag(self, window: float) -> float:
        """The longest the loop was held at a stretch in the last ``window``
        seconds (its beats' lag; a hold going on now counts as far as it went)."""
        now = time.monotonic()
        held = max((lag for when, lag in self._lags if when >= now - window), default=0.0)
        return max(held, now - self._last_beat - self.beat)

    def _stalled(self, lag: float, where: str) -> None:
        self.metrics.loop_stalls.inc()
        clock = time.monotonic()
        if clock < self._next_log:
            self._unlogged += 1
            return
        others = f" ({self._unlogged} more since the last warning)" if self._unlogged else ""
        log.warning("a step held the event loop for %.0f ms%s%s", lag * 1000, f", at {where}" if where else "", others)
        self._next_log, self._unlogged = clock + self.log_every, 0

    def _watch(self) -> None:
        """The watchdog thread: notes where the loop's thread is when a beat is
        overdue by ``stall`` (and says so if it stays held STILL_STALLED)."""
        told = 0.0
        while not self._stopped.wait(self.beat / 2):
            last = self._last_beat
            held = time.monotonic() - last - self.beat
            if held <= self.stall:
                told = 0.0
                continue
            if self._where[0] != last:
                self._where = (last, self._place())
                self.noticed.set()
            if held - told > STILL_STALLED:
                told = held
                log.warning("the event loop has been held for %.1f s so far, at %s", held, self._where[1] or "?")

    def _place(self) -> str:
        """The innermost frames of the loop's thread now, one line."""
        frame = sys._current_frames().get(self._thread_id)
        if frame is None:
            return ""
        frames = traceback.extract_stack(frame, limit=6)
        return " < ".join(f"{f.name} ({f.filename.rsplit('/', 1)[-1]}:{f.lineno})" for f in reversed(frames))
