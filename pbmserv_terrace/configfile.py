"""Which configuration file a command reads, and one setting read from it quickly.

:func:`~.config.load_config` reads and validates the whole configuration; a command
that must start fast reads the one setting it needs first (``handle`` passing its
mail to ``serve``'s LMTP listener, issue 43: a process for every mail) and loads
the whole configuration only if it goes on by itself.  Standard library only, and
not even ``pathlib`` (which brings ``urllib`` and ``ipaddress``: a few ms a mail)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_CONFIG_FILE = "pbmserv.toml"
DEFAULT_ADDRESS = "pbmserv@localhost"
"""``[server] address`` when none is set"""


def config_file(path: str | Path | None, env: Mapping[str, str]) -> str | Path | None:
    """The file :func:`~.config.load_config` reads: ``path``, else $PBMSERV_CONFIG,
    else ./pbmserv.toml when present; None: none (the built-in defaults)."""
    if path is None and env.get("PBMSERV_CONFIG"):
        path = env["PBMSERV_CONFIG"]
    if path is None and os.path.exists(DEFAULT_CONFIG_FILE):
        path = DEFAULT_CONFIG_FILE
    return path


def quick_setting(path: str | Path | None, section: str, key: str, environ: Mapping[str, str] | None = None) -> str:
    """One string setting as :func:`~.config.load_config` would read it (the
    environment over the file; '' when unset or unreadable), without validating
    the rest."""
    env = os.environ if environ is None else environ
    for var in (f"PBMSERV_{section.upper()}_{key.upper()}", f"PBMSERV_{key.upper()}" if section == "server" else ""):
        if var and var in env:
            return env[var].strip()
    file = config_file(path, env)
    if file is None:
        return ""
    try:
        with open(file, encoding="utf-8") as f:
            value = tomllib.loads(f.read()).get(section, {}).get(key, "")
    except (OSError, tomllib.TOMLDecodeError, AttributeError):
        return ""
    return value.strip() if isinstance(value, str) else ""
