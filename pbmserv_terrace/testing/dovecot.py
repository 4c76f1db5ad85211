"""A throwaway Dovecot (IMAP + LMTP) on 127.0.0.1 and an SMTP relay into it.

``DovecotServer`` writes its own config into a temporary directory (passwd-file
users, Maildir storage, IMAP and LMTP listeners on free ports, plain auth without
TLS on loopback) and runs ``dovecot -F``.  ``LmtpRelay`` is an aiosmtpd SMTP server
that hands every mail to Dovecot over LMTP — the outgoing SMTP server the pbmserv
``serve`` process talks to in tests, and the way test players send mail.  The
relay can be paused (answers 421) to simulate an SMTP outage.

Needs the Debian packages ``dovecot-imapd`` and ``dovecot-lmtpd``; when they are
missing this raises :class:`DovecotUnavailable` (the tests fail, they never skip).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import imaplib
import os
import pwd
import shutil
import smtplib
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from aiosmtpd.controller import Controller

from .certs import CertificatesUnavailable, TestCA
from .postgres import free_port
from .tokens import TokenServer


class DovecotUnavailable(RuntimeError):
    pass


# sdbox, as deploy/dovecot/README.md advises: Maildir numbers mails delivered within
# one second in another order than they came when an IMAP session syncs meanwhile
# (3 of 200 here, with two sessions polling), and INTERNALDATE has whole seconds.
CONF = """\
protocols = imap lmtp
listen = 127.0.0.1
base_dir = {base}/run
state_dir = {base}/state
log_path = {base}/dovecot.log
info_log_path = {base}/dovecot.log
{ssl}
disable_plaintext_auth = no
auth_mechanisms = plain login{mechanisms}
auth_username_format = %Lu
mail_location = sdbox:{base}/mail/%u
mail_uid = {uid}
mail_gid = {gid}
first_valid_uid = 0
first_valid_gid = 0
default_login_user = dovenull
default_internal_user = dovecot
postmaster_address = postmaster@test.invalid
recipient_delimiter = +
lmtp_save_to_detail_mailbox = no
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%Lu {base}/users
}}
{oauth2_passdb}userdb {{
  driver = static
  args = uid={uid} gid={gid} home={base}/home/%u
}}
namespace inbox {{
  inbox = yes
  separator = /
  mailbox processed {{
    auto = no
  }}
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps_port}
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {lmtp_port}
  }}
}}
service stats {{
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
protocol imap {{
  imap_idle_notify_interval = 1 secs
{imap_capability}}}
{auth_service}{extra}"""

AUTH_SERVICE = """service auth {{
  inet_listener auth-mta {{
    address = 127.0.0.1
    port = {port}
  }}
}}
"""

OAUTH2_PASSDB = """passdb {{
  driver = oauth2
  mechanisms = {mechanisms}
  args = {base}/dovecot-oauth2.conf.ext
}}
"""

OAUTH2_CONF = """introspection_mode = post
introspection_url = {url}/introspect
force_introspection = yes
username_attribute = username
active_attribute = active
active_value = true
"""


class DovecotServer:
    def __init__(
        self,
        users: dict[str, str],
        *,
        tls: bool = False,
        ca: TestCA | None = None,
        cert_names: list[str] | None = None,
        capabilities: str = "",
        oauth2_url: str = "",
        extra: str = "",
        auth_listener: bool = False,
        oauth2_mechanisms: str = "xoauth2 oauthbearer",
    ) -> None:
        """With ``tls`` a certificate for ``cert_names`` (default 127.0.0.1 and
        localhost) is issued by ``ca`` (default: a new test CA; its PEM is
        ``self.ca_file``): STARTTLS on the IMAP port and implicit TLS on ``imaps_port``.
        ``capabilities`` replaces the IMAP capability list after login (a server
        without MOVE or IDLE); ``oauth2_url`` adds an ``oauth2`` passdb that asks that
        token server (:mod:`.tokens`) to introspect XOAUTH2/OAUTHBEARER tokens
        (``oauth2_mechanisms``: the ones offered, to IMAP clients and through the
        auth listener to Postfix);
        ``extra`` is appended to the config; ``auth_listener`` opens Dovecot's auth
        service on ``auth_port`` (127.0.0.1) for an MTA's SASL (Postfix
        ``smtpd_sasl_type = dovecot``, ``smtpd_sasl_path = inet:127.0.0.1:PORT``)."""
        self.users = dict(users)
        self.tls = tls
        self.ca = ca
        self.cert_names = cert_names or ["IP:127.0.0.1", "DNS:localhost"]
        self.capabilities, self.oauth2_url, self.extra = capabilities, oauth2_url, extra
        self.auth_listener = auth_listener
        self.oauth2_mechanisms = oauth2_mechanisms
        self.auth_port = 0
        self.ca_file = ""
        self.imaps_port = 0
        self.base: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.imap_port = 0
        self.lmtp_port = 0
        self._lmtp = threading.local()

    def start(self) -> DovecotServer:
        binary = shutil.which("dovecot") or "/usr/sbin/dovecot"
        if not Path(binary).exists():
            raise DovecotUnavailable("dovecot is not installed (Debian: apt-get install dovecot-imapd dovecot-lmtpd)")
        self.base = Path(tempfile.mkdtemp(prefix="pbmserv-dovecot-"))
        os.chmod(self.base, 0o755)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("nobody")
            uid, gid = owner.pw_uid, owner.pw_gid
        else:
            uid, gid = os.getuid(), os.getgid()
        for sub in ("run", "state", "mail", "home"):
            (self.base / sub).mkdir()
        for sub in ("mail", "home"):
            if os.geteuid() == 0:
                os.chown(self.base / sub, uid, gid)
        self.imap_port, self.lmtp_port = free_port(), free_port()
        auth_service = ""
        if self.auth_listener:
            self.auth_port = free_port()
            auth_service = AUTH_SERVICE.format(port=self.auth_port)
        ssl_conf = "ssl = no"
        if self.tls:
            self.imaps_port = free_port()
            try:
                if self.ca is None:
                    self.ca = TestCA(directory=self.base / "ca")
                cert, key = self.ca.issue(self.cert_names, stem=f"dovecot-{self.imaps_port}")
            except CertificatesUnavailable as exc:
                raise DovecotUnavailable(str(exc)) from exc
            self.ca_file = str(self.ca.cert)
            ssl_conf = f"ssl = yes\nssl_cert = <{cert}\nssl_key = <{key}"
        self._write_users()
        conf = self.base / "dovecot.conf"
        oauth2_passdb = ""
        if self.oauth2_url:
            (self.base / "dovecot-oauth2.conf.ext").write_text(OAUTH2_CONF.format(url=self.oauth2_url))
            oauth2_passdb = OAUTH2_PASSDB.format(base=self.base, mechanisms=self.oauth2_mechanisms)
        conf.write_text(CONF.format(base=self.base, uid=uid, gid=gid, imap_port=self.imap_port, lmtp_port=self.lmtp_port,
                                    imaps_port=self.imaps_port, ssl=ssl_conf, oauth2_passdb=oauth2_passdb,
                                    mechanisms=f" {self.oauth2_mechanisms}" if self.oauth2_url else "",
                                    imap_capability=f"  imap_capability = {self.capabilities}\n" if self.capabilities else "",
                                    auth_service=auth_service, extra=self.extra))  # fmt: skip
        return self._launch(binary, conf)

    def _launch(self, binary: str, conf: Path) -> DovecotServer:
        """Run dovecot with ``conf`` until it listens on every port."""
        self.proc = subprocess.Popen([binary, "-F", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise DovecotUnavailable(f"dovecot exited: {err}{self.log()[-2000:]}")
            try:
                with imaplib.IMAP4("127.0.0.1", self.imap_port, timeout=2) as probe:
                    probe.noop()
                with smtplib.LMTP("127.0.0.1", self.lmtp_port, timeout=2) as probe:
                    probe.noop()
                if self.auth_port:
                    socket.create_connection(("127.0.0.1", self.auth_port), timeout=2).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise DovecotUnavailable(f"dovecot did not start listening: {self.log()[-2000:]}")

    def _write_users(self) -> None:
        assert self.base is not None
        lines = [f"{user.lower()}:{{PLAIN}}{password}::::::" for user, password in self.users.items()]
        path = self.base / "users"
        path.write_text("\n".join(lines) + "\n")
        os.chmod(path, 0o644)

    def add_user(self, user: str, password: str) -> None:
        self.users[user] = password
        self._write_users()

    def log(self) -> str:
        if self.base is None:
            return ""
        path = self.base / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def halt(self) -> None:
        """Stop the server as an outage does (its connections end), keeping its
        mailboxes and ports for :meth:`resume`."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def resume(self) -> DovecotServer:
        """Start it again after :meth:`halt`: the same ports, users and mail."""
        assert self.base is not None, "halted, not stopped"
        return self._launch(shutil.which("dovecot") or "/usr/sbin/dovecot", self.base / "dovecot.conf")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None

    def __enter__(self) -> DovecotServer:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------ client side
    def deliver(self, sender: str, recipients: list[str], data: bytes) -> None:
        """Hand a mail to Dovecot over LMTP, on a connection kept per thread (as an
        MTA keeps its LMTP connections); a dropped one is reopened once."""
        for attempt in (1, 2):
            client: smtplib.LMTP | None = getattr(self._lmtp, "client", None)
            try:
                if client is None:
                    client = self._lmtp.client = smtplib.LMTP("127.0.0.1", self.lmtp_port, timeout=30)
                client.sendmail(sender, recipients, data)
                return
            except (smtplib.SMTPServerDisconnected, OSError):
                self._lmtp.client = None
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.close()
                if attempt == 2:
                    raise

    def fetch_all(self, user: str, folder: str = "INBOX") -> list[bytes]:
        """Every message in a mailbox, oldest first (a test player reading mail)."""
        with imaplib.IMAP4("127.0.0.1", self.imap_port, timeout=30) as imap:
            imap.login(user, self.users[user])
            status, _ = imap.select(f'"{folder}"')
            if status != "OK":
                return []
            _, data = imap.uid("search", "ALL")
            out = []
            for uid in data[0].split():
                _, parts = imap.uid("fetch", uid, "(BODY.PEEK[])")
                for part in parts:
                    if isinstance(part, tuple):
                        out.append(part[1])
            return out


class _RelayHandler:
    def __init__(self, dovecot: DovecotServer) -> None:
        self.dovecot = dovecot
        self.paused = threading.Event()

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]) -> str:
        if self.paused.is_set():
            return "421 4.3.2 relay paused for a test"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.paused.is_set():
            return "421 4.3.2 relay paused for a test"
        data = envelope.original_content or envelope.content
        await asyncio.to_thread(self.dovecot.deliver, envelope.mail_from, list(envelope.rcpt_tos), data)
        return "250 OK delivered"


