"""Replies as files in local Maildirs (mail/delivery.MaildirDelivery): each
reply's file name is fixed by the reply (a rewrite replaces, never adds), the
one-off ``deliver`` writes straight into ``new/``, and a claim's staged files
are made durable by one ``syncfs`` (else an fsync each and the folder's), an
error found file by file.  How the outbox uses the staging to write each reply
exactly once is tests/app/test_maildir_staging.py."""

from __future__ import annotations

import asyncio
import email
import errno
import os
from datetime import datetime, timedelta
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from pbmserv_terrace.mail import delivery as delivery_module
from pbmserv_terrace.mail.delivery import STAGING, MaildirDelivery, maildir_name, staged_key, staged_name
from pbmserv_terrace.mail.message import Outgoing, build_message


def mid(i: int) -> str:
    return f"<m{i:02d}@srv.test>"


def delivered(root: Path) -> dict[str, list[Message]]:
    """Each Maildir's messages in ``new/``, by folder, in file-name order."""
    boxes: dict[str, list[Message]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name != STAGING):
        assert {p.name for p in folder.iterdir()} == {"tmp", "new", "cur"}, folder
        names = sorted(os.listdir(folder / "new"))
        boxes[folder.name] = [email.message_from_bytes((folder / "new" / n).read_bytes()) for n in names]
    return boxes


def delivered_ids(root: Path) -> list[str]:
    """The Message-IDs of every message in every ``new/`` (a duplicate shows twice)."""
    if not root.exists():
        return []
    return sorted(str(m["Message-ID"]) for box in delivered(root).values() for m in box)


# ----------------------------------------------------------------- 6. names
def test_maildir_names_are_fixed_by_the_reply_and_staged_names_carry_the_row_id() -> None:
    created = datetime(2026, 1, 2, 3, 4, 5, 678)
    odd = "<a/b:c@srv.test>"
    assert maildir_name(odd, created) == maildir_name(odd, datetime(2026, 1, 2, 3, 4, 5, 678))
    assert maildir_name(odd, created) != maildir_name("<a/b:d@srv.test>", created)
    assert maildir_name(odd, created).startswith("1767323045.M000678X")
    assert maildir_name(odd, created) < maildir_name(odd, created + timedelta(microseconds=1))
    for name in (maildir_name(odd, created), staged_name(7, odd, created)):
        assert "/" not in name and ":" not in name, name
    assert staged_name(7, odd, created) == "7-" + maildir_name(odd, created, 7)
    assert maildir_name(odd, created, 7).startswith("1767323045.M000678Q7X")
    assert staged_key(staged_name(7, odd, created)) == 7
    assert staged_key("x-y") is None
    assert staged_key("notours.txt") is None
    assert staged_key("-7") is None
    assert staged_key("42") is None  # no dash: not a staged name
    assert staged_key("99999-somethingelse") == 99999


# ------------------------------------------------------ 7. the one-off deliver
def test_deliver_writes_one_message_straight_into_new(tmp_path: Path) -> None:
    root = tmp_path / "maildir"
    maildir = MaildirDelivery(root)

    def message(i: int) -> Message:
        return build_message(sender="pbm@srv.test", sender_name="PBM Server", recipient="Dee@X.Test",
                             subject=f"test {i}", body="hello\n", message_id=mid(i), in_reply_to=None,
                             date=datetime(2026, 1, 2))  # fmt: skip

    async def run() -> None:
        await maildir.deliver(message(1), "Dee@X.Test")  # the CLI's test mail
        await maildir.deliver(Outgoing.of(message(2), "pbm@srv.test"), "Dee@X.Test")
        await maildir.close()

    asyncio.run(run())
    assert delivered_ids(root) == [mid(1), mid(2)]
    assert sorted(str(m["Subject"]) for m in delivered(root)["dee@x.test"]) == ["test 1", "test 2"]
    assert not (root / STAGING).exists()


