"""Access tokens expiring while ``serve`` runs (issue 20, item 1): the real
``serve`` process logs in to IMAP and to Postfix's submission port with OAuth2
(XOAUTH2; Dovecot's ``oauth2`` passdb, also as Postfix's SASL) and tokens that
live LIFETIME seconds, got by the refresh-token grant from the local token
server.  Between ``serve`` and each server stands a proxy that ends a session
when its token expires, as Microsoft 365 does (``* BYE Session invalidated -
AccessTokenExpired``; Dovecot and Postfix alone would keep it).

Mail flows across several expiries: single mails while IDLE waits, and a burst
while the outbox is sending.  The server must renew each token before it expires
and log in anew before its session would be ended, so no session is ever ended
by the proxy, no login refused, and the log shows refreshes only.  Then the
provider revokes every token at once (the session in IDLE gets its BYE): the
server reconnects, is refused once, fetches a new token and goes on.  Every mail
is answered exactly once throughout.  The figures are printed, never asserted on
time."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay
from pbmserv_terrace.testing.postfix import PostfixServer
from pbmserv_terrace.testing.tokens import ExpiringSessions, TokenServer

from ..app.test_postfix_loop import Loop, figures
from ..mailservers import PLAYERS, SERVER, ServeProcess, addr

LIFETIME = 12.0
"""seconds an access token lives"""
MARGIN = 4.0
"""oauth2.refresh_margin: tokens (and the sessions logged in with them) are renewed after LIFETIME - MARGIN"""
QUIET = 6
"""single mails, each at a random moment while the server waits in IDLE"""
BURST = 40


@pytest.fixture
def tokens() -> Iterator[TokenServer]:
    server = TokenServer({"rt-server": SERVER}, lifetime=LIFETIME).start()
    yield server
    server.stop()


@pytest.fixture
def dovecot(tokens: TokenServer) -> Iterator[DovecotServer]:
    users = {SERVER: "not-used-oauth2-only", **{addr(p): f"imap-{p}" for p in PLAYERS}}
    with DovecotServer(users, oauth2_url=tokens.url, auth_listener=True) as d:
        yield d


@pytest.fixture
def postfix(dovecot: DovecotServer) -> Iterator[PostfixServer]:
    mailboxes = [SERVER, *(addr(p) for p in PLAYERS)]
    with PostfixServer(dovecot.lmtp_port, domains=["terrace.test", "players.test"], mailboxes=mailboxes,
                       sasl_port=dovecot.auth_port) as pf:  # fmt: skip
        yield pf


def serve_config(serve: ServeProcess, tmp_path: Path, tokens: TokenServer, imap_port: int, smtp_port: int) -> None:
    (tmp_path / "refresh-token").write_text("rt-server\n")
    (tmp_path / "refresh-token").chmod(0o600)
    serve.config.write_text(f"""
[server]
address = "{SERVER}"
name = "Test PBM Server"
database_url = "sqlite:///{tmp_path}/serve.db"
poll_interval = 2
scheduler_interval = 3600
health_port = {serve.health_port}

[imap]
host = "127.0.0.1"
port = {imap_port}
tls = "none"
user = "{SERVER}"
auth = "oauth2"

[smtp]
host = "127.0.0.1"
port = {smtp_port}
tls = "none"
user = "{SERVER}"
auth = "oauth2"
retry_base_seconds = 1

