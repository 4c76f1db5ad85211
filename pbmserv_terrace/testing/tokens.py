"""A local OAuth2 authorization server for the tests (127.0.0.1 only).

It answers what the server and Dovecot ask of a provider: the refresh-token
grant and the device flow (RFC 8628) at ``/token``, device authorization at
``/device``, and token introspection (RFC 7662) at ``/introspect`` for
Dovecot's ``oauth2`` passdb.  Access tokens live ``lifetime`` seconds, so a test
sees them expire and be replaced; every issue and introspection is recorded.
"""

from __future__ import annotations

import json
import secrets
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
