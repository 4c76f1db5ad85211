"""The command line imports only what the command given uses (issue 43): ``--help``
and ``--version`` load no module of the server and none of its heavy libraries;
``handle`` with ``[lmtp] listen`` hands its mail to the listener there with a
socket and exits by its answer; the table of commands says what each command's
module declares."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbmserv_terrace.cli.main import ALL, COMMANDS, build_parser, command_word
from pbmserv_terrace.mail.lmtp import LmtpListener

HEAVY = ("sqlalchemy", "alembic", "aiosqlite", "asyncpg", "jinja2", "PIL", "lxml", "argon2", "aiosmtplib",
         "aioimaplib", "aiosmtpd", "starlette", "prometheus_client", "email.parser")  # fmt: skip
"""libraries a command that touches no database nor mail has no use for"""
LEAN = ("shutil", "ctypes", "pathlib", "json", "asyncio")
"""standard modules ``handle``'s hand-over does without (a few ms each, in a process a mail)"""
SERVER = ("pbmserv_terrace.store", "pbmserv_terrace.service", "pbmserv_terrace.app", "pbmserv_terrace.gametypes",
          "pbmserv_terrace.games", "pbmserv_terrace.render", "pbmserv_terrace.web", "pbmserv_terrace.mail.message")  # fmt: skip


def imported(argv: list[str], env: dict[str, str] | None = None, stdin: bytes = b"") -> tuple[int, set[str], str]:
    """(exit status, modules imported, stderr without the import lines) of one run."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pbmserv_terrace", *argv], input=stdin,
                          capture_output=True, env=env, timeout=120)  # fmt: skip
    lines = proc.stderr.decode(errors="replace").splitlines()
    names = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
    rest = "\n".join(line for line in lines if not line.startswith("import time:"))
    return proc.returncode, names, rest


def loaded(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["no-such-command"]])
def test_help_and_version_import_nothing_heavy(argv: list[str]) -> None:
    status, names, _ = imported(argv)
    assert status in (0, 2)
    assert "pbmserv_terrace.cli.main" in names  # (the reader sees the imports)
    assert loaded(names, HEAVY + SERVER) == []


def test_a_commands_help_imports_its_module_only() -> None:
    status, names, _ = imported(["perft", "--help"])
    assert status == 0
    assert "pbmserv_terrace.gametypes" in names  # (cli.tools itself, imported by importlib, is not listed)
    assert loaded(names, ("pbmserv_terrace.cli.serve", "pbmserv_terrace.cli.admin", "sqlalchemy", "aiosmtplib")) == []


def test_the_table_says_what_each_module_declares() -> None:
    for name, entry in COMMANDS.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        for module in entry.modules:
            importlib.import_module(f"pbmserv_terrace.cli.{module}").register(sub)
        helps = {a.dest: a.help for a in sub._choices_actions}
        assert helps.get(name) == entry.help, name
    full = build_parser(ALL)
    commands = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    assert list(commands.choices) == list(COMMANDS)
    assert build_parser("perft").parse_args(["perft", "--depth", "1"]).handler.__module__ == "pbmserv_terrace.cli.tools"


def test_the_command_word_is_found_past_the_options() -> None:
    assert command_word(["--config", "serve", "handle", "--print"]) == "handle"
    assert command_word(["--config=x", "admin", "games"]) == "admin"
    assert command_word(["-h"]) is None and command_word(["nonsense"]) is None


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[str, list[bytes], list[bool]]]:
    """An LMTP listener in a thread: (its socket, the mails it took, [fail next])."""
    taken: list[bytes] = []
    fail = [False]
    path = tmp_path / "lmtp.sock"
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    async def take(raw: bytes) -> None:
        if fail[0]:
            raise RuntimeError("try again")
        taken.append(raw)

    async def run() -> None:
        server = LmtpListener(f"unix:{path}", take)
        await server.start()
        ready.set()
        stop = asyncio.Event()
        loop.stop_event = stop  # type: ignore[attr-defined]
        await stop.wait()
        await server.stop()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
    thread.start()
    assert ready.wait(30)
    yield f"unix:{path}", taken, fail
    loop.call_soon_threadsafe(loop.stop_event.set)  # type: ignore[attr-defined]
    thread.join(30)
    loop.close()


def test_handle_passes_the_mail_to_the_lmtp_listener_with_a_socket_only(
    tmp_path: Path, listener: tuple[str, list[bytes], list[bool]]
) -> None:
    listen, taken, fail = listener
    config = tmp_path / "pbmserv.toml"
    config.write_text(f'[server]\naddress = "pbmserv@terrace.test"\n[lmtp]\nlisten = "{listen}"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    mail = b"From: ann@players.test\nSubject: terrace show 101\nMessage-ID: <a1@players.test>\n\n.hello\n"
    status, names, err = imported(["handle", "--config", str(config), "--recipient", "pbmserv+KEY@terrace.test"], env, mail)
    assert status == 0, err
    assert taken == [b"X-Original-To: pbmserv+KEY@terrace.test\r\n" + mail.replace(b"\n", b"\r\n")]
    assert loaded(names, HEAVY + SERVER) == []
    assert loaded(names, LEAN) == []
    fail[0] = True  # serve could not handle it now: Postfix is to keep it (EX_TEMPFAIL)
    status, _, err = imported(["handle", "--config", str(config)], {**env, "RECIPIENT": "pbmserv@terrace.test"}, mail)
    assert status == 75 and "serve answered 451" in err


def test_handle_goes_on_by_itself_when_nothing_listens(tmp_path: Path) -> None:
    config = tmp_path / "pbmserv.toml"
    config.write_text(
        f'[server]\naddress = "pbmserv@terrace.test"\ndatabase_url = "sqlite:///{tmp_path}/h.db"\n'
        f'[lmtp]\nlisten = "unix:{tmp_path}/nobody.sock"\n[embedded]\nmaildir_root = "{tmp_path}/maildirs"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    mail = b"From: ann@players.test\nTo: pbmserv@terrace.test\nSubject: help\nMessage-ID: <h1@players.test>\n\n"
    status, names, err = imported(["handle", "--config", str(config)], env, mail)
    assert status == 0, err
    assert "nothing answers on unix:" in err and "sqlalchemy" in names
    assert list((tmp_path / "maildirs").glob("ann@players.test/new/*"))  # answered from here
