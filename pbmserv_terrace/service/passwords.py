"""Password hashing (argon2id) and a bounded cache of recent successful checks.

New hashes are argon2id with OWASP's minimum parameters (19 MiB, 2 passes, one
lane).  Hashes made before (``scrypt$…``) still verify; :func:`needs_rehash` says
which stored hashes the service replaces after the user's next successful check.

Every move mail carries the password, and the hash is deliberately slow (tens of
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
from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

ARGON2_MEMORY_KIB, ARGON2_TIME, ARGON2_LANES = 19 * 1024, 2, 1
"""OWASP's minimum for argon2id: m = 19 MiB, t = 2, p = 1"""
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
"""the parameters of hashes made before argon2id (still verified)"""
_ARGON2 = PasswordHasher(time_cost=ARGON2_TIME, memory_cost=ARGON2_MEMORY_KIB, parallelism=ARGON2_LANES, type=Type.ID)


def hash_password(password: str) -> str:
    """An argon2id hash (PHC string ``$argon2id$v=19$m=…,t=…,p=…$salt$hash``)."""
    return _ARGON2.hash(password)


def scrypt_hash(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """A hash in the old ``scrypt$`` format (for tests of the upgrade path)."""
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=64 * 1024 * 1024, dklen=32)
    return f"scrypt${n}${r}${p}${salt.hex()}${digest.hex()}"


def needs_rehash(stored: str) -> bool:
    """True for a usable hash that is not argon2id with today's parameters."""
    if stored.startswith("$argon2"):
        try:
            return _ARGON2.check_needs_rehash(stored)
        except InvalidHashError:
            return False
    return stored.startswith("scrypt$")


def verify_password(password: str, stored: str) -> bool:
    """Constant-time check of ``password`` against a stored argon2id or ``scrypt$`` hash."""
    if stored.startswith("$argon2"):
        try:
            return _ARGON2.verify(stored, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
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


_SCRYPT_THREADS: ThreadPoolExecutor | None = None


def _scrypt_pool() -> ThreadPoolExecutor:
    """The threads password hashes run in (argon2 and hashlib release the GIL while
    they work)."""
    global _SCRYPT_THREADS
    if _SCRYPT_THREADS is None:
        _SCRYPT_THREADS = ThreadPoolExecutor(max(1, (os.cpu_count() or 2)), thread_name_prefix="scrypt")
    return _SCRYPT_THREADS


class PasswordCache:
    """Remembers successful verifications for ``ttl`` seconds, at most ``size`` of them.

    :meth:`warm` starts a verification ahead of time (``serve`` does so for every
    mail it has fetched, outside any transaction); a later :meth:`check_async` of
    the same (user, hash, password) awaits that run instead of starting another.
    """

    def __init__(self, secret: bytes | None = None, ttl: float = 900.0, size: int = 20_000) -> None:
        self._key = secret or secrets.token_bytes(32)
        self.ttl, self.size = ttl, size
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        self._latest: OrderedDict[bytes, bytes] = OrderedDict()
        """(userid, password) → the token of its last success (see :meth:`known`)"""
        self._running: dict[bytes, asyncio.Future[bool]] = {}
        self.hits = self.misses = 0
        self.verifications = 0
        """slow-hash verifications run (the answers not taken from the cache)"""

    def _token(self, userid: str, stored: str, password: str) -> bytes:
        return hmac.new(self._key, f"{userid}\0{stored}\0{password}".encode(), hashlib.sha256).digest()

    def _pair(self, userid: str, password: str) -> bytes:
        return hmac.new(self._key, f"{userid}\0\0{password}".encode(), hashlib.sha256).digest()

    def known(self, userid: str, password: str) -> bool:
        """Whether this password succeeded for ``userid`` lately, against the hash
        stored then.  Says nothing about today's stored hash: good only for
        skipping work ahead of time (``serve``'s prewarm), never for a check."""
        token = self._latest.get(self._pair(userid, password))
        expires = None if token is None else self._seen.get(token)
        return expires is not None and expires > time.monotonic()

    def _hit(self, token: bytes) -> bool:
        expires = self._seen.get(token)
        if expires is not None and expires > time.monotonic():
            self._seen.move_to_end(token)
            self.hits += 1
            return True
        self.misses += 1
        return False

    def _remember(self, token: bytes, pair: bytes) -> None:
        self._seen[token] = time.monotonic() + self.ttl
        self._seen.move_to_end(token)
        while len(self._seen) > self.size:
            self._seen.popitem(last=False)
        self._latest[pair] = token
        self._latest.move_to_end(pair)
        while len(self._latest) > self.size:
            self._latest.popitem(last=False)

    def check(self, userid: str, stored: str, password: str) -> bool:
        token = self._token(userid, stored, password)
        if self._hit(token):
            return True
        self.verifications += 1
        if not verify_password(password, stored):
            return False
        self._remember(token, self._pair(userid, password))
        return True

    def _start(self, token: bytes, userid: str, stored: str, password: str) -> asyncio.Future[bool]:
        running = self._running.get(token)
        if running is None:
            self.verifications += 1
            loop = asyncio.get_running_loop()
            running = loop.run_in_executor(_scrypt_pool(), verify_password, password, stored)
            self._running[token] = running

            def done(fut: asyncio.Future[bool]) -> None:
                self._running.pop(token, None)
                if not fut.cancelled() and fut.exception() is None and fut.result():
                    self._remember(token, self._pair(userid, password))

            running.add_done_callback(done)
        return running

    def warm(self, userid: str, stored: str, password: str) -> asyncio.Future[bool] | None:
        """Start verifying in the background unless the answer is known; the
        running verification, or None when the answer is known already."""
        token = self._token(userid, stored, password)
        expires = self._seen.get(token)
        if expires is not None and expires > time.monotonic():
            return None
        return self._start(token, userid, stored, password)

    async def check_async(self, userid: str, stored: str, password: str) -> bool:
        """As :meth:`check`, with a miss's scrypt run in a thread so the event loop
        (IMAP, SMTP delivery) keeps going for its ~45 ms; joins a verification that
        :meth:`warm` already started."""
        token = self._token(userid, stored, password)
        if self._hit(token):
            return True
        return await asyncio.shield(self._start(token, userid, stored, password))

    @staticmethod
    async def hash_async(password: str) -> str:
        """:func:`hash_password` in a thread (the event loop keeps going)."""
        return await asyncio.get_running_loop().run_in_executor(_scrypt_pool(), hash_password, password)
