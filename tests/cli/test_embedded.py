"""The embedded default exactly as the README says: a fresh directory, no config,
`serve`, then `send` and `inbox` by hand (issue 7)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from pbmserv_terrace.testing.postgres import free_port


def cli(*args: str, cwd, env) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pbmserv_terrace", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_embedded_default_plays_a_short_game(tmp_path):
    port, health = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update({"PBMSERV_EMBEDDED_LISTEN_PORT": str(port), "PBMSERV_HEALTH_PORT": str(health)})
    serve = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.time() + 30
        while time.time() < deadline and not (tmp_path / "pbmserv.db").exists():
            time.sleep(0.1)
        time.sleep(1.0)

        def send(sender: str, subject: str, body: str = "") -> None:
            out = cli("send", "--from", sender, subject, body, cwd=tmp_path, env=env)
            assert out.returncode == 0, out.stderr

        send("ann@home.test", "signup ann pw-ann")
        send("ben@home.test", "signup ben pw-ben")
        send("ann@home.test", "terrace challenge ann pw-ann ben -short", "Short one?")
        send("ann@home.test", "terrace move 101 ann pw-ann g1-g2")
        send("ben@home.test", "terrace move 101 ben pw-ben b8-b7", "ok")
        time.sleep(1.5)
        ann = cli("inbox", "ann@home.test", cwd=tmp_path, env=env).stdout
        ben = cli("inbox", "ben@home.test", "--last", "1", cwd=tmp_path, env=env).stdout
        assert "Subject: New Terrace Board 101 ann **" in ann and "ann played T-g1-g2" in ann
        assert ben.count("Subject:") == 1 and "Subject: Terrace Board 101 ann **" in ben and "ben played T-b8-b7" in ben
        assert "    8 |   |   | B | B | C | C | D |   | 8" in ben
        health_info = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=5).read())
        assert health_info["status"] == "ok" and health_info["inbound"] == "embedded-smtp"
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{health}/metrics", timeout=5).read().decode()
        assert 'pbmserv_mails_total{result="ok"} 5' in metrics
        assert "pbmserv_password_checks_total 2.0" in metrics  # ann's (her challenge; her move finds it cached) and ben's
        status = cli("status", cwd=tmp_path, env=env)
        assert status.returncode == 0 and "0 replies pending" in status.stdout
    finally:
        serve.send_signal(signal.SIGTERM)
        out, _ = serve.communicate(timeout=40)
    assert serve.returncode == 0
    assert "embedded default" in out and "stopped" in out
    assert "result=ok" in out


def test_send_without_a_server_is_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env["PBMSERV_EMBEDDED_LISTEN_PORT"] = str(free_port())
    out = cli("send", "--from", "a@b.test", "help", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "is `pbmserv-terrace serve` running?" in out.stderr


def test_check_config_embedded(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    out = cli("check-config", cwd=tmp_path, env=env)
    assert out.returncode == 0 and "valid" in out.stdout and "embedded mail" in out.stdout
    (tmp_path / "pbmserv.toml").write_text("[smtp]\ntls = 'maybe'\n")
    out = cli("check-config", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "smtp.tls" in out.stderr
