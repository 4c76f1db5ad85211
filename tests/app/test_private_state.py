"""State is private whatever the umask (issue 36): ``pbmserv.db`` holds password
hashes and the reply-key secret, the Maildirs other players' mail.  Under umask
022 they used to be world-readable.  Checked twice: the explicit modes of the
store and the Maildir delivery (in this process, umask 022), and ``serve`` as
an operator starts it (umask 022, which serve itself narrows)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import subprocess
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path

from sqlalchemy import text

from pbmserv_terrace.mail.delivery import MaildirDelivery
from pbmserv_terrace.store import Database

from .test_sender_process import Serve, replies, wait_for


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@contextlib.contextmanager
def umask(value: int) -> Iterator[None]:
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def not_shared(root: Path) -> list[tuple[str, str]]:
    """Every file and folder under ``root`` (and ``root``) that group or others may use."""
    found = []
    for path in [root, *root.rglob("*")]:
        if mode(path) & 0o077:
            found.append((str(path.relative_to(root.parent)), oct(mode(path))))
    return found


def test_the_sqlite_file_and_its_wal_and_shm_are_0600_under_umask_022(tmp_path: Path) -> None:
    path = tmp_path / "state" / "pbmserv.db"

    async def run() -> None:
        db = Database(f"sqlite:///{path}")
        try:
            await db.migrate()
            async with db.session() as session:  # a write: the WAL and its index exist now
                await session.execute(text("UPDATE board_counters SET next_number = next_number"))
                await session.commit()
            assert path.with_name("pbmserv.db-wal").exists() and path.with_name("pbmserv.db-shm").exists()
            for name in ("pbmserv.db", "pbmserv.db-wal", "pbmserv.db-shm"):
                assert mode(path.with_name(name)) == 0o600, name
            assert mode(path.parent) == 0o700
        finally:
            await db.close()

    with umask(0o022):
        asyncio.run(run())


def test_an_existing_world_readable_database_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "pbmserv.db"

    async def run() -> None:
        db = Database(f"sqlite:///{path}")
        try:
            await db.migrate()
        finally:
            await db.close()

    with umask(0o022):
        asyncio.run(run())
        path.chmod(0o644)
        asyncio.run(run())
    assert mode(path) == 0o600


def test_maildirs_are_0700_and_their_mails_0600_under_umask_022(tmp_path: Path) -> None:
    root = tmp_path / "maildirs"
    box = MaildirDelivery(root)
    with umask(0o022):
        assert box.stage([("1-a1.host", b"Subject: staged\n\nhello\n")]) == [None]
        box.publish([("1-a1.host", "ann@home.test")])
        msg = EmailMessage()
        msg["Subject"] = "direct"
        msg.set_content("hello")
        asyncio.run(box.deliver(msg, "ben@home.test"))
    assert len(list((root / "ann@home.test" / "new").iterdir())) == 1
    assert len(list((root / "ben@home.test" / "new").iterdir())) == 1
    assert not_shared(root) == []


def test_serve_started_under_umask_022_keeps_its_state_private(tmp_path: Path) -> None:
    old = os.umask(0o022)  # (Popen takes the umask from this process)
    try:
        serve = Serve(tmp_path)
    finally:
        os.umask(old)
    try:
        serve.mail("ann@home.test", "signup ann pw-ann")
        wait_for(lambda: len(replies(tmp_path, "ann@home.test")) == 1, "ann's welcome")
    finally:
        assert serve.stop() == 0
    state = [tmp_path / "pbmserv.db", tmp_path / "maildirs"]
    state += [p for p in (tmp_path / "pbmserv.db-wal", tmp_path / "pbmserv.db-shm") if p.exists()]
    assert [(str(p), oct(mode(p))) for p in state if mode(p) & 0o077] == []
    assert not_shared(tmp_path / "maildirs") == []


def test_scripts_serve_sets_a_private_umask() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "serve"
    body = script.read_text()
    assert "umask 077" in body and body.index("umask 077") < body.index("exec pbmserv-terrace serve")
    out = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
