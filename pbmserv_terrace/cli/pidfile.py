"""``pbmserv.pid`` beside the database: which ``serve`` runs from this directory.

``serve`` writes it once it listens and removes it when it stops; ``status`` and a
second ``serve`` that finds its port taken read it to say who holds the port."""

from __future__ import annotations

import os
from pathlib import Path

PID_FILE = "pbmserv.pid"


def write_pid(directory: Path | None = None) -> Path:
    path = (directory or Path.cwd()) / PID_FILE
    path.write_text(f"{os.getpid()}\n", encoding="ascii")
    return path


def running_pid(directory: Path | None = None) -> int | None:
    """The pid of the ``serve`` of this directory, if it still runs."""
    path = (directory or Path.cwd()) / PID_FILE
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


def remove_pid(directory: Path | None = None) -> None:
    path = (directory or Path.cwd()) / PID_FILE
    try:
        if path.read_text(encoding="ascii").strip() == str(os.getpid()):
            path.unlink()
    except OSError:
        pass
