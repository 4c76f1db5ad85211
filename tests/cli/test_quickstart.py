"""Issue 5: an operator follows the README quick start from an empty directory
against the test Dovecot and a throwaway PostgreSQL; plays a short game by mail;
stops; backs up; restores into a fresh database; starts again; the game goes on.
Also: the systemd unit verifies and the example config passes check-config."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay

from ..mailservers import Players, body

ROOT = Path(__file__).resolve().parents[2]
ADDRESS = "terrace@club.example.org"


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    out = subprocess.run(
        [sys.executable, "-m", "pbmserv_terrace", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def readme_config() -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```toml\n(.*?)```", text, re.S)
    assert block, "README has no toml block"
    return re.sub(r"^ {3}", "", block.group(1), flags=re.M)


@pytest.mark.postgres
def test_readme_quick_start_then_backup_restore_and_continue(tmp_path, pg_cluster):
    users = {ADDRESS: "imap-password", "ann@players.test": "a", "ben@players.test": "b"}
    with DovecotServer(users) as dovecot:
        relay = LmtpRelay(dovecot, logins={ADDRESS: "smtp-password"}).start()
        try:
            url = pg_cluster.create_database().replace("postgresql+asyncpg://", "postgresql://")
            config = (
                readme_config()
                .replace('host = "imap.example.org"', 'host = "127.0.0.1"').replace("port = 993", f"port = {dovecot.imap_port}")
                .replace('tls = "ssl"', 'tls = "none"').replace('host = "smtp.example.org"', 'host = "127.0.0.1"')
                .replace("port = 587", f"port = {relay.port}").replace('tls = "starttls"', 'tls = "none"')
                .replace('database_url = "sqlite:///pbmserv.db"', f'database_url = "{url}"')
            )  # fmt: skip
            (tmp_path / "pbmserv.toml").write_text(config + "\n")
            check = cli("check-config", cwd=tmp_path)
            assert "ok    IMAP" in check.stdout and "ok    SMTP" in check.stdout
            cli("migrate", cwd=tmp_path)
            players = Players(dovecot, relay)

            def send(name: str, subject: str, body_text: str = "") -> None:
                mid = f"<{time.time_ns()}@players.test>"
                data = f"From: {name}@players.test\r\nTo: {ADDRESS}\r\nSubject: {subject}\r\nMessage-ID: {mid}\r\n\r\n{body_text}\r\n"
                relay.send(f"{name}@players.test", ADDRESS, data.encode())

            serve = start_serve(tmp_path)
            try:
                for name in ("ann", "ben"):
                    send(name, f"signup {name} pw-{name}")
                    players.reply(name, players.wait(name)[0])  # confirms the address
                    players.wait(name)
                send("ann", "terrace challenge ann pw-ann ben")
                players.wait("ann"), players.wait("ben")
                send("ann", "terrace move 101 ann pw-ann d2-e3")
                assert "ann played C-d2-e3" in body(players.wait("ann")[0])
                players.wait("ben")
            finally:
                stop_serve(serve)
            # back up, restore into a fresh database, start again
            backup = cli("admin", "backup", "club.jsonl", cwd=tmp_path)
            assert "written to club.jsonl" in backup.stdout
            fresh = pg_cluster.create_database().replace("postgresql+asyncpg://", "postgresql://")
            cfg = (tmp_path / "pbmserv.toml").read_text().replace(url, fresh)
            (tmp_path / "pbmserv.toml").write_text(cfg)
            assert "restored" in cli("admin", "restore", "club.jsonl", cwd=tmp_path).stdout
            serve = start_serve(tmp_path)
            try:
                send("ben", "terrace move 101 ben pw-ben d7-d6")
                mail = players.wait("ben")[0]
                assert "ben played B-d7-d6" in body(mail) and "1. C-d2-e3       B-d7-d6" in body(mail)
                assert mail["Subject"] == "Terrace Board 101 ann"
                players.wait("ann")
                send("ann", "terrace challenge ann pw-ann ben")
                assert players.wait("ann")[0]["Subject"] == "New Terrace Board 102 ann"  # numbering continues
            finally:
                stop_serve(serve)
        finally:
            relay.stop()


def start_serve(cwd: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    log = (cwd / "serve.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        if (cwd / "serve.log").read_text(errors="replace").count("selected (UIDVALIDITY") > getattr(start_serve, "seen", 0):
            start_serve.seen = getattr(start_serve, "seen", 0) + 1  # type: ignore[attr-defined]
            return proc
        time.sleep(0.1)
    raise AssertionError((cwd / "serve.log").read_text())


def stop_serve(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(40) == 0


def test_systemd_unit_verifies(tmp_path):
    """`systemd-analyze verify` on the unit; the binary path is the one the install
    steps create (/usr/local/bin symlink), pointed here at this environment's."""
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze missing (Debian package systemd)"
    binary = Path(sys.prefix) / "bin" / "pbmserv-terrace"
    unit = (ROOT / "deploy" / "pbmserv-terrace.service").read_text().replace("/usr/local/bin/pbmserv-terrace", str(binary))
    path = tmp_path / "pbmserv-terrace.service"
    path.write_text(unit)
    out = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True, timeout=60)
    problems = [line for line in out.stderr.splitlines() if "pbmserv-terrace.service" in line]
    assert out.returncode == 0 and not problems, out.stderr


def test_example_config_passes_check_config(tmp_path):
    example = (ROOT / "deploy" / "pbmserv.toml").read_text().replace("/etc/pbmserv/", f"{tmp_path}/")
    for secret in ("secret", "imap-password", "smtp-password"):
        (tmp_path / secret).write_text("x\n")
    (tmp_path / "pbmserv.toml").write_text(
        example.replace('"postgresql://pbmserv@localhost/pbmserv"', f'"sqlite:///{tmp_path}/x.db"')
    )
    out = cli("check-config", "--offline", "--config", str(tmp_path / "pbmserv.toml"), cwd=tmp_path)
    assert "valid" in out.stdout and "skip  IMAP and SMTP" in out.stdout
