"""The hashed locks (issue 43 part 5): requirements.lock (runtime), requirements-build.lock
(the build backend) and requirements-dev.lock (tests, dev tools), made by ./scripts/lock.
Every pin has its hashes, each lock keeps to pyproject.toml's ranges, the runtime lock
holds no dev tool, the dev lock repeats nothing of the runtime lock (they are installed
together), and the virtualenv these tests run in holds exactly the locked versions."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ("requirements.lock", "requirements-build.lock", "requirements-dev.lock")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?: ; (.+?))? \\$")


def pins(lock: str) -> dict[str, tuple[str, str, list[str]]]:
    """name -> (version, marker, hashes) of one lock file."""
    out: dict[str, tuple[str, str, list[str]]] = {}
    current = ""
    for line in (ROOT / lock).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if m := PIN.match(line):
            current = canonicalize_name(m.group(1))
            assert current not in out, f"{lock}: {current} twice"
            out[current] = (m.group(2), m.group(3) or "", [])
        elif line.strip().startswith("--hash=sha256:"):
            digest = line.strip().removeprefix("--hash=sha256:").removesuffix(" \\")
            assert re.fullmatch(r"[0-9a-f]{64}", digest), line
            out[current][2].append(digest)
        else:
            assert line.strip().startswith("#"), f"{lock}: unexpected line {line!r}"
    return out


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_pin_of_every_lock_has_its_hashes_and_the_header_names_the_command():
    for lock in LOCKS:
        entries = pins(lock)
        assert entries, lock
        for name, (_, _, hashes) in entries.items():
            assert hashes, f"{lock}: {name} has no --hash"
        assert "./scripts/lock" in (ROOT / lock).read_text().split("\n", 3)[1]


def test_each_lock_keeps_to_the_ranges_of_pyproject():
    project = pyproject()
    runtime, build, dev = (pins(lock) for lock in LOCKS)
    groups = [
        (project["project"]["dependencies"], runtime),
        (project["build-system"]["requires"], build),
        (project["project"]["optional-dependencies"]["test"] + project["project"]["optional-dependencies"]["dev"], dev),
    ]
    for requirements, lock in groups:
        for text in requirements:
            req = Requirement(text)
            name = canonicalize_name(req.name)
            assert name in lock, f"{name} is not locked"
            assert req.specifier.contains(lock[name][0], prereleases=True), f"{name}=={lock[name][0]} is outside {req}"
    assert "hatchling" in dev and "editables" in dev  # the editable install needs nothing unhashed


def test_the_runtime_lock_holds_no_dev_tool_and_the_dev_lock_repeats_none_of_it():
    runtime, build, dev = (pins(lock) for lock in LOCKS)
    tools = {"pytest", "ruff", "mypy", "import-linter", "hypothesis", "selenium", "pyyaml", "hatchling"}
    assert not tools & set(runtime)
    assert not set(runtime) & set(dev), "installed together, a package may be pinned once"
    for name, (version, _, _) in build.items():
        assert dev[name][0] == version, f"{name}: the build and dev locks disagree"


def test_this_virtualenv_holds_exactly_the_locked_versions():
    """scripts/_venv.sh installs requirements.lock and requirements-dev.lock (and drops the rest)."""
    for lock in ("requirements.lock", "requirements-dev.lock"):
        for name, (version, marker, _) in pins(lock).items():
            if marker and not Marker(marker).evaluate():
                continue
            assert importlib.metadata.version(name) == version, f"{name}: not the version {lock} pins"


def test_the_installs_use_the_locks_with_hashes():
    venv = (ROOT / "scripts" / "_venv.sh").read_text()
    assert "--require-hashes" in venv and "-r requirements.lock -r requirements-dev.lock" in venv
    stamp = next(line for line in venv.splitlines() if line.startswith("stamp="))
    assert "requirements.lock" in stamp and "requirements-dev.lock" in stamp  # a changed lock rebuilds the venv
    assert "--no-build-isolation" in venv
    guide = (ROOT / "deploy" / "README.md").read_text()
    install = guide[guide.index("## Install") :].split("```")[1]
    assert "--require-hashes" in install and "-r /opt/pbmserv-terrace/requirements.lock" in install
    assert "--no-deps --no-build-isolation /opt/pbmserv-terrace" in install
