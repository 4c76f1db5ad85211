"""Release basics (issue 43 part 5): one version source, --version, the licence."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pbmserv_terrace
from pbmserv_terrace.app.health import Metrics

ROOT = Path(__file__).resolve().parents[2]


def test_version_prints_the_package_version_and_exits_0():
    out = subprocess.run([sys.executable, "-m", "pbmserv_terrace", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"pbmserv-terrace {pbmserv_terrace.__version__}"


def test_one_version_source():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "pbmserv_terrace/__init__.py"
    assert version("pbmserv-terrace") == pbmserv_terrace.__version__  # the installed metadata reads it
    assert f"## {pbmserv_terrace.__version__} " in (ROOT / "CHANGELOG.md").read_text()


def test_build_info_metric():
    text = Metrics().exposition().decode()
    python = ".".join(str(n) for n in sys.version_info[:3])
    assert f'pbmserv_build_info{{python="{python}",version="{pbmserv_terrace.__version__}"}} 1.0' in text


def test_licence_is_mit_as_the_metadata_says():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == {"text": "MIT"}
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 the pbmserv-terrace authors" in text


def test_migrate_says_which_revisions_it_applied(tmp_path):
    import subprocess
    import sys

    def run() -> str:
        env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("PBMSERV_")}
        return subprocess.run([sys.executable, "-m", "pbmserv_terrace", "migrate"], cwd=tmp_path, capture_output=True,
                              text=True, check=True, env=env).stdout  # fmt: skip

    first = run()
    assert first.startswith("applied 0001: initial schema\n") and "applied 0009:" in first
    assert run().strip().endswith("(it was up to date)")
