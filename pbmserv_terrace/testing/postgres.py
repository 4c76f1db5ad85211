"""A throwaway PostgreSQL cluster: ``initdb`` + ``pg_ctl`` in a temporary directory.

As root the binaries run as the ``postgres`` user (PostgreSQL refuses to run as
root).  ``PBMSERV_TEST_POSTGRES_URL`` (a superuser URL of an existing server)
replaces the cluster.  When neither works this raises: the tests that need
PostgreSQL fail, they never skip.

    with PostgresCluster() as pg:
        url = pg.create_database()
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from types import TracebackType

import asyncpg
from sqlalchemy.engine import make_url


class PostgresUnavailable(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _find(binary: str) -> str:
    found = shutil.which(binary)
    if found:
        return found
    for base in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (base / binary).exists():
            return str(base / binary)
    raise PostgresUnavailable(f"{binary} not found: install PostgreSQL (Debian: postgresql) or set PBMSERV_TEST_POSTGRES_URL")


class PostgresCluster:
    def __init__(self) -> None:
        self.external = os.environ.get("PBMSERV_TEST_POSTGRES_URL")
        self.dir: Path | None = None
        self.port = 0
        self._as_root = os.geteuid() == 0
        self._options = ""

    # -------------------------------------------------------------- lifecycle
    def _run(self, *args: str) -> None:
        cmd = list(args)
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise PostgresUnavailable(f"{' '.join(args[:2])} failed: {proc.stderr.strip() or proc.stdout.strip()}")

    def start(self) -> PostgresCluster:
        if self.external:
            return self
        initdb, pg_ctl = _find("initdb"), _find("pg_ctl")
        self.dir = Path(tempfile.mkdtemp(prefix="pbmserv-pg-"))
        if self._as_root:
            shutil.chown(self.dir, "postgres", "postgres")
        data = self.dir / "data"
        self.port = free_port()
        self._run(initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C")
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._options = options
        self._run(pg_ctl, "-D", str(data), "-o", options, "-l", str(self.dir / "log"), "-w", "-t", "60", "start")
        return self

    def halt(self) -> None:
        """Stop the server as an outage does (fast: its connections end), keeping
        its data and port for :meth:`resume` (a cluster of this process's own only)."""
        assert self.dir is not None and not self.external
        self._run(_find("pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start it again after :meth:`halt`, on the same port."""
        assert self.dir is not None and not self.external
        self._run(_find("pg_ctl"), "-D", str(self.dir / "data"), "-o", self._options, "-l", str(self.dir / "log"),
                  "-w", "-t", "60", "start")  # fmt: skip

    def stop(self) -> None:
        if self.external or self.dir is None:
            return
        with contextlib.suppress(PostgresUnavailable):
            self._run(_find("pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # -------------------------------------------------------------- databases
    @property
    def admin_url(self) -> str:
        if self.external:
            return self.external
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, dbname: str) -> str:
        """SQLAlchemy URL (asyncpg driver) of database ``dbname``."""
        parsed = make_url(self.admin_url).set(drivername="postgresql+asyncpg", database=dbname)
        return parsed.render_as_string(hide_password=False)

    async def _admin(self, sql: str) -> None:
        parsed = make_url(self.admin_url)
        conn = await asyncpg.connect(
            host=parsed.host, port=parsed.port, user=parsed.username, password=parsed.password, database=parsed.database
        )
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database and return its URL."""
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        asyncio.run(self._admin(f'CREATE DATABASE "{name}"'))
        return self.url(name)

    def drop_database(self, name: str) -> None:
        asyncio.run(self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
