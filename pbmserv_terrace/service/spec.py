"""How a handler says which command it answers: ``@command("move", game=True)``.

Everything else about a command (its usage line, where its password stands,
whether it stays on one board, its help) is declared once, in
:mod:`pbmserv_terrace.commands.table`; :func:`.registry.build_registry` binds each
handler to its declaration there and refuses a handler without one (and a
declaration without a handler).  :func:`command` only attaches the verb and the
family to the function; nothing is registered as a side effect of importing a
module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..commands import Command
from ..commands.table import MOVE_VERB, CommandDecl
from ..gametypes import Family
from .context import Ctx

Handler = Callable[[Ctx, Command], Awaitable[None]]


@dataclass(frozen=True)
class HandlerMark:
    """What :func:`command` attaches: the verb and family a handler answers."""

    verb: str
    family: Family | None
    fn: Handler


@dataclass(frozen=True)
class CommandSpec:
    """A command's declaration and the handler that answers it."""

    decl: CommandDecl
    fn: Handler

    @property
    def verb(self) -> str:
        return self.decl.verb

    @property
    def family(self) -> Family | None:
        return self.decl.family

    @property
    def usage(self) -> str:
        return self.decl.usage


SPEC_ATTRIBUTE = "__pbmserv_command__"


def command(verb: str, *, game: bool | Family = False) -> Callable[[Handler], Handler]:
    """Declare ``fn`` the handler of ``verb``: an account command (``game=False``), a
    board game's (``game=True``) or a solitaire's (``game="solitaire"``).  The
    command itself is declared in :mod:`pbmserv_terrace.commands.table`."""
    family: Family | None = "board" if game is True else game or None

    def declare(fn: Handler) -> Handler:
        setattr(fn, SPEC_ATTRIBUTE, HandlerMark(verb, family, fn))
        return fn

    return declare


def mark_of(value: Any) -> HandlerMark | None:
    mark = getattr(value, SPEC_ATTRIBUTE, None)
    return mark if isinstance(mark, HandlerMark) else None


__all__ = ["MOVE_VERB", "CommandSpec", "Handler", "HandlerMark", "command", "mark_of"]
