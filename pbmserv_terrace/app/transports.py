"""Mail in (issue 37): where ``serve`` takes its mail from, behind one small
protocol, chosen from the configuration by one table.

Words (ARCHITECTURE.md, "Vocabulary"): a *transport* brings mail in (:class:`MailIn`:
the embedded SMTP listener, an IMAP mailbox) or takes replies out (a *delivery*,
:class:`~..mail.delivery.Delivery`: SMTP, Maildirs).  :data:`INBOUND` names the
transports in by :attr:`~..config.Config.inbound`; ``mail.delivery.OUTBOUND`` the
deliveries by :attr:`~..config.Config.outbound`.  :class:`~.server.Server` runs
whichever transport it is given and knows none of them: a new one is one class
here and one entry in the table (LMTP was added so: :class:`LmtpIn`).

A transport hands each raw mail to the :class:`Sink` (the server): one mail and
its outcome (:meth:`Sink.take`, the embedded listener answers 250 or 451 by it), or
mails it fetched in order (:meth:`Sink.prepare` and :meth:`Sink.submit`: the IMAP
loop files each message by its outcome after the commit).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from ..config import Config
from ..mail.embedded import SmtpListener
from ..mail.imap import ImapMailbox
from ..mail.lmtp import LmtpListener
from ..store import Database, InboundQueue, QueueListener


class Sink(Protocol):
    """What a transport hands its mail to (the running :class:`~.server.Server`)."""

    config: Config
    db: Database
    stopping: asyncio.Event

    def set_inbound_connected(self, up: bool) -> None: ...

    async def take(self, raw: bytes) -> None:
        """Handle one mail now; raises when it was not handled (the sender should retry)."""
        ...

    async def prepare(self, raws: list[bytes]) -> Any: ...

    def submit(self, raws: list[bytes], prepared: Any) -> list[asyncio.Task[Any]]: ...

    async def describe(self, raw: bytes) -> tuple[str, frozenset[str] | None]: ...

    async def claims_finished(self) -> None: ...

    def start_claimers(self, queue: InboundQueue) -> list[asyncio.Task[None]]:
        """Claim mails from the shared queue (PostgreSQL) until stopping."""
        ...

    def queue_news(self) -> None:
        """The shared queue may hold mails to claim (a NOTIFY came)."""
        ...


class MailIn(Protocol):
    """A transport that brings mail in."""

    kind: str
    """its name on /healthz (``embedded-smtp``, ``imap``)"""
    files_failed: bool
    """it files a mail whose handler crashed itself (IMAP: the failed folder); when
    False, ``serve`` saves such a mail into the failed directory"""

    async def start(self) -> None:
        """Take mail from now on (a port in use raises OSError here, before anything runs)."""
        ...

    async def run(self) -> None:
        """Until the sink is stopping (then the mail in hand is finished)."""
        ...

    async def stop(self) -> None:
        """Take no more mail; wait for the mails being handed over."""
        ...

    def receiving(self) -> int:
        """Mails arriving right now (a batch may wait for them: ``app.batching``)."""
        ...

    def overdue(self) -> None:
        """The mails :meth:`receiving` counted were waited for in vain."""
        ...

    def describe(self, web: str) -> str:
        """One log line: where mail comes from and where replies go (``web``: the archive's address)."""
        ...


class ListenerIn:
    """What a transport whose listener answers its clients by itself shares (the
    embedded SMTP listener, LMTP): ``listener`` hands each mail to ``sink.take``."""

    sink: Sink
    listener: SmtpListener

    async def start(self) -> None:
        await self.listener.start()
        self.sink.set_inbound_connected(True)

    async def run(self) -> None:
        await self.sink.stopping.wait()  # (the listener answers on its own)

    async def stop(self) -> None:
        await self.listener.stop()

    def receiving(self) -> int:
        return self.listener.receiving()

    def overdue(self) -> None:
        self.listener.overdue()


class EmbeddedIn(ListenerIn):
    """The embedded default: an SMTP listener on loopback (``pbmserv-terrace send``)."""

    kind = "embedded-smtp"
    files_failed = False

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        cfg = sink.config.embedded
        self.listener = SmtpListener(cfg.listen_host, cfg.listen_port, sink.take)

    def describe(self, web: str) -> str:
        cfg = self.sink.config
        return (
            f"embedded default: mail to {cfg.server.address} is taken on {cfg.embedded.listen_host}:{self.listener.port} "
            f"(pbmserv-terrace send), replies go to ./{cfg.embedded.maildir_root}/<address>/ (pbmserv-terrace inbox "
            f"ADDRESS), database {self.sink.db.engine.url.render_as_string(hide_password=True)}, web archive {web}. "
            "For real mail set [imap] and [smtp] in pbmserv.toml (see deploy/pbmserv.toml)."
        )


class LmtpIn(ListenerIn):
    """LMTP from the local MTA (Postfix's ``lmtp`` client) on a UNIX socket or a TCP
    port: each mail is answered 250 per recipient after its commit, 451 when it could
    not be handled (the MTA keeps it and tries again)."""

    kind = "lmtp"
    files_failed = False
    listener: LmtpListener

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        cfg = sink.config.lmtp
        self.listener = LmtpListener(cfg.listen, sink.take, socket_mode=cfg.mode, socket_group=cfg.socket_group)

    def describe(self, web: str) -> str:
        cfg = self.sink.config
        out = f"SMTP {cfg.smtp.host}:{cfg.smtp.port}" if cfg.uses_smtp else f"./{cfg.embedded.maildir_root}/<address>/"
        return (
            f"taking mail for {cfg.server.address} by LMTP on {self.listener.where}; replies go to {out}; "
            f"database {self.sink.db.engine.url.render_as_string(hide_password=True)}; web archive {web}"
        )


class ImapIn:
    """An IMAP mailbox (IDLE or polling).  On PostgreSQL every worker claims mails
    from the database's shared inbound queue, which the worker holding the mailbox
    lock fills (:mod:`..store.queue`)."""

    kind = "imap"
    files_failed = True

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        cfg = sink.config
        self.queue = None if sink.db.is_sqlite else InboundQueue(sink.db, f"{cfg.imap.host}/{cfg.imap.user}/{cfg.imap.inbox}")
        self.mailbox = ImapMailbox(cfg, sink, self.queue)

    async def start(self) -> None:
        return None

    async def run(self) -> None:
        loops = [asyncio.create_task(self.mailbox.run(), name="imap")]
        if self.queue is not None:
            listener = QueueListener(self.sink.db, self.sink.queue_news)
            loops.append(asyncio.create_task(listener.run(self.sink.stopping), name="queue-listener"))
            loops += self.sink.start_claimers(self.queue)
        try:
            await asyncio.gather(*loops)
        finally:
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)

    async def stop(self) -> None:
        return None  # (the loops end as the sink stops)

    def receiving(self) -> int:
        return 0

    def overdue(self) -> None:
        return None

    def describe(self, web: str) -> str:
        cfg = self.sink.config
        return (
            f"reading mail for {cfg.server.address} from IMAP {cfg.imap.host}:{cfg.imap.port} ({cfg.imap.tls}); "
            f"sending over SMTP {cfg.smtp.host}:{cfg.smtp.port}; web archive {web}"
        )


INBOUND: dict[str, Callable[[Sink], MailIn]] = {"embedded": EmbeddedIn, "imap": ImapIn, "lmtp": LmtpIn}
"""the transports that bring mail in, by :attr:`Config.inbound`"""
