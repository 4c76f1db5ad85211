"""OAuth2 access tokens for IMAP and SMTP (SASL XOAUTH2).

Gmail and Microsoft 365 refuse plain passwords for most accounts.  The server
holds a long-lived *refresh token* (in ``oauth2.refresh_token_file``, written by
``pbmserv-terrace oauth2 login``, the RFC 8628 device flow below) and trades it
for short-lived *access tokens* at ``oauth2.token_url``: before the current one
expires (``refresh_margin``), and once more when a login with it fails.  A
provider that rotates refresh tokens (Microsoft 365: at every refresh) sends a
new one with the access token.

Where the refresh token lives (issue 43): it is read from ``rotated_token_file``
(under systemd ``oauth2-refresh-token`` in the state directory,
``StateDirectory=``), else from the systemd credential ``refresh_token_credential``
(``LoadCredential=``, read-only: the first token), else from
``refresh_token_file`` (older configurations: it is also ``rotated_token_file``).
A rotated token is written to ``rotated_token_file`` atomically (a temporary file,
fsync, rename; mode 0600).  When that write fails (a read-only directory) the new
token is kept in memory and used, the failure is logged at error level, shown by
``/healthz`` and ``/metrics`` (:func:`unsaved_tokens`), and the write is tried
again at the next login or refresh (at most once a minute): a restart before it
succeeds would log in with the old token, so the operator is told loudly.

Tokens are secrets: they are never logged and never put into an exception
message (the token endpoint's ``error``/``error_description`` are).  The HTTP
calls are stdlib ``urllib`` in a thread: two small POSTs an hour need no client
library.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..config import OAuth2Config, credential_path

log = logging.getLogger("pbmserv.oauth2")

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
HTTP_TIMEOUT = 30.0
SAVE_RETRY = 60.0
"""seconds between tries to write a rotated refresh token that could not be written"""


class OAuth2Error(RuntimeError):
    """No access token could be had; the message says why (never the token)."""


def post_form(url: str, form: dict[str, str], timeout: float = HTTP_TIMEOUT) -> tuple[int, dict[str, Any]]:
    """POST ``form`` (x-www-form-urlencoded) and read the JSON answer, also of an
    error status (token endpoints answer 400 with ``{"error": ...}``)."""
    if urllib.parse.urlsplit(url).scheme not in ("https", "http"):  # (no file: or other schemes from a config)
        raise OAuth2Error(f"not a web address: {url[:80]}")
    data = urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(url, data=data, headers={"Accept": "application/json"}, method="POST")  # noqa: S310 (checked above)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 (checked above)
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise OAuth2Error(f"cannot reach {url}: {reason}") from None
    try:
        answer = json.loads(body or b"{}")
    except ValueError:
        raise OAuth2Error(f"{url} answered HTTP {status} without JSON") from None
    if not isinstance(answer, dict):
        raise OAuth2Error(f"{url} answered HTTP {status} with JSON that is not an object")
    return status, answer


def _refusal(url: str, status: int, answer: dict[str, Any]) -> str:
    error = str(answer.get("error", "no error code"))[:100]
    description = str(answer.get("error_description", ""))[:300]
    return f"{url} refused (HTTP {status}, {error}{': ' + description if description else ''})"


def store_secret_file(path: str, value: str) -> None:
    """Write ``value`` to ``path`` readable by the owner only (0600), replacing
    the file in one step so a crash never leaves half a token: a temporary file
    beside it, fsync, rename, fsync of the folder."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, (value + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    with contextlib.suppress(OSError):  # the rename itself durable
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def token_store(cfg: OAuth2Config) -> str:
    """Where a new refresh token is written (rotated, or by ``oauth2 login``)."""
    return cfg.rotated_token_file or cfg.refresh_token_file


def refresh_token_files(cfg: OAuth2Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """Where the refresh token is looked for, in order (the first that has one wins)."""
    env = os.environ if environ is None else environ
    found: list[str] = []
    credential = credential_path(cfg.refresh_token_credential, env) if cfg.refresh_token_credential else None
    for path in (token_store(cfg), str(credential) if credential else "", cfg.refresh_token_file):
        if path and path not in found:
            found.append(path)
    return found


def read_refresh_token(cfg: OAuth2Config) -> str:
    """The refresh token from the first of :func:`refresh_token_files` that holds one."""
    places = refresh_token_files(cfg)
    for path in places:
        try:
            value = Path(path).read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):
            continue  # (not written yet: the next place)
        except OSError as exc:
            raise OAuth2Error(f"cannot read the refresh token file {path}: {exc.strerror}") from None
        if value:
            return value
    hint = ""
    if cfg.refresh_token_credential and credential_path(cfg.refresh_token_credential, os.environ) is None:
        hint = f" (the credential {cfg.refresh_token_credential} needs LoadCredential= and systemd)"
    raise OAuth2Error(
        f"no refresh token in {', '.join(places) or 'any file (set oauth2.refresh_token_file)'}{hint} "
        "(run `pbmserv-terrace oauth2 login`)"
    )


