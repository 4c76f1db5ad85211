"""What an operator sees (issue 15 item 15): a second serve on a busy port says so
in one line; status says whether serve runs and exits non-zero when it does not."""

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
