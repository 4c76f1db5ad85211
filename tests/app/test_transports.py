"""Transports behind one protocol (issue 37): the configuration picks one from a
table, and ``Server`` runs whichever it is given, a fourth one too."""

from __future__ import annotations

import asyncio
import mailbox
from pathlib import Path

from pbmserv_terrace.app.server import Server
from pbmserv_terrace.app.transports import INBOUND, EmbeddedIn, ImapIn, Sink
from pbmserv_terrace.config import Config, load_config
from pbmserv_terrace.mail.delivery import OUTBOUND, MaildirDelivery, SmtpDelivery, delivery_for

from ..service.harness import raw_mail

SERVER = "pbmserv@terrace.test"
ADDRESSES = ("ann@home.test", "ben@home.test")


def config(tmp_path: Path, **extra: str) -> Config:
    return load_config(
        None,
        {
            "PBMSERV_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'b.db'}",
            "PBMSERV_ADDRESS": SERVER,
            "PBMSERV_EMBEDDED_MAILDIR_ROOT": str(tmp_path / "maildirs"),
            "PBMSERV_SERVER_OUTBOX_PROCESS": "false",
            "PBMSERV_WEB_LISTEN": "off",
            **extra,
        },
    )


def test_the_configuration_names_the_transports_from_one_table(tmp_path: Path) -> None:
    embedded = config(tmp_path)
    assert (embedded.inbound, embedded.outbound) == ("embedded", "maildir")
    assert INBOUND[embedded.inbound] is EmbeddedIn and isinstance(delivery_for(embedded), MaildirDelivery)
    assert isinstance(Server(embedded).inbound, EmbeddedIn)
    real = config(tmp_path, PBMSERV_IMAP_HOST="imap.club.test", PBMSERV_IMAP_USER="pbm", PBMSERV_SMTP_HOST="smtp.club.test")
    assert (real.inbound, real.outbound) == ("imap", "smtp")
    assert INBOUND[real.inbound] is ImapIn and isinstance(delivery_for(real), SmtpDelivery)
    assert set(OUTBOUND) == {"smtp", "maildir"}


class HandedIn:
    """A fourth transport, as a test writes one: it hands the mails of a list to the
    server one by one and keeps their outcomes (as an LMTP listener would answer)."""

    kind = "handed"
    files_failed = False

    def __init__(self, sink: Sink, raws: list[bytes]) -> None:
        self.sink, self.raws = sink, raws
        self.taken: list[str] = []
        self.started = self.stopped = False

    async def start(self) -> None:
        self.started = True
        self.sink.set_inbound_connected(True)

    async def run(self) -> None:
        for raw in self.raws:
            try:
                await self.sink.take(raw)
                self.taken.append("taken")
            except Exception as exc:  # (what the transport would tell its client)
                self.taken.append(type(exc).__name__)
        await self.sink.stopping.wait()

    async def stop(self) -> None:
        self.stopped = True

    def receiving(self) -> int:
        return 0

    def overdue(self) -> None:
        return None

    def describe(self, web: str) -> str:
        return f"mail handed in by a test; web archive {web}"


def test_serve_runs_whatever_transport_it_is_given(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    made: list[HandedIn] = []

    def handed(sink: Sink) -> HandedIn:
        made.append(HandedIn(sink, [raw_mail("ann@home.test", "help"), raw_mail("ben@home.test", "terrace help")]))
        return made[0]

    async def run() -> None:
        server = Server(cfg, inbound=handed)
        up = asyncio.Event()
        serving = asyncio.create_task(server.run(up.set))
        await asyncio.wait_for(up.wait(), 30)
        for _ in range(600):  # until both replies are written (they are sent after the commit)
            if len(made[0].taken) == 2 and all(any((tmp_path / "maildirs" / a / "new").glob("*")) for a in ADDRESSES):
                break
            await asyncio.sleep(0.05)
        server.stop()
        await asyncio.wait_for(serving, 30)

    asyncio.run(run())
    transport = made[0]
    assert transport.started and transport.stopped and transport.taken == ["taken", "taken"]
    for address, subject in (("ann@home.test", "help"), ("ben@home.test", "Terrace help")):
        box = mailbox.Maildir(tmp_path / "maildirs" / address, create=False)
        subjects = [m["Subject"] for m in box]
        assert any(subject in s for s in subjects), (address, subjects)
