"""Pipe mode's hand-over to a running ``serve`` loses nothing and applies nothing
twice (issue 43): a real ``serve`` with ``[lmtp] listen`` and real ``handle``
processes, as Postfix's ``pipe`` runs them (one a mail; exit 75 makes Postfix keep
the mail and run ``handle`` again later, so the test runs it again).

- ``serve`` killed while a ``handle`` is talking to it: ``handle`` exits 75, the
  board is unchanged and nobody got a reply; run again (Postfix's retry) once
  ``serve`` is back, the move is played once and answered once.
- The same mail handed twice (a retry after ``serve`` committed but before its
  answer reached ``handle``, or a mail the MTA delivers twice): the Message-ID
  makes the second a no-op, answered ``250`` (exit 0) with no reply mail.
- Nothing running (the dead ``serve``'s socket file still there): ``handle``
  handles the mail in its own process, once.

The moment between ``handle``'s connection and ``serve``'s answer is made
certain by stopping ``serve`` (SIGSTOP) before ``handle`` connects: the kernel
completes the connection, ``handle`` waits for the greeting (the test sees it in
``/proc/PID/wchan`` and ``/proc/PID/fd``), and then ``serve`` is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pbmserv_terrace.config import load_config
from pbmserv_terrace.gametypes import DEFAULT_GAME_TYPE, GAME_TYPES
from pbmserv_terrace.service import Service
from pbmserv_terrace.store import Game, UnitOfWork

from ..service.harness import SERVER, Harness, raw_mail

BOARDS = 3

pytestmark = pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux's /proc/PID/wchan")


def wait_for(what: Callable[[], bool], seconds: float, failure: str) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(failure)
        time.sleep(0.02)


class Setup:
    """A configuration, its SQLite database with ann and bob on ``BOARDS`` boards,
    and each board's first move as a mail from the player to move."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.db_path = folder / "pipe.db"
        self.socket = folder / "lmtp.sock"
        url = f"sqlite+aiosqlite:///{self.db_path}"
        self.config = folder / "pbmserv.toml"
        self.config.write_text(
            f'[server]\ndatabase_url = "{url}"\naddress = "{SERVER}"\nrate_limit_per_minute = 100000\n'
            f"health_port = 0\nscheduler_interval = 3600\n"
            f'[imap]\nfailed_folder = "{folder / "failed"}"\n[embedded]\nmaildir_root = "{folder / "maildirs"}"\n'
            f'[lmtp]\nlisten = "unix:{self.socket}"\n[web]\nlisten = "off"\n',
            encoding="utf-8",
        )
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        h = Harness(url)
        h.config = load_config(self.config)
        h.service = Service(h.db, h.config)
        try:
            h.signup("ann", "bob")
            for _ in range(BOARDS):
                h.challenge("ann", "bob")
            self.moves = h.loop.run_until_complete(self.first_moves(h))
        finally:
            h.close()
        self.mails = [
            raw_mail(f"{who}@players.test", f"{DEFAULT_GAME_TYPE} move {board} {who} pw-{who} {move}")
            for board, who, move in self.moves
        ]

    @staticmethod
    async def first_moves(h: Harness) -> list[tuple[int, str, str]]:
        kind = GAME_TYPES[DEFAULT_GAME_TYPE]
        out = []
        async with UnitOfWork(h.db) as uow:
            for board in range(101, 101 + BOARDS):
                game = await uow.games.get(kind.name, board)
                assert isinstance(game, Game)
                pos = kind.board.load(game.position)
                mover = next(s.user.userid for s in game.seats if s.seat == pos.to_move)
                out.append((board, mover, kind.board.example_move(pos)))
        return out

    def plies(self) -> list[int]:
        with contextlib.closing(sqlite3.connect(self.db_path)) as conn:
            rows = conn.execute(
                "SELECT board_number, ply FROM games WHERE board_number BETWEEN 101 AND ? ORDER BY board_number",
                (100 + BOARDS,),
            ).fetchall()
        return [ply for _, ply in rows]

    def replies(self) -> int:
        return sum(1 for _ in (self.folder / "maildirs").rglob("new/*"))

    def handle(self, mail: bytes) -> subprocess.Popen[bytes]:
        """A ``handle`` process with ``mail`` on its standard input (a file, as pipe(8) gives it)."""
        with tempfile.TemporaryFile() as stdin:
            stdin.write(mail)
            stdin.seek(0)
            return subprocess.Popen(
                [sys.executable, "-m", "pbmserv_terrace", "handle", "--config", str(self.config)],
                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env,
            )  # fmt: skip

    def handle_done(self, mail: bytes) -> tuple[int, str]:
        proc = self.handle(mail)
        _, err = proc.communicate(timeout=120)
        return proc.returncode, err.decode(errors="replace")


