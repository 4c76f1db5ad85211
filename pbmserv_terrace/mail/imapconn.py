"""Opening an IMAP connection: TLS (implicit or STARTTLS, always verified),
login (password, or OAuth2: XOAUTH2 or OAUTHBEARER), and the small commands every session needs.

Split from :mod:`.imap` (the inbox loop) so that ``check-config`` and the loop
log in the same way.  A TLS problem raises :class:`~.tls.TlsError` with a
sentence naming the setting to change; STARTTLS that the server does not offer
is an error, never a quiet fall-back to plain text.
"""

from __future__ import annotations

import asyncio
import math
import ssl
import weakref
from typing import Any

import aioimaplib

from ..config import Config
from .oauth2 import MECHANISMS, SASL_ABORT, AccessToken, OAuth2Error, TokenSource, sasl_initial, token_source, with_token_retry
from .tls import TlsError, client_context, explain


class ImapError(RuntimeError):
    pass


def ok(response: Any, what: str) -> Any:
    """``response`` if the server said OK, else :class:`ImapError` with its words."""
    if response.result != "OK":
        raise ImapError(f"{what}: {response.result} {b' '.join(response.lines[-1:]).decode(errors='replace')}")
    return response


async def connect(config: Config, lost: asyncio.Event | None = None) -> aioimaplib.IMAP4:
    """Open, secure (implicit TLS or STARTTLS) and log in; the inbox is not selected.
    ``lost`` is set when the server drops the connection (so IDLE stops waiting)."""
    cfg = config.imap
    context = client_context(cfg.ca_file)

    def on_lost(exc: Exception | None) -> None:
        if lost is not None:
            lost.set()

    # IMAP4 with an ssl_context is implicit TLS (IMAP4_SSL takes no conn_lost_cb)
    client = aioimaplib.IMAP4(
        host=cfg.host, port=cfg.port, timeout=60, conn_lost_cb=on_lost, ssl_context=context if cfg.tls == "ssl" else None
    )
    try:
        await client.wait_hello_from_server()
        if cfg.tls == "starttls":
            await _starttls(client, cfg.host, context)
    except Exception as exc:
        message = explain(exc, "imap", cfg.host, cfg.port, cfg.ca_file)
        if message is not None:
            raise TlsError(message) from None
        raise
    await login(client, config)
    return client


async def login(client: aioimaplib.IMAP4, config: Config) -> None:
    """LOGIN with the password, or AUTHENTICATE XOAUTH2 (else OAUTHBEARER) with an
    access token (a fresh one once more if the server refuses it)."""
    cfg = config.imap
    if cfg.auth != "oauth2":
        ok(await client.login(cfg.user, cfg.password), f"IMAP login as {cfg.user}")
        return
    mechanism = next((m for m in MECHANISMS if client.has_capability(f"AUTH={m}")), None)
    if mechanism is None:
        raise ImapError(
            f"IMAP {cfg.host}: the server offers neither AUTH=XOAUTH2 nor AUTH=OAUTHBEARER; use imap.auth = 'password'"
        )

    said: list[str] = []

    async def attempt(token: str) -> bool:
        response = await _authenticate(client, mechanism, sasl_initial(mechanism, cfg.user, token, cfg.host, cfg.port))
        if response.result == "OK":
            return True
        words = b" ".join(response.lines[-1:]).decode(errors="replace")
        if response.result != "NO" or "[UNAVAILABLE]" in words.upper():
            # not a verdict on the token (Dovecot: "Temporary authentication failure")
            raise ImapError(f"IMAP {mechanism} login as {cfg.user}: {response.result} {words}")
        said.append(words)
        return False

    source = token_source(config.oauth2)
    try:
        _SESSIONS[client] = (source, await with_token_retry(source, attempt))
    except OAuth2Error as exc:
        words = f" (NO {said[-1]})" if said else ""
        raise ImapError(f"IMAP {mechanism} login as {cfg.user}: {exc}{words}") from None


_SESSIONS: weakref.WeakKeyDictionary[aioimaplib.IMAP4, tuple[TokenSource, AccessToken]] = weakref.WeakKeyDictionary()
"""the access token each OAuth2 session logged in with"""


def renew_in(client: aioimaplib.IMAP4) -> float:
    """Seconds until this session should be replaced by a new login: its access
    token is then due for renewal, and a provider may end the session when the
    token expires (Microsoft 365).  Infinite for a password login."""
    session = _SESSIONS.get(client)
    if session is None:
        return math.inf
    source, token = session
    return source.left(token)


async def _authenticate(client: aioimaplib.IMAP4, mechanism: str, initial: str) -> aioimaplib.Response:
    """AUTHENTICATE with the token in the initial response (SASL-IR).  aioimaplib's
    own ``xoauth2`` waits forever when the token is refused: the server then sends
    an error challenge (``+ <base64 JSON>``) and expects an answer (RFC 7628: an
    empty line for XOAUTH2, ``AQ==`` for OAUTHBEARER) before its tagged NO.
    aioimaplib's debug log shows the command with the initial response (the
    token, base64) starred out."""
    proto = client.protocol
    command = aioimaplib.Command("AUTHENTICATE", proto.new_tag(), mechanism, initial, loop=proto.loop)
    keep = command.append_to_resp
    abort = (SASL_ABORT[mechanism] + "\r\n").encode()

    def on_line(line: bytes, result: str = "Pending") -> None:
        keep(line, result)
        if result == "Pending" and bytes(line).startswith(b"+"):
            proto.transport.write(abort)  # end the exchange; the tagged NO follows

    command.append_to_resp = on_line
    async with proto.state_condition:
        response = await asyncio.wait_for(proto.execute(command, scrub=initial), 60)
        if response.result == "OK":
            proto.state = aioimaplib.AUTH
        proto.state_condition.notify_all()
    if response.result == "OK":
        await proto.capability()  # the post-login capabilities (MOVE, IDLE, UIDPLUS ...)
    return response


async def _starttls(client: aioimaplib.IMAP4, host: str, context: ssl.SSLContext) -> None:
    """aioimaplib has no STARTTLS helper: send the command, then upgrade the transport."""
    proto = client.protocol
    if "STARTTLS" not in proto.capabilities:
        raise TlsError(f"IMAP {host}: the server does not offer STARTTLS; set imap.tls = 'ssl' (and its port)")
    ok(await proto.execute(aioimaplib.Command("STARTTLS", proto.new_tag(), loop=proto.loop)), "STARTTLS")
    loop = asyncio.get_running_loop()
    proto.transport = await loop.start_tls(proto.transport, proto, context, server_hostname=host)
    await proto.capability()


async def ensure_folder(client: aioimaplib.IMAP4, name: str) -> None:
    resp = await client.create(name)
    if (
        resp.result != "OK"
        and b"ALREADYEXISTS" not in b" ".join(resp.lines).upper()
        and b"EXISTS" not in b" ".join(resp.lines).upper()
    ):
        raise ImapError(f"cannot create folder {name}: {resp.lines[-1:]}")
