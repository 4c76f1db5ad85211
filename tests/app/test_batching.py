"""serve's group commit waits, briefly, for mails known to be on their way
(:mod:`pbmserv_terrace.app.batching`): under load the embedded listener's
clients get one batch where they got several, and a lone mail waits for nobody."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiosmtplib

from pbmserv_terrace.app.batching import GroupCommit
from pbmserv_terrace.app.server import Server
from pbmserv_terrace.config import Config, load_config
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.mail.embedded import SmtpListener
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service import HandleResult
from pbmserv_terrace.testing.postgres import free_port

from ..service.harness import raw_mail

SERVER = "pbmserv@terrace.test"
HANG = 30.0
"""seconds after which a test gives up (a hang, not a timing check)"""


def mail(sender: str) -> InboundMail:
    return parse_message(raw_mail(sender, "help"))


class Recorder:
    """A batch handler that notes each batch's size."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    async def __call__(self, mails: list[InboundMail]) -> list[HandleResult | Exception]:
        self.sizes.append(len(mails))
        await asyncio.sleep(0)
        return [HandleResult("ok") for _ in mails]


def test_a_free_lane_waits_for_an_expected_mail() -> None:
    record = Recorder()

    async def run() -> None:
        group = GroupCommit(record, limit=10, lanes=1, gather=HANG)
        late = group.expect()

        async def later() -> HandleResult:
            await asyncio.sleep(0.05)
            return await group.handle(mail("b@p.test"), late)

        first = asyncio.create_task(group.handle(mail("a@p.test")))
        await asyncio.sleep(0.02)
        assert not first.done() and record.sizes == []  # waiting for b's mail
        results = await asyncio.wait_for(asyncio.gather(first, later()), HANG)
        assert [r.status for r in results] == ["ok", "ok"] and group.on_way == 0

    asyncio.run(run())
    assert record.sizes == [2]


def test_an_expected_mail_that_does_not_come_holds_nobody_longer_than_gather() -> None:
    record = Recorder()

    async def run() -> None:
        group = GroupCommit(record, limit=10, lanes=1, gather=0.05)
        never = group.expect()  # e.g. waits for a password check: it says so, later
        assert (await asyncio.wait_for(group.handle(mail("a@p.test")), HANG)).status == "ok"
        never.done()
        never.done()  # (a second time changes nothing)
        assert group.on_way == 0
        assert (await asyncio.wait_for(group.handle(mail("c@p.test")), HANG)).status == "ok"

    asyncio.run(run())
    assert record.sizes == [1, 1]


def test_nothing_on_its_way_nothing_waits() -> None:
    record = Recorder()

    async def run() -> None:
        group = GroupCommit(record, limit=10, lanes=1, gather=HANG, coming=lambda: 0)
        assert (await asyncio.wait_for(group.handle(mail("a@p.test")), 5.0)).status == "ok"

    asyncio.run(run())
    assert record.sizes == [1]


def test_a_mail_waited_for_in_vain_is_told_overdue_and_not_waited_for_again() -> None:
    """A client that stalls mid-mail: the first batch waits ``gather`` for it and
    says so (``overdue``); the listener then leaves it out of ``coming``, and the
    next batches start at once."""
    record = Recorder()
    stalled = [1]
    told: list[int] = []

    def overdue() -> None:
        told.append(stalled[0])
        stalled[0] = 0

    async def run() -> None:
        group = GroupCommit(record, limit=10, lanes=1, gather=0.1, coming=lambda: stalled[0], overdue=overdue)
        assert (await asyncio.wait_for(group.handle(mail("a@p.test")), HANG)).status == "ok"
        assert told == [1]
        group.gather = HANG  # a wait now would outlast the test's patience
        for sender in ("b@p.test", "c@p.test"):
            assert (await asyncio.wait_for(group.handle(mail(sender)), 5.0)).status == "ok"
        assert told == [1]

    asyncio.run(run())
    assert record.sizes == [1, 1, 1]


def test_the_listener_leaves_out_a_mail_found_overdue_until_the_next_one() -> None:
    async def run() -> None:
        listener = SmtpListener("127.0.0.1", 0, lambda raw: asyncio.sleep(0))
        await listener.start()
        slow, quick = (aiosmtplib.SMTP(hostname="127.0.0.1", port=listener.port) for _ in range(2))
        try:
            await slow.connect()
            await quick.connect()
            await slow.mail("ann@p.test")
            await slow.rcpt(SERVER)
            assert listener.receiving() == 1
            listener.overdue()  # waited for in vain
            assert listener.receiving() == 0
            await quick.mail("ben@p.test")
            assert listener.receiving() == 1  # a mail begun since counts
            await quick.rset()
            assert (await asyncio.wait_for(slow.data(raw_mail("ann@p.test", "help")), HANG))[0] == 250
            await slow.mail("ann@p.test")
            assert listener.receiving() == 1  # the slow client's next mail counts again
        finally:
            slow.close()
            quick.close()
            await listener.stop()

    asyncio.run(run())