@contextlib.contextmanager
def serving(setup: Setup) -> Iterator[subprocess.Popen[bytes]]:
    log = setup.folder / "serve.log"
    start = log.stat().st_size if log.exists() else 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "pbmserv_terrace", "serve", "--config", str(setup.config)],
        cwd=setup.folder, env={**setup.env, "PYTHONUNBUFFERED": "1"}, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_for(
            lambda: b"by LMTP on unix:" in log.read_bytes()[start:] or proc.poll() is not None,
            90,
            "serve did not start",
        )
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def waits_for_an_answer(pid: int) -> bool:
    """Whether the process sleeps waiting for input and holds a socket (``handle``
    waiting for the stopped ``serve``'s greeting: its socket has a timeout, so it
    polls before it reads)."""
    try:
        waiting = Path(f"/proc/{pid}/wchan").read_text()
        sockets = [fd for fd in Path(f"/proc/{pid}/fd").iterdir() if os.readlink(fd).startswith("socket:")]
    except OSError:
        return False
    return bool(sockets) and ("poll" in waiting or "unix_stream" in waiting)


def test_a_crash_loses_nothing_and_a_mail_handed_twice_is_applied_once(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    start = setup.plies()
    assert start == [start[0]] * BOARDS and setup.replies() == 0
    first, second, third = setup.mails

    # serve dies while handle waits for its answer: handle asks Postfix to keep the mail
    with serving(setup) as serve:
        os.kill(serve.pid, signal.SIGSTOP)
        try:
            handle = setup.handle(first)
            wait_for(lambda: waits_for_an_answer(handle.pid) or handle.poll() is not None, 60, "handle never connected")
            assert handle.poll() is None, handle.communicate()
            os.kill(serve.pid, signal.SIGKILL)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(serve.pid, signal.SIGCONT)
        serve.wait(30)
        _, err = handle.communicate(timeout=60)
        assert handle.returncode == 75, err.decode(errors="replace")
    assert b"broke off" in err
    assert setup.plies() == start and setup.replies() == 0  # nothing applied, nothing answered
    assert setup.socket.exists()  # (a dead serve leaves its socket file)

    # Postfix's retry, serve running again: played once, answered once (the mover and the opponent)
    with serving(setup):
        status, err_text = setup.handle_done(first)
        assert status == 0, err_text
        assert setup.plies() == [start[0] + 1, start[1], start[2]]
        wait_for(lambda: setup.replies() >= 2, 60, "no replies to the move")
        # the same mail again (a retry after serve committed but before handle heard
        # it, or the MTA delivering it twice): a no-op, and Postfix is told it is done
        status, err_text = setup.handle_done(first)
        assert status == 0, err_text
        status, err_text = setup.handle_done(second)  # (after it: the first's replies are all out)
        assert status == 0, err_text
        wait_for(lambda: setup.replies() >= 4, 60, "no replies to the second move")
    assert setup.plies() == [start[0] + 1, start[1] + 1, start[2]]
    assert setup.replies() == 4

    # nothing running (its socket file stale): handle does the work itself, once
    status, err_text = setup.handle_done(third)
    assert status == 0, err_text
    assert "nothing answers on unix:" in err_text
    status, err_text = setup.handle_done(third)
    assert status == 0, err_text
    assert setup.plies() == [start[0] + 1, start[1] + 1, start[2] + 1]
    assert setup.replies() == 6
    assert not (tmp_path / "failed").exists() or not list((tmp_path / "failed").iterdir())
