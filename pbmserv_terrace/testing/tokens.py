"""A local OAuth2 authorization server for the tests (127.0.0.1 only).

It answers what the server and Dovecot ask of a provider: the refresh-token
grant and the device flow (RFC 8628) at ``/token``, device authorization at
``/device``, and token introspection (RFC 7662) at ``/introspect`` for
Dovecot's ``oauth2`` passdb.  Access tokens live ``lifetime`` seconds, so a test
sees them expire and be replaced; every issue and introspection is recorded.

:class:`ExpiringSessions` stands in front of a mail server and ends the sessions
whose token expired, as Microsoft 365 does.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import secrets
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .postgres import free_port


class TokenServer:
    __test__ = False

    def __init__(
        self, users: dict[str, str], *, client_id: str = "pbmserv-test", client_secret: str = "", lifetime: float = 3600.0
    ) -> None:
        """``users``: refresh token → the account (mail address) it is for."""
        self.refresh_tokens = dict(users)
        self.client_id, self.client_secret, self.lifetime = client_id, client_secret, lifetime
        self.access: dict[str, tuple[str, float]] = {}
        self.issued: list[tuple[str, float]] = []
        """(account, time) of every access token handed out"""
        self.introspected: list[bool] = []
        """whether each token Dovecot asked about was active"""
        self.devices: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> TokenServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def approve(self, user_code: str, account: str) -> None:
        """The operator entered ``user_code`` and consented, as ``account``."""
        with self.lock:
            for device in self.devices.values():
                if device["user_code"] == user_code:
                    device["account"] = account
                    return
        raise KeyError(user_code)

    def expire_all(self) -> None:
        """Every access token handed out so far stops working now."""
        with self.lock:
            self.access = {token: (account, 0.0) for token, (account, _) in self.access.items()}

    # ------------------------------------------------------------------ HTTP
    def _answer(self, path: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if path == "/introspect":
                entry = self.access.get(form.get("token", ""))
                active = entry is not None and time.time() < entry[1]
                self.introspected.append(active)
                return 200, ({"active": True, "username": entry[0], "email": entry[0]} if active and entry else {"active": False})
            if form.get("client_id") != self.client_id or (
                self.client_secret and form.get("client_secret") != self.client_secret
            ):
                return 401, {"error": "invalid_client"}
            if path == "/device":
                code = secrets.token_hex(8)
                user_code = secrets.token_hex(3).upper()
                self.devices[code] = {"user_code": user_code, "account": None}
                return 200, {"device_code": code, "user_code": user_code, "verification_uri": f"{self.url}/activate",
                             "interval": 1, "expires_in": 120}  # fmt: skip
            if path != "/token":
                return 404, {"error": "not_found"}
            grant = form.get("grant_type")
            if grant == "refresh_token":
                account = self.refresh_tokens.get(form.get("refresh_token", ""))
                if account is None:
                    return 400, {"error": "invalid_grant", "error_description": "unknown refresh token"}
                return 200, self._issue(account)
            if grant == "urn:ietf:params:oauth:grant-type:device_code":
                device = self.devices.get(form.get("device_code", ""))
                if device is None:
                    return 400, {"error": "expired_token"}
                if device["account"] is None:
                    return 400, {"error": "authorization_pending"}
                refresh = "rt-" + secrets.token_hex(16)
                self.refresh_tokens[refresh] = device["account"]
                del self.devices[form["device_code"]]
                return 200, {**self._issue(device["account"]), "refresh_token": refresh}
            return 400, {"error": "unsupported_grant_type"}

    def _issue(self, account: str) -> dict[str, Any]:
        token = "at-" + secrets.token_hex(16)
        self.access[token] = (account, time.time() + self.lifetime)
        self.issued.append((account, time.time()))
        return {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                status, answer = server._answer(self.path.split("?")[0], form)
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        return Handler


class ExpiringSessions:
    """A TCP proxy on 127.0.0.1 in front of an IMAP or SMTP port that ends each
    session when the access token it logged in with expires, as Microsoft 365
    does (Dovecot and Postfix keep a session however old its token is).

    It reads the client's lines: the token of a successful ``AUTHENTICATE`` /
    ``AUTH`` ``XOAUTH2`` or ``OAUTHBEARER`` is remembered (its expiry asked of
    ``tokens``, so :meth:`TokenServer.expire_all` revokes sessions too).  Once it
    has expired, the client's next command is not passed on: IMAP gets
    ``* BYE Session invalidated - AccessTokenExpired`` (Microsoft's words), SMTP
    ``421 4.7.0 ...``, and the connection is closed.  An IMAP session waiting in
    IDLE gets its BYE at the moment of expiry.  Message text (SMTP DATA) is never
    interrupted.  Every session so ended is in :attr:`ended` (``"imap IDLE"``,
    ``"smtp MAIL"``: the protocol and the command refused)."""

    __test__ = False

    def __init__(self, tokens: TokenServer, target_port: int, protocol: str) -> None:
        assert protocol in ("imap", "smtp")
        self.tokens, self.target_port, self.protocol = tokens, target_port, protocol
        self.port = free_port()
        self.ended: list[str] = []
        self.logins = 0
        """sessions that logged in with a token"""
        self._sessions: list[_ProxiedSession] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._threads = [threading.Thread(target=self._accept, daemon=True), threading.Thread(target=self._watch, daemon=True)]

    def start(self) -> ExpiringSessions:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            sessions = list(self._sessions)
        for session in sessions:
            session.close()

    def expired(self, token: str) -> bool:
        with self.tokens.lock:
            entry = self.tokens.access.get(token)
        return entry is None or time.time() >= entry[1]

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                conn.close()
                continue
            upstream.settimeout(None)
            session = _ProxiedSession(self, conn, upstream)
            with self._lock:
                self._sessions = [s for s in self._sessions if not s.closed] + [session]
            session.start()

    def _watch(self) -> None:
        """IDLE is a wait, not a command: its session ends when the token expires."""
        while not self._stop.wait(0.05):
            with self._lock:
                sessions = [s for s in self._sessions if not s.closed]
            for session in sessions:
                if session.idle and session.token is not None and self.expired(session.token):
                    session.end("IDLE")


class _ProxiedSession:
    _AUTH = re.compile(rb"^(?:\S+ AUTHENTICATE|AUTH) (XOAUTH2|OAUTHBEARER) (\S+)\s*$", re.IGNORECASE)

    def __init__(self, proxy: ExpiringSessions, client: socket.socket, server: socket.socket) -> None:
        self.proxy, self.client, self.server = proxy, client, server
        self.token: str | None = None
        """the token this session logged in with"""
        self.pending: str | None = None
        """the token of an authentication not yet answered"""
        self.idle = False
        self.in_data = False
        self.closed = False
        self.lock = threading.Lock()

    def start(self) -> None:
        threading.Thread(target=self._client_side, daemon=True).start()
        threading.Thread(target=self._server_side, daemon=True).start()

    def close(self) -> None:
        with self.lock:
            self.closed = True
        self._hang_up()

    def _hang_up(self) -> None:
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def end(self, command: str) -> None:
        """The token expired: say so as the provider does, and hang up."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
        words = (
            b"* BYE Session invalidated - AccessTokenExpired\r\n"
            if self.proxy.protocol == "imap"
            else b"421 4.7.0 Session invalidated - AccessTokenExpired\r\n"
        )
        with contextlib.suppress(OSError):
            self.client.sendall(words)
        with self.proxy._lock:
            self.proxy.ended.append(f"{self.proxy.protocol} {command}")
        self._hang_up()

    @staticmethod
    def _token_of(sasl: bytes) -> str | None:
        try:
            text = base64.b64decode(sasl).decode()
        except ValueError:
            return None
        for field in text.split("\x01"):
            if field.startswith("auth=Bearer "):
                return field.removeprefix("auth=Bearer ")
        return None

    def _client_side(self) -> None:
        buffer = b""
        try:
            while not self.closed:
                data = self.client.recv(65536)
                if not data:
                    break
                buffer += data
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if not self._from_client(line + b"\n"):
                        return
        except OSError:
            pass
        self.close()

    def _from_client(self, line: bytes) -> bool:
        """Check and pass on one line of the client; False: the session ended."""
        words = line.strip().split()
        if self.in_data:
            self.in_data = line.strip() != b"."
        elif self.proxy.protocol == "smtp" and words[:1] and words[0].upper() == b"DATA":
            self.in_data = True
        elif self.proxy.protocol == "imap" and len(words) >= 2 and words[1].upper() == b"IDLE":
            self.idle = True
        elif self.proxy.protocol == "imap" and words[:1] == [b"DONE"]:
            self.idle = False
        command = (words[1] if self.proxy.protocol == "imap" and len(words) > 1 else words[0] if words else b"").upper()
        if (
            not self.in_data
            and self.token is not None
            and command not in (b"LOGOUT", b"QUIT", b"DONE")
            and self.proxy.expired(self.token)
        ):
            self.end(command.decode(errors="replace"))
            return False
        auth = self._AUTH.match(line.strip())
        if auth is not None:
            self.pending = self._token_of(auth.group(2))
        self.server.sendall(line)
        return True

    def _server_side(self) -> None:
        buffer = b""
        try:
            while not self.closed:
                data = self.server.recv(65536)
                if not data:
                    break
                buffer += data
                complete, newline, buffer = buffer.rpartition(b"\n")
                if complete and self.pending is not None:
                    for line in complete.split(b"\n"):
                        words = line.split()
                        accepted = (words[1:2] == [b"OK"]) if self.proxy.protocol == "imap" else line.startswith(b"235")
                        if accepted and (self.proxy.protocol == "smtp" or not line.startswith(b"*")):
                            self.token, self.pending = self.pending, None
                            with self.proxy._lock:
                                self.proxy.logins += 1
                self.client.sendall(complete + newline)
        except OSError:
            pass
        self.close()
