"""Checks of a command's arguments that handlers of every topic share, and the
short notice reply.  A failed check raises :class:`.context.CommandError`; the
error reply adds the command's usage."""

from __future__ import annotations

import re
from typing import Any

from ..clocks import parse_clock
from ..commands import Command
from ..gametypes import GAME_TYPES
from ..inbound import is_valid_address
from ..store.models import ROBOTS
from .context import CommandError, Ctx

_USERID = re.compile(r"^[a-z0-9][a-z0-9_.+-]{0,31}$")
RESERVED = {"active", "inactive", "next", "all", "new", "on", "off", "inf"}


class MissingArguments(CommandError):
    """Fewer words than the command needs; the error reply names which are missing
    (:func:`missing_reason`, from the command's usage)."""

    def __init__(self, cmd: Command) -> None:
        super().__init__(f"'{cmd.verb}': missing arguments", game_type=cmd.game_type)
        self.words = list(cmd.words)


NAMES = {"BOARD": "the board number", "USERID": "the userid", "PASSWORD": "the password", "MOVE": "the move",
         "NEWPASSWORD": "the new password", "USERID1": "the first userid", "USERID2": "the second userid"}  # fmt: skip


def looks_like_move(text: str) -> bool:
    """``text`` has the shape of a move of one of the board games."""
    return any(g.family == "board" and g.board.looks_like_move(text) for g in GAME_TYPES.values())


def missing_reason(verb: str, words: list[str], usage: str) -> str:
    """Which arguments a command lacks, from the first form of its usage: a last
    word that is a move stands for MOVE, so 'move 105 ben b4-b3' lacks the password."""
    form = usage.split(" | ")[0].split()
    start = next((i + 1 for i, token in enumerate(form) if token.lower() == verb), 0)
    required = [t for t in form[start:] if re.fullmatch(r"[A-Z][A-Z0-9]*(?:\[#k\])?", t)]
    literals = {t.lower() for t in form[start:] if t.islower()}
    given = [w for w in words if w.lower() not in literals]  # 'change password …': the subcommand word
    slots = required[:]
    if given and looks_like_move(given[-1]) and any(s.startswith("MOVE") for s in slots):
        move_at = next(i for i, s in enumerate(slots) if s.startswith("MOVE"))
        slots, given = slots[:move_at] + slots[move_at + 1 :], given[:-1]
    missing = [NAMES.get(s.split("[")[0], s.lower()) for s in slots[len(given) :]]
    if not missing:
        return f"'{verb}': missing arguments"
    what = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " and " + missing[-1]
    return f"{what} {'is' if len(missing) == 1 else 'are'} missing"


def joined_move(words: list[str], at: int) -> list[str]:
    """``words`` with a move written with spaces (``d7 - d6``) joined into one word at ``at``."""
    if len(words) > at + 1 and looks_like_move(" ".join(words[at:])):
        return [*words[:at], "".join(words[at:])]
    return words


def need(cmd: Command, count: int, most: int | None = None) -> list[str]:
    """The command's words, if there are between ``count`` and ``most`` of them."""
    words = cmd.words
    if len(words) < count:
        raise MissingArguments(cmd)
    if most is not None and len(words) > most:
        raise CommandError(f"'{cmd.verb}': too many words", game_type=cmd.game_type)
    return words


def check_userid(userid: str, *, robot_ok: bool = False) -> str:
    """A well-formed userid, lower-cased.  The robots' names are refused unless
    ``robot_ok`` (a challenge names them; a signup never may)."""
    uid = userid.lower()
    if uid in ROBOTS and not robot_ok:
        raise CommandError(f"{uid} is one of the server's robot players; choose another userid")
    if not _USERID.match(uid) or uid in RESERVED or uid.isdigit():
        raise CommandError(
            f"'{userid[:40]}' cannot be a userid: use 1-32 of the letters a-z (no accents), digits, '_', '.', '+' "
            "or '-', starting with a letter or digit, not only digits, and not a selector word (active, next, all ...)"
        )
    return uid


def check_password(password: str) -> str:
    if (
        not 1 <= len(password) <= 128
        or any(c in password for c in "\"':")
        or not password.isprintable()
        or any(c.isspace() for c in password)
    ):
        raise CommandError("a password is 1-128 printable characters without spaces, quotes or colons")
    return password


def check_addresses(words: list[str]) -> list[str]:
    out = []
    for word in words:
        addr = word.strip("<>,;")
        if not is_valid_address(addr):
            raise CommandError(f"'{word[:60]}' is not a mail address")
        if addr not in out:
            out.append(addr)
    if len(out) > 5:
        raise CommandError("at most 5 reply addresses")
    return out


MAX_TEXT = 20_000
"""The longest comment or chat message passed on; longer ones are shortened."""


def shortened(ctx: Ctx, text: str, limit: int = MAX_TEXT) -> str:
    """``text``, or its first ``limit`` characters cut at a line or word break with
    a note of what was left out; the sender is told in a reply of their own."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = text.rfind(" ", 0, limit)
    if cut < limit // 2:
        cut = limit
    left = len(text) - cut
    notice(ctx, f"{ctx.server_name}: your message was shortened",
           f"Your message had {len(text):,} characters; the server passes on at most {limit:,}.",
           f"It was cut after {cut:,} characters: {left:,} characters were left out.")  # fmt: skip
    return text[:cut].rstrip() + f"\n[… message shortened: {left:,} characters left out]"


def notice(ctx: Ctx, subject: str, *lines: str) -> None:
    ctx.reply(subject, "notice.txt", lines=list(lines), comment=None)


TIMER_OPTIONS = ("nagtime", "forfeittime", "totaltime")
"""pbmserv's timer options of a board (``--nagtime=DAYS`` ...), on challenge and tournament"""
CLOCK_OPTIONS = ("clock", "weekends")
"""a board's time bank and weekends off (issue 40), on challenge and tournament"""


def board_options(given: dict[str, str]) -> dict[str, Any]:
    """A challenge's (or tournament's) board options, checked: pbmserv's timers in
    days, ``--clock=BANK+INC[/CAP][,auto]`` (a time bank) and ``--weekends``
    (issue 40; stored as :mod:`..clocks` reads them)."""
    options: dict[str, Any] = {}
    for key, value in given.items():
        if key == "clock":
            try:
                options[key] = parse_clock(value).as_option()
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        elif key == "weekends":
            if value not in ("", "on", "yes"):
                raise CommandError("--weekends takes no value")
            options[key] = True
        elif key in TIMER_OPTIONS:
            options[key] = timer_days(key, value)
        else:
            raise CommandError(f"unknown option --{key[:30]}; the options are --nagtime, --forfeittime, --totaltime, "
                               "--clock, --weekends")  # fmt: skip
    if "clock" in options and ({"forfeittime", "totaltime"} & options.keys()):
        raise CommandError("a board with --clock has no --forfeittime or --totaltime: the bank is its time limit")
    return options


def timer_days(key: str, value: str) -> float:
    """The days of timer option ``--KEY=VALUE`` (0 < days <= 365), or the player's error."""
    try:
        days = float(value)
    except ValueError:
        raise CommandError(f"--{key} needs a number of days, e.g. --{key}=5") from None
    if not 0 < days <= 365:
        raise CommandError(f"--{key} must be between 0 and 365 days")
    return days
