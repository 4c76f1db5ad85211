"""What a command handler declares about itself: its verb, whether it is a game
command, its usage line, and where its USERID PASSWORD stand.

:func:`command` only attaches that declaration to the function; nothing is
registered as a side effect of importing a module.  :func:`.registry.build_registry`
collects the declared handlers of the handler modules into a table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..commands import Command
from ..gametypes import Family
from .context import Ctx

Handler = Callable[[Ctx, Command], Awaitable[None]]
AuthAt = int | Callable[[list[str]], int | None] | None
"""where USERID PASSWORD stand in a command's words: an index, a function of the
words, or None (no password)"""


MOVE_VERB = "(move verb)"
"""the verb of the handler that plays a solitaire's extra move words (``flip``, ``base 7h``)"""


@dataclass(frozen=True)
class CommandSpec:
    verb: str
    family: Family | None
    """the family of games whose command it is (``terrace move …`` is a board
    command); None for an account command"""
    usage: str
    auth: AuthAt
    fn: Handler


SPEC_ATTRIBUTE = "__pbmserv_command__"


def command(verb: str, *, game: bool | Family, usage: str, auth: AuthAt = None) -> Callable[[Handler], Handler]:
    """Declare ``fn`` the handler of ``verb``: an account command (``game=False``), a
    board game's (``game=True``) or a solitaire's (``game="solitaire"``).  ``auth``:
    where USERID PASSWORD stand in its words, so ``serve`` can start the password
    check before the transaction."""
    family: Family | None = "board" if game is True else game or None

    def declare(fn: Handler) -> Handler:
        setattr(fn, SPEC_ATTRIBUTE, CommandSpec(verb, family, usage, auth, fn))
        return fn

    return declare


def spec_of(value: Any) -> CommandSpec | None:
    spec = getattr(value, SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, CommandSpec) else None
