"""The password hash (argon2id, old scrypt hashes upgraded) and the verification cache."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from pbmserv_terrace.service.passwords import PasswordCache, hash_password, needs_rehash, scrypt_hash, verify_password
from pbmserv_terrace.store import User

from .harness import Harness


def test_hash_is_salted_argon2id_at_owasp_minimum_and_verifies():
    a, b = hash_password("s3cret"), hash_password("s3cret")
    # OWASP: m >= 19 MiB (19456 KiB), t >= 2, p = 1
    assert a.startswith("$argon2id$v=19$m=19456,t=2,p=1$") and a != b and "s3cret" not in a
    assert verify_password("s3cret", a) and not verify_password("S3cret", a) and not verify_password("x", "garbage")
    assert not needs_rehash(a)


def test_old_scrypt_hashes_still_verify_and_need_a_rehash():
    old = scrypt_hash("s3cret")
    assert old.startswith("scrypt$16384$8$1$")
    assert verify_password("s3cret", old) and not verify_password("S3cret", old)
    assert needs_rehash(old) and not needs_rehash("!deleted")
    weaker = "$argon2id$v=19$m=8192,t=1,p=1$" + hash_password("x").rsplit("$", 2)[1] + "$" + hash_password("x").rsplit("$", 1)[1]
    assert needs_rehash(weaker)


def test_a_user_signed_up_before_argon2_keeps_their_password_and_is_rehashed_on_the_next_command():
    h = Harness()
    try:
        h.signup("ann", "ben")

        async def stored(userid: str) -> str:
            async with h.db.session() as s:
                return (await s.execute(select(User.password_hash).where(User.userid == userid))).scalar_one()

        async def set_scrypt() -> None:
            async with h.db.session() as s:
                user = (await s.execute(select(User).where(User.userid == "ann"))).scalar_one()
                user.password_hash = scrypt_hash("pw-ann")
                await s.commit()

        h.loop.run_until_complete(set_scrypt())
        assert h.loop.run_until_complete(stored("ann")).startswith("scrypt$")
        wrong = h.send("ann", "terrace challenge ann ben")  # no password: nothing to upgrade with
        assert "New Terrace Board 101" in wrong[0].subject
        assert h.loop.run_until_complete(stored("ann")).startswith("scrypt$")
        h.move(101, "ann", "d2-e3")  # the right password, checked against the scrypt hash
        assert h.last is not None and h.last.status == "ok"
        assert h.loop.run_until_complete(stored("ann")).startswith("$argon2id$")
        again = h.send("ann", "terrace move 101 ann wrong-password propose")
        assert "not correct" in again[0].body
        assert h.move(101, "ben", "d7-d6")[0].subject  # ben's hash was argon2id from the start
        assert h.send("ann", "terrace move 101 ann pw-ann e3-e4") and h.last.status == "ok"  # the new hash verifies
    finally:
        h.close()


def test_cache_remembers_successes_only_keyed_by_hmac():
    stored = hash_password("pw")

    async def run() -> PasswordCache:
        cache = PasswordCache(b"k" * 32)
        assert not await cache.check_async("ann", stored, "wrong")
        assert await cache.check_async("ann", stored, "pw")  # a miss: argon2id
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
