"""Checks of a command's arguments that handlers of every topic share, and the
short notice reply.  A failed check raises :class:`.context.CommandError`; the
error reply adds the command's usage."""

from __future__ import annotations

import re

from ..commands import Command
from ..inbound import is_valid_address
from .context import CommandError, Ctx

_USERID = re.compile(r"^[a-z0-9][a-z0-9_.+-]{0,31}$")
RESERVED = {"active", "inactive", "next", "all", "new", "on", "off", "inf"}


def need(cmd: Command, count: int, most: int | None = None) -> list[str]:
    """The command's words, if there are between ``count`` and ``most`` of them."""
    words = cmd.words
    if len(words) < count or (most is not None and len(words) > most):
        missing = "too many words" if most is not None and len(words) > most else "missing arguments"
        raise CommandError(f"'{cmd.verb}': {missing}", game_type=cmd.game_type)
    return words


def check_userid(userid: str) -> str:
    uid = userid.lower()
    if not _USERID.match(uid) or uid in RESERVED or uid.isdigit():
        raise CommandError(
            f"'{userid[:40]}' cannot be a userid: use 1-32 letters, digits, '_', '.', '+' or '-', "
            "starting with a letter or digit, not only digits, and not a selector word (active, next, all ...)"
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


def notice(ctx: Ctx, subject: str, *lines: str) -> None:
    ctx.reply(subject, "notice.txt", lines=list(lines), comment=None)
