"""Password hashing (scrypt) and a bounded cache of recent successful checks.

Every move mail carries the password, and scrypt is deliberately slow (tens of
milliseconds), so a verified password is remembered for a while.  The cache key is
an HMAC of (userid, stored hash, password) under a per-process server secret: the
password itself is never kept, and a changed password (new stored hash) misses.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
import time
from collections import OrderedDict

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=64 * 1024 * 1024, dklen=32)
    return f"scrypt${n}${r}${p}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """Constant-time check of ``password`` against a stored ``scrypt$…`` hash."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        computed = hashlib.scrypt(
            password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), maxmem=64 * 1024 * 1024, dklen=32
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(computed, bytes.fromhex(digest))


class PasswordCache:
    """Remembers successful verifications for ``ttl`` seconds, at most ``size`` of them."""

    def __init__(self, secret: bytes | None = None, ttl: float = 900.0, size: int = 20_000) -> None:
        self._key = secret or secrets.token_bytes(32)
        self.ttl, self.size = ttl, size
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        self.hits = self.misses = 0

    def _token(self, userid: str, stored: str, password: str) -> bytes:
        return hmac.new(self._key, f"{userid}\0{stored}\0{password}".encode(), hashlib.sha256).digest()

    def _hit(self, token: bytes) -> bool:
        expires = self._seen.get(token)
        if expires is not None and expires > time.monotonic():
            self._seen.move_to_end(token)
            self.hits += 1
            return True
        self.misses += 1
        return False

    def _remember(self, token: bytes) -> None:
        self._seen[token] = time.monotonic() + self.ttl
        self._seen.move_to_end(token)
        while len(self._seen) > self.size:
            self._seen.popitem(last=False)

    def check(self, userid: str, stored: str, password: str) -> bool:
        token = self._token(userid, stored, password)
        if self._hit(token):
            return True
        if not verify_password(password, stored):
            return False
        self._remember(token)
        return True

    async def check_async(self, userid: str, stored: str, password: str) -> bool:
        """As :meth:`check`, with a miss's scrypt run in a thread so the event loop
        (IMAP, SMTP delivery) keeps going for its ~45 ms."""
        token = self._token(userid, stored, password)
        if self._hit(token):
            return True
        if not await asyncio.to_thread(verify_password, password, stored):
            return False
        self._remember(token)
        return True
