"""``pbmserv-terrace admin timers [--at ISO-TIME]`` (issue 40 item 6): the timers
due at a time, run by the operator's command as ``serve`` runs them, what they
queued printed; never a time before the last run."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from pbmserv_terrace.service.digests import next_at
from pbmserv_terrace.store import utcnow

from ..service.harness import Harness


def admin(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env["PBMSERV_DATABASE_URL"] = f"sqlite:///{tmp_path}/club.db"
    return subprocess.run(
        [sys.executable, "-m", "pbmserv_terrace", "admin", "timers", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_admin_timers_runs_what_is_due_and_never_goes_back(tmp_path):
    h = Harness(f"sqlite+aiosqlite:///{tmp_path}/club.db")
    try:
        h.signup("ann", "ben")
        h.challenge("ann", "ben", options="--nagtime=2 --forfeittime=5")
        h.move(101, "ann", "d2-e3")
        h.send("ann", "change digest ann pw-ann daily 08:00 Europe/Paris")
        h.move(101, "ben", "d7-d6")  # held for ann's digest
    finally:
        h.close()
    first = next_at({"times": ["08:00"], "zone": "Europe/Paris"}, utcnow())  # naive UTC
    paris = first.replace(tzinfo=UTC).astimezone(ZoneInfo("Europe/Paris"))
    assert paris.strftime("%H:%M") == "08:00"
    early = admin(tmp_path, "--at", (first - timedelta(minutes=1)).isoformat())  # UTC without an offset
    assert early.returncode == 0, early.stderr
    assert "0 mails queued" in early.stdout and "queued  " not in early.stdout
    due = admin(tmp_path, "--at", paris.isoformat())  # the same time, with Paris's offset
    assert due.returncode == 0, due.stderr
    assert "queued  ann@players.test  PBM Server: digest for ann, your turn on 1 board" in due.stdout
    assert "1 mails queued" in due.stdout
    again = admin(tmp_path, "--at", (first + timedelta(minutes=30)).isoformat())
    assert again.returncode == 0 and "0 mails queued" in again.stdout
    back = admin(tmp_path, "--at", (first - timedelta(hours=2)).isoformat())
    assert back.returncode == 2 and "is earlier than the timers' last run" in back.stderr and "Traceback" not in back.stderr
    bad = admin(tmp_path, "--at", "tomorrow")
    assert bad.returncode == 2 and "is not an ISO time" in bad.stderr
    # the reminder and the forfeit come at their times too (ann's turn, forfeit after 5 days)
    later = admin(tmp_path, "--at", (utcnow() + timedelta(days=2.5)).isoformat(timespec="seconds"))
    assert "queued  ann@players.test  Terrace Board 101 ann reminder" in later.stdout
    end = admin(tmp_path, "--at", (utcnow() + timedelta(days=5.5)).isoformat(timespec="seconds"))
    assert "queued  ann@players.test  Terrace Board 101 finished" in end.stdout
