"""``inbox`` and ``send --reply-to-last`` read a local Maildir in the order the
server queued its replies (``cli/inbox.by_arrival``, which ``send`` takes its
newest mail from too): two replies written together share the files' time and
the Date header's second, so neither tells them apart; their file names, made
from the time each was queued, do.  (The command itself: tests/test_cli.py.)"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from pbmserv_terrace.cli.inbox import by_arrival
from pbmserv_terrace.mail.delivery import maildir_name


def test_replies_written_together_are_read_in_the_order_they_were_queued(tmp_path: Path) -> None:
    folder = tmp_path / "ann@x.test"
    for sub in ("tmp", "new", "cur"):
        (folder / sub).mkdir(parents=True)
    queued = datetime(2026, 1, 2, 3, 4, 5, 999_990)
    subjects = [f"reply {i}" for i in range(12)]
    # written newest first, all with one file time and one Date header
    for i in reversed(range(12)):
        path = folder / "new" / maildir_name(f"<r{i}@srv.test>", queued + timedelta(microseconds=i))
        path.write_bytes(f"Subject: {subjects[i]}\nDate: Fri, 02 Jan 2026 03:04:05 -0000\n\nbody\n".encode())
        os.utime(path, ns=(1_767_323_045_000_000_000, 1_767_323_045_000_000_000))
    mails = by_arrival(folder)
    assert [str(m["Subject"]) for m in mails] == subjects  # (across the second's end, too)


def test_replies_queued_at_the_same_microsecond_are_read_in_the_order_of_their_rows(tmp_path: Path) -> None:
    """One piece of work queues its replies with one time (a draw offer to a robot
    and the robot's answer came out answer first): the outbox row's id in the name
    (``Q<id>``) orders them, whatever the digest and the files' times say."""
    folder = tmp_path / "ben@x.test"
    for sub in ("tmp", "new", "cur"):
        (folder / sub).mkdir(parents=True)
    queued = datetime(2026, 1, 2, 3, 4, 5, 478_890)
    subjects = [f"reply {i}" for i in range(12)]
    for i in reversed(range(12)):
        path = folder / "new" / maildir_name(f"<r{i}@srv.test>", queued, key=990 + i)
        path.write_bytes(f"Subject: {subjects[i]}\n\nbody\n".encode())
        os.utime(path, ns=(1_767_323_045_000_000_000 - i, 1_767_323_045_000_000_000 - i))
    assert [str(m["Subject"]) for m in by_arrival(folder)] == subjects
