"""OAuth2 through Postfix's submission port (issue 20, items 1 and 4): the
server's SMTP side logs in with XOAUTH2 (or OAUTHBEARER where only that is
offered) to a private Postfix whose SASL is Dovecot's auth service
(``smtpd_sasl_type = dovecot``), and Dovecot's ``oauth2`` passdb asks the local
token server whether the token is good.  The replies come from the real outbox
(:class:`~pbmserv_terrace.app.outbox.OutboxSenders`) and land in the player's
Dovecot INBOX.  A token the server refuses leaves the reply pending, retried,
never failed; a good token gets it out, once."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from email import message_from_bytes
from pathlib import Path
from types import SimpleNamespace

import pytest

from pbmserv_terrace.app.outbox import drain_outbox
from pbmserv_terrace.config import Config, load_config
from pbmserv_terrace.mail.delivery import SmtpDelivery
from pbmserv_terrace.mail.imap import connect
from pbmserv_terrace.store import Database, UnitOfWork, utcnow
from pbmserv_terrace.testing.dovecot import DovecotServer
from pbmserv_terrace.testing.postfix import PostfixServer
from pbmserv_terrace.testing.tokens import TokenServer

SERVER = "pbmserv@terrace.test"
ANN = "ann@players.test"


@pytest.fixture
def tokens() -> Iterator[TokenServer]:
    server = TokenServer({"rt-server": SERVER, "rt-ann": ANN}, lifetime=3600).start()
    yield server
    server.stop()


NO_PENALTY = "service anvil {\n  unix_listener anvil-auth-penalty {\n    mode = 0\n  }\n}\n"
"""Dovecot's per-IP delay after refused logins (2, 4, 8, up to 15 s) switched off:
all the test's logins come from 127.0.0.1, and beyond 10 s Postfix gives up on
Dovecot and answers ``454 4.7.0 Temporary authentication failure`` (which the
outbox takes as temporary too, but the test would take a minute)"""


def mta(tokens: TokenServer, mechanisms: str = "xoauth2 oauthbearer", extra: str = "") -> tuple[DovecotServer, PostfixServer]:
    dovecot = DovecotServer({SERVER: "unused-password", ANN: "a"}, oauth2_url=tokens.url, auth_listener=True,
                            oauth2_mechanisms=mechanisms, extra=extra).start()  # fmt: skip
    try:
        postfix = PostfixServer(dovecot.lmtp_port, domains=["terrace.test", "players.test"], mailboxes=[SERVER, ANN],
                                sasl_port=dovecot.auth_port).start()  # fmt: skip
    except BaseException:
        dovecot.stop()
        raise
    return dovecot, postfix


def config(tmp_path: Path, tokens: TokenServer, dovecot: DovecotServer, postfix: PostfixServer) -> Config:
    (tmp_path / "refresh").write_text("rt-server\n")
    path = tmp_path / "pbmserv.toml"
    path.write_text(f'[server]\naddress = "{SERVER}"\ndatabase_url = "sqlite:///{tmp_path}/t.db"\n'
                    f'[imap]\nhost = "127.0.0.1"\nport = {dovecot.imap_port}\ntls = "none"\nuser = "{SERVER}"\nauth = "oauth2"\n'
                    f'[smtp]\nhost = "127.0.0.1"\nport = {postfix.submission_port}\ntls = "none"\nuser = "{SERVER}"\n'
                    f'auth = "oauth2"\nretry_base_seconds = 60\n'
                    f'[oauth2]\ntoken_url = "{tokens.url}/token"\nclient_id = "{tokens.client_id}"\n'
                    f'refresh_token_file = "{tmp_path}/refresh"\nrefresh_margin = 60\n')  # fmt: skip
    return load_config(path, {})


def wait_for(dovecot: DovecotServer, user: str, count: int, timeout: float = 30.0) -> list[bytes]:
    deadline = time.time() + timeout
    while True:
        box = dovecot.fetch_all(user)
        if len(box) >= count or time.time() > deadline:
            return box
        time.sleep(0.1)


@pytest.mark.parametrize("offered", ["xoauth2 oauthbearer", "oauthbearer"])
def test_replies_through_postfix_submission_with_an_oauth2_token(
    tmp_path: Path, tokens: TokenServer, offered: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aioimaplib")  # it logs each command sent
    dovecot, postfix = mta(tokens, offered)
    try:
        cfg = config(tmp_path, tokens, dovecot, postfix)
        mechanism = offered.split()[0].upper()  # XOAUTH2 where offered, else OAUTHBEARER

        async def run() -> None:
            db = Database(cfg.server.database_url)
            await db.migrate()
            await queue(db, ["<sub1@srv.test>", "<sub2@srv.test>"])
            result = await drain_outbox(db, SmtpDelivery(cfg), cfg)
            assert (result.sent, result.retried, result.failed) == (2, 0, 0)
            assert await states(db) == {"<sub1@srv.test>": ("sent", 1), "<sub2@srv.test>": ("sent", 1)}
            client = await asyncio.wait_for(connect(cfg), 30)  # IMAP too, with the same mechanism
            await client.logout()
            await db.close()

        asyncio.run(run())
        box = [message_from_bytes(raw) for raw in wait_for(dovecot, ANN, 2)]
        assert sorted(str(m["Message-ID"]) for m in box) == ["<sub1@srv.test>", "<sub2@srv.test>"]
        assert f"sasl_method={mechanism}, sasl_username={SERVER}" in postfix.log()
        assert len(tokens.issued) == 1 and tokens.introspected == [True, True]  # one token, one login each side
        assert f"AUTHENTICATE {mechanism} ****" in caplog.text  # the initial response (the token) starred out
        assert [t for t in tokens.access if t in caplog.text] == []
    finally:
        postfix.close()
        dovecot.stop()


async def queue(db: Database, message_ids: list[str]) -> None:
    now = utcnow()
    async with UnitOfWork(db) as uow:
        for mid in message_ids:
            uow.outbox.queue(message_id=mid, recipient=ANN, subject=f"reply {mid}", body="your move\n",
                                         state="pending", attempts=0, next_attempt_at=now, created_at=now)  # fmt: skip
        await uow.commit()


async def states(db: Database) -> dict[str, tuple[str, int]]:
    async with UnitOfWork(db) as uow:
        rows = [r for state in ("sent", "pending", "failed") for r in await uow.outbox.by_state(state)]
        return {r.message_id: (r.state, r.attempts) for r in rows}


async def make_due(db: Database) -> None:
    """Time passes: every pending reply's retry is due."""
    async with UnitOfWork(db) as uow:
        for r in await uow.outbox.by_state("pending"):
            r.next_attempt_at = utcnow()
        await uow.commit()