class Calls:
    """The delivery module's ``os`` and ``syncfs``, counting the syncs; ``fsync``
    fails with EIO for the files whose bytes hold ``bad``, and ``syncfs`` says
    so (-1) when ``fail_syncfs``."""

    def __init__(self, bad: bytes = b"", fail_syncfs: bool = False) -> None:
        self.bad, self.fail_syncfs = bad, fail_syncfs
        self.syncfsed: list[int] = []
        self.fsynced: list[int] = []
        self.bad_fds: set[int] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.bad and self.bad in bytes(data):
            self.bad_fds.add(fd)
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        self.fsynced.append(fd)
        if fd in self.bad_fds:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        os.fsync(fd)

    def sync_fs(self, fd: int) -> int:
        self.syncfsed.append(fd)
        return -1 if self.fail_syncfs else 0


def test_staged_files_are_synced_by_one_syncfs_and_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls()
    monkeypatch.setattr(delivery_module, "os", calls)
    monkeypatch.setattr(delivery_module, "SYNCFS", calls.sync_fs)
    maildir = MaildirDelivery(tmp_path)
    staged = maildir.write_staged([(f"n{i}", f"reply {i}\n".encode()) for i in range(5)])
    fds = [fd for _, fd in staged.opened]
    assert len(fds) == 5 and calls.syncfsed == []  # written, not synced yet
    assert staged.sync() == [None] * 5
    assert len(calls.syncfsed) == 1 and calls.fsynced == []  # one sync for the claim, no fsync per file
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)  # closed
    assert maildir.staged() == [f"n{i}" for i in range(5)]
    assert (tmp_path / STAGING / "n3").read_bytes() == b"reply 3\n"


def test_an_error_the_syncfs_reports_is_found_file_by_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """syncfs says an error happened somewhere on the filesystem: each file is
    fsynced, the one that fails is unstaged and reported, the others stay."""
    calls = Calls(bad=b"reply 2", fail_syncfs=True)
    monkeypatch.setattr(delivery_module, "os", calls)
    monkeypatch.setattr(delivery_module, "SYNCFS", calls.sync_fs)
    maildir = MaildirDelivery(tmp_path)
    outcomes = maildir.stage([(f"n{i}", f"reply {i}\n".encode()) for i in range(4)])
    assert [o is None for o in outcomes] == [True, True, False, True]
    assert isinstance(outcomes[2], OSError) and outcomes[2].errno == errno.EIO
    assert len(calls.syncfsed) == 1 and len(calls.fsynced) == 4 + 1  # each file, then the folder
    assert maildir.staged() == ["n0", "n1", "n3"]


def test_without_syncfs_each_file_is_fsynced_then_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls()
    monkeypatch.setattr(delivery_module, "os", calls)
    monkeypatch.setattr(delivery_module, "SYNCFS", None)
    maildir = MaildirDelivery(tmp_path)
    assert maildir.stage([(f"n{i}", b"x\n") for i in range(3)]) == [None] * 3
    assert len(calls.fsynced) == 3 + 1
    assert maildir.staged() == ["n0", "n1", "n2"]


def test_a_maildir_appears_whole(tmp_path: Path) -> None:
    """A reader never sees a recipient's folder without its tmp/, new/ and cur/ (a
    test reading between the mkdirs failed on the missing cur/ in CI)."""
    from pbmserv_terrace.mail.delivery import make_maildir

    folder = tmp_path / "root" / "ann@x.test"
    make_maildir(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["cur", "new", "tmp"]
    assert [p.name for p in folder.parent.iterdir()] == ["ann@x.test"], "no temporary folder left"
    assert folder.stat().st_mode & 0o777 == 0o700
    half = tmp_path / "root" / "ben@x.test"
    (half / "new").mkdir(parents=True)
    make_maildir(half)  # one made half by someone else: completed in place
    assert sorted(p.name for p in half.iterdir()) == ["cur", "new", "tmp"]
