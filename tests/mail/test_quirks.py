"""IMAP servers without MOVE, UIDPLUS or IDLE (issue 20, item 3): mails are filed
with COPY + \\Deleted + UID EXPUNGE (or plain EXPUNGE), and new mail is polled for.
Against Dovecot with its advertised capabilities cut down (``imap_capability``),
and the exact command sequence against a recording client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from pbmserv_terrace.config import load_config
from pbmserv_terrace.mail.imap import ImapMailbox, MailSink
from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay

from ..mailservers import PLAYERS, SERVER, Players, ServeProcess, addr, body


class Recorder:
    def __init__(self, caps: set[str]) -> None:
        self.caps = caps
        self.calls: list[tuple[str, ...]] = []

    def has_capability(self, name: str) -> bool:
        return name in self.caps

    async def uid(self, *args: str) -> SimpleNamespace:
        self.calls.append(("UID", *args))
        return SimpleNamespace(result="OK", lines=[b"done"])

    async def expunge(self) -> SimpleNamespace:
        self.calls.append(("EXPUNGE",))
        return SimpleNamespace(result="OK", lines=[b"done"])


@pytest.mark.parametrize(
    ("caps", "last"),
    [({"MOVE", "UIDPLUS"}, None), ({"UIDPLUS"}, ("UID", "expunge", "4,9")), (set(), ("EXPUNGE",))],
)
def test_filing_commands_follow_the_capabilities(caps: set[str], last: tuple[str, ...] | None) -> None:
    client = Recorder(caps)
    config = load_config(None, {"PBMSERV_ADDRESS": SERVER})
    inbound = ImapMailbox(config, cast(MailSink, None))
    asyncio.run(inbound.file(client, [4, 9], "processed"))  # type: ignore[arg-type,unused-ignore]
    assert client.calls[0] == ("UID", "store", "4,9", "+FLAGS.SILENT", r"(\Seen)")
    if last is None:
        assert client.calls[1:] == [("UID", "move", "4,9", "processed")]
    else:
        assert client.calls[1:] == [("UID", "copy", "4,9", "processed"),
                                    ("UID", "store", "4,9", "+FLAGS.SILENT", r"(\Deleted)"), last]  # fmt: skip


@pytest.fixture(params=["IMAP4rev1 LITERAL+ SASL-IR ID ENABLE UIDPLUS", "IMAP4rev1 LITERAL+ SASL-IR ID ENABLE"])
def bare_dovecot(request: pytest.FixtureRequest) -> Iterator[DovecotServer]:
    users = {SERVER: "server-secret", **{addr(p): f"imap-{p}" for p in PLAYERS}}
    with DovecotServer(users, capabilities=request.param) as d:
        yield d


def test_serve_without_move_or_idle(tmp_path: Path, bare_dovecot: DovecotServer) -> None:
    relay = LmtpRelay(bare_dovecot).start()
    serve = ServeProcess(tmp_path, bare_dovecot, relay, f"sqlite:///{tmp_path}/serve.db")
    players = Players(bare_dovecot, relay)
    try:
        serve.start()
        for name in ("ann", "ben"):
            assert "Welcome" in body(players.signup(name, timeout=40))
        players.send("ann", "terrace challenge ann pw-ann ben")
        assert players.wait("ben", timeout=40)[0]["Subject"] == "New Terrace Board 101 ann"
        assert serve.stop() == 0
        assert bare_dovecot.fetch_all(SERVER) == []
        assert len(bare_dovecot.fetch_all(SERVER, "processed")) == 5  # two sign-ups, two confirmations, the challenge
        assert "has no IDLE: polling" in serve.log.read_text()
    finally:
        if serve.proc is not None and serve.proc.poll() is None:
            serve.proc.kill()
        relay.stop()
