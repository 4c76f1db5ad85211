"""What every CLI command shares: the parser that takes ``--config FILE`` wherever
it is typed, the configuration from it (and the logging it asks for: ``[server]
log_level``, ``log_format``, a command's ``--log-level``), and the error that prints
one line and exits 2."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..lifecycle import setup_logging

if TYPE_CHECKING:
    from ..config import Config

CONFIG_HELP = "TOML config file (default ./pbmserv.toml if present)"


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose every level takes ``--config FILE``: before the
    command's name, after it, and after a sub-command's (``pbmserv-terrace --config x
    admin games``, ``admin --config x games`` and ``admin games --config x`` are the
    same).  argparse makes a command's parser of its parent's class, so each
    command and sub-command gets the option here; below the top level its default
    is SUPPRESS, because argparse copies a sub-parser's defaults over what the
    levels above it parsed: not given there, the value given before stands."""

    def __init__(self, *args: Any, top: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--config", metavar="FILE", default=None if top else argparse.SUPPRESS, help=CONFIG_HELP)


class CliError(Exception):
    """A problem the user can fix: printed as ``pbmserv-terrace: error: ...``."""


def config_from_args(args: argparse.Namespace) -> Config:
    from ..config import ConfigError, load_config  # (here: --help and handle's hand-over need no configuration)

    try:
        cfg = load_config(getattr(args, "config", None))
    except ConfigError as exc:
        raise CliError(f"configuration: {exc}") from None
    level = getattr(args, "log_level", None)
    if level:
        cfg.server.log_level = level
    setup_logging(cfg.server.log_level, cfg.server.log_format)
    return cfg