async def row(db: Database, mid: str) -> SimpleNamespace:
    """What the outbox holds of one reply (read in its own session)."""
    async with UnitOfWork(db) as uow:
        for state in ("sent", "pending", "failed"):
            for r in await uow.outbox.by_state(state):
                if r.message_id == mid:
                    return SimpleNamespace(state=r.state, attempts=r.attempts, next_attempt_at=r.next_attempt_at,
                                           last_error=r.last_error)  # fmt: skip
    raise KeyError(mid)


def test_a_refused_token_keeps_the_reply_pending_and_a_good_one_gets_it_out(
    tmp_path: Path, tokens: TokenServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="aioimaplib")
    dovecot, postfix = mta(tokens, extra=NO_PENALTY)
    try:
        cfg = config(tmp_path, tokens, dovecot, postfix)

        async def run() -> None:
            db = Database(cfg.server.database_url)
            await db.migrate()
            # 1. the provider revoked the access token early: refused once, a fresh one
            #    is fetched and the same connection logs in with it; sent at the first try
            await drain_outbox(db, SmtpDelivery(cfg), cfg)  # (nothing queued: no login at all)
            assert tokens.issued == []
            await queue(db, ["<r1@srv.test>"])
            await drain_outbox(db, SmtpDelivery(cfg), cfg)
            tokens.expire_all()
            await queue(db, ["<r2@srv.test>"])
            await drain_outbox(db, SmtpDelivery(cfg), cfg)
            assert await states(db) == {"<r1@srv.test>": ("sent", 1), "<r2@srv.test>": ("sent", 1)}
            assert tokens.introspected == [True, False, True] and len(tokens.issued) == 2

            # 2. a wrong token: the refresh token is the player's account, not the
            #    server's (Dovecot: the token's user is not the one logging in) -> refused
            #    even fresh; the reply stays pending with a retry time, again and again
            (tmp_path / "refresh").write_text("rt-ann\n")
            tokens.expire_all()
            await queue(db, ["<r3@srv.test>"])
            for attempt in (1, 2, 3):
                result = await drain_outbox(db, SmtpDelivery(cfg), cfg)
                assert (result.sent, result.failed, result.retried) == (0, 0, 1)
                r3 = await row(db, "<r3@srv.test>")
                assert (r3.state, r3.attempts) == ("pending", attempt)
                assert r3.next_attempt_at > utcnow()  # a retry time, doubling (1, 2, 4 min here)
                await make_due(db)
                assert "refused a freshly issued access token" in (r3.last_error or ""), r3.last_error
                assert "535 5.7.8" in (r3.last_error or "")

            # 3. the refresh token itself is refused (revoked, or expired after months)
            (tmp_path / "refresh").write_text("rt-revoked\n")
            tokens.expire_all()
            result = await drain_outbox(db, SmtpDelivery(cfg), cfg)
            r3 = await row(db, "<r3@srv.test>")
            assert (result.sent, result.failed, r3.state, r3.attempts) == (0, 0, "pending", 4)
            await make_due(db)
            assert "invalid_grant: unknown refresh token" in (r3.last_error or ""), r3.last_error

            # 4. the operator runs `oauth2 login` again: the good refresh token is back
            (tmp_path / "refresh").write_text("rt-server\n")
            result = await drain_outbox(db, SmtpDelivery(cfg), cfg)
            assert (result.sent, result.failed) == (1, 0)
            r3 = await row(db, "<r3@srv.test>")
            assert (r3.state, r3.attempts, r3.last_error) == ("sent", 5, None)
            await db.close()

        asyncio.run(run())
        box = [str(message_from_bytes(raw)["Message-ID"]) for raw in wait_for(dovecot, ANN, 3)]
        time.sleep(1)  # anything sent twice would arrive meanwhile
        box = [str(message_from_bytes(raw)["Message-ID"]) for raw in dovecot.fetch_all(ANN)]
        assert sorted(box) == ["<r1@srv.test>", "<r2@srv.test>", "<r3@srv.test>"]
        assert "sasl_method=XOAUTH2, sasl_username=pbmserv@terrace.test" in postfix.log()
        assert "authentication failed" in postfix.log()
        # no token, access or refresh, ever reaches the log
        secrets = [*tokens.access, *tokens.refresh_tokens]
        assert [s for s in secrets if s in caplog.text] == []
        assert "OAuth2 login refused; fetching a new access token" in caplog.text
    finally:
        postfix.close()
        dovecot.stop()
