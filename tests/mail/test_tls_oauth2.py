"""Verified TLS and OAuth2 logins against real servers on 127.0.0.1 (issue 20,
items 1 and 2): Dovecot and an aiosmtpd relay with certificates from a CA the
test makes, Dovecot's ``oauth2`` passdb and the relay's XOAUTH2 asking a local
token server (:mod:`pbmserv_terrace.testing.tokens`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

import pytest

from pbmserv_terrace.config import Config, ConfigError, load_config
from pbmserv_terrace.mail import oauth2
from pbmserv_terrace.mail.delivery import SmtpDelivery
from pbmserv_terrace.mail.imap import connect
from pbmserv_terrace.mail.tls import TlsError
from pbmserv_terrace.testing.certs import TestCA
from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay
from pbmserv_terrace.testing.tokens import TokenServer

from ..mailservers import SERVER

PW = "server-secret"


@pytest.fixture
def ca() -> Iterator[TestCA]:
    made = TestCA()
    yield made
    made.remove()


def config(tmp_path: Path, imap: str = "", smtp: str = "", extra: str = "") -> Config:
    path = tmp_path / "t.toml"
    path.write_text(f'[server]\naddress = "{SERVER}"\ndatabase_url = "sqlite:///{tmp_path}/t.db"\n'
                    f'[imap]\nhost = "127.0.0.1"\nuser = "{SERVER}"\npassword = "{PW}"\n{imap}\n'
                    f'[smtp]\nhost = "127.0.0.1"\nuser = "{SERVER}"\npassword = "{PW}"\n{smtp}\n{extra}')  # fmt: skip
    return load_config(path, {})


async def imap_login(cfg: Config) -> str:
    client = await asyncio.wait_for(connect(cfg), 30)
    await client.logout()
    return "ok"


async def smtp_send(cfg: Config, to: str) -> None:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"], msg["Message-ID"] = SERVER, to, "over tls", "<tls1@srv.test>"
    msg.set_content("hello\n")
    delivery = SmtpDelivery(cfg)
    try:
        await asyncio.wait_for(delivery.deliver(msg, to), 30)
    finally:
        await delivery.close()


def refused(coro: object) -> str:
    with pytest.raises(TlsError) as info:
        asyncio.run(coro)  # type: ignore[arg-type]
    return str(info.value)


def test_imap_tls_verified_against_the_test_ca(tmp_path: Path, ca: TestCA) -> None:
    with DovecotServer({SERVER: PW}, tls=True, ca=ca) as d:
        for tls, port in (("ssl", d.imaps_port), ("starttls", d.imap_port)):
            assert asyncio.run(imap_login(config(tmp_path, f'tls = "{tls}"\nport = {port}\nca_file = "{ca.cert}"'))) == "ok"
        # the system's store does not know the test CA: refused, with what to do
        msg = refused(imap_login(config(tmp_path, f'tls = "ssl"\nport = {d.imaps_port}')))
        assert "not signed by the system's CA store" in msg and "imap.ca_file" in msg
        msg = refused(imap_login(config(tmp_path, f'tls = "starttls"\nport = {d.imap_port}')))
        assert "not signed by" in msg
        other = TestCA("another CA")
        try:
            msg = refused(imap_login(config(tmp_path, f'tls = "ssl"\nport = {d.imaps_port}\nca_file = "{other.cert}"')))
            assert f"not signed by the CA in imap.ca_file ({other.cert})" in msg
        finally:
            other.remove()


def test_imap_wrong_host_name_and_missing_starttls_are_refused(tmp_path: Path, ca: TestCA) -> None:
    with DovecotServer({SERVER: PW}, tls=True, ca=ca, cert_names=["DNS:mail.test"]) as d:
        msg = refused(imap_login(config(tmp_path, f'tls = "ssl"\nport = {d.imaps_port}\nca_file = "{ca.cert}"')))
        assert "certificate is not for '127.0.0.1'" in msg and "imap.host" in msg
    with DovecotServer({SERVER: PW}) as plain:  # ssl = no: no STARTTLS offered
        msg = refused(imap_login(config(tmp_path, f'tls = "starttls"\nport = {plain.imap_port}\nca_file = "{ca.cert}"')))
        assert "does not offer STARTTLS" in msg


def test_smtp_tls_verified_refused_and_never_downgraded(tmp_path: Path, ca: TestCA) -> None:
    good, wrong = ca.issue(["IP:127.0.0.1"], "smtp-good"), ca.issue(["DNS:mail.test"], "smtp-wrong")
    with DovecotServer({SERVER: PW, "ann@players.test": "a"}) as d:
        relays = {
            "ssl": LmtpRelay(d, {SERVER: PW}, tls="ssl", cert=good).start(),
            "starttls": LmtpRelay(d, {SERVER: PW}, tls="starttls", cert=good).start(),
            "wrong": LmtpRelay(d, {SERVER: PW}, tls="ssl", cert=wrong).start(),
            "plain": LmtpRelay(d, {SERVER: PW}).start(),
        }
        try:
            for tls in ("ssl", "starttls"):
                asyncio.run(smtp_send(config(tmp_path, 'tls = "none"', f'tls = "{tls}"\nport = {relays[tls].port}\nca_file = "{ca.cert}"'),
                                      "ann@players.test"))  # fmt: skip
            assert len(d.fetch_all("ann@players.test")) == 2
            msg = refused(
                smtp_send(config(tmp_path, 'tls = "none"', f'tls = "ssl"\nport = {relays["ssl"].port}'), "ann@players.test")
            )
            assert "SMTP 127.0.0.1" in msg and "not signed by the system's CA store" in msg and "smtp.ca_file" in msg
            cfg = config(tmp_path, 'tls = "none"', f'tls = "ssl"\nport = {relays["wrong"].port}\nca_file = "{ca.cert}"')
            assert "certificate is not for '127.0.0.1'" in refused(smtp_send(cfg, "ann@players.test"))
            # STARTTLS asked for, not offered: an error, not plain text
            cfg = config(tmp_path, 'tls = "none"', f'tls = "starttls"\nport = {relays["plain"].port}\nca_file = "{ca.cert}"')
            with pytest.raises(Exception, match="STARTTLS"):
                asyncio.run(smtp_send(cfg, "ann@players.test"))
            assert len(d.fetch_all("ann@players.test")) == 2
        finally:
            for relay in relays.values():
                relay.stop()


def test_plain_text_only_on_loopback_unless_forced(tmp_path: Path) -> None:
    base = f'[server]\naddress = "{SERVER}"\n[imap]\nhost = "mail.test"\nuser = "u"\ntls = "none"\n[smtp]\nhost = "127.0.0.1"\ntls = "none"\n'
    path = tmp_path / "p.toml"
    path.write_text(base)
    with pytest.raises(ConfigError, match=r"imap\.tls: 'none' sends the password in clear to mail\.test"):
        load_config(path, {})
    path.write_text(base.replace('tls = "none"\n[smtp]', 'tls = "none"\nallow_plaintext = true\n[smtp]'))
    assert load_config(path, {}).imap.allow_plaintext is True
    path.write_text(base.replace('host = "mail.test"', 'host = "localhost"'))
    load_config(path, {})


def oauth_extra(tmp_path: Path, tokens: TokenServer, refresh: str) -> str:
    (tmp_path / "refresh").write_text(refresh + "\n")
    return (f'[oauth2]\ntoken_url = "{tokens.url}/token"\ndevice_url = "{tokens.url}/device"\nclient_id = "{tokens.client_id}"\n'
            f'refresh_token_file = "{tmp_path}/refresh"\nrefresh_margin = 1\n')  # fmt: skip


def test_xoauth2_imap_and_smtp_refresh_before_expiry_and_after_a_refusal(tmp_path: Path) -> None:
    tokens = TokenServer({"rt-server": SERVER}, lifetime=10).start()  # Dovecot delays a retry after a refusal (auth penalty)
    try:
        with DovecotServer({SERVER: PW, "ann@players.test": "a"}, oauth2_url=tokens.url) as d:
            relay = LmtpRelay(d, tokens=tokens).start()
            try:
                extra = oauth_extra(tmp_path, tokens, "rt-server")
                cfg = config(tmp_path, f'tls = "none"\nport = {d.imap_port}\nauth = "oauth2"',
                             f'tls = "none"\nport = {relay.port}\nauth = "oauth2"', extra)  # fmt: skip
                source = oauth2.token_source(cfg.oauth2)
                assert asyncio.run(imap_login(cfg)) == "ok"
                asyncio.run(smtp_send(cfg, "ann@players.test"))
                assert len(tokens.issued) == 1 and relay.xoauth2 == [True]  # one token for both
                # the server revokes it early: the login is refused once, a fresh token works
                tokens.expire_all()
                assert asyncio.run(imap_login(cfg)) == "ok"
                assert len(tokens.issued) == 2 and tokens.introspected[-2:] == [False, True]
                tokens.expire_all()
                asyncio.run(smtp_send(cfg, "ann@players.test"))
                assert len(tokens.issued) == 3 and relay.xoauth2[-2:] == [False, True]
                # near its expiry a token is replaced before it is used
                asyncio.run(asyncio.sleep(9.2))  # kept until 1 s (refresh_margin) before its end
                assert asyncio.run(imap_login(cfg)) == "ok"
                assert len(tokens.issued) == 4 and tokens.introspected[-1] is True
                assert source.refreshes == 4
                assert len(d.fetch_all("ann@players.test")) == 2
                # a wrong refresh token: a clear error without any token in it
                (tmp_path / "refresh").write_text("rt-unknown\n")
                tokens.expire_all()
                with pytest.raises(Exception, match="invalid_grant: unknown refresh token") as info:
                    asyncio.run(imap_login(cfg))
                assert "rt-unknown" not in str(info.value) and "at-" not in str(info.value)
            finally:
                relay.stop()
    finally:
        tokens.stop()


def test_device_login_stores_the_refresh_token_0600(tmp_path: Path) -> None:
    tokens = TokenServer({}).start()
    try:
        cfg = config(
            tmp_path, 'tls = "none"\nport = 1\nauth = "oauth2"', 'tls = "none"\nport = 1', oauth_extra(tmp_path, tokens, "")
        )
        os.remove(tmp_path / "refresh")
        lines: list[str] = []

        class Out:
            def write(self, text: str) -> None:
                lines.append(text)
                if "enter the code" in text:  # the operator approves on another device
                    tokens.approve(text.rsplit(" ", 1)[1].strip(), SERVER)

            def flush(self) -> None:
                return None

        asyncio.run(oauth2.device_login(cfg.oauth2, Out()))  # type: ignore[arg-type]
        stored = (tmp_path / "refresh").read_text().strip()
        assert tokens.refresh_tokens[stored] == SERVER
        assert (tmp_path / "refresh").stat().st_mode & 0o777 == 0o600
        assert any(f"open {tokens.url}/activate and enter the code" in line for line in lines)
    finally:
        tokens.stop()
