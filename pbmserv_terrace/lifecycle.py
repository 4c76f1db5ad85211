"""How every process of ours starts: it dies with ``serve``, and it logs one way.

A child process (the sender, the web archive, an engine worker) calls
:func:`die_with` first thing: the kernel then sends it SIGKILL when its parent
dies (Linux, PR_SET_PDEATHSIG), so a ``serve`` killed with SIGKILL leaves no
process behind to hold a port, a database connection or memory; and if the
parent is gone already, the child goes at once.

Every process logs to stderr, one line an event (``serve`` and the processes it
starts write to the same log).  A log line may carry words from a mail or a URL
(an unknown command word, a sender, a path): control characters in it are
written escaped (``\\x1b``, ``\\n``), so a mail can neither forge a log line nor
send escape sequences to an operator's terminal.  Tracebacks, which are ours,
keep their line breaks.

How much and in which form: ``[server] log_level`` (or ``--log-level``; debug,
info, warning, error) and ``[server] log_format`` (``text``, or ``json``: one JSON
object a line with time, level, logger, message and a traceback as exception).
``serve`` puts both into its environment (``PBMSERV_LOG_LEVEL``,
``PBMSERV_LOG_FORMAT``: the same variables a config key is overridden with), so
the processes it starts log the same way.  When stderr is the systemd journal
(``$JOURNAL_STREAM`` names stderr's device and inode) every line starts with its
syslog priority (``<3>`` error, ``<4>`` warning, ``<6>`` info, ``<7>`` debug),
which journald takes as the entry's priority (``journalctl -p warning``), and the
text lines leave the time to the journal.

Standard library only (every layer may use it)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Mapping
from typing import TextIO

PR_SET_PDEATHSIG = 1
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JOURNAL_FORMAT = "%(levelname)s %(name)s: %(message)s"
"""the journal keeps each line's time itself"""
QUIET = ("mail.log", "alembic.runtime.migration", "alembic.runtime.plugins", "aioimaplib.aioimaplib")
"""libraries whose INFO lines say nothing an operator needs"""
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR,
          "critical": logging.CRITICAL}  # fmt: skip
"""the names ``log_level`` takes"""
LOG_FORMATS = ("text", "json")
LOG_LEVEL_ENV, LOG_FORMAT_ENV = "PBMSERV_LOG_LEVEL", "PBMSERV_LOG_FORMAT"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escaped(found: re.Match[str]) -> str:
    return found.group().encode("unicode_escape").decode("ascii")


def syslog_priority(levelno: int) -> int:
    """The syslog priority of a logging level: 2 critical, 3 error, 4 warning, 6 info, 7 debug."""
    if levelno >= logging.CRITICAL:
        return 2
    if levelno >= logging.ERROR:
        return 3
    if levelno >= logging.WARNING:
        return 4
    if levelno >= logging.INFO:
        return 6
    return 7


def _prefixed(text: str, levelno: int) -> str:
    """Every line of ``text`` with ``<N>`` (journald reads each line as an entry)."""
    mark = f"<{syslog_priority(levelno)}>"
    return "\n".join(mark + line for line in text.split("\n"))


class LineFormatter(logging.Formatter):
    """The standard formatter, with control characters of the message escaped;
    ``journal``: each line starts with its syslog priority."""

    def __init__(self, fmt: str = FORMAT, *, journal: bool = False) -> None:
        super().__init__(fmt)
        self.journal = journal

    def formatMessage(self, record: logging.LogRecord) -> str:
        return _CONTROL.sub(_escaped, super().formatMessage(record))

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return _prefixed(text, record.levelno) if self.journal else text


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601 to the millisecond), level,
    logger, message, and exception (the traceback) when there is one.  JSON
    escapes every control character and, ASCII-only, every other one too."""

    def __init__(self, *, journal: bool = False) -> None:
        super().__init__()
        self.journal = journal

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        entry = {"time": stamp, "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.stack_info:
            entry["exception"] = self.formatStack(record.stack_info)
        import json  # (here: handle's hand-over, a process a mail, logs plain lines: issue 43)

        text = json.dumps(entry)
        return _prefixed(text, record.levelno) if self.journal else text


def on_journal(environ: Mapping[str, str], stream: TextIO) -> bool:
    """Whether ``stream`` is the systemd journal's stream (``$JOURNAL_STREAM`` is
    ``device:inode`` of the stream systemd connected; a redirected stderr is not it)."""
    device, _, inode = environ.get("JOURNAL_STREAM", "").partition(":")
    if not device.isdigit() or not inode.isdigit():
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (int(device), int(inode))


def setup_logging(level: str | None = None, fmt: str | None = None, *, environ: Mapping[str, str] | None = None) -> None:
    """Log to stderr at ``level`` in ``fmt`` (each defaults to ``$PBMSERV_LOG_LEVEL``
    / ``$PBMSERV_LOG_FORMAT``, else info and text); may be called again to change them."""
    env = os.environ if environ is None else environ
    level = (level or env.get(LOG_LEVEL_ENV) or "info").lower()
    fmt = (fmt or env.get(LOG_FORMAT_ENV) or "text").lower()
    journal = on_journal(env, sys.stderr)
    formatter: logging.Formatter
    if fmt == "json":
        formatter = JsonFormatter(journal=journal)
    else:
        formatter = LineFormatter(JOURNAL_FORMAT if journal else FORMAT, journal=journal)
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))  # (called again: the same handler, set up anew)
    for handler in root.handlers:
        handler.setFormatter(formatter)
    root.setLevel(LEVELS.get(level, logging.INFO))
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def die_with(parent: int) -> None:
    """Be killed when ``parent`` dies (the signal is tied to the thread that
    started this process, which must live as long as the parent: ``serve``'s
    event loop's thread), and exit now if it died before this ran."""
    if sys.platform.startswith("linux"):
        import ctypes  # (here: only serve's children need it, not a process a mail)

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


PR_SET_NAME = 15


def name_process(name: str) -> None:
    """Give this process a name that ``ps -o comm``, ``top`` and ``/proc/PID/comm``
    show (Linux, at most 15 bytes; elsewhere nothing): ``serve``'s children are
    told apart by it (``pbmserv-sender``, ``pbmserv-robot``, ``pbmserv-reader``,
    ``pbmserv-web``) — they all run as ``python -c from multiprocessing.spawn …``."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def lower_priority(nice: int) -> None:
    """Run at ``nice`` (added to this process's niceness): work done for one mail
    or one robot yields the CPU to ``serve``'s event loop, which answers everybody."""
    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)


def pool_worker(parent: int, nice: int = 0, name: str = "") -> None:
    """A process-pool worker of ``serve``: dies with it (:func:`die_with`), at
    ``nice``, called ``name`` (:func:`name_process`)."""
    die_with(parent)
    lower_priority(nice)
    if name:
        name_process(name)


def start_child(parent: int, nice: int = 0, name: str = "") -> None:
    """What a child process of ``serve`` does first: die with it (:func:`die_with`),
    leave SIGINT and SIGTERM to ``serve`` (a Ctrl-C or a service manager's SIGTERM
    reaches the whole group, and ``serve`` says when its children stop; without
    ``serve`` there is nobody to wait for, so they end the child), log as
    ``serve`` does, and run at ``nice`` (:func:`lower_priority`)."""
    die_with(parent)
    lower_priority(nice)
    if name:
        name_process(name)

    def stop_signal(signum: int, frame: object) -> None:
        if os.getppid() != parent:
            os._exit(1)

    signal.signal(signal.SIGINT, stop_signal)
    signal.signal(signal.SIGTERM, stop_signal)
    setup_logging()