class LmtpRelay:
    """SMTP on 127.0.0.1:port → LMTP into Dovecot (threaded aiosmtpd Controller).
    With ``logins`` it offers AUTH PLAIN/LOGIN (without TLS, loopback only) and
    accepts those user/password pairs; with ``tokens`` (a :class:`.tokens.TokenServer`)
    it offers AUTH XOAUTH2 and accepts the access tokens that server handed out and
    that have not expired.  Mail without AUTH is accepted too.  ``tls`` = "starttls"
    (required before MAIL) or "ssl" (implicit) with ``cert`` = (certificate, key)."""

    def __init__(
        self,
        dovecot: DovecotServer,
        logins: dict[str, str] | None = None,
        *,
        tls: str = "none",
        cert: tuple[Path, Path] | None = None,
        tokens: TokenServer | None = None,
    ) -> None:
        self.handler = _RelayHandler(dovecot)
        self.port = free_port()
        self.logins = dict(logins or {})
        self.tokens = tokens
        self.xoauth2: list[bool] = []
        """outcome of every AUTH XOAUTH2"""
        kwargs: dict[str, Any] = {}
        if logins or tokens:
            kwargs = {"authenticator": self._authenticate, "auth_require_tls": False}
        if tokens is not None:
            self.handler.auth_XOAUTH2 = self._xoauth2  # type: ignore[attr-defined]
        if tls != "none":
            assert cert is not None, "a TLS relay needs cert=(certificate, key)"
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(cert[0]), str(cert[1]))
            kwargs |= {"ssl_context": context} if tls == "ssl" else {"tls_context": context, "require_starttls": True}
        self.controller = Controller(self.handler, hostname="127.0.0.1", port=self.port, **kwargs)

    async def _xoauth2(self, server: Any, args: list[str]) -> Any:
        from aiosmtpd.smtp import AuthResult

        assert self.tokens is not None
        try:
            fields = base64.b64decode(args[1]).decode().split("\x01")
            user = fields[0].removeprefix("user=")
            token = fields[1].removeprefix("auth=Bearer ")
        except (IndexError, ValueError):
            self.xoauth2.append(False)
            return AuthResult(success=False, handled=False)
        with self.tokens.lock:
            entry = self.tokens.access.get(token)
        ok = entry is not None and entry[0] == user.lower() and time.time() < entry[1]
        self.xoauth2.append(ok)
        return AuthResult(success=ok, handled=False, auth_data=user if ok else None)

    def _authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> Any:
        from aiosmtpd.smtp import AuthResult, LoginPassword

        ok = isinstance(auth_data, LoginPassword) and self.logins.get(auth_data.login.decode()) == auth_data.password.decode()
        return AuthResult(success=ok)

    def start(self) -> LmtpRelay:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    def pause(self) -> None:
        self.handler.paused.set()

    def resume(self) -> None:
        self.handler.paused.clear()

    def send(self, sender: str, recipient: str, data: bytes) -> None:
        with smtplib.SMTP("127.0.0.1", self.port, timeout=30) as smtp:
            smtp.sendmail(sender, [recipient], data)