@dataclass(frozen=True)
class AccessToken:
    value: str = field(repr=False)
    renew_at: float
    """``TokenSource.clock`` time from which it is replaced (``refresh_margin``
    before the provider says it expires): a session logged in with it should be
    renewed by then too, as some providers end such sessions when the token
    expires (Microsoft 365: ``* BYE Session invalidated - AccessTokenExpired``)"""


class TokenSource:
    """Access tokens by the refresh-token grant, kept until ``refresh_margin``
    seconds (at most half the lifetime) before they expire.  One per process
    (:func:`token_source`) so IMAP and SMTP share a token."""

    def __init__(
        self,
        cfg: OAuth2Config,
        *,
        clock: Callable[[], float] = time.monotonic,
        post: Callable[[str, dict[str, str]], tuple[int, dict[str, Any]]] = post_form,
    ) -> None:
        self.cfg, self.clock, self.post = cfg, clock, post
        self._token: AccessToken | None = None
        self._locks: dict[int, asyncio.Lock] = {}
        self.refreshes = 0
        self.unsaved: str | None = None
        """a rotated refresh token not yet written to :func:`token_store` (used from memory)"""
        self.save_error = ""
        """why it could not be written"""
        self._next_save = 0.0

    def _lock(self) -> asyncio.Lock:
        loop = id(asyncio.get_running_loop())  # an asyncio.Lock belongs to one loop
        if loop not in self._locks:
            self._locks = {loop: asyncio.Lock()}
        return self._locks[loop]

    async def token(self, *, fresh: bool = False) -> str:
        """A valid access token; ``fresh`` = a new one even if the current one
        has not expired (the server refused it)."""
        return (await self.access(refused=self._token if fresh else None)).value

    async def access(self, *, refused: AccessToken | None = None) -> AccessToken:
        """The current access token, a new one when it is due for renewal, or
        when the server ``refused`` it (unless another login has already
        replaced it meanwhile: several connections refused at once fetch one
        new token, not one each)."""
        async with self._lock():
            if self.unsaved is not None and self.clock() >= self._next_save:
                await asyncio.to_thread(self._save_unsaved)
            current = self._token
            if current is not None and self.clock() < current.renew_at and (refused is None or current != refused):
                return current
            self._token = await asyncio.to_thread(self._refresh)
            return self._token

    def left(self, token: AccessToken) -> float:
        """Seconds until ``token`` is due for renewal (negative: overdue)."""
        return token.renew_at - self.clock()

    def _save(self, token: str) -> None:
        """Write a new refresh token, or keep it in memory and say so loudly."""
        path = token_store(self.cfg)
        try:
            if not path:
                raise OSError(0, "no file is configured (set server.state_directory or oauth2.rotated_token_file)")
            store_secret_file(path, token)
        except OSError as exc:
            self.unsaved, self.save_error = token, f"{path or '(none)'}: {exc.strerror or exc}"
            self._next_save = self.clock() + SAVE_RETRY
            log.error(
                "OAuth2: the provider sent a new refresh token but it cannot be written to %s; it is kept in "
                "memory and written again in %.0f s. A restart before then logs in with the old one: make the "
                "folder writable for the service (the unit's StateDirectory=, see deploy/README.md)",
                self.save_error, SAVE_RETRY,
            )  # fmt: skip
            return
        if self.unsaved is not None:
            log.warning("OAuth2: the refresh token kept in memory is written to %s now", path)
        self.unsaved, self.save_error = None, ""

    def _save_unsaved(self) -> None:
        if self.unsaved is not None:
            self._save(self.unsaved)

    def _refresh(self) -> AccessToken:
        cfg = self.cfg
        form = {
            "grant_type": "refresh_token",
            "refresh_token": self.unsaved if self.unsaved is not None else read_refresh_token(cfg),
            "client_id": cfg.client_id,
        }
        if cfg.client_secret:
            form["client_secret"] = cfg.client_secret
        status, answer = self.post(cfg.token_url, form)
        access = answer.get("access_token")
        if status != 200 or not isinstance(access, str) or not access:
            raise OAuth2Error(f"no access token: {_refusal(cfg.token_url, status, answer)}")
        rotated = answer.get("refresh_token")
        if isinstance(rotated, str) and rotated and rotated != form["refresh_token"]:
            self._save(rotated)
        try:
            lifetime = float(answer.get("expires_in", 3600))
        except (TypeError, ValueError):
            lifetime = 3600.0
        self.refreshes += 1
        keep = max(0.0, lifetime - min(cfg.refresh_margin, lifetime / 2))
        log.info("OAuth2: new access token from %s, valid for %.0f s (renewed after %.0f s)", cfg.token_url, lifetime, keep)
        return AccessToken(access, self.clock() + keep)


_SOURCES: dict[tuple[str, str, str], TokenSource] = {}


