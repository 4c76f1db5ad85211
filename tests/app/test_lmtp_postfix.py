"""LMTP as a transport, through a real Postfix (issue 43): ``serve`` takes its mail
by LMTP on a UNIX socket (``[lmtp] listen``), Postfix delivers the game address
there by a ``transport_maps`` entry (deploy/postfix/README.md's recipe), the
players' mail goes to Dovecot as before, and the replies leave through Postfix's
submission port.  A player signs up, plays by subject and by pressing Reply on a
board mail (``pbmserv+KEY@``, which the entry for ``pbmserv@`` covers), and gets
each answer in the INBOX; the mails left Postfix's queue by LMTP."""

from __future__ import annotations

import contextlib
import grp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.testing.dovecot import DovecotServer
from pbmserv_terrace.testing.postfix import PostfixServer

from ..mailservers import PLAYERS as ACCOUNTS
from ..mailservers import SERVER, addr, body
from ..service.policy import choose, text
from .test_postfix_loop import Loop

PLAYERS = ACCOUNTS[:2]
"""who plays (every account has a mailbox: the test's reader looks into each)"""


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A folder Postfix's lmtp client (user postfix) can reach (pytest's tmp_path is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="pbmserv-lmtp-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def dovecot() -> Iterator[DovecotServer]:
    users = {SERVER: "server-secret", **{addr(p): f"imap-{p}" for p in ACCOUNTS}}
    with DovecotServer(users, auth_listener=True) as d:
        yield d


@pytest.fixture(params=["absolute", "debian-chroot"])
def layout(request: pytest.FixtureRequest) -> str:
    """Where the socket is: an absolute path Postfix's lmtp client reaches, or
    deploy/postfix/README.md's Debian recipe — the client chrooted in the queue
    directory, the socket in its ``pbmserv/`` folder (group postfix, setgid), the
    transport path relative to it."""
    return str(request.param)


@pytest.fixture
def postfix(dovecot: DovecotServer, socket_dir: Path, layout: str) -> Iterator[PostfixServer]:
    chroot = layout == "debian-chroot"
    transport = "lmtp:unix:pbmserv/lmtp.sock" if chroot else f"lmtp:unix:{socket_dir / 'lmtp.sock'}"
    with PostfixServer(
        dovecot.lmtp_port, domains=["terrace.test", "players.test"], mailboxes=[SERVER, *(addr(p) for p in ACCOUNTS)],
        sasl_port=dovecot.auth_port, transports={SERVER: transport}, chroot_lmtp=chroot,
    ) as pf:  # fmt: skip
        yield pf


@pytest.fixture
def socket_path(postfix: PostfixServer, socket_dir: Path, layout: str) -> Path:
    if layout == "absolute":
        return socket_dir / "lmtp.sock"
    assert postfix.base is not None
    folder = postfix.base / "queue" / "pbmserv"  # install -d -g postfix -m 2750 /var/spool/postfix/pbmserv
    folder.mkdir()
    os.chown(folder, 0, grp.getgrnam("postfix").gr_gid)
    os.chmod(folder, 0o2750)
    return folder / "lmtp.sock"


@pytest.fixture
def serve(tmp_path: Path, postfix: PostfixServer, socket_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    config = tmp_path / "pbmserv.toml"
    config.write_text(
        f'[server]\naddress = "{SERVER}"\nname = "Test PBM Server"\ndatabase_url = "sqlite:///{tmp_path}/serve.db"\n'
        "health_port = 0\nscheduler_interval = 3600\n"
        f'[lmtp]\nlisten = "unix:{socket_path}"\nsocket_mode = "0660"\n'
        # the recipe's setgid folder gives the socket group postfix; elsewhere serve sets it
        + ('socket_group = "postfix"\n' if socket_path.parent.stat().st_mode & 0o2000 == 0 else "")
        + f'[smtp]\nhost = "127.0.0.1"\nport = {postfix.submission_port}\ntls = "none"\nuser = "{SERVER}"\n'
        'password = "server-secret"\nretry_base_seconds = 1\n',
        encoding="utf-8",
    )
    log = tmp_path / "serve.log"
    env = {k: v for k, v in {**os.environ, "PYTHONUNBUFFERED": "1"}.items() if not k.startswith("PBMSERV_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbmserv_terrace", "serve", "--config", str(config)],
        cwd=tmp_path, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.time() + 60
        while b"by LMTP on unix:" not in log.read_bytes():
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("serve did not start:\n" + log.read_text(errors="replace")[-3000:])
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(30)
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_players_play_through_postfix_delivering_to_serve_by_lmtp(
    dovecot: DovecotServer, postfix: PostfixServer, serve: subprocess.Popen[bytes], tmp_path: Path, socket_dir: Path
) -> None:
    loop = Loop(postfix, dovecot, tmp_path / "serve.db")
    try:
        mids = loop.signup(PLAYERS)  # each confirmed by Reply: pbmserv+KEY@ over LMTP too
        mids.append(loop.send("ann", "terrace challenge ann pw-ann ben"))
        loop.wait_answered(mids, 60)
        last = {p: m for p, _, m in loop.boxes.mails if str(m["Subject"]).startswith("New Terrace Board")}
        assert set(last) == set(PLAYERS)
        pos = start_position()
        for ply in range(2):
            mover = PLAYERS[pos.to_move - 1]
            move = choose(pos, random.Random(ply))
            canonical = text(pos, move)
            if ply == 0:
                mid = loop.send(mover, f"terrace move 101 {mover} pw-{mover} {canonical}")
            else:  # pressing Reply on the board mail: to pbmserv+KEY@
                mid = loop.reply(mover, last[mover], f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}", 0)
            pos = pos.play(move)
            loop.wait_answered([mid], 60)
            answers = {p: m for p, _, m in loop.boxes.answers(mid)}
            assert set(answers) == set(PLAYERS)
            for p, m in answers.items():
                assert f"{mover} played {canonical}" in body(m), body(m)[:300]
                last[p] = m
    finally:
        loop.boxes.close()
    delivered = [line for line in postfix.log().splitlines() if f"to=<{SERVER}>" in line or "to=<pbmserv+" in line]
    assert delivered and all("relay=" in line and "lmtp.sock" in line for line in delivered if "status=sent" in line)
    assert any("status=sent" in line for line in delivered)
    assert dovecot.fetch_all(SERVER) == []  # nothing for the game went to its IMAP box
