"""The password hash and the verification cache (issue 6)."""

from __future__ import annotations

import asyncio

from pbmserv_terrace.service.passwords import PasswordCache, hash_password, verify_password


def test_hash_is_salted_scrypt_and_verifies():
    a, b = hash_password("s3cret"), hash_password("s3cret")
    assert a.startswith("scrypt$16384$8$1$") and a != b and "s3cret" not in a
    assert verify_password("s3cret", a) and not verify_password("S3cret", a) and not verify_password("x", "garbage")


def test_cache_remembers_successes_only_keyed_by_hmac():
    stored = hash_password("pw")

    async def run() -> PasswordCache:
        cache = PasswordCache(b"k" * 32)
        assert not await cache.check_async("ann", stored, "wrong")
        assert await cache.check_async("ann", stored, "pw")  # a miss: scrypt
        assert await cache.check_async("ann", stored, "pw")  # a hit
        assert not await cache.check_async("ann", stored, "wrong")  # failures are never cached
        assert not cache.check("ann", hash_password("pw2"), "pw")  # a changed password (new hash) misses
        return cache

    cache = asyncio.run(run())
    assert cache.hits == 1 and cache.misses == 4
    assert all(b"pw" not in token and b"ann" not in token for token in cache._seen)


def test_warm_starts_one_check_that_the_command_then_joins(monkeypatch):
    from pbmserv_terrace.service import passwords

    stored = hash_password("pw")
    calls: list[str] = []
    real = passwords.verify_password

    def counting(password: str, hashed: str) -> bool:
        calls.append(password)
        return real(password, hashed)

    monkeypatch.setattr(passwords, "verify_password", counting)

    async def run() -> None:
        cache = PasswordCache(b"k" * 32)
        running = cache.warm("ann", stored, "pw")
        assert running is not None and cache.warm("ann", stored, "pw") is running  # one run, shared
        assert await cache.check_async("ann", stored, "pw")  # joins it
        assert cache.warm("ann", stored, "pw") is None  # known now: nothing to start
        wrong = cache.warm("ann", stored, "nope")
        assert wrong is not None and not await wrong
        assert not await cache.check_async("ann", stored, "nope")  # a failure is checked again, never cached

    asyncio.run(run())
    assert calls == ["pw", "nope", "nope"]
