"""What every CLI command shares: the parser that takes ``--config FILE`` wherever
it is typed, the configuration from it (and the logging it asks for: ``[server]
log_level``, ``log_format``, a command's ``--log-level``), and the error that prints
one line and exits 2."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from ..lifecycle import setup_logging

if TYPE_CHECKING:
    from ..config import Config

CONFIG_HELP = "TOML config file (default ./pbmserv.toml if present)"


def terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it ($COLUMNS, the
    terminal of standard output, else 80)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, but for the width, found without importing ``shutil`` (which
    brings ``bz2``, ``lzma`` and ``zlib``): argparse makes a formatter for every
    argument declared, and ``handle``'s hand-over is a process a mail (issue 43)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose every level takes ``--config FILE``: before the
    command's name, after it, and after a sub-command's (``pbmserv-terrace --config x
    admin games``, ``admin --config x games`` and ``admin games --config x`` are the
    same).  argparse makes a command's parser of its parent's class, so each
    command and sub-command gets the option here; below the top level its default
    is SUPPRESS, because argparse copies a sub-parser's defaults over what the
    levels above it parsed: not given there, the value given before stands."""

    def __init__(self, *args: Any, top: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
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
