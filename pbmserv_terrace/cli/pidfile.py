"""``pbmserv.pid``: which ``serve`` runs with this configuration.

``serve`` writes it once it listens and removes it when it stops; ``status`` and a
second ``serve`` that finds its port taken read it to say who holds the port.
Where it is comes from the configuration, never from the directory a command is
typed in (issue 43 part 7): ``[server] pid_file``, else ``pbmserv.pid`` in the
state directory (``[server] state_directory``, systemd's ``$STATE_DIRECTORY``),
else beside the config file, else (no config file) in the current directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Config

PID_FILE = "pbmserv.pid"
DEFAULTS = "built-in defaults"
"""``Config.source`` when no config file was read"""


def pid_path(cfg: Config) -> Path:
    """Where this configuration's ``serve`` writes its pid."""
    if cfg.server.pid_file:
        return Path(cfg.server.pid_file).absolute()
    if cfg.server.state_directory:
        return Path(cfg.server.state_directory).absolute() / PID_FILE
    if cfg.source != DEFAULTS:
        return Path(cfg.source).absolute().parent / PID_FILE
    return Path.cwd() / PID_FILE


def write_pid(path: Path) -> Path:
    path.write_text(f"{os.getpid()}\n", encoding="ascii")
    return path


def running_pid(path: Path) -> int | None:
    """The pid written in ``path``, if that process still runs."""
    try:
        pid = int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def remove_pid(path: Path) -> None:
    try:
        if path.read_text(encoding="ascii").strip() == str(os.getpid()):
            path.unlink()
    except OSError:
        pass