def test_the_listener_counts_the_mails_it_is_receiving() -> None:
    """MAIL FROM begins a mail being received; it ends when the data is handed over
    (or the client says RSET, or hangs up)."""
    handed: list[int] = []

    async def run() -> None:
        release = asyncio.Event()
        listener: SmtpListener

        async def handle(raw: bytes) -> None:
            handed.append(listener.receiving())
            await release.wait()

        listener = SmtpListener("127.0.0.1", 0, handle)
        await listener.start()
        a = aiosmtplib.SMTP(hostname="127.0.0.1", port=listener.port)
        b = aiosmtplib.SMTP(hostname="127.0.0.1", port=listener.port)
        try:
            await a.connect()
            await b.connect()
            assert listener.receiving() == 0
            await a.mail("ann@p.test")
            await a.rcpt(SERVER)
            await b.mail("ben@p.test")
            assert listener.receiving() == 2
            sending = asyncio.create_task(a.data(raw_mail("ann@p.test", "help")))
            while not handed:
                await asyncio.sleep(0.01)
            assert handed == [1]  # a's mail is in hand, b's is still being received
            release.set()
            assert (await asyncio.wait_for(sending, HANG))[0] == 250
            assert listener.receiving() == 1
            await b.rset()
            assert listener.receiving() == 0
            await b.mail("ben@p.test")
            assert listener.receiving() == 1
            b.close()  # hangs up mid-mail
            for _ in range(100):
                if listener.receiving() == 0:
                    break
                await asyncio.sleep(0.01)
            assert listener.receiving() == 0
        finally:
            a.close()
            await listener.stop()

    asyncio.run(run())


def serve_config(tmp_path: Path) -> Config:
    """serve on SQLite with its embedded listener, replies sent from its own process."""
    return load_config(
        None,
        {
            "PBMSERV_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'b.db'}",
            "PBMSERV_ADDRESS": SERVER,
            "PBMSERV_EMBEDDED_LISTEN_PORT": str(free_port()),
            "PBMSERV_EMBEDDED_MAILDIR_ROOT": str(tmp_path / "maildirs"),
            "PBMSERV_SERVER_OUTBOX_PROCESS": "false",
            "PBMSERV_WEB_LISTEN": "off",
        },
    )


def test_serve_answers_mails_being_received_together_in_one_batch(tmp_path: Path) -> None:
    """Through serve's embedded listener: a mail that arrives while three other
    clients are mid-mail waits for them (one batch, one transaction); a mail that
    arrives alone is handled at once."""
    cfg = serve_config(tmp_path)

    def move(i: int) -> bytes:
        # (board commands: mails on different boards by different players may share a
        # batch; a mail that may touch anything runs alone)
        return raw_mail(f"p{i}@p.test", f"terrace move {101 + i} p{i} pw a1-a2")

    async def run() -> None:
        server = Server(cfg)
        up = asyncio.Event()
        serving = asyncio.create_task(server.run(up.set))
        await asyncio.wait_for(up.wait(), HANG)
        server.batcher.gather = HANG
        clients = [aiosmtplib.SMTP(hostname="127.0.0.1", port=cfg.embedded.listen_port) for _ in range(4)]
        try:
            for i, client in enumerate(clients):
                await client.connect()
                await client.mail(f"p{i}@p.test")
                await client.rcpt(SERVER)
            first = asyncio.create_task(clients[0].data(move(0)))
            await asyncio.sleep(0.3)
            assert not first.done() and server.batcher.batches == 0  # it waits for the others
            rest = [client.data(move(i)) for i, client in enumerate(clients) if i]
            answers = await asyncio.wait_for(asyncio.gather(first, *rest), HANG)
            assert [code for code, _ in answers] == [250] * 4
            assert (server.batcher.batches, server.batcher.mails) == (1, 4)
            metrics = server.metrics.exposition().decode()
            assert "pbmserv_batches_total 1.0" in metrics and "pbmserv_batched_mails_total 4.0" in metrics

            alone = await asyncio.wait_for(clients[1].sendmail("p1@p.test", [SERVER], move(1)), 5.0)
            assert alone[1].startswith("2.0.0")  # nobody on the way: no wait for the others
            assert (server.batcher.batches, server.batcher.mails) == (2, 5)
        finally:
            for client in clients:
                client.close()
            server.stop()
            await asyncio.wait_for(serving, HANG)

    asyncio.run(run())


def test_a_client_stalled_mid_mail_holds_serve_s_batches_once(tmp_path: Path) -> None:
    """Through serve: a client begins a mail and stalls.  The next mail from
    another client waits ``gather`` for it once; the mails after that are
    handled at once, though the stalled client is still mid-mail."""
    cfg = serve_config(tmp_path)

    async def run() -> None:
        server = Server(cfg)
        up = asyncio.Event()
        serving = asyncio.create_task(server.run(up.set))
        await asyncio.wait_for(up.wait(), HANG)
        server.batcher.gather = 0.2
        stalled = aiosmtplib.SMTP(hostname="127.0.0.1", port=cfg.embedded.listen_port)
        client = aiosmtplib.SMTP(hostname="127.0.0.1", port=cfg.embedded.listen_port)
        try:
            await stalled.connect()
            await stalled.mail("ann@p.test")
            await stalled.rcpt(SERVER)  # ... and nothing more
            await client.connect()
            first = await asyncio.wait_for(client.sendmail("ben@p.test", [SERVER], raw_mail("ben@p.test", "help")), HANG)
            assert first[1].startswith("2.0.0")
            server.batcher.gather = HANG  # a wait now would outlast the test's patience
            for i in range(3):
                sent = client.sendmail("ben@p.test", [SERVER], raw_mail("ben@p.test", "help", message_id=f"<later{i}@p.test>"))
                assert (await asyncio.wait_for(sent, 5.0))[1].startswith("2.0.0")
            assert server.inbound.receiving() == 0
            assert (server.batcher.batches, server.batcher.mails) == (4, 4)
        finally:
            stalled.close()
            client.close()
            server.stop()
            await asyncio.wait_for(serving, HANG)

    asyncio.run(run())
