"""What every CLI command shares: the configuration from ``--config`` (and the
logging it asks for: ``[server] log_level``, ``log_format``, a command's
``--log-level``), and the error that prints one line and exits 2."""

from __future__ import annotations

import argparse

from ..config import Config, ConfigError, load_config
from ..lifecycle import setup_logging


class CliError(Exception):
    """A problem the user can fix: printed as ``pbmserv-terrace: error: ...``."""


def config_from_args(args: argparse.Namespace) -> Config:
    try:
        cfg = load_config(getattr(args, "config", None))
    except ConfigError as exc:
        raise CliError(f"configuration: {exc}") from None
    level = getattr(args, "log_level", None)
    if level:
        cfg.server.log_level = level
    setup_logging(cfg.server.log_level, cfg.server.log_format)
    return cfg
