"""The handlers: which one answers which command.  Built by :func:`build_registry`
from the handler modules, grouped by topic, that it imports here at the top,
explicitly, and bound to the commands' declarations
(:mod:`pbmserv_terrace.commands.table`: usage, password, ordering, help).

To add a command: declare it in the table, and write ``@command("verb",
game=...)`` on an ``async def handler(ctx, cmd)`` in the topic's module (or a new
module added to ``HANDLER_MODULES``).  :func:`build_registry` refuses a handler
without a declaration and a declaration without a handler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

from ..commands import Command
from ..commands.table import FAMILY_COMMANDS, CommandDecl, decl_of
from ..gametypes import Family
from . import accounts, analysis, play, queries, rematch, solitaire, status, tournaments, watch
from .spec import CommandSpec, Handler, HandlerMark, mark_of

HANDLER_MODULES: tuple[ModuleType, ...] = (accounts, analysis, play, queries, rematch, solitaire, status, tournaments, watch)


def _name(family: Family | None, verb: str) -> str:
    return f"{family or 'account'} command {verb!r}"


@dataclass
class Registry:
    handlers: dict[tuple[Family | None, str], Handler] = field(default_factory=dict)

    def add(self, mark: HandlerMark) -> None:
        key = (mark.family, mark.verb)
        if key in self.handlers and self.handlers[key] is not mark.fn:
            raise ValueError(f"two handlers for {_name(*key)}")
        self.handlers[key] = mark.fn

    def spec(self, cmd: Command) -> CommandSpec | None:
        """``cmd``'s declaration and handler: by its game's family and verb (a
        solitaire's own move words, such as patience's ``flip``, run its move-verb
        handler)."""
        decl = decl_of(cmd.game_type, cmd.verb)
        if decl is None:
            return None
        fn = self.handlers.get((decl.family, decl.runs or decl.verb))
        return CommandSpec(decl, fn) if fn is not None else None

    def handler(self, cmd: Command) -> Handler | None:
        spec = self.spec(cmd)
        return spec.fn if spec else None

    def credentials(self, cmd: Command) -> tuple[str, str] | None:
        """The (userid, password) a command will authenticate with, if known."""
        decl = decl_of(cmd.game_type, cmd.verb)
        return decl.credentials(cmd.words) if decl is not None else None

    def usage_of(self, cmd: Command) -> str:
        decl = decl_of(cmd.game_type, cmd.verb)
        if decl is None:
            return ""
        if cmd.is_game:
            return " | ".join(f"{cmd.game_type} {alt.strip()}" for alt in decl.usage.split(" | "))
        return decl.usage


def build_registry(modules: tuple[ModuleType, ...] = HANDLER_MODULES) -> Registry:
    """Every handler marked with :func:`.spec.command` in ``modules``, each bound to
    its declaration; ValueError when a handler has no declaration or a
    declaration no handler."""
    registry = Registry()
    for module in modules:
        for value in vars(module).values():
            mark = mark_of(value)
            if mark is not None and getattr(value, "__module__", None) == module.__name__:
                registry.add(mark)
    declared: dict[tuple[Family | None, str], CommandDecl] = {
        (family, d.verb): d for family, decls in FAMILY_COMMANDS.items() for d in decls
    }
    stray = sorted(_name(*key) for key in registry.handlers if key not in declared)
    missing = sorted(_name(*key) for key, d in declared.items() if d.handled and key not in registry.handlers)
    if stray or missing:
        raise ValueError(
            "; ".join(
                [*([f"handlers without a declaration in commands/table.py: {', '.join(stray)}"] if stray else []),
                 *([f"declarations without a handler: {', '.join(missing)}"] if missing else [])]
            )
        )  # fmt: skip
    return registry
