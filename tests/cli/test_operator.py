"""What an operator sees (issue 15 item 15): a second serve on a busy port says so
in one line; status says whether serve runs and exits non-zero when it does not, and
finds it from the configuration, in any directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pbmserv_terrace.testing.postgres import free_port


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pbmserv_terrace", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_second_serve_and_status(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env["PBMSERV_EMBEDDED_LISTEN_PORT"] = str(free_port())
    env["PBMSERV_WEB_LISTEN"] = "off"
    down = cli("status", cwd=tmp_path, env=env)
    assert down.returncode == 3 and "serve: not running" in down.stdout
    first = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (tmp_path / "pbmserv.pid").exists():
            time.sleep(0.2)
        assert (tmp_path / "pbmserv.pid").exists(), "serve did not start"
        second = cli("serve", cwd=tmp_path, env=env)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in second.stderr
        assert f"127.0.0.1:{env['PBMSERV_EMBEDDED_LISTEN_PORT']}" in lines[0] and f"pid {first.pid}" in lines[0]
        up = cli("status", cwd=tmp_path, env=env)
        assert up.returncode == 0 and f"serve: running (pid {first.pid}" in up.stdout
        assert "active boards: 0 Terrace, 0 Terrace6x6" in up.stdout and "{" not in up.stdout
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert first.returncode == 0 and not (tmp_path / "pbmserv.pid").exists()


def test_status_finds_serve_from_its_configuration_in_any_directory(tmp_path):
    """No health port: ``serve --config A/pbmserv.toml`` started in B writes its pid
    beside the config file (issue 43 part 7: was ./pbmserv.pid of wherever it was
    started), and ``status --config`` typed in C finds it there."""
    home, started_in, elsewhere = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d in (home, started_in, elsewhere):
        d.mkdir()
    config = home / "pbmserv.toml"
    config.write_text(f'[server]\ndatabase_url = "sqlite:///{home}/pbm.db"\n\n[embedded]\nlisten_port = {free_port()}\n'
                      f'maildir_root = "{home}/maildirs"\n\n[web]\nlisten = "off"\n')  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    down = cli("status", "--config", str(config), cwd=elsewhere, env=env)
    assert down.returncode == 3 and f"no live pid in {home / 'pbmserv.pid'}" in down.stdout, down.stdout
    first = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve", "--config", str(config)], cwd=started_in,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (home / "pbmserv.pid").exists():
            time.sleep(0.2)
        assert (home / "pbmserv.pid").exists() and not (started_in / "pbmserv.pid").exists(), "serve did not start"
        up = cli("--config", str(config), "status", cwd=elsewhere, env=env)
        assert up.returncode == 0 and f"serve: running (pid {first.pid}, {home / 'pbmserv.pid'})" in up.stdout, up.stdout
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert first.returncode == 0 and not (home / "pbmserv.pid").exists()
