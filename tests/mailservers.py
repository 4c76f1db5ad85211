"""Real mail servers for the tests that run ``serve`` or the mail layer against
them: the test players (:class:`Players`: send over SMTP, read their own IMAP
mailboxes) and ``pbmserv-terrace serve`` as a real process (:class:`ServeProcess`).
The fixtures that start them (``dovecot``, ``relay``, ``players``,
``serve_factory``) are in ``tests/conftest.py``."""

from __future__ import annotations

import email
import os
import signal
import subprocess
import sys
import time
from email.message import Message
from email.utils import make_msgid, parseaddr
from pathlib import Path

from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay
from pbmserv_terrace.testing.postgres import free_port

SERVER = "pbmserv@terrace.test"
PLAYERS = ["ann", "ben", "cat", "dan"]


def addr(name: str) -> str:
    return f"{name}@players.test"


class ServeProcess:
    """``pbmserv-terrace serve`` with a config file, as an operator runs it.  Its
    log (``serve.log``, stdout and stderr) is appended to across restarts:
    ``offset`` is where this start's part begins (:meth:`since`).  ``env``: more
    variables for the process (none of the test's own ``PBMSERV_`` ones pass)."""

    offset = 0
    START_TIMEOUT = 120.0
    """seconds for serve to select its INBOX (a loaded machine took over 30 s)"""

    def __init__(
        self, workdir: Path, dovecot: DovecotServer, relay: LmtpRelay, db_url: str, extra: str = "", env: dict[str, str] | None = None
    ) -> None:
        self.workdir = workdir
        # no game reviews (issue 42) unless the test asks (tests/app/test_review_dovecot.py): the
        # other tests count the mails a game's end makes
        self.env = {"PBMSERV_REVIEW_NODES": "0", **(env or {})}
        self.health_port = free_port()
        self.config = workdir / "pbmserv.toml"
        self.config.write_text(
            f"""
[server]
address = "{SERVER}"
name = "Test PBM Server"
database_url = "{db_url}"
poll_interval = 2
scheduler_interval = 3600
health_port = {self.health_port}

[imap]
host = "127.0.0.1"
port = {dovecot.imap_port}
user = "{SERVER}"
password = "server-secret"
tls = "none"

[smtp]
host = "127.0.0.1"
port = {relay.port}
tls = "none"
retry_base_seconds = 1
{extra}
"""
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "serve.log"

    def start(self) -> ServeProcess:
        # only what this start writes counts (the log is appended to across restarts)
        self.offset = self.log.stat().st_size if self.log.exists() else 0
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        env.update(PYTHONUNBUFFERED="1", **self.env)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pbmserv_terrace", "serve", "--config", str(self.config)],
            cwd=self.workdir, env=env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.time() + self.START_TIMEOUT
        while time.time() < deadline:
            if "selected (UIDVALIDITY" in self.since():
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.close()  # (not left running when the test fails)
        raise RuntimeError("serve did not start:\n" + self.log.read_text(errors="replace")[-3000:])

    def since(self, offset: int | None = None) -> str:
        """The log from ``offset`` (default: this start's beginning)."""
        if not self.log.exists():
            return ""
        with self.log.open("rb") as f:
            f.seek(self.offset if offset is None else offset)
            return f.read().decode(errors="replace")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        """Kill it if it still runs (a test's cleanup)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(40)


class Players:
    """Test players: send over SMTP to the relay, read their own IMAP mailboxes."""

    def __init__(self, dovecot: DovecotServer, relay: LmtpRelay) -> None:
        self.dovecot, self.relay = dovecot, relay
        self.seen: dict[str, int] = {}

    def send(self, name: str, subject: str, body: str = "", message_id: str | None = None) -> str:
        mid = message_id or make_msgid(domain="players.test")
        data = (
            f"From: {name.capitalize()} <{addr(name)}>\r\nTo: {SERVER}\r\nSubject: {subject}\r\n"
            f"Message-ID: {mid}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
        ).encode()
        self.relay.send(addr(name), SERVER, data)
        return mid

    def reply(self, name: str, mail: Message, text: str = "yes") -> str:
        """What a mail client's Reply sends: to the Reply-To, Re: its Subject, In-Reply-To."""
        to = parseaddr(str(mail["Reply-To"] or mail["From"]))[1]
        mid = make_msgid(domain="players.test")
        data = (
            f"From: {name.capitalize()} <{addr(name)}>\r\nTo: {to}\r\nSubject: Re: {mail['Subject']}\r\n"
            f"Message-ID: {mid}\r\nIn-Reply-To: {mail['Message-ID']}\r\nReferences: {mail['Message-ID']}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
        ).encode()
        self.relay.send(addr(name), to, data)
        return mid

    def signup(self, name: str, password: str | None = None, timeout: float = 30.0) -> Message:
        """Sign ``name`` up and confirm the address by Reply, as a new player does
        (issue 36: an address gets board mail only once confirmed); the first
        mail (the welcome with the confirmation) is returned."""
        self.send(name, f"signup {name} {password or 'pw-' + name}")
        welcome = self.wait(name, timeout=timeout)[0]
        self.reply(name, welcome)
        assert "confirmed" in str(self.wait(name, timeout=timeout)[0]["Subject"])
        return welcome

    def mailbox(self, name: str) -> list[Message]:
        return [email.message_from_bytes(raw) for raw in self.dovecot.fetch_all(addr(name))]

    def wait(self, name: str, count: int = 1, timeout: float = 30.0) -> list[Message]:
        """The next ``count`` new mails of player ``name``."""
        start = self.seen.get(name, 0)
        deadline = time.time() + timeout
        while time.time() < deadline:
            box = self.mailbox(name)
            if len(box) >= start + count:
                self.seen[name] = start + count
                return box[start : start + count]
            time.sleep(0.2)
        raise AssertionError(f"{name} got {len(self.mailbox(name)) - start} of {count} mails within {timeout}s")

    def quiet(self, name: str, seconds: float = 2.0) -> None:
        time.sleep(seconds)
        assert len(self.mailbox(name)) == self.seen.get(name, 0), f"{name} got an unexpected mail"


def body(msg: Message) -> str:
    """The text/plain part (board mails are multipart/alternative with a picture)."""
    part = next((p for p in msg.walk() if p.get_content_type() == "text/plain"), msg)
    payload = part.get_payload(decode=True)
    return payload.decode("utf-8").replace("\r\n", "\n") if isinstance(payload, bytes) else ""
