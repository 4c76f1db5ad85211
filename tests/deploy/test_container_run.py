"""The container built and started for real (issue 43 part 8): deploy/container/Dockerfile
built by podman, deploy/container/compose.yaml started by podman-compose with PostgreSQL,
then, inside the running server container, ``pbmserv-terrace --version``, the image's
health check, and a real mail in (``pbmserv-terrace send`` to the embedded listener: a
signup whose welcome lands in the player's Maildir and whose user is in PostgreSQL); the
web archive answers on the published port; SIGTERM stops the server with exit code 0.

Opt-in: ``PBMSERV_TEST_CONTAINER=1`` (a first run took 15 minutes on this project's
loaded 2-core machine, 8 with the images' layers there; deploy/README.md, "Container", has the figures).
Skipped with the reason where the machine cannot: not root, no podman, no base image to be
had, no OCI runtime that starts a container.

This machine reaches no container registry, so nothing is pulled:

- the base image (``BASE`` of the Dockerfile) is a Debian 12 made here with ``debootstrap
  --variant=minbase`` from the machine's own apt mirror and ``podman import``-ed, with the
  machine's CA bundle for pip (``PIP_CERT``); kept as ``localhost/pbmserv-test-base:bookworm``
  and as a tarball in the test's cache folder (``$PBMSERV_CONTAINER_CACHE``, default
  ``/var/cache/pbmserv-terrace-tests/container``);
- PostgreSQL 15 is Debian's, in an image built from ``tests/deploy/container/postgres.Dockerfile``
  that honours what compose.yaml uses of the official ``postgres`` image; the test runs a copy of
  compose.yaml that names it, the local base as the server's build argument ``BASE``, this test's
  tag for the server image and a free port for the web archive: nothing else in the file is
  changed.  podman-compose builds the server's image (``BUILDAH_FORMAT=docker``) and starts both.

podman 4.3 (Debian 12's) ignores compose's ``condition: service_healthy`` (podman-compose says
so); the server's ``restart: unless-stopped`` carries it over a database still starting.  In a
sandbox that refuses raising resource limits or crun's cgroup set-up, the test's
containers.conf (``CONTAINERS_CONF``) sets the limits to the current ones and picks runc where
crun cannot start a container.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pbmserv_terrace.testing.postgres import free_port

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "container"
OPT_IN = "PBMSERV_TEST_CONTAINER"
CACHE = Path(os.environ.get("PBMSERV_CONTAINER_CACHE", "/var/cache/pbmserv-terrace-tests/container"))
BASE = "localhost/pbmserv-test-base:bookworm"
SERVER_IMAGE = "localhost/pbmserv-terrace-test:latest"
CA_IN_BASE = "/usr/local/share/pbmserv-test/ca.crt"
SERVER = "pbmserv@terrace.test"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.environ.get(OPT_IN), reason=f"opt-in: set {OPT_IN}=1 "
              "(builds the server's and PostgreSQL's images with podman, ~15 min the first time)")]  # fmt: skip

FIGURES: dict[str, float] = {}


def run(*args: str, timeout: float = 600, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, capture_output=True, timeout=timeout, env=env, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CACHE / "containers.conf")}


def podman(*args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run("podman", *args, timeout=timeout, check=check, env=podman_env())


def write_containers_conf(runtime: str | None) -> None:
    """Limits a container may have here (the current ones: a sandbox may refuse raising them),
    and the OCI runtime (None: podman's default)."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    nproc = min(4096, resource.getrlimit(resource.RLIMIT_NPROC)[0])
    text = f'[containers]\ndefault_ulimits = ["nofile={nofile[0]}:{nofile[1]}", "nproc={nproc}:{nproc}"]\n'
    if runtime:
        text += f'[engine]\nruntime = "{runtime}"\n'
    (CACHE / "containers.conf").write_text(text)


def apt_mirror() -> str | None:
    """The machine's own Debian mirror (its apt sources), for debootstrap."""
    for source in [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]:
        if not source.exists():
            continue
        for line in source.read_text().splitlines():
            words = line.split()
            uris = words[1:] if words[:1] == ["URIs:"] else words[1:2] if words[:1] == ["deb"] else []
            for uri in uris:
                if uri.startswith("http") and uri.rstrip("/").endswith("/debian"):
                    return uri
    return None


def base_image() -> None:
    """``BASE``: imported from the cached tarball, made with debootstrap the first time."""
    if podman("image", "exists", BASE, check=False).returncode == 0:
        return
    tarball = CACHE / "debian-bookworm-minbase.tar"
    if not tarball.exists():
        mirror = apt_mirror()
        if shutil.which("debootstrap") is None or mirror is None:
            pytest.skip("no base image: debootstrap or an apt mirror in /etc/apt is missing (and no registry to pull from)")
        rootfs = CACHE / "rootfs"
        shutil.rmtree(rootfs, ignore_errors=True)
        started = time.monotonic()
        proc = run("debootstrap", "--variant=minbase", "bookworm", str(rootfs), mirror, timeout=1200, check=False)
        if proc.returncode != 0:
            pytest.skip(f"no base image: debootstrap failed ({proc.stdout[-500:]} {proc.stderr[-500:]})")
        FIGURES["debootstrap s"] = time.monotonic() - started
        for junk in (rootfs / "var/cache/apt/archives").glob("*.deb"):
            junk.unlink()
        ca = rootfs / CA_IN_BASE.lstrip("/")
        ca.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt", ca)  # the machine's
        # trust, for pip in the build (a machine whose traffic goes through a TLS-inspecting proxy needs its CA)
        partial = tarball.with_suffix(".tar.part")
        with tarfile.open(partial, "w") as tar:
            tar.add(rootfs, arcname=".")
        partial.rename(tarball)
        shutil.rmtree(rootfs, ignore_errors=True)
    podman("import", "--change", 'CMD ["bash"]', "--change", f"ENV PIP_CERT={CA_IN_BASE}", str(tarball), BASE)


def working_runtime() -> None:
    """A containers.conf with which podman starts a container here, or skip."""
    errors = []
    for runtime in (None, "crun", "runc"):
        if runtime and shutil.which(runtime) is None:
            continue
        write_containers_conf(runtime)
        proc = podman("run", "--rm", "--network=none", BASE, "true", timeout=120, check=False)
        if proc.returncode == 0:
            return
        errors.append(f"{runtime or 'default'}: {proc.stderr.strip().splitlines()[-1:] if proc.stderr.strip() else proc.returncode}")
    pytest.skip(f"podman cannot start a container here ({'; '.join(errors)}; Debian's runc may help)")


def postgres_image() -> str:
    """The stand-in for the official postgres:15 image, tagged by its sources' digest."""
    digest = hashlib.sha256(b"".join((HERE / f).read_bytes() for f in ("postgres.Dockerfile", "postgres-entrypoint.sh")))
    image = f"localhost/pbmserv-test-postgres:15-{digest.hexdigest()[:12]}"
    if podman("image", "exists", image, check=False).returncode != 0:
        started = time.monotonic()
        podman("build", "--format", "docker", "--build-arg", f"BASE={BASE}", "-f", str(HERE / "postgres.Dockerfile"),
               "-t", image, str(HERE), timeout=1800)  # fmt: skip
        FIGURES["postgres image build s"] = time.monotonic() - started
    return image


def podman_compose() -> list[str]:
    """podman-compose from tests/deploy/container/podman-compose.lock (hashed), in the cache."""
    lock = HERE / "podman-compose.lock"
    target = CACHE / f"podman-compose-{hashlib.sha256(lock.read_bytes()).hexdigest()[:12]}"
    if not (target / "podman_compose.py").exists():
        partial = target.with_suffix(".part")
        shutil.rmtree(partial, ignore_errors=True)
        proc = run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--require-hashes", "--only-binary", ":all:",
                   "--target", str(partial), "-r", str(lock), timeout=600, check=False)  # fmt: skip
        if proc.returncode != 0:
            pytest.skip(f"podman-compose could not be installed: {proc.stderr[-500:]}")
        partial.rename(target)
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(target)!r}); import podman_compose; podman_compose.main()"]


