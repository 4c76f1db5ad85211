"""``pbmserv-terrace serve``: inbound mail → service → outbox → delivery, plus the
timer scheduler and a health endpoint, in one asyncio process.

Inbound is IMAP (configured) or the embedded SMTP listener; delivery is SMTP
(configured) or local Maildirs.  SIGTERM/SIGINT stop accepting new mail, let the
mail in hand finish, send what is due, and exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass, field

from .config import Config
from .mail.embedded import EmbeddedInbound
from .mail.message import parse_message
from .mail.outbound import delivery_for, drain_outbox
from .pipe import save_failed
from .service import HandleResult, Service
from .store import Database, UnitOfWork

log = logging.getLogger("pbmserv.serve")


@dataclass
class Metrics:
    started: float = field(default_factory=time.time)
    mails: dict[str, int] = field(default_factory=dict)
    replies_sent: int = 0
    replies_failed: int = 0
    last_mail: float = 0.0
    inbound_connected: bool = False

    def count(self, status: str) -> None:
        self.mails[status] = self.mails.get(status, 0) + 1
        self.last_mail = time.time()

    def text(self) -> str:
        lines = [
            "# TYPE pbmserv_mails_total counter",
            *(f'pbmserv_mails_total{{result="{k}"}} {v}' for k, v in sorted(self.mails.items())),
            "# TYPE pbmserv_replies_sent_total counter",
            f"pbmserv_replies_sent_total {self.replies_sent}",
            "# TYPE pbmserv_replies_failed_total counter",
            f"pbmserv_replies_failed_total {self.replies_failed}",
            "# TYPE pbmserv_uptime_seconds gauge",
            f"pbmserv_uptime_seconds {time.time() - self.started:.0f}",
            "# TYPE pbmserv_inbound_connected gauge",
            f"pbmserv_inbound_connected {int(self.inbound_connected)}",
        ]
        return "\n".join(lines) + "\n"


class Server:
    def __init__(self, config: Config, db: Database | None = None) -> None:
        self.config = config
        self.db = db or Database(config.server.database_url)
        self.service = Service(self.db, config)
        self.metrics = Metrics()
        self.stopping = asyncio.Event()
        self.wake_outbound = asyncio.Event()
        self._busy = asyncio.Lock()
        self.embedded: EmbeddedInbound | None = None
        self._health: asyncio.base_events.Server | None = None

    # ---------------------------------------------------------------- one mail
    async def process_raw(self, raw: bytes) -> HandleResult:
        """Run one raw mail through the service.  A crash saves the mail to the
        ``failed`` directory and is reported as ``failed`` (the caller moves the
        IMAP message to the failed folder); it never propagates."""
        async with self._busy:  # shutdown waits for the mail in hand
            try:
                result = await self.service.handle_mail(parse_message(raw))
            except Exception as exc:
                log.exception("mail crashed its handler; kept for the operator")
                if self.embedded is not None:
                    path = save_failed(raw, self.config.imap.failed_folder, f"{type(exc).__name__}: {exc}")
                    log.error("saved to %s", path)
                result = HandleResult("failed", f"{type(exc).__name__}: {exc}")
            self.metrics.count(result.status)
            log.info(result.log_line())
            if result.outbox_ids:
                self.wake_outbound.set()
            return result

    async def _embedded_handle(self, raw: bytes) -> None:
        if self.stopping.is_set():
            raise RuntimeError("shutting down")
        await self.process_raw(raw)

    # ------------------------------------------------------------------- loops
    async def outbound_loop(self) -> None:
        delivery = delivery_for(self.config)
        while True:
            try:
                result = await drain_outbox(self.db, delivery, self.config)
                self.metrics.replies_sent += result.sent
                self.metrics.replies_failed += result.failed
            except Exception:
                log.exception("outbox drain failed; retrying")
            if self.stopping.is_set():
                return
            self.wake_outbound.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake_outbound.wait(), timeout=5.0)

    async def scheduler_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                handled = await self.service.run_timers()
                if handled:
                    log.info("timers: %d games handled", handled)
                    self.wake_outbound.set()
            except Exception:
                log.exception("timer run failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=self.config.server.scheduler_interval)

    async def _health_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            path = request.decode("latin-1").split(" ")[1] if request.count(b" ") >= 2 else "/"
            if path == "/metrics":
                status, body, ctype = "200 OK", self.metrics.text(), "text/plain; version=0.0.4"
            elif path == "/healthz":
                async with UnitOfWork(self.db) as uow:
                    pending = await uow.outbox.pending_count()
                info = {"status": "ok", "pending_replies": pending, "mails": self.metrics.mails,
                        "inbound": "imap" if self.config.uses_imap else "embedded-smtp"}  # fmt: skip
                status, body, ctype = "200 OK", json.dumps(info) + "\n", "application/json"
            else:
                status, body, ctype = "404 Not Found", "not found\n", "text/plain"
            data = body.encode()
            writer.write(f"HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
            await writer.drain()
        except Exception:
            log.debug("health request failed", exc_info=True)
        finally:
            writer.close()

    # ----------------------------------------------------------------- running
    async def run(self) -> None:
        cfg = self.config
        await self.db.migrate()
        tasks = [asyncio.create_task(self.outbound_loop(), name="outbound"),
                 asyncio.create_task(self.scheduler_loop(), name="scheduler")]  # fmt: skip
        if cfg.server.health_port:
            self._health = await asyncio.start_server(self._health_client, "127.0.0.1", cfg.server.health_port)
            log.info("health endpoint on http://127.0.0.1:%d/healthz and /metrics", cfg.server.health_port)
        if cfg.uses_imap:
            from .mail.imap import ImapInbound

            imap = ImapInbound(cfg, self)
            tasks.append(asyncio.create_task(imap.run(), name="imap"))
            log.info("reading mail for %s from IMAP %s:%d (%s); sending over SMTP %s:%d",
                     cfg.server.address, cfg.imap.host, cfg.imap.port, cfg.imap.tls, cfg.smtp.host, cfg.smtp.port)  # fmt: skip
        else:
            self.embedded = EmbeddedInbound(cfg.embedded.listen_host, cfg.embedded.listen_port, self._embedded_handle)
            await self.embedded.start()
            self.metrics.inbound_connected = True
            log.info(
                "embedded default: mail to %s is taken on %s:%d (pbmserv-terrace send), replies go to ./%s/<address>/ "
                "(pbmserv-terrace inbox ADDRESS), database %s. For real mail set [imap] and [smtp] in pbmserv.toml "
                "(see deploy/pbmserv.toml).",
                cfg.server.address, cfg.embedded.listen_host, self.embedded.port, cfg.embedded.maildir_root,
                self.db.engine.url.render_as_string(hide_password=True),
            )  # fmt: skip
        await self.stopping.wait()
        log.info("stopping: finishing the mail in hand")
        if self.embedded is not None:
            await self.embedded.stop()
        async with self._busy:
            pass
        self.wake_outbound.set()
        _done, pending = await asyncio.wait(tasks, timeout=30)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if self._health is not None:
            self._health.close()
        await self.db.close()
        log.info("stopped")

    def stop(self) -> None:
        self.stopping.set()
