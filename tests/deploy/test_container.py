"""The container (issue 43 part 8): deploy/container/Dockerfile and compose.yaml.

Building and starting them is tests/deploy/test_container_run.py (opt-in, slow). What
can be checked without a container engine is checked here, in the fast tier: the
Dockerfile's instructions (multi-stage, hashed installs only, every COPY source in the
repository and not ignored, a non-root user, the state volume, a healthcheck on
/healthz that a real health endpoint answers, CMD `pbmserv-terrace serve`), the compose
file's services (PostgreSQL with a healthcheck and a volume, the server depending on it
healthy), and that the configuration the container would load is valid."""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from pbmserv_terrace.app.health import HealthEndpoint, Metrics
from pbmserv_terrace.config import load_config
from pbmserv_terrace.store import Database

ROOT = Path(__file__).resolve().parents[2]
CONTAINER = ROOT / "deploy" / "container"
DOCKERFILE = CONTAINER / "Dockerfile"
COMPOSE = CONTAINER / "compose.yaml"


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = (pending + line).strip()
        pending = ""
        word, _, args = text.partition(" ")
        out.append((word.upper(), args.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return out


def stages() -> list[list[tuple[str, str]]]:
    """The instructions of each stage (the ARGs before the first FROM are left out)."""
    result: list[list[tuple[str, str]]] = []
    for word, args in instructions():
        if word == "FROM":
            result.append([])
        if result:
            result[-1].append((word, args))
    return result


def ignored(path: str) -> bool:
    """Whether the repository's .dockerignore keeps ``path`` out of the build context."""
    patterns = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines() if p.strip() and not p.startswith("#")]
    parts = Path(path).parts
    return any(fnmatch.fnmatch(path, p) or any(fnmatch.fnmatch(part, p.removeprefix("**/")) for part in parts) for p in patterns)


def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def test_the_dockerfile_builds_in_one_stage_and_runs_in_a_smaller_one():
    all_stages = stages()
    assert len(all_stages) >= 2
    build, run = all_stages[0], all_stages[-1]
    assert build[0][1].endswith(" AS build")
    assert any(word == "COPY" and args.startswith("--from=build ") for word, args in run)
    # the running image has neither the sources nor the build backend
    assert not any(word == "COPY" and not args.startswith("--from=") for word, args in run)
    assert "/opt/build" not in " ".join(args for _, args in run)


def test_every_pip_install_checks_hashes_and_takes_wheels_only():
    runs = " && ".join(args for word, args in instructions() if word == "RUN")
    installs = [cmd.strip() for cmd in runs.split("&&") if "pip install" in cmd]
    assert installs
    for cmd in installs:
        words = shlex.split(cmd)
        if "-r" in words:
            assert "--require-hashes" in words and "--only-binary" in words, cmd
            lock = words[words.index("-r") + 1]
            assert lock in ("requirements.lock", "requirements-build.lock"), cmd
        else:  # the project itself: the wheel just built, nothing more
            assert "--no-deps" in words and any(w.endswith(".whl") for w in words), cmd
    assert "--no-build-isolation" in runs  # the locked hatchling builds it, none fetched


def test_every_copy_source_is_in_the_repository_and_in_the_build_context():
    sources = []
    for word, args in instructions():
        if word == "COPY" and not args.startswith("--from="):
            words = shlex.split(args)
            sources += [w for w in words[:-1] if not w.startswith("--")]
    assert {"requirements.lock", "requirements-build.lock", "pyproject.toml", "pbmserv_terrace"} <= set(sources)
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        assert not ignored(source), f"COPY {source}: .dockerignore leaves it out"
    assert ignored(".venv") and ignored(".git")  # the context stays small


def test_the_server_runs_as_its_own_user_with_the_state_volume():
    run = stages()[-1]
    users = [args for word, args in run if word == "USER"]
    assert users, "no USER: the server would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    assert any(word == "RUN" and "useradd" in args and f" {user}" in args for word, args in run)
    state = "/var/lib/pbmserv"
    assert json.loads(dict(run)["VOLUME"]) == [state]
    assert dict(run)["WORKDIR"] == state
    assert f"STATE_DIRECTORY={state}" in dict(run)["ENV"]
    assert f"--home-dir {state}" in dict(run)["RUN"] or any(f"--home-dir {state}" in a for w, a in run if w == "RUN")


def test_the_command_is_serve_and_the_healthcheck_asks_healthz():
    run = dict(stages()[-1])
    assert json.loads(run["CMD"]) == ["pbmserv-terrace", "serve"]
    check = run["HEALTHCHECK"]
    assert "--interval=" in check and "--start-period=" in check
    cmd = json.loads(check.partition("CMD ")[2])
    assert "/healthz" in cmd[-1] and "urlopen" in cmd[-1]
    assert "PBMSERV_HEALTH_PORT=8025" in run["ENV"] and ":8025/healthz" in cmd[-1]


def health_check_exit_codes(check: list[str], tmp_path: Path) -> tuple[int, int]:
    """Run a healthcheck command (its Python) against a real health endpoint, then with none listening."""
    assert check[:2] == ["python3", "-c"]

    async def run() -> tuple[int, int]:
        db = Database(f"sqlite+aiosqlite:///{tmp_path}/h.db")
        await db.migrate()
        metrics = Metrics()
        connected = getattr(metrics, "inbound", None)  # the mailbox is up, where /healthz checks it (issue 43 part 7)
        if callable(connected):
            connected(True)
        endpoint = HealthEndpoint(db, metrics, "imap")
        await endpoint.start("127.0.0.1", 0)
        code = check[2].replace(":8025/", f":{endpoint.port}/")
        try:
            proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code)
            up = await asyncio.wait_for(proc.wait(), 60)
        finally:
            endpoint.close()
            await db.close()
        down = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60).returncode
        return up, down

    return asyncio.run(run())


