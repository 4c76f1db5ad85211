"""What every CLI command shares: the configuration from ``--config``, and the
error that prints one line and exits 2."""

from __future__ import annotations

import argparse

from ..config import Config, ConfigError, load_config


class CliError(Exception):
    """A problem the user can fix: printed as ``pbmserv-terrace: error: ...``."""


def config_from_args(args: argparse.Namespace) -> Config:
    try:
        return load_config(getattr(args, "config", None))
    except ConfigError as exc:
        raise CliError(f"configuration: {exc}") from None