@pytest.fixture(scope="module")
def images() -> dict[str, str]:
    if os.geteuid() != 0:
        pytest.skip("needs root (rootful podman: the sandbox has no user namespaces to spare)")
    if shutil.which("podman") is None:
        pytest.skip("no podman (apt-get install podman)")
    CACHE.mkdir(parents=True, exist_ok=True)
    write_containers_conf(None)
    base_image()
    working_runtime()
    return {"db": postgres_image(), "server": SERVER_IMAGE}


class Compose:
    """compose.yaml started by podman-compose in a folder of its own, as deploy/README.md says."""

    def __init__(self, folder: Path, images: dict[str, str]) -> None:
        self.folder = folder
        self.project = f"pbmtest{os.getpid()}"
        self.web_port = free_port()
        data = yaml.safe_load((ROOT / "deploy/container/compose.yaml").read_text())
        services = data["services"]
        services["db"]["image"] = images["db"]  # (no registry: the stand-in; see the module's doc)
        services["server"]["image"] = images["server"]  # (this test's tag)
        services["server"]["build"]["context"] = str(ROOT)
        services["server"]["build"]["args"] = {"BASE": BASE}
        services["server"]["ports"] = [f"127.0.0.1:{self.web_port}:8080"]
        (folder / "compose.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        # the operator's steps: a pbmserv.toml beside it (here: mail in by the embedded listener, replies to
        # Maildirs in the state volume; the database from compose.yaml), the password in .env, both 0600
        config = folder / "pbmserv.toml"
        config.write_text(f'[server]\naddress = "{SERVER}"\nname = "Container Test"\nsecret = "{os.urandom(16).hex()}"\n')
        env = folder / ".env"
        env.write_text(f"PBMSERV_DB_PASSWORD={os.urandom(24).hex()}\n")
        for path in (config, env):
            path.chmod(0o600)
        os.chown(config, 10001, 10001)  # the image's user pbmserv reads it (deploy/README.md says so)
        self.command = podman_compose()

    def __call__(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        # (BUILDAH_FORMAT: podman builds Docker's image format, which keeps HEALTHCHECK; its own drops it)
        return run(*self.command, "-p", self.project, "-f", str(self.folder / "compose.yaml"), *args,
                   timeout=timeout, check=check, env={**podman_env(), "BUILDAH_FORMAT": "docker"})  # fmt: skip

    def container(self, service: str) -> str:
        out = podman("ps", "-a", "--format", "{{.Names}}", "--filter", f"label=io.podman.compose.project={self.project}",
                     "--filter", f"label=com.docker.compose.service={service}").stdout.split()  # fmt: skip
        assert len(out) == 1, out
        return out[0]

    def exec(self, service: str, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.container(service), *args, check=check, timeout=timeout)

    def down(self) -> None:
        for _ in range(2):  # (a container that the restart policy was starting again can survive the first)
            self("down", "-v", "-t", "60", check=False, timeout=300)
        label = f"label=io.podman.compose.project={self.project}"
        for name in podman("ps", "-a", "-q", "--filter", label, check=False).stdout.split():
            podman("rm", "-f", name, check=False)
        podman("network", "rm", "-f", f"{self.project}_default", check=False)
        for volume in ("db-data", "state"):
            podman("volume", "rm", "-f", f"{self.project}_{volume}", check=False)


@pytest.fixture
def compose(images: dict[str, str], tmp_path: Path) -> Iterator[Compose]:
    project = Compose(tmp_path, images)
    try:
        yield project
    finally:
        print("\ncontainer figures (seconds):", ", ".join(f"{k.removesuffix(' s')} {v:.0f}" for k, v in FIGURES.items()))
        if os.environ.get("PBMSERV_TEST_CONTAINER_KEEP"):
            print(f"kept: podman-compose -p {project.project} -f {tmp_path}/compose.yaml down -v")
        else:
            project.down()


def until(what: str, check: object, timeout: float = 300.0, every: float = 2.0) -> object:
    """Poll ``check()`` until it returns something true; that value (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        last = check()  # type: ignore[operator]
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


def test_compose_starts_postgresql_and_the_server_which_answers_a_mail(compose: Compose) -> None:
    started = time.monotonic()
    compose("build", "server", timeout=2400)  # the operator's `up --build`, in two steps to time each
    FIGURES["server image build s"] = time.monotonic() - started
    started = time.monotonic()
    compose("up", "-d", timeout=600)
    server = compose.container("server")

    # the image's own health check (HEALTHCHECK; compose.yaml's is the same command) turns healthy: /healthz
    # answers 200 once serve has migrated PostgreSQL and listens (until then the restart policy retries)
    def healthy() -> bool:
        return podman("healthcheck", "run", server, check=False, timeout=60).returncode == 0

    until("the server's health check", healthy, timeout=300)
    FIGURES["compose up to healthy s"] = time.monotonic() - started
    config = json.loads(podman("inspect", server).stdout)[0]["Config"]
    assert "/healthz" in " ".join(config.get("Healthcheck", {}).get("Test", []))
    image = json.loads(podman("image", "inspect", SERVER_IMAGE).stdout)[0]
    assert "/healthz" in " ".join(image["Healthcheck"]["Test"])  # the image's own: built in Docker's format
    assert config["User"] == "pbmserv:pbmserv"
    assert podman("healthcheck", "run", compose.container("db"), check=False).returncode == 0  # pg_isready

    version = compose.exec("server", "pbmserv-terrace", "--version").stdout.strip()
    assert re.fullmatch(r"pbmserv-terrace \d+\.\d+\.\d+\S*", version), version
    assert compose.exec("server", "id", "-un").stdout.strip() == "pbmserv"

    # a real mail in: over SMTP to serve's embedded listener, inside the container; its reply in the Maildir
    sent = compose.exec("server", "pbmserv-terrace", "send", "--from", "ann@players.test", "signup ann pw-container-ann")
    assert sent.returncode == 0, sent

    def welcome() -> str:
        out = compose.exec("server", "pbmserv-terrace", "inbox", "ann@players.test", check=False).stdout
        return out if "Welcome" in out else ""

    assert "ann" in str(until("the welcome in ann's Maildir", welcome, timeout=120))
    users = compose.exec("db", "psql", "--username=pbmserv", "--dbname=pbmserv", "-tAc", "SELECT userid FROM users")
    assert "ann" in users.stdout.split()  # in PostgreSQL, the db container's (beside the robots' users)

    # the web archive on the published port (the loopback only)
    def page() -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{compose.web_port}/", timeout=10) as answer:
                return int(answer.status)
        except (urllib.error.URLError, OSError):
            return 0

    assert until("the web archive", page, timeout=60) == 200

    # SIGTERM (STOPSIGNAL; podman stop) ends serve cleanly
    started = time.monotonic()
    podman("stop", "-t", "60", server, timeout=120)
    FIGURES["stop s"] = time.monotonic() - started
    state = json.loads(podman("inspect", server).stdout)[0]["State"]
    assert state["ExitCode"] == 0, state