def test_the_healthcheck_passes_on_a_healthy_server_and_fails_on_none(tmp_path):
    cmd = json.loads(dict(stages()[-1])["HEALTHCHECK"].partition("CMD ")[2])
    assert health_check_exit_codes(cmd, tmp_path) == (0, 1)
    # the compose file's healthcheck is the same command
    assert compose()["services"]["server"]["healthcheck"]["test"] == ["CMD", *cmd]


def test_compose_runs_postgresql_healthy_before_the_server():
    data = compose()
    services = data["services"]
    assert set(services) == {"db", "server"}
    db, server = services["db"], services["server"]
    assert "postgres" in db["image"]
    assert db["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    db_volume = db["volumes"][0].split(":")
    assert db_volume[1] == "/var/lib/postgresql/data" and db_volume[0] in data["volumes"]
    assert server["depends_on"]["db"]["condition"] == "service_healthy"
    assert server["build"]["dockerfile"] == "deploy/container/Dockerfile"
    assert (CONTAINER / server["build"]["context"]).resolve() == ROOT
    state = [v for v in server["volumes"] if v.split(":")[1] == "/var/lib/pbmserv"]
    assert state and state[0].split(":")[0] in data["volumes"]
    for service in services.values():
        assert service["restart"] == "unless-stopped"
    assert "ports" not in db  # the database is reached on the project's network only
    assert all(str(p).startswith("127.0.0.1:") for p in server.get("ports", []))


def test_compose_passes_the_password_apart_from_the_url():
    server = compose()["services"]["server"]
    env = server["environment"]
    url = env["PBMSERV_DATABASE_URL"]
    assert url.startswith("postgresql://pbmserv@db:") and "$" not in url  # no password in the URL (logged, shown)
    assert env["PGPASSWORD"] == compose()["services"]["db"]["environment"]["POSTGRES_PASSWORD"]
    assert ":?" in env["PGPASSWORD"]  # compose refuses to start without it


OPERATOR_CONFIG = """
[server]
address = "terrace@club.example.org"
secret = "0123456789abcdef0123456789abcdef"
[imap]
host = "imap.example.org"
user = "terrace@club.example.org"
password = "imap-password"
[smtp]
host = "smtp.example.org"
port = 587
tls = "starttls"
user = "terrace@club.example.org"
password = "smtp-password"
"""


def test_the_configuration_the_container_loads_is_valid(tmp_path):
    server = compose()["services"]["server"]
    env = {k: str(v) for k, v in server["environment"].items() if k.startswith("PBMSERV_")}
    mount = [v for v in server["volumes"] if v.split(":")[1] == env["PBMSERV_CONFIG"]]
    assert mount and mount[0].split(":")[0] == "./pbmserv.toml" and mount[0].endswith(":ro")
    # an operator's configuration (the mail settings; the database comes from compose.yaml), mounted where
    # PBMSERV_CONFIG says, with the compose file's and the image's variables
    config = tmp_path / "pbmserv.toml"
    config.write_text(OPERATOR_CONFIG)
    env["PBMSERV_CONFIG"] = str(config)
    for var in dict(stages()[-1])["ENV"].split():
        key, _, value = var.partition("=")
        if key.startswith("PBMSERV_"):
            env[key] = value
    cfg = load_config(environ={**env, "PATH": os.environ.get("PATH", "")})
    assert cfg.server.database_url.startswith("postgresql+asyncpg://pbmserv@db:5432/pbmserv")
    assert cfg.server.health_port == 8025
    assert cfg.web.enabled and cfg.web.address() == ("0.0.0.0", 8080)  # (inside the container)


def test_the_operator_guide_says_what_was_verified_and_how_to_run_it():
    text = (ROOT / "deploy" / "README.md").read_text()
    assert "container/compose.yaml" in text and "container/Dockerfile" in text
    assert "PBMSERV_TEST_CONTAINER=1" in text and "tests/deploy/test_container_run.py" in text
    assert "chown 10001:10001 pbmserv.toml" in text  # the image's user reads the mounted configuration
