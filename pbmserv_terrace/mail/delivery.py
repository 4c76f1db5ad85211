"""Sending a finished reply: over SMTP (aiosmtplib, a few connections kept open,
TLS verified, password or OAuth2 login: XOAUTH2, else OAUTHBEARER) or into a
local Maildir (the embedded default).  Network adapters only: which reply to
send, and what to record about it, is the outbox's job (app/outbox.py).

The outbox hands over an :class:`~.message.Outgoing`, serialised once on its
composer thread: its bytes are written to the Maildir as they are, or sent with
``sendmail`` (aiosmtplib puts in the CRLF line ends).  A plain ``Message`` (the
CLI's test mail) is serialised here.

Maildirs hold other players' mail: folders are made 0700 and files 0600
whatever the umask (issue 36).
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import ctypes
import hashlib
import logging
import mailbox
import os
import re
import sys
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from email.message import Message
from pathlib import Path
from typing import Protocol, runtime_checkable

import aiosmtplib

from ..config import Config
from .message import Outgoing, message_bytes, smtp_data
from .oauth2 import MECHANISMS, SASL_ABORT, AccessToken, OAuth2Error, TokenSource, sasl_initial, token_source, with_token_retry
from .tls import TlsError, client_context, explain

log = logging.getLogger("pbmserv.outbound")


class PermanentFailure(Exception):
    """The recipient will never be reachable this way (5xx, bad address).

    ``refused`` is the status with which the MTA refused the recipient at ``RCPT``
    (the enhanced code, ``5.1.1``, where its answer gives one, else the reply code,
    ``550``): a hard bounce of that address at send time (issue 43), counted like
    one that comes back later.  '' when the failure was not the recipient's (a
    refused sender or message)."""

    def __init__(self, message: str, refused: str = "") -> None:
        super().__init__(message)
        self.refused = refused


class Throttled(Exception):
    """The server asks us to slow down (421, 451, 452): a pause for all replies,
    not a failure of this one."""


THROTTLE_CODES = frozenset({421, 451, 452})


class Delivery(Protocol):
    """A way replies go out (a transport out): SMTP, Maildirs (:data:`OUTBOUND`)."""

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None: ...

    async def close(self) -> None: ...


@runtime_checkable
class StagedDelivery(Delivery, Protocol):
    """A delivery that writes a claim of replies in two steps, so that each reply
    shows up exactly once whatever a crash does: staged (made durable), then, once
    their outcomes are committed, published; what a crash left staged is found
    again at the next start.  The outbox sends such a delivery's replies a claim at
    a time (``app.outbox``); any other delivery's one by one.  (Maildirs do.)"""

    def write_staged(self, replies: Sequence[tuple[str, bytes]]) -> StagedFiles: ...

    def publish(self, replies: Sequence[tuple[str, str]]) -> None: ...

    def staged(self) -> list[str]: ...

    def discard(self, names: Sequence[str]) -> None: ...


PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
STAGING = ".staged"
"""the Maildir root's folder where replies wait between writing and publishing
(no address is named so: an address has an ``@``)"""


