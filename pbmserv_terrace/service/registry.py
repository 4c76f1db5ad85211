"""The command table: which handler answers which verb, its usage line, and where
its password stands.  Built by :func:`build_registry` from the handler modules,
grouped by topic, that it imports here at the top, explicitly.

To add a command: write ``@command("verb", game=..., usage=..., auth=...)`` on an
``async def handler(ctx, cmd)`` in the topic's module (or a new module added to
``HANDLER_MODULES``), and teach the parser its verb (commands/parse.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

from ..commands import Command
from ..gametypes import GAME_TYPES, Family
from . import accounts, play, queries, solitaire, watch
from .spec import MOVE_VERB, CommandSpec, Handler, spec_of

HANDLER_MODULES: tuple[ModuleType, ...] = (accounts, play, queries, solitaire, watch)


@dataclass
class Registry:
    specs: dict[tuple[Family | None, str], CommandSpec] = field(default_factory=dict)

    def add(self, spec: CommandSpec) -> None:
        key = (spec.family, spec.verb)
        if key in self.specs and self.specs[key].fn is not spec.fn:
            raise ValueError(f"two handlers for {spec.family or 'account'} command {spec.verb!r}")
        self.specs[key] = spec

    def spec(self, cmd: Command) -> CommandSpec | None:
        """The handler of ``cmd``: by its game's family and verb (a solitaire's extra
        move words, such as patience's ``flip``, go to its move-verb handler)."""
        if cmd.game_type is None:
            return self.specs.get((None, cmd.verb))
        kind = GAME_TYPES.get(cmd.game_type)
        if kind is None:
            return None
        found = self.specs.get((kind.family, cmd.verb))
        if found is None and kind.family == "solitaire" and cmd.verb in kind.solitaire.move_verbs:
            found = self.specs.get((kind.family, MOVE_VERB))
        return found

    def handler(self, cmd: Command) -> Handler | None:
        spec = self.spec(cmd)
        return spec.fn if spec else None

    def credentials(self, cmd: Command) -> tuple[str, str] | None:
        """The (userid, password) a command will authenticate with, if known."""
        spec = self.spec(cmd)
        at = spec.auth if spec else None
        index = at(cmd.words) if callable(at) else at
        if index is None or len(cmd.words) < index + 2:
            return None
        return cmd.words[index].lower(), cmd.words[index + 1]

    def usage_of(self, cmd: Command) -> str:
        spec = self.spec(cmd)
        if spec is None:
            return ""
        if spec.verb == MOVE_VERB and cmd.game_type is not None:
            extra = GAME_TYPES[cmd.game_type].solitaire.move_verbs[cmd.verb]
            return " ".join([cmd.game_type, cmd.verb, "BOARD USERID PASSWORD", *extra])
        if cmd.is_game:
            return " | ".join(f"{cmd.game_type} {alt.strip()}" for alt in spec.usage.split(" | "))
        return spec.usage


def build_registry(modules: tuple[ModuleType, ...] = HANDLER_MODULES) -> Registry:
    """Every handler declared with :func:`.spec.command` in ``modules``."""
    registry = Registry()
    for module in modules:
        for value in vars(module).values():
            spec = spec_of(value)
            if spec is not None and getattr(value, "__module__", None) == module.__name__:
                registry.add(spec)
    return registry
