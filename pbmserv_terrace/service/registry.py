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
from . import accounts, play, queries, watch
from .spec import CommandSpec, Handler, spec_of

HANDLER_MODULES: tuple[ModuleType, ...] = (accounts, play, queries, watch)


@dataclass
class Registry:
    specs: dict[tuple[bool, str], CommandSpec] = field(default_factory=dict)

    def add(self, spec: CommandSpec) -> None:
        key = (spec.game, spec.verb)
        if key in self.specs and self.specs[key].fn is not spec.fn:
            raise ValueError(f"two handlers for {'game ' if spec.game else ''}command {spec.verb!r}")
        self.specs[key] = spec

    def handler(self, cmd: Command) -> Handler | None:
        spec = self.specs.get((cmd.is_game, cmd.verb))
        return spec.fn if spec else None

    def credentials(self, cmd: Command) -> tuple[str, str] | None:
        """The (userid, password) a command will authenticate with, if known."""
        spec = self.specs.get((cmd.is_game, cmd.verb))
        at = spec.auth if spec else None
        index = at(cmd.words) if callable(at) else at
        if index is None or len(cmd.words) < index + 2:
            return None
        return cmd.words[index].lower(), cmd.words[index + 1]

    def usage_of(self, cmd: Command) -> str:
        spec = self.specs.get((cmd.is_game, cmd.verb))
        if spec is None:
            return ""
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
