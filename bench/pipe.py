"""Issue 43: the CPU one mail costs in pipe mode, one process per mail.

Postfix's ``pipe`` transport (pbmserv's own way: a process per mail) runs
``pbmserv-terrace handle`` once for every mail, so what a mail costs is the whole
process: the interpreter, the imports, the configuration, the database's schema
check, the mail, its two replies written into Maildirs.  This prepares a SQLite
database (two players, a board per mail, through the service in-process), then
runs N move mails through ``handle``, each in a process of its own, and measures
each child's CPU (user + system, from ``os.wait4``), beside, in the same run:
``python -c pass`` (the floor), ``python -c "import pbmserv_terrace.cli.main"``,
``--version`` and ``--help``.

Python's compiled bytecode is kept in a private cache (``PYTHONPYCACHEPREFIX`` in
a temporary folder, filled by one run of each before measuring), as an installed
package has it; ``--no-pyc`` measures without it (every module compiled each run).

Both of ``handle``'s paths are measured, one process per mail: with ``[lmtp]
listen`` set and ``serve`` running there, ``handle`` hands the mail to it by LMTP
and exits by its answer (the path pipe mode takes; ``serve``'s own CPU a mail,
with its sender process, from /proc, is printed beside, so the whole cost of a
mail shows); with nothing answering there (or no ``[lmtp] listen``), ``handle``
handles the mail in its own process, the whole server loaded (the fallback).

``--tree DIR`` runs another checkout's code (before/after: ``git worktree`` or
``git archive`` of an older commit); a tree without ``mail/lmtp.py`` has no LMTP.

Run: .venv/bin/python bench/pipe.py [--mails 20] [--no-pyc] [--tree DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pbmserv_terrace.config import load_config
from pbmserv_terrace.gametypes import DEFAULT_GAME_TYPE, GAME_TYPES
from pbmserv_terrace.service import Service
from pbmserv_terrace.service.passwords import hash_password, verify_password
from pbmserv_terrace.store import Game, UnitOfWork
from tests.service.harness import SERVER, Harness, raw_mail


def child_cpu(argv: list[str], env: dict[str, str], stdin: bytes = b"", cwd: Path = ROOT) -> float:
    """CPU seconds (user + system) of one child process, which must succeed."""
    with tempfile.TemporaryFile() as inp:
        inp.write(stdin)
        inp.seek(0)
        proc = subprocess.Popen(argv, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}):\n{err.decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime


def prepare(folder: Path, boards: int) -> tuple[Path, list[bytes]]:
    """A config file, its database with ``boards`` boards of ann against bob, and one
    move mail per board (its first move, by the player whose turn it is)."""
    db_path = folder / "pipe.db"
    url = f"sqlite+aiosqlite:///{db_path}"
    config = folder / "pbmserv.toml"
    config.write_text(
        f'[server]\ndatabase_url = "{url}"\naddress = "{SERVER}"\nrate_limit_per_minute = 100000\n'
        f'[imap]\nfailed_folder = "{folder / "failed"}"\n[embedded]\nmaildir_root = "{folder / "maildirs"}"\n',
        encoding="utf-8",
    )
    h = Harness(url)
    h.config = load_config(config)
    h.service = Service(h.db, h.config)
    try:
        h.signup("ann", "bob")
        for _ in range(boards):
            h.challenge("ann", "bob")
        kind = GAME_TYPES[DEFAULT_GAME_TYPE]

        async def first_moves() -> list[tuple[int, str, str]]:
            out = []
            async with UnitOfWork(h.db) as uow:
                for board in range(101, 101 + boards):
                    game = await uow.games.get(kind.name, board)
                    assert isinstance(game, Game)
                    rules = kind.board
                    pos = rules.load(game.position)
                    mover = next(s.user.userid for s in game.seats if s.seat == pos.to_move)
                    move = rules.example_move(pos)
                    out.append((board, mover, move))
            return out

        plan = h.loop.run_until_complete(first_moves())
    finally:
        h.close()
    mails = [
        raw_mail(f"{who}@players.test", f"{DEFAULT_GAME_TYPE} move {board} {who} pw-{who} {move}") for board, who, move in plan
    ]
    return config, mails


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a running process and of its running
    descendants (``serve`` and its sender process), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        total += (int(fields[11]) + int(fields[12])) / tick
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                total += proc_cpu(int(child))
    except OSError:
        pass  # (it ended)
    return total


def argon2_cpu(rounds: int = 10) -> float:
    """CPU seconds of one password check (argon2id, as a move mail's password is
    checked: once in every ``handle`` process, once per player and ``ttl`` in ``serve``)."""
    stored = hash_password("pw-ann")
    start = time.process_time()
    for _ in range(rounds):
        verify_password("pw-ann", stored)
    return (time.process_time() - start) / rounds


def replies(folder: Path) -> int:
    return sum(1 for _ in (folder / "maildirs").rglob("new/*"))


def wait_for(what: Callable[[], bool], seconds: float, failure: str) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            raise SystemExit(failure)
        time.sleep(0.05)


def through_serve(
    folder: Path, config: Path, mails: list[bytes], env: dict[str, str], cli: list[str], tree: Path
) -> tuple[list[float], float]:
    """``handle`` passing each mail to a running ``serve`` by LMTP ([lmtp] listen):
    each handle process's CPU, and ``serve``'s (with its sender process) a mail."""
    socket = folder / "lmtp.sock"
    relayed = folder / "relay.toml"
    relayed.write_text(config.read_text(encoding="utf-8") + f'[lmtp]\nlisten = "unix:{socket}"\n', encoding="utf-8")
    served = folder / "serve.toml"
    served.write_text(
        relayed.read_text(encoding="utf-8").replace("[server]\n", "[server]\nhealth_port = 0\n", 1) + '[web]\nlisten = "off"\n',
        encoding="utf-8",
    )
    log = (folder / "serve.log").open("ab")
    serve = subprocess.Popen([*cli, "serve", "--config", str(served)], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tree)
    try:
        wait_for(lambda: socket.exists() or serve.poll() is not None, 120, "serve did not start")
        if serve.poll() is not None:
            raise SystemExit("serve stopped:\n" + (folder / "serve.log").read_text(errors="replace")[-3000:])
        time.sleep(1)  # (its start-up's CPU settles: the sender process, the first outbox scan)
        have = replies(folder)
        before = proc_cpu(serve.pid)
        handle = [*cli, "handle", "--config", str(relayed)]
        per_mail = [child_cpu(handle, env, mail, tree) for mail in mails]
        wait_for(lambda: replies(folder) >= have + 2 * len(mails), 120, "the replies did not all arrive")
        served_cpu = (proc_cpu(serve.pid) - before) / len(mails)
    finally:
        serve.terminate()
        serve.wait(60)
    return per_mail, served_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mails", type=int, default=20, help="move mails through handle, one process each, in each mode")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each of the other commands")
    parser.add_argument("--no-pyc", action="store_true", help="no bytecode cache: every module compiled in every run")
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="the checkout whose pbmserv_terrace the children run (a before/after)"
    )
    args = parser.parse_args()
    tree = args.tree.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config, mails = prepare(folder, 2 * args.mails + 1)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        env["PYTHONPATH"] = str(tree)
        if args.no_pyc:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env.pop("PYTHONPYCACHEPREFIX", None)
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        py = [sys.executable]
        cli = [*py, "-m", "pbmserv_terrace"]
        handle = [*cli, "handle", "--config", str(config)]
        runs: list[tuple[str, Callable[[], float]]] = [
            ("python -c pass", lambda: child_cpu([*py, "-c", "pass"], env, b"", tree)),
            (
                "python -c 'import pbmserv_terrace.cli.main'",
                lambda: child_cpu([*py, "-c", "import pbmserv_terrace.cli.main"], env, b"", tree),
            ),
            ("pbmserv-terrace --version", lambda: child_cpu([*cli, "--version"], env, b"", tree)),
            ("pbmserv-terrace --help", lambda: child_cpu([*cli, "--help"], env, b"", tree)),
        ]
        child_cpu(handle, env, mails[-1], tree)  # fills the bytecode cache for handle's modules (and plays a board's move)
        for _, run in runs:
            run()
        figures = [(name, [run() for _ in range(args.repeat)]) for name, run in runs]
        here = [child_cpu(handle, env, mail, tree) for mail in mails[: args.mails]]
        figures.append(("handle, no serve: handled in its own process", here))
        if (tree / "pbmserv_terrace" / "mail" / "lmtp.py").exists():
            relayed, served = through_serve(folder, config, mails[args.mails : 2 * args.mails], env, cli, tree)
            figures.append(("handle, serve up: handed to it by LMTP", relayed))
        else:
            served = 0.0
        print(f"CPU per process (user + system), {'no bytecode cache' if args.no_pyc else 'bytecode cached'}; "
              f"Python {sys.version.split()[0]}; {args.mails} move mails each way; tree {tree}")  # fmt: skip
        print(f"{'':52} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
        for name, cpu in figures:
            print(f"{name:52} {statistics.median(cpu) * 1000:10.1f} {min(cpu) * 1000:8.1f} {max(cpu) * 1000:8.1f}")
        if served:
            total = statistics.median(figures[-1][1]) + served
            print(f"{'serve (and its sender process), a mail':52} {served * 1000:10.1f}")
            print(f"{'a mail by pipe + LMTP to serve, all processes':52} {total * 1000:10.1f}")
        print(f"{'of which one argon2id password check (this process)':52} {argon2_cpu() * 1000:10.1f}")
        failed = list((folder / "failed").glob("*.eml")) if (folder / "failed").exists() else []
        for path in failed[:3]:
            print(path.with_suffix(".error").read_text(encoding="utf-8"), end="")
        expected = 2 * (len(here) + 1 + (args.mails if served else 0))
        if failed or replies(folder) != expected:
            raise SystemExit(f"expected {expected} replies and no failed mail; got {replies(folder)}, {len(failed)} failed")


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
