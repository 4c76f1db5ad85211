"""``perft`` and ``board``: the rules from the command line (a rules check and a
benchmark; a position's ASCII board or its picture)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..gametypes import DEFAULT_GAME_TYPE, GAME_TYPES, board_game_of, board_games
from .common import CliError


def _game_of(args: argparse.Namespace) -> str | None:
    """The board game ``--game`` names, or the first of ``--size`` (None: any)."""
    if args.game:
        return str(args.game)
    if args.size:
        sized = [name for name in board_games() if GAME_TYPES[name].board_size == args.size]
        if not sized:
            raise CliError(f"no board game is played on a {args.size}x{args.size} board")
        return sized[0]
    return None


def cmd_perft(args: argparse.Namespace) -> int:
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
        raise CliError(str(exc)) from None
    if args.depth < 0:
        raise CliError("--depth must be 0 or more")
    print(rules.perft(pos, args.depth))
    return 0


def cmd_board(args: argparse.Namespace) -> int:
    text = args.position or args.tpn
    if not text:
        raise CliError("give the position string, e.g. board --position 'DDCCBBAT/AABBCCDD/8/8/8/8/ddccbbaa/tabbccdd 1'")
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
        raise CliError(str(exc)) from None
    print(rules.board_text(pos))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("perft", help="count legal move sequences (rules check and benchmark)")
    p.add_argument(
        "--game", choices=board_games(), help=f"the board game (default {DEFAULT_GAME_TYPE}; a --position may say its own)"
    )
    p.add_argument("--variant", help="the setup whose start is counted (default: the game's first two-player setup)")
    p.add_argument("--size", type=int, help="the board game played on this board size (a --position may say its own)")
    p.add_argument("--position", help="a position string instead of the setup's start")
    p.add_argument("--depth", type=int, required=True)
    p.set_defaults(handler=cmd_perft)

    p = sub.add_parser("board", help="print the ASCII board of a position string, or draw it as a PNG")
    p.add_argument("tpn", nargs="?", help="a position string, or give it with --position")
    p.add_argument("--position", help="a position string")
    p.add_argument("--game", choices=board_games(), help="the board game (default: the first whose rules read the position)")
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--png", metavar="FILE", help="write the board picture (as board mails show it) to FILE")
    p.add_argument("--last-move", help="with --png: play this move from the position and mark it, e.g. e2-e3")
    p.set_defaults(handler=cmd_board)
