"""The shipped systemd unit (issue 43 part 1): systemd-analyze accepts it, and it says
what the operator's findings asked for."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNIT = DEPLOY / "pbmserv-terrace.service"


def settings() -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, delimiters=("=",), comment_prefixes=("#",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(UNIT.read_text())
    return parser


def test_systemd_analyze_verify_accepts_the_unit(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    # the commands the unit names must exist for verify: /bin/true stands in for the install
    text = UNIT.read_text().replace("/usr/local/bin/pbmserv-terrace", shutil.which("true") or "/bin/true")
    unit = tmp_path / UNIT.name
    unit.write_text(text)
    out = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=120)
    ours = [line for line in out.stderr.splitlines() if UNIT.name in line]
    assert out.returncode == 0 and not ours, out.stderr


def test_the_unit_notifies_keeps_state_apart_and_stops_restarting_on_config_errors():
    service = settings()["Service"]
    assert service["Type"] == "notify" and service["WatchdogSec"].endswith("s")
    assert service["RestartPreventExitStatus"] == "2" and service["Restart"] == "on-failure"
    assert service["StateDirectory"] == "pbmserv" and service["ProtectSystem"] == "strict"
    assert "ReadWritePaths" not in service  # nothing under /etc is written
    assert "LoadCredential=oauth2-refresh-token:" in UNIT.read_text()
    assert "StartLimitBurst" in settings()["Unit"]


def test_the_operator_guide_says_argon2id():
    text = (DEPLOY / "README.md").read_text()
    assert "argon2id" in text and "scrypt" not in text