class _LmtpTarget(DovecotServer):
    """A Dovecot started elsewhere, known by its LMTP port (for a relay process)."""

    def __init__(self, lmtp_port: int) -> None:
        super().__init__({})
        self.lmtp_port = lmtp_port


class _SinkSession(asyncio.Protocol):
    """The relay's ``--discard``: an SMTP server that takes each mail and drops it,
    at the least cost it can (a benchmark's instrument, whose CPU should not stand
    between the servers it measures and the cores).  aiosmtpd reads DATA a line
    at a time in Python, ~500 lines for a board reply: as a sink it cost as much
    CPU as PostgreSQL did.  This one answers the commands of a plain client
    (EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT; no pipelining offered), finds
    a mail's end with one search of the bytes that came, and hands the mail to
    ``report``."""

    def __init__(self, report: Callable[[bytes], None]) -> None:
        self.report = report
        self.buf, self.in_data, self.scanned = bytearray(), False, 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(b"220 127.0.0.1 sink\r\n")

    def data_received(self, chunk: bytes) -> None:
        self.buf += chunk
        while True:
            if self.in_data:
                end = self.buf.find(b"\r\n.\r\n", self.scanned)
                if end < 0:
                    self.scanned = max(0, len(self.buf) - 4)
                    return
                self.report(bytes(self.buf[2:end]))  # (less the CRLF put before it)
                del self.buf[: end + 5]
                self.in_data, self.scanned = False, 0
                self.transport.write(b"250 OK discarded\r\n")
                continue
            end = self.buf.find(b"\r\n")
            if end < 0:
                return
            verb = bytes(self.buf[:4]).upper()
            del self.buf[: end + 2]
            if verb == b"EHLO":
                self.transport.write(b"250-127.0.0.1\r\n250-SIZE 104857600\r\n250 8BITMIME\r\n")
            elif verb == b"DATA":
                self.in_data, self.scanned = True, 0
                self.buf[:0] = b"\r\n"  # a mail's first line may be its end
                self.transport.write(b"354 end with <CRLF>.<CRLF>\r\n")
            elif verb == b"QUIT":
                self.transport.write(b"221 bye\r\n")
                self.transport.close()
                return
            else:
                self.transport.write(b"250 OK\r\n")


