"""The small parts of OAuth2 logins, without servers: when a token is renewed,
that connections refused at once fetch one new token, the SASL strings, and
which SMTP answers end a kept connection (so the reply goes on a new one)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import aiosmtplib
import pytest

from pbmserv_terrace.config import OAuth2Config
from pbmserv_terrace.mail.delivery import closed_by_server
from pbmserv_terrace.mail.oauth2 import OAuth2Error, TokenSource, sasl_initial, with_token_retry


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def source(tmp_path: Path, lifetime: float = 3600, margin: float = 300) -> tuple[TokenSource, Clock, list[str]]:
    (tmp_path / "rt").write_text("rt-1\n")
    cfg = OAuth2Config(token_url="http://idp.test/token", client_id="c", refresh_token_file=str(tmp_path / "rt"),
                       refresh_margin=margin)  # fmt: skip
    clock, issued = Clock(), []

    def post(url: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        issued.append(f"at-{len(issued) + 1}")
        return 200, {"access_token": issued[-1], "expires_in": lifetime}

    return TokenSource(cfg, clock=clock, post=post), clock, issued


def test_a_token_is_renewed_refresh_margin_before_it_expires(tmp_path: Path) -> None:
    tokens, clock, _ = source(tmp_path, lifetime=3600, margin=300)

    async def run() -> None:
        first = await tokens.access()
        assert tokens.left(first) == 3300
        clock.now += 3299
        assert (await tokens.access()).value == "at-1"
        clock.now += 1
        second = await tokens.access()
        assert second.value == "at-2" and tokens.left(first) <= 0 < tokens.left(second)

    asyncio.run(run())
    short, clock, _ = source(tmp_path, lifetime=60, margin=300)  # the margin is at most half the lifetime
    assert asyncio.run(short.access()).renew_at == clock.now + 30


def test_connections_refused_at_once_fetch_one_new_token(tmp_path: Path) -> None:
    tokens, _, issued = source(tmp_path)

    async def run() -> list[str]:
        old = await tokens.access()
        new = await asyncio.gather(*(tokens.access(refused=old) for _ in range(4)))
        return [t.value for t in new]

    assert asyncio.run(run()) == ["at-2"] * 4 and issued == ["at-1", "at-2"]


def test_with_token_retry_returns_the_accepted_token_or_says_why(tmp_path: Path) -> None:
    tokens, _, issued = source(tmp_path)
    tried: list[str] = []

    async def picky(token: str) -> bool:
        tried.append(token)
        return token == "at-2"

    accepted = asyncio.run(with_token_retry(tokens, picky))
    assert accepted.value == "at-2" and tried == ["at-1", "at-2"]

    async def never(token: str) -> bool:
        return False

    with pytest.raises(OAuth2Error, match="refused a freshly issued access token"):
        asyncio.run(with_token_retry(tokens, never))
    assert issued == ["at-1", "at-2", "at-3"]  # at-2 refused, at-3 refused: no more


def test_sasl_initial_responses() -> None:
    xoauth2 = base64.b64decode(sasl_initial("XOAUTH2", "me@x.test", "at-1", "mail.x.test", 993))
    assert xoauth2 == b"user=me@x.test\x01auth=Bearer at-1\x01\x01"
    bearer = base64.b64decode(sasl_initial("OAUTHBEARER", "a,b=c@x.test", "at-1", "mail.x.test", 587))
    assert bearer == b"n,a=a=2Cb=3Dc@x.test,\x01host=mail.x.test\x01port=587\x01auth=Bearer at-1\x01\x01"
    with pytest.raises(ValueError):
        sasl_initial("PLAIN", "me", "t", "h", 1)


def test_which_smtp_answers_end_a_kept_connection() -> None:
    assert closed_by_server(aiosmtplib.SMTPServerDisconnected("gone"))
    assert closed_by_server(aiosmtplib.SMTPSenderRefused(421, "4.7.0 Session invalidated - AccessTokenExpired", "s"))
    assert closed_by_server(aiosmtplib.SMTPRecipientsRefused([aiosmtplib.SMTPRecipientRefused(421, "bye", "r")]))
    assert not closed_by_server(aiosmtplib.SMTPRecipientsRefused([aiosmtplib.SMTPRecipientRefused(450, "busy", "r")]))
    assert not closed_by_server(aiosmtplib.SMTPSenderRefused(451, "4.7.1 slow down", "s"))
    assert not closed_by_server(aiosmtplib.SMTPDataError(554, "no"))
