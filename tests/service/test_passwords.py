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