def relay_main(argv: list[str] | None = None) -> None:
    """``python -m pbmserv_terrace.testing.dovecot LMTP_PORT [--discard]``: an SMTP
    relay into that Dovecot in a process of its own (as an MTA is), for the
    end-to-end benchmark; with ``--discard`` it accepts each mail and drops it (a
    sink, for runs that measure the servers rather than the players' mailboxes).
    Prints ``port N`` once listening, then ``relayed <In-Reply-To> <unix time>``
    for each relayed mail that answers another; stops at EOF on stdin."""
    from email.parser import BytesHeaderParser

    args = argv or sys.argv[1:]
    lmtp_port, discard = int(args[0]), "--discard" in args[1:]
    lock = threading.Lock()

    def report(data: bytes) -> None:
        head = data.split(b"\r\n\r\n", 1)[0]  # the header block only: the feed parser reads a body line by line
        answered = BytesHeaderParser().parsebytes(head)["In-Reply-To"]
        if answered:
            with lock:
                sys.stdout.write(f"relayed {str(answered).strip()} {time.time():.6f}\n")
                sys.stdout.flush()

    if discard:
        asyncio.run(_sink_main(report))
        return
    relay = LmtpRelay(_LmtpTarget(lmtp_port))
    original = relay.handler.handle_DATA

    async def handle_DATA(server: Any, session: Any, envelope: Any) -> str:
        result = await original(server, session, envelope)
        if result.startswith("250"):
            report(envelope.original_content or envelope.content)
        return result

    relay.handler.handle_DATA = handle_DATA  # type: ignore[method-assign]
    relay.start()
    print(f"port {relay.port}", flush=True)
    try:
        sys.stdin.read()
    finally:
        relay.stop()


async def _sink_main(report: Callable[[bytes], None]) -> None:
    """The ``--discard`` relay: the sink on a free port until EOF on stdin."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _SinkSession(report), "127.0.0.1", 0)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.to_thread(sys.stdin.read)
    server.close()


if __name__ == "__main__":
    relay_main()