def maildir_name(message_id: str, created: datetime, key: int | None = None) -> str:
    """A reply's file name in its recipient's Maildir: ``time.M<µs>Q<key>X<digest>.pbmserv``,
    the same every time the reply is written (so a rewrite replaces, never adds).
    ``key``, the outbox row's id, orders the replies one piece of work queued at
    the same moment in the order it queued them (a draw offer before the robot's
    answer: ``cli/inbox`` reads the ``Q`` number, as Maildir readers do)."""
    digest = hashlib.sha256(message_id.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    seconds = calendar.timegm(created.utctimetuple())
    sequence = f"Q{key}" if key is not None else ""
    return f"{seconds}.M{created.microsecond:06d}{sequence}X{digest}.pbmserv"


def staged_name(key: int, message_id: str, created: datetime) -> str:
    """A reply's name while staged: its outbox row's id, then its Maildir name."""
    return f"{key}-{maildir_name(message_id, created, key)}"


def staged_key(name: str) -> int | None:
    """The outbox row id a staged name starts with (None: not one of ours)."""
    head, dash, _ = name.partition("-")
    return int(head) if dash and head.isascii() and head.isdigit() else None


def published_name(staged: str) -> str:
    """A staged reply's name in its recipient's ``new/`` (the Maildir name)."""
    return staged.partition("-")[2]


def make_maildir(folder: Path) -> None:
    """Make the Maildir ``folder`` appear whole: its ``tmp/``, ``new/`` and ``cur/``
    are made under a temporary name beside it, which is then renamed to
    ``folder``, so a reader never sees the folder without its three (a reader
    that looked between the mkdirs failed on the missing ``cur/``).  Another
    writer's folder, made first, is kept."""
    if folder.is_dir() and all((folder / sub).is_dir() for sub in ("tmp", "new", "cur")):
        return
    folder.parent.mkdir(PRIVATE_DIR, parents=True, exist_ok=True)
    if not folder.exists():
        building = folder.parent / f".{folder.name}.{os.getpid()}.making"
        for sub in ("tmp", "new", "cur"):
            (building / sub).mkdir(PRIVATE_DIR, parents=True, exist_ok=True)
        os.chmod(building, PRIVATE_DIR)
        try:
            os.rename(building, folder)
            return
        except OSError:  # made meanwhile by another writer
            for sub in ("tmp", "new", "cur"):
                with contextlib.suppress(OSError):
                    (building / sub).rmdir()
            with contextlib.suppress(OSError):
                building.rmdir()
    for sub in ("tmp", "new", "cur"):
        (folder / sub).mkdir(PRIVATE_DIR, parents=True, exist_ok=True)


class MaildirDelivery:
    """The embedded default: replies land in ``<root>/<address>/`` (a Maildir).

    The outbox writes them in two steps (:meth:`stage`, then :meth:`publish` once
    their outcome is committed), so a reply shows up exactly once however a crash
    falls: a reply staged and not yet recorded as sent is staged again under the
    same name (:func:`maildir_name`), and one recorded but not yet published is
    published when the senders start again (``OutboxSenders``'s recovery, from
    :meth:`staged`).  :meth:`deliver` writes one message at once (the CLI's mail)."""

    size = 4
    """claims under way at once: while some wait for their files' sync and their
    outcomes' commit, the next is composed (issue 18: with 2, the sender fell
    behind in the embedded benchmark, ~230 mails/s with every reply written;
    with 4, ~275-310)"""

    claim = 32
    """replies a sender claims at a time, composed, staged, recorded and published
    together: the claim's transactions and thread hops are shared by its replies
    (issue 18, bench/outbox.py's drain: 8 at a time cost ~3.0-3.8 ms of CPU a
    reply, 32 ~1.8-2.1).  A claim takes what is due, so under light load it is
    one or two replies and nobody waits for a claim to fill"""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.staging = self.root / STAGING
        self._folders: set[Path] = set()
        """folders known to exist with their new/, cur/ and tmp/"""

    def folder(self, address: str) -> Path:
        safe = address.lower().replace("/", "_")
        return self.root / safe

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        def write() -> None:
            data = message.delivered() if isinstance(message, Outgoing) else message_bytes(message)
            self.root.mkdir(PRIVATE_DIR, parents=True, exist_ok=True)
            box = mailbox.Maildir(self.folder(recipient), create=True)  # (its folders 0700)
            key = box.add(data)  # LF line ends on disk; written, fsynced, then moved into new/
            with contextlib.suppress(OSError):  # mailbox writes it 0666 less the umask
                os.chmod(self.folder(recipient) / "new" / key, PRIVATE_FILE)
            box.close()

        await asyncio.to_thread(write)

    # ------------------------------------------------ staged (the outbox's way)
    def stage(self, replies: Sequence[tuple[str, bytes]]) -> list[OSError | None]:
        """Write each (staged name, bytes) into the staging folder and make them
        durable, the folder too; what each write raised (None: written and
        synced).  Blocking: run it in a thread.  (:meth:`write_staged`, then
        :meth:`StagedFiles.sync`.)"""
        return self.write_staged(replies).sync()

    def write_staged(self, replies: Sequence[tuple[str, bytes]]) -> StagedFiles:
        """Write each (staged name, bytes) into the staging folder, not yet
        durable: :meth:`StagedFiles.sync` makes them so (it may run on another
        thread: the writes are quick, the sync waits for the disk)."""
        self.root.mkdir(PRIVATE_DIR, parents=True, exist_ok=True)  # (a parent made by parents=True ignores the mode)
        self.staging.mkdir(PRIVATE_DIR, exist_ok=True)
        staged = StagedFiles(self.staging, [name for name, _ in replies])
        for name, data in replies:
            fd = -1
            try:
                fd = os.open(self.staging / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as exc:
                if fd >= 0:
                    os.close(fd)
                staged.unstage(len(staged.outcomes))
                staged.outcomes.append(exc)
            else:
                staged.opened.append((len(staged.outcomes), fd))
                staged.outcomes.append(None)
        return staged

    def publish(self, replies: Sequence[tuple[str, str]]) -> None:
        """Move each (staged name, recipient) into the recipient's ``new/``, in
        order; a name no longer staged was published already (by another worker's
        recovery).  Blocking: run it in a thread."""
        for name, recipient in replies:
            folder = self.folder(recipient)
            if folder not in self._folders:
                make_maildir(folder)
                self._folders.add(folder)
            with contextlib.suppress(FileNotFoundError):
                os.rename(self.staging / name, folder / "new" / published_name(name))

    def staged(self) -> list[str]:
        """The names in the staging folder (replies written and not published)."""
        try:
            return sorted(entry.name for entry in os.scandir(self.staging) if entry.is_file())
        except FileNotFoundError:
            return []

    def discard(self, names: Sequence[str]) -> None:
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                (self.staging / name).unlink()

    async def close(self) -> None:
        return None


class StagedFiles:
    """Replies written into a Maildir's staging folder (:meth:`MaildirDelivery.write_staged`)
    and still open, until :meth:`sync` makes them durable (or :meth:`close`
    gives up on that)."""

    def __init__(self, folder: Path, names: list[str]) -> None:
        self.folder, self.names = folder, names
        self.outcomes: list[OSError | None] = []
        """what each write raised (None: written)"""
        self.opened: list[tuple[int, int]] = []
        """(index, fd) of the files written, still open"""

    def sync(self) -> list[OSError | None]:
        """Make the written files durable, and their names in the folder; what
        each raised (None: written and synced).  Blocking.

        On Linux with one ``syncfs`` of the filesystem (one journal commit, not
        one per file and one for the folder); elsewhere, or if it reports an
        error (to find which file has it), with an ``fsync`` of each, then of
        the folder."""
        opened, self.opened = self.opened, []
        try:
            if opened and not _syncfs(opened[0][1]):
                for i, fd in opened:
                    try:
                        os.fsync(fd)
                    except OSError as exc:
                        self.unstage(i)
                        self.outcomes[i] = exc
                _fsync_folder(self.folder)
        finally:
            for _, fd in opened:
                os.close(fd)
        return self.outcomes

    def close(self) -> None:
        """Close the files without syncing them (they stay staged, not durable)."""
        opened, self.opened = self.opened, []
        for _, fd in opened:
            os.close(fd)

    def unstage(self, i: int) -> None:
        with contextlib.suppress(OSError):
            (self.folder / self.names[i]).unlink()


def _syncfs(fd: int) -> bool:
    """Linux: flush the filesystem that holds ``fd`` (its files' data and
    metadata, folders included) and wait for it; whether that worked (False:
    not Linux, or an error was reported since the file was opened; the caller
    then syncs file by file)."""
    if SYNCFS is None:
        return False
    return bool(SYNCFS(fd) == 0)


def _load_syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs`` where it reports writeback errors (Linux 5.8 and later;
    before, it said nothing of a file that could not be written back, and each
    file is fsynced instead)."""
    if not sys.platform.startswith("linux") or _kernel() < (5, 8):
        return None
    try:
        syncfs: Callable[[int], int] = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    return syncfs


def _kernel() -> tuple[int, int]:
    """The running kernel's (major, minor) version; (0, 0) if it cannot be read."""
    parts = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(parts[1]), int(parts[2])) if parts else (0, 0)


SYNCFS: Callable[[int], int] | None = _load_syncfs()
"""libc's ``syncfs``, or None where it does not report writeback errors (see
:func:`_load_syncfs`); the staging calls it through this name, so a test can
put a counting or failing one in its place (``monkeypatch.setattr``)."""


def _fsync_folder(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LoginFailed(RuntimeError):
    """The SMTP server refused our login (password or token), or could not check
    it now.  A problem of this server's account, never of a reply's recipient:
    the reply stays queued and is tried again later."""


def closed_by_server(exc: BaseException) -> bool:
    """The server ended the session before taking the message: a dropped
    connection, or ``421`` (closing the channel, as a provider does when the
    session's access token expired) to a command of the transaction."""
    if isinstance(exc, aiosmtplib.SMTPServerDisconnected | aiosmtplib.SMTPConnectError | ConnectionError):
        return True
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        return bool(exc.recipients) and all(r.code == 421 for r in exc.recipients)
    return isinstance(exc, aiosmtplib.SMTPResponseException) and exc.code == 421


class SmtpDelivery:
    """Real mail: aiosmtplib with implicit TLS, STARTTLS or plain, and auth.  Up
    to ``smtp.connections`` connections send at once (as an MTA does); each stays
    open for the next message until :meth:`close`, or, with OAuth2, until the
    access token it logged in with is due for renewal (a provider may end a
    session whose token expired).  An error drops the connection it happened on
    (the next message opens a fresh one); a kept connection the server ended
    meanwhile (dropped, or ``421``) is replaced once for the same message."""

    def __init__(self, config: Config, connections: int | None = None) -> None:
        self.cfg = config.smtp
        self.tokens: TokenSource | None = token_source(config.oauth2) if config.smtp.auth == "oauth2" else None
        self.size = max(1, connections or self.cfg.connections)
        self._idle: list[aiosmtplib.SMTP] = []
        self._slots: asyncio.Semaphore | None = None
        self._logged_in: weakref.WeakKeyDictionary[aiosmtplib.SMTP, AccessToken] = weakref.WeakKeyDictionary()
        """the access token each OAuth2 connection logged in with"""

    async def connect(self) -> aiosmtplib.SMTP:
        """A new connection, made, secured and authenticated.  TLS is verified
        (``ca_file`` or the system's store); STARTTLS that the server does not
        offer is an error, never plain text instead.  A refused login raises
        :class:`LoginFailed` (or :class:`~.oauth2.OAuth2Error`), never
        :class:`PermanentFailure`: it says nothing about the recipient."""
        cfg = self.cfg
        client = aiosmtplib.SMTP(
            hostname=cfg.host,
            port=cfg.port,
            use_tls=cfg.tls == "ssl",
            start_tls=cfg.tls == "starttls",
            timeout=cfg.timeout,
            tls_context=client_context(cfg.ca_file),
        )
        try:
            await client.connect()
        except Exception as exc:
            message = explain(exc, "smtp", cfg.host, cfg.port, cfg.ca_file)
            if message is not None:
                raise TlsError(message) from None
            if isinstance(exc, aiosmtplib.SMTPResponseException) and exc.code not in THROTTLE_CODES:
                raise LoginFailed(f"SMTP {cfg.host}:{cfg.port} greeted with {exc.code} {exc.message}") from None
            raise
        try:
            if cfg.auth == "oauth2":
                self._logged_in[client] = await self._oauth2(client)
            elif cfg.user:
                await client.login(cfg.user, cfg.password)
        except aiosmtplib.SMTPResponseException as exc:
            client.close()
            if exc.code in THROTTLE_CODES:
                raise Throttled(f"{exc.code} {exc.message}") from exc
            raise LoginFailed(f"SMTP {cfg.host}: login as {cfg.user} refused ({exc.code} {exc.message})") from None
        except BaseException:
            client.close()
            raise
        return client

    async def _oauth2(self, client: aiosmtplib.SMTP) -> AccessToken:
        """AUTH XOAUTH2 (else OAUTHBEARER) with the current access token, and once
        more with a fresh one if the server refuses it (5xx).  A 4xx (the server
        cannot check tokens now) is raised: the reply waits, the token is fine."""
        cfg = self.cfg
        if self.tokens is None:
            raise OAuth2Error("smtp.auth is 'oauth2' but [oauth2] is not configured")
        if client.is_ehlo_or_helo_needed:
            await client.ehlo()  # the AUTH methods are known after EHLO
        mechanism = next((m for m in MECHANISMS if m.lower() in client.server_auth_methods), None)
        if mechanism is None:
            raise OAuth2Error(
                f"SMTP {cfg.host}: the server offers neither AUTH XOAUTH2 nor AUTH OAUTHBEARER; use smtp.auth = 'password'"
            )
        said: list[str] = []

        async def attempt(token: str) -> bool:
            initial = sasl_initial(mechanism, cfg.user, token, cfg.host, cfg.port)
            answer = await client.execute_command(b"AUTH", mechanism.encode(), initial.encode())
            if answer.code == aiosmtplib.SMTPStatus.auth_continue:  # the error challenge (RFC 7628)
                answer = await client.execute_command(SASL_ABORT[mechanism].encode())
            if answer.code == aiosmtplib.SMTPStatus.auth_successful:
                return True
            if 500 <= answer.code < 600:
                said.append(f"{answer.code} {answer.message}")
                return False
            raise aiosmtplib.SMTPAuthenticationError(answer.code, answer.message)

        try:
            return await with_token_retry(self.tokens, attempt)
        except OAuth2Error as exc:
            words = f" ({said[-1]})" if said else ""
            raise OAuth2Error(f"SMTP {mechanism} login as {cfg.user}: {exc}{words}") from None

    def _due(self, client: aiosmtplib.SMTP) -> bool:
        """Its access token is due for renewal: log in anew rather than use it."""
        token = self._logged_in.get(client)
        return token is not None and self.tokens is not None and self.tokens.left(token) <= 0

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for client in idle:
            await self._quit(client)

    async def quit(self, client: aiosmtplib.SMTP) -> None:
        """End ``client`` (a connection from :meth:`connect` that is not in the pool)."""
        await self._quit(client)

    @staticmethod
    async def _quit(client: aiosmtplib.SMTP) -> None:
        if client.is_connected:
            try:
                await client.quit(timeout=5)
            except (aiosmtplib.SMTPException, OSError):
                client.close()

    async def deliver(self, message: Message | Outgoing, recipient: str) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.size)
        async with self._slots:
            client = None
            while self._idle and client is None:
                candidate = self._idle.pop()
                if candidate.is_connected and self._due(candidate):
                    log.info("SMTP: a kept connection's access token is due for renewal; logging in anew")
                    await self._quit(candidate)
                    continue
                client = candidate if candidate.is_connected else None
            await self._send(client, message, recipient)

    async def _send(self, client: aiosmtplib.SMTP | None, message: Message | Outgoing, recipient: str) -> None:
        reused = client is not None
        try:
            if client is None:
                client = await self.connect()
            try:
                await transmit(client, message, recipient)
            except (aiosmtplib.SMTPException, ConnectionError) as exc:
                if not reused or not closed_by_server(exc):
                    raise
                # a kept connection the server had ended meanwhile: once more on a fresh one
                log.info("SMTP: a kept connection was ended by the server (%s); sending on a new one", exc)
                client.close()
                client = await self.connect()
                await transmit(client, message, recipient)
        except aiosmtplib.SMTPRecipientsRefused as exc:
            self._drop(client)
            codes = [r.code for r in exc.recipients]
            if codes and all(500 <= c < 600 for c in codes):
                raise PermanentFailure(str(exc), refused_status(exc.recipients[0])) from exc
            if codes and all(c in THROTTLE_CODES for c in codes):
                raise Throttled(str(exc)) from exc
            raise
        except aiosmtplib.SMTPResponseException as exc:
            self._drop(client)
            if 500 <= exc.code < 600:
                raise PermanentFailure(f"{exc.code} {exc.message}") from exc
            if exc.code in THROTTLE_CODES:
                raise Throttled(f"{exc.code} {exc.message}") from exc
            raise
        except BaseException:
            self._drop(client)
            raise
        self._idle.append(client)

    @staticmethod
    def _drop(client: aiosmtplib.SMTP | None) -> None:
        if client is not None:
            client.close()


def refused_status(refusal: aiosmtplib.SMTPRecipientRefused) -> str:
    """The status of an MTA's refusal of a recipient: the enhanced status code
    (RFC 3463) its answer begins with, else the reply code."""
    code, _, _ = refusal.message.lstrip().partition(" ")
    parts = code.split(".")
    if len(parts) == 3 and parts[0] == "5" and all(p.isascii() and p.isdigit() and len(p) <= 3 for p in parts):
        return code
    return str(refusal.code)


async def transmit(client: aiosmtplib.SMTP, message: Message | Outgoing, recipient: str) -> None:
    """One SMTP transaction on a connected ``client``, as :class:`SmtpDelivery`
    runs it for each reply: an Outgoing's bytes as they are (:func:`_send_data`),
    else the Message serialised by aiosmtplib (also when the bytes are not 7-bit,
    which only an odd In-Reply-To can make: aiosmtplib then asks for 8BITMIME or
    encodes the header)."""
    if isinstance(message, Outgoing) and message.data.isascii():
        await _send_data(client, message.sender, recipient, smtp_data(message.data))
    else:
        await client.send_message(message.message if isinstance(message, Outgoing) else message, recipients=[recipient])


async def _send_data(client: aiosmtplib.SMTP, sender: str, recipient: str, data: bytes) -> None:
    """What ``client.sendmail(sender, [recipient], message)`` does, for a message
    already in DATA's form (:func:`~.message.smtp_data`): MAIL FROM (with SIZE
    where the server offers it), RCPT TO, DATA, and RSET after a refusal; the
    same exceptions (one recipient refused: ``SMTPRecipientsRefused``).

    aiosmtplib's ``sendmail`` runs its message through three regular expressions
    (line ends for SIZE, line ends again and dot-stuffing for DATA): on a reply
    with a board picture (~500 lines) they were ~30 % of the SMTP sender's CPU
    (issue 18).  Here the data goes as it is, with the DATA command's
    ``execute_command`` and the connection's ``write`` and ``read_response``."""
    if client.is_ehlo_or_helo_needed:
        try:
            await client.ehlo()
        except aiosmtplib.SMTPHeloError:
            if not client.is_connected:
                raise
            await client.helo()
    options = [f"size={_message_size(data)}"] if client.supports_extension("size") else []
    try:
        await client.mail(sender, options=options)
        try:
            await client.rcpt(recipient)
        except aiosmtplib.SMTPRecipientRefused as exc:
            raise aiosmtplib.SMTPRecipientsRefused([exc]) from exc
        answer = await client.execute_command(b"DATA")
        if answer.code != aiosmtplib.SMTPStatus.start_input:
            raise aiosmtplib.SMTPDataError(answer.code, answer.message)
        protocol = client.protocol
        if protocol is None:
            raise aiosmtplib.SMTPServerDisconnected("Connection lost")
        try:
            protocol.write(data)
            answer = await protocol.read_response(timeout=client.timeout)
        except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPTimeoutError):
            client.close()
            raise
        if answer.code != aiosmtplib.SMTPStatus.completed:
            raise aiosmtplib.SMTPDataError(answer.code, answer.message)
    except (aiosmtplib.SMTPResponseException, aiosmtplib.SMTPRecipientsRefused):
        with contextlib.suppress(ConnectionError, aiosmtplib.SMTPException):
            await client.rset()
        raise


def _message_size(data: bytes) -> int:
    """SIZE (RFC 1870) of a message in DATA's form: its octets with CRLF line
    ends, without the dots that dot-stuffing added or the final "." line (what
    aiosmtplib's ``sendmail`` says for the same message)."""
    return len(data) - 3 - data.count(b"\r\n..") - data.startswith(b"..")


OUTBOUND: dict[str, Callable[[Config], Delivery]] = {
    "smtp": SmtpDelivery,
    "maildir": lambda config: MaildirDelivery(config.embedded.maildir_root),
}
"""the deliveries that take replies out, by :attr:`Config.outbound`"""


def delivery_for(config: Config) -> Delivery:
    """The delivery the configuration names (:data:`OUTBOUND`): SMTP when configured,
    else the embedded default's Maildirs."""
    return OUTBOUND[config.outbound](config)
