"""The password hash (argon2id, old scrypt hashes upgraded) and the verification cache."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import event, select, update

from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service.passwords import PasswordCache, hash_password, needs_rehash, scrypt_hash, verify_password
from pbmserv_terrace.store import User

from .harness import Harness, confirm, mine, raw_mail


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
        asked = h.send("ann", "terrace challenge ann ben")  # no password: nothing to upgrade with
        wrong = confirm(h, mine(asked, "ann"))  # (opened by the Reply to its confirmation)
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
    stored = hash_password("horse-battery")

    async def run() -> PasswordCache:
        cache = PasswordCache(b"k" * 32)
        assert not await cache.check_async("annabel-lee", stored, "wrong")
        assert await cache.check_async("annabel-lee", stored, "horse-battery")  # a miss: argon2id
        assert await cache.check_async("annabel-lee", stored, "horse-battery")  # a hit
        assert not await cache.check_async("annabel-lee", stored, "wrong")  # failures are never cached
        assert not cache.check("annabel-lee", hash_password("horse-battery-2"), "horse-battery")  # a changed password (new hash) misses
        return cache

    cache = asyncio.run(run())
    assert cache.hits == 1 and cache.misses == 4
    assert cache.verifications == 4  # every miss ran the slow hash; the hit did not
    # (long strings: a short one, "pw", turned up in the random-looking tokens by chance, 1 run in ~500)
    assert all(b"horse-battery" not in token and b"annabel-lee" not in token for token in cache._seen)


def test_warm_starts_one_check_that_the_command_then_joins(monkeypatch):
    from pbmserv_terrace.service import passwords

    stored = hash_password("pw")
    calls: list[str] = []
    real = passwords.verify_password

    def counting(password: str, hashed: str) -> bool:
        calls.append(password)
        return real(password, hashed)

    monkeypatch.setattr(passwords, "verify_password", counting)

    async def run() -> PasswordCache:
        cache = PasswordCache(b"k" * 32)
        running = cache.warm("ann", stored, "pw")
        assert running is not None and cache.warm("ann", stored, "pw") is running  # one run, shared
        assert await cache.check_async("ann", stored, "pw")  # joins it
        assert cache.warm("ann", stored, "pw") is None  # known now: nothing to start
        wrong = cache.warm("ann", stored, "nope")
        assert wrong is not None and not await wrong
        assert not await cache.check_async("ann", stored, "nope")  # a failure is checked again, never cached
        return cache

    cache = asyncio.run(run())
    assert calls == ["pw", "nope", "nope"]
    assert cache.verifications == len(calls)  # what /metrics reports as pbmserv_password_checks_total


def test_known_remembers_which_passwords_passed_lately_whatever_the_hash_is_now():
    old = hash_password("pw")

    async def run() -> None:
        cache = PasswordCache(b"k" * 32)
        assert not cache.known("ann", "pw")
        assert not await cache.check_async("ann", old, "nope")
        assert not cache.known("ann", "nope")  # failures never
        assert await cache.check_async("ann", old, "pw")
        assert cache.known("ann", "pw") and not cache.known("bob", "pw") and not cache.known("ann", "pw2")
        assert not cache.check("ann", hash_password("other"), "pw")  # the password changed: the check says no
        assert cache.known("ann", "pw")  # while the hint still says "passed lately" (prewarm only)
        brief = PasswordCache(b"k" * 32, ttl=0.0)
        assert await brief.check_async("ann", old, "pw") and not brief.known("ann", "pw")  # expired at once

    asyncio.run(run())


def test_the_prewarm_reads_no_hash_for_a_password_that_passed_and_a_changed_one_is_still_refused():
    h = Harness()
    try:
        h.signup("ann", "ben")
        h.send("ben", "terrace challenge ben pw-ben ann ben")  # ann's password not given yet
        reads: list[str] = []

        def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
            if "password_hash" in statement and statement.lstrip().upper().startswith("SELECT"):
                reads.append(statement)

        event.listen(h.db.engine.sync_engine, "before_cursor_execute", seen)

        def prewarm(move: str) -> list[list[asyncio.Future[bool]]]:
            mail = parse_message(raw_mail("ann@players.test", f"terrace move 101 ann pw-ann {move}"))
            return h.loop.run_until_complete(h.service.prewarm([mail]))

        first = prewarm("d2-e3")
        assert len(reads) == 1 and len(first[0]) == 1  # ann's hash read, her check started
        assert h.loop.run_until_complete(first[0][0]) is True
        assert prewarm("d2-e3") == [[]] and len(reads) == 1  # known: no read, nothing to start

        async def change_password() -> None:
            async with h.db.session() as s:
                await s.execute(update(User).where(User.userid == "ann").values(password_hash=hash_password("new-pw")))
                await s.commit()

        h.loop.run_until_complete(change_password())
        assert prewarm("d2-e3") == [[]]  # the hint is not a check: the command's own check counts
        refused = h.move(101, "ann", "d2-e3")
        assert "not correct" in refused[0].body and h.last is not None and h.last.status != "ok"
        h.send("ann", "terrace move 101 ann new-pw d2-e3")
        assert h.last is not None and h.last.status == "ok"
    finally:
        h.close()
