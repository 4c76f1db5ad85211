"""The ``pbmserv-terrace`` command line.

Each sub-command is a small function taking the parsed arguments and returning an
exit status; errors in the user's arguments print one line to stderr and exit 2.

A run does one command, so it imports only that command's module (issue 43):
:data:`COMMANDS` names each command's module as a string and its line in the
help, and :func:`build_parser` imports (``importlib``) only the module of the
command given, whose ``register`` declares its arguments; the other commands stand
in the parser as their help lines.  ``--help`` and ``--version`` import no module
of the server at all (no SQLAlchemy, no Jinja, no Pillow).  tests/cli/test_lazy.py
checks the table against the modules and what each command imports.
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

from .. import __version__
from ..lifecycle import setup_logging
from .common import CliError, CommandParser

Handler = Callable[[argparse.Namespace], int]


class Command(NamedTuple):
    modules: tuple[str, ...]
    """the modules of ``cli/`` whose ``register`` declares it (in order)"""
    help: str
    """its line in ``pbmserv-terrace --help`` (the same as its register's: the test checks)"""


COMMANDS: dict[str, Command] = {
    "perft": Command(("tools",), "count legal move sequences (rules check and benchmark)"),
    "board": Command(("tools",), "print the ASCII board of a position string, or draw it as a PNG"),
    "migrate": Command(("schema",), "create or upgrade the database schema"),
    "handle": Command(("pipe",), "process one mail from standard input (pipe mode)"),
    "serve": Command(("serve",), "run the server (embedded default without [imap]/[smtp] settings)"),
    "send": Command(("serve",), "mail a command to the server (embedded listener or configured SMTP)"),
    "inbox": Command(("serve", "inbox"), "print the replies in a local Maildir (embedded default)"),
    "check-config": Command(("serve",), "validate the configuration and try the database and mail connections"),
    "status": Command(("serve",), "health of the server and the database"),
    "admin": Command(("admin",), "operator tools (games, users, replay, resend, export, backup, restore, ...)"),
    "oauth2": Command(("oauth2",), "OAuth2 for the mail account (Gmail, Microsoft 365)"),
    "web": Command(("web",), "run the read-only web archive alone (serve also runs it when [web] listen is set)"),
}
"""every command, in the order ``--help`` lists them"""

ALL = "*"
"""``build_parser(ALL)``: every command's whole parser (tests walk it)"""


def command_word(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (nor
    ``--config``'s value), if it is one of :data:`COMMANDS`."""
    words = iter(argv)
    for word in words:
        if word == "--config":
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(command: str | None = ALL) -> argparse.ArgumentParser:
    """The parser, with ``command``'s arguments (every command's for :data:`ALL`;
    none for None: ``--help``, ``--version`` and a mistyped command need no more)."""
    parser = CommandParser(  # (--config FILE anywhere: cli/common.py)
        prog="pbmserv-terrace", description="A play-by-email server for board games.", top=True
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # (its parsers are CommandParsers, which the commands' register functions take as ArgumentParsers)
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(  # type: ignore[assignment]
        dest="command", required=True, metavar="COMMAND"
    )
    wanted = list(COMMANDS) if command == ALL else [command] if command in COMMANDS else []
    for module in dict.fromkeys(m for name in wanted for m in COMMANDS[name].modules):
        importlib.import_module(f"{__package__}.{module}").register(sub)
    for name, entry in COMMANDS.items():
        if name not in sub.choices:
            sub.add_parser(name, help=entry.help)  # (a stand-in: this run does another command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(command_word(words))
    args = parser.parse_args(words)
    setup_logging()
    handler: Handler = args.handler
    try:
        status = handler(args)
        sys.stdout.flush()  # (here, not at exit: a closed pipe is then caught below)
    except CliError as exc:
        print(f"pbmserv-terrace: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        # the reader of our output went away (``inbox ... | head``): stop quietly, as
        # Unix tools do; what is still buffered goes nowhere (the Python docs' way)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return status


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (poll says POLLERR),
    so that a BrokenPipeError of anything else (a socket) is not taken for it."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False