def token_source(cfg: OAuth2Config) -> TokenSource:
    """The process's token source for this client and refresh-token file."""
    key = (cfg.token_url, cfg.client_id, token_store(cfg))
    if key not in _SOURCES:
        _SOURCES[key] = TokenSource(cfg)
    return _SOURCES[key]


def unsaved_tokens() -> list[str]:
    """This process's rotated refresh tokens that could not be written: where, and why
    (never the token).  Empty when all is well; ``/healthz`` and ``/metrics`` show it."""
    return [source.save_error for source in _SOURCES.values() if source.unsaved is not None]


async def with_token_retry(source: TokenSource, login: Callable[[str], Awaitable[bool]]) -> AccessToken:
    """``login(token)`` with the current token and, if the server refuses it,
    once more with a fresh one.  ``login`` answers whether it was accepted; the
    accepted token is returned (its ``renew_at`` says how long the session is good)."""
    token = await source.access()
    if await login(token.value):
        return token
    log.warning("OAuth2 login refused; fetching a new access token and trying once more")
    token = await source.access(refused=token)
    if not await login(token.value):
        raise OAuth2Error("the server refused a freshly issued access token (check the account, scope and client)")
    return token


# ------------------------------------------------------------ SASL strings
MECHANISMS = ("XOAUTH2", "OAUTHBEARER")
"""the SASL mechanisms for a bearer token, in the order they are preferred"""


def sasl_initial(mechanism: str, user: str, token: str, host: str, port: int) -> str:
    """The base64 initial client response of ``mechanism``: XOAUTH2 (Google's and
    Microsoft's) or OAUTHBEARER (RFC 7628, with the GS2 header naming ``user``)."""
    if mechanism == "XOAUTH2":
        text = f"user={user}\x01auth=Bearer {token}\x01\x01"
    elif mechanism == "OAUTHBEARER":
        authzid = user.replace("=", "=3D").replace(",", "=2C")
        text = f"n,a={authzid},\x01host={host}\x01port={port}\x01auth=Bearer {token}\x01\x01"
    else:
        raise ValueError(f"not an OAuth2 SASL mechanism: {mechanism}")
    return base64.b64encode(text.encode()).decode()


SASL_ABORT = {"XOAUTH2": "", "OAUTHBEARER": "AQ=="}
"""what the client answers the error challenge a refused token gets (RFC 7628
3.2.3: a single %x01 for OAUTHBEARER; an empty line for XOAUTH2)"""


# ------------------------------------------------------------ device login
async def device_login(
    cfg: OAuth2Config,
    out: TextIO,
    *,
    post: Callable[[str, dict[str, str]], tuple[int, dict[str, Any]]] = post_form,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """RFC 8628: ask ``device_url`` for a code, tell the operator where to enter
    it (on any device with a browser), poll ``token_url`` until they have, and
    store the refresh token in ``refresh_token_file`` (0600)."""
    store = token_store(cfg)
    if not cfg.device_url or not cfg.token_url or not cfg.client_id or not store:
        raise OAuth2Error("set oauth2.device_url, token_url, client_id and refresh_token_file (or server.state_directory) first")
    form = {"client_id": cfg.client_id, "scope": cfg.scope}
    if cfg.client_secret:
        form["client_secret"] = cfg.client_secret
    status, answer = await asyncio.to_thread(post, cfg.device_url, form)
    device_code, user_code = answer.get("device_code"), answer.get("user_code")
    uri = answer.get("verification_uri") or answer.get("verification_url")  # Google's older name
    if status != 200 or not isinstance(device_code, str) or not isinstance(user_code, str) or not uri:
        raise OAuth2Error(f"device authorization failed: {_refusal(cfg.device_url, status, answer)}")
    interval = float(answer.get("interval", 5))
    deadline = time.monotonic() + float(answer.get("expires_in", 900))
    print(f"On any device, open {uri} and enter the code {user_code}", file=out)
    if answer.get("verification_uri_complete"):
        print(f"(or open {answer['verification_uri_complete']})", file=out)
    print("Waiting for the approval ...", file=out, flush=True)
    poll = {"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": cfg.client_id}
    if cfg.client_secret:
        poll["client_secret"] = cfg.client_secret
    while time.monotonic() < deadline:
        await sleep(interval)
        status, answer = await asyncio.to_thread(post, cfg.token_url, poll)
        error = answer.get("error")
        if status == 200 and isinstance(answer.get("refresh_token"), str):
            store_secret_file(store, answer["refresh_token"])
            print(f"Approved. The refresh token is in {store} (mode 0600).", file=out)
            return
        if status == 200:
            raise OAuth2Error("the token endpoint answered without a refresh token (ask for offline access in oauth2.scope)")
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += 5
            continue
        raise OAuth2Error(f"login not completed: {_refusal(cfg.token_url, status, answer)}")
    raise OAuth2Error("the code expired before it was entered; run `pbmserv-terrace oauth2 login` again")