[oauth2]
token_url = "{tokens.url}/token"
client_id = "{tokens.client_id}"
refresh_token_file = "{tmp_path}/refresh-token"
refresh_margin = {MARGIN}
""")


def test_tokens_expire_while_serve_runs(
    tmp_path: Path, tokens: TokenServer, dovecot: DovecotServer, postfix: PostfixServer
) -> None:
    imap_proxy = ExpiringSessions(tokens, dovecot.imap_port, "imap").start()
    smtp_proxy = ExpiringSessions(tokens, postfix.submission_port, "smtp").start()
    serve = ServeProcess(
        tmp_path, dovecot, cast(LmtpRelay, SimpleNamespace(port=0)), "sqlite://", env={"PBMSERV_LOG_LEVEL": "debug"}
    )
    serve_config(serve, tmp_path, tokens, imap_proxy.port, smtp_proxy.port)
    loop = Loop(postfix, dovecot, tmp_path / "serve.db")
    report: list[str] = []
    try:
        serve.start()
        _run(loop, serve, tokens, imap_proxy, smtp_proxy, report)
    finally:
        loop.boxes.close()
        if serve.proc is not None and serve.proc.poll() is None:
            serve.proc.kill()
            serve.proc.wait(10)
        imap_proxy.stop()
        smtp_proxy.stop()
        print("\n--- OAuth2 tokens expiring under serve ---\n" + "\n".join(report))


def _run(
    loop: Loop, serve: ServeProcess, tokens: TokenServer, imap_proxy: ExpiringSessions, smtp_proxy: ExpiringSessions,
    report: list[str],
) -> None:  # fmt: skip
    started = time.time()
    rng = random.Random(20)
    boards = {"ann": 101, "ben": 101, "cat": 102, "dan": 102}

    def some_mail(i: int) -> str:
        name = PLAYERS[i % len(PLAYERS)]
        if i % 2:
            return loop.send(name, f"terrace chat {boards[name]} {name} pw-{name}", f"mail {i}")
        return loop.send(name, f"terrace show {boards[name]}")

    # ------------------------------------------------------------------ setup
    setup = loop.signup(PLAYERS)
    setup.append(loop.send("ann", "terrace challenge ann pw-ann ben"))
    loop.wait_answered(setup, 60)
    setup.append(loop.send("cat", "terrace challenge cat pw-cat dan"))
    loop.wait_answered(setup, 60)
    report.append(figures("setup", len(setup), loop.latencies(setup)))

    # ------------------------------- single mails while the server waits in IDLE
    quiet: list[str] = []
    for i in range(QUIET):
        time.sleep(rng.uniform(2.0, 7.0))
        quiet.append(some_mail(i))
        loop.wait_answered(quiet, 60)
    report.append(figures(f"quiet ({QUIET} mails, one every 2-7 s)", QUIET, loop.latencies(quiet)))

    # --------------------------------------- a burst while the outbox is sending
    burst: list[str] = []

    def sender() -> None:
        for i in range(BURST):
            burst.append(some_mail(i))
            time.sleep(0.3)

    thread = threading.Thread(target=sender)
    thread.start()
    while thread.is_alive():  # the players read their mail meanwhile (arrival times for the latencies)
        loop.boxes.poll()
        time.sleep(0.05)
    loop.wait_answered(burst, 120)
    report.append(figures(f"burst ({BURST} mails over {0.3 * BURST:.0f} s)", BURST, loop.latencies(burst)))

    log = serve.since(0)
    elapsed = time.time() - started
    issued = len(tokens.issued)
    expired = sum(1 for _, at in tokens.issued if at + LIFETIME < time.time())
    relogins = log.count("IMAP: the access token of this session is due for renewal")
    smtp_renewals = log.count("a kept connection's access token is due for renewal")
    report.append(f"tokens: {issued} issued in {elapsed:.0f} s, {expired} expired meanwhile; IMAP logged in anew "
                  f"{relogins} times, SMTP {smtp_renewals} kept connections replaced; sessions ended by the "
                  f"provider: {imap_proxy.ended + smtp_proxy.ended}")  # fmt: skip
    # renewed before each expiry: nothing refused, no session outlived its token
    assert log.count("OAuth2: new access token") == issued
    assert expired >= 4, "the run crossed too few expiries to mean anything"
    assert relogins >= 3
    assert imap_proxy.ended == [] and smtp_proxy.ended == []
    for failure in ("OAuth2 login refused", "IMAP connection problem", "temporary failure", "Traceback", "result=error"):
        assert failure not in log, log[log.index(failure) - 2000 : log.index(failure) + 500]
    assert imap_proxy.logins >= relogins + 1 and smtp_proxy.logins >= 2

    # ------------------------- the provider revokes every token (IDLE waiting)
    fresh = issued
    deadline = time.time() + 2 * LIFETIME
    while len(tokens.issued) == fresh and time.time() < deadline:
        time.sleep(0.05)  # right after a renewal: the server holds a token it believes good for LIFETIME - MARGIN
    time.sleep(2.5)  # the session lingers 2 s after mail, then waits in IDLE
    offset = serve.log.stat().st_size
    tokens.expire_all()
    revoked = time.time()
    deadline = time.time() + 30
    while "selected (UIDVALIDITY" not in serve.since(offset) and time.time() < deadline:
        time.sleep(0.05)
    back = time.time() - revoked
    after = [some_mail(i) for i in range(8)]
    loop.wait_answered(after, 60)
    report.append(figures("after revoking every token", len(after), loop.latencies(after))
                  + f"; IMAP back {back:.1f} s after the revocation; ended: {imap_proxy.ended + smtp_proxy.ended}")  # fmt: skip
    log = serve.since(offset)
    assert imap_proxy.ended in (["imap IDLE"], ["imap NOOP"]), imap_proxy.ended
    assert "Session invalidated - AccessTokenExpired" not in log  # (the BYE's words are aioimaplib's business)
    assert "IMAP connection problem" in log and "reconnecting in 1 s" in log
    assert "OAuth2 login refused; fetching a new access token and trying once more" in log
    assert "Traceback" not in log and "result=error" not in log

    # ------------------------------------------- every mail answered, once
    time.sleep(3)  # anything sent twice arrives meanwhile
    loop.boxes.poll()
    assert serve.stop() == 0
    everything = list(loop.sent)
    rows = loop.outbox(everything)
    assert {r[1] for r in rows} == set(everything)
    assert {r[3] for r in rows} == {"sent"}
    assert len({(r[1], r[2]) for r in rows}) == len(rows), "a reply queued twice"
    ids = loop.boxes.ids()
    assert all(ids[(r[2].split("@")[0], r[0])] == 1 for r in rows), [k for k, n in ids.items() if n != 1]
    assert sum(ids.values()) == len(rows)  # no other mail either
    assert loop.dovecot.fetch_all(SERVER) == [] and loop.dovecot.fetch_all(SERVER, "failed") == []
    report.append(figures("all", len(everything), loop.latencies(everything))
                  + f"; {sum(ids.values())} replies in the players' INBOXes, each once; {len(tokens.issued)} tokens")  # fmt: skip
