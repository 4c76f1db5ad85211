"""Operator commands (issue 5), as the operator runs them, on a SQLite database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pbmserv_terrace.app.pipe import save_failed


def run(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env["PBMSERV_DATABASE_URL"] = f"sqlite:///{tmp_path}/club.db"
    return subprocess.run(
        [sys.executable, "-m", "pbmserv_terrace", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, input=stdin,
    )  # fmt: skip


def eml(sender: str, subject: str, n: int) -> bytes:
    return f"From: {sender}\r\nSubject: {subject}\r\nMessage-ID: <adm{n}@x>\r\n\r\n\r\n".encode()


@pytest.fixture
def club(tmp_path: Path) -> Path:
    for n, (sender, subject) in enumerate(
        [("ann@x.test", "signup ann pw"), ("ben@x.test", "signup ben pw"), ("ann@x.test", "terrace challenge ann pw ben"),
         ("ann@x.test", "terrace move 101 ann pw d2-e3"), ("ann@x.test", "terrace challenge ann pw ben -short")]
    ):  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        env["PBMSERV_DATABASE_URL"] = f"sqlite:///{tmp_path}/club.db"
        out = subprocess.run([sys.executable, "-m", "pbmserv_terrace", "handle", "--print"], input=eml(sender, subject, n),
                             cwd=tmp_path, env=env, capture_output=True, timeout=120)  # fmt: skip
        assert out.returncode == 0
    return tmp_path


def test_listing_and_showing(club):
    games = run(club, "admin", "games").stdout
    assert "terrace" in games and "101" in games and "102" in games and "ann ben" in games
    assert "ann" in run(club, "admin", "users").stdout
    game = run(club, "admin", "game", "terrace", "101").stdout
    assert "ply 1" in game and "C" in game and "+---+" in game
    assert "terrace 101: active" in run(club, "admin", "user", "ann").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["admin", "game", "chess", "101"], "game type must be terrace or terrace6x6"),
        (["admin", "game", "terrace", "abc"], "is not a board number"),
        (["admin", "game", "terrace", "999"], "there is no terrace board 999"),
        (["admin", "user", "nobody"], "there is no user"),
        (["admin", "reset-password", "nobody"], "there is no (undeleted) user"),
        (["admin", "reset-password", "ann"], "give the new password on standard input"),
        (["admin", "remove", "terrace", "999"], "there is no terrace board 999"),
        (["admin", "restore", "missing.jsonl"], "does not exist"),
        (["admin", "replay", "missing.eml"], "does not exist"),
    ],
)
def test_bad_arguments_are_clear_errors(club, args, message):
    out = run(club, *args, stdin="pw\n" if args[-1] == "nobody" else "")
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_reset_password_remove_export_resend(club):
    spaced = run(club, "admin", "reset-password", "ann", stdin="has space\n")
    assert spaced.returncode == 2 and "a password is" in spaced.stderr
    # the password never is an argument (shell history, ps): it comes on standard input
    assert "reset" in run(club, "admin", "reset-password", "ann", stdin="fresh\n").stdout
    assert run(club, "admin", "reset-password", "ann", "fresh").returncode == 2
    assert "reply-key secret replaced" in run(club, "admin", "rotate-reply-keys").stdout
    assert "removed" in run(club, "admin", "remove", "terrace", "102", "--reason", "test").stdout
    assert "removed" in run(club, "admin", "games", "--status", "removed").stdout
    out = run(club, "admin", "export", "terrace", "all", "games")
    assert "2 games written" in out.stdout
    text = (club / "games" / "terrace-101.txt").read_text()
    assert "1. ann: C-d2-e3" in text and "Final position: DDCCBBAT/AABBCCDD/8/8/8/4c3/ddc1bbaa/tabbccdd 2" in text
    assert "replies queued" in run(club, "admin", "resend", "--failed").stdout


def test_replay_of_a_failed_mail(club):
    path = save_failed(eml("ben@x.test", "terrace show 101", 99), club / "failed", "RuntimeError: simulated")
    out = run(club, "admin", "replay")
    assert f"{path.name}: ok" in out.stdout and "1 of 1 mails replayed" in out.stdout
    assert path.with_suffix(".replayed").exists()


def test_backup_restore_into_a_fresh_sqlite(club):
    assert "written to b.jsonl" in run(club, "admin", "backup", "b.jsonl").stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env["PBMSERV_DATABASE_URL"] = f"sqlite:///{club}/fresh.db"
    restore = subprocess.run([sys.executable, "-m", "pbmserv_terrace", "admin", "restore", "b.jsonl"], cwd=club, env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert restore.returncode == 0, restore.stderr
    again = subprocess.run([sys.executable, "-m", "pbmserv_terrace", "admin", "restore", "b.jsonl"], cwd=club, env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert again.returncode == 2 and "only into an empty database" in again.stderr
    games = subprocess.run(
        [sys.executable, "-m", "pbmserv_terrace", "admin", "games"], cwd=club, env=env, capture_output=True, text=True
    )
    assert "101" in games.stdout and "102" in games.stdout


def test_admin_never_migrates_and_migrate_says_what_it_applied(tmp_path):
    """Issue 43: on a schema older than the program's, admin commands say so and
    how to upgrade, and change nothing; ``admin migrate`` lists what it applied.
    ``--config`` goes before or after the command's name."""
    import asyncio

    from pbmserv_terrace.store import Database
    from pbmserv_terrace.store.db import head_revision, revisions_between

    head = head_revision()  # (the newest migration: the test names none after 0008)

    async def at(revision: str | None) -> str | None:
        db = Database(f"sqlite:///{tmp_path}/club.db")
        if revision:
            await db.migrate(revision)
        current = await db.schema_revision()
        await db.close()
        return current

    asyncio.run(at("0008"))
    (tmp_path / "club.toml").write_text("")
    refused = run(tmp_path, "admin", "users", "--config", "club.toml")
    assert refused.returncode == 2, refused.stderr
    assert (
        f"the database schema is at 0008, this program needs {head}: run `pbmserv-terrace migrate --config club.toml`"
        in refused.stderr
    )
    assert asyncio.run(at(None)) == "0008", "admin changed the schema"
    backup = run(tmp_path, "admin", "backup", "before-upgrade.jsonl")  # a backup before upgrading is what one wants
    assert backup.returncode == 0 and "(schema 0008, one snapshot)" in backup.stdout
    migrated = run(tmp_path, "admin", "--config", "club.toml", "migrate")
    assert migrated.returncode == 0, migrated.stderr
    applied = [f"applied {r.revision}: {r.title}" for r in revisions_between("0008", head)]
    assert applied[0] == "applied 0009: One series of board numbers for every game (issue 38 item 12)"
    assert migrated.stdout.splitlines() == [*applied, f"the schema is at {head}"]
    assert "(it was up to date)" in run(tmp_path, "admin", "migrate").stdout
    listed = run(tmp_path, "admin", "games", "--config", "club.toml", "--status", "all")
    assert listed.returncode == 0 and "(no boards)" in listed.stdout
