"""The ``pbmserv-terrace`` command line.

Each sub-command is a small function taking the parsed arguments and returning an
exit status; errors in the user's arguments print one line to stderr and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import __version__
from ..app.pipe import handle_raw, read_stdin
from ..gametypes import DEFAULT_GAME_TYPE, GAME_TYPES, board_game_of, board_games
from ..lifecycle import setup_logging
from ..mail.message import with_envelope_recipients
from ..store import Database
from ..store.db import head_revision
from . import admin, inbox, oauth2, serve, web
from .common import CliError, CommandParser, config_from_args

Handler = Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """Bad arguments: the message is printed as ``pbmserv-terrace: error: ...``."""


def _game_of(args: argparse.Namespace) -> str | None:
    """The board game ``--game`` names, or the first of ``--size`` (None: any)."""
    if args.game:
        return str(args.game)
    if args.size:
        sized = [name for name in board_games() if GAME_TYPES[name].board_size == args.size]
        if not sized:
            raise UsageError(f"no board game is played on a {args.size}x{args.size} board")
        return sized[0]
    return None


def _cmd_perft(args: argparse.Namespace) -> int:
    wanted = _game_of(args)
    try:
        if args.position:
            # a position string may say its own game (Terrace's: its board size)
            rules = GAME_TYPES[board_game_of(args.position, wanted)].board
            pos = rules.load(args.position)
        else:
            rules = GAME_TYPES[wanted or DEFAULT_GAME_TYPE].board
            pos = rules.start(args.variant or rules.two_player_setups[0])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.depth < 0:
        raise UsageError("--depth must be 0 or more")
    print(rules.perft(pos, args.depth))
    return 0


def _cmd_board(args: argparse.Namespace) -> int:
    text = args.position or args.tpn
    if not text:
        raise UsageError("give the position string, e.g. board --position 'DDCCBBAT/AABBCCDD/8/8/8/8/ddccbbaa/tabbccdd 1'")
    try:
        rules = GAME_TYPES[board_game_of(text, _game_of(args))].board
        pos = rules.load(text)
        if args.png:
            last = ""
            if args.last_move:
                move = rules.parse_move(pos, args.last_move)
                last, pos = rules.format_move(pos, move), rules.play(pos, move)
            Path(args.png).write_bytes(rules.picture_png(pos, last))
            print(f"picture written to {args.png}")
            return 0
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(rules.board_text(pos))
    return 0


def _cmd_migrate(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)

    async def run() -> None:
        db = Database(cfg.server.database_url)
        try:
            print(f"migrating {db.engine.url.render_as_string(hide_password=True)} to the newest schema ...", file=sys.stderr)
            admin.print_migration(await db.migrate(), head_revision())
        finally:
            await db.close()

    asyncio.run(run())
    return 0


def _cmd_handle(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    raw = read_stdin()
    if not raw.strip():
        raise UsageError("handle reads one mail (RFC 5322) on standard input; it was empty")
    # the envelope recipient (a reply key may be only there): --recipient, else what
    # Postfix's pipe(8)/local(8) put in the environment
    recipient = args.recipient or os.environ.get("ORIGINAL_RECIPIENT") or os.environ.get("RECIPIENT")
    if recipient:
        raw = with_envelope_recipients(raw, [recipient])
    asyncio.run(handle_raw(cfg, raw, print_to=sys.stdout.buffer if args.print else None))  # it logs its one line
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(  # (--config FILE anywhere: cli/common.py)
        prog="pbmserv-terrace", description=f"A play-by-email server for {GAME_TYPES[DEFAULT_GAME_TYPE].title}.", top=True
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # (its parsers are CommandParsers, which the commands' register functions take as ArgumentParsers)
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(  # type: ignore[assignment]
        dest="command", required=True, metavar="COMMAND"
    )

    p = sub.add_parser("perft", help="count legal move sequences (rules check and benchmark)")
    p.add_argument("--game", choices=board_games(), help=f"the board game (default {DEFAULT_GAME_TYPE}; a --position may say its own)")
    p.add_argument("--variant", help="the setup whose start is counted (default: the game's first two-player setup)")
    p.add_argument("--size", type=int, help="the board game played on this board size (a --position may say its own)")
    p.add_argument("--position", help="a position string instead of the setup's start")
    p.add_argument("--depth", type=int, required=True)
    p.set_defaults(handler=_cmd_perft)

    p = sub.add_parser("board", help="print the ASCII board of a position string, or draw it as a PNG")
    p.add_argument("tpn", nargs="?", help="a position string, or give it with --position")
    p.add_argument("--position", help="a position string")
    p.add_argument("--game", choices=board_games(), help="the board game (default: the first whose rules read the position)")
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--png", metavar="FILE", help="write the board picture (as board mails show it) to FILE")
    p.add_argument("--last-move", help="with --png: play this move from the position and mark it, e.g. e2-e3")
    p.set_defaults(handler=_cmd_board)

    p = sub.add_parser("migrate", help="create or upgrade the database schema")
    p.set_defaults(handler=_cmd_migrate)

    p = sub.add_parser("handle", help="process one mail from standard input (pipe mode)")
    p.add_argument("--print", action="store_true", help="write the replies to stdout as an mbox; send nothing")
    p.add_argument(
        "--recipient", help="the envelope recipient (default: $ORIGINAL_RECIPIENT or $RECIPIENT, as Postfix sets them)"
    )
    p.set_defaults(handler=_cmd_handle)

    serve.register(sub)
    inbox.register(sub)  # (after serve's: inbox reads in order of arrival)
    admin.register(sub)
    oauth2.register(sub)
    web.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging()
    handler: Handler = args.handler
    try:
        status = handler(args)
        sys.stdout.flush()  # (here, not at exit: a closed pipe is then caught below)
    except (UsageError, CliError) as exc:
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
