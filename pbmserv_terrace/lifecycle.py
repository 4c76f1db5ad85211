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

Standard library only (every layer may use it)."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import signal
import sys

PR_SET_PDEATHSIG = 1
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET = ("mail.log", "alembic.runtime.migration", "aioimaplib.aioimaplib")
"""libraries whose INFO lines say nothing an operator needs"""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escaped(found: re.Match[str]) -> str:
    return found.group().encode("unicode_escape").decode("ascii")


class LineFormatter(logging.Formatter):
    """The standard formatter, with control characters of the message escaped."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return _CONTROL.sub(_escaped, super().formatMessage(record))


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format=FORMAT, stream=sys.stderr)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(LineFormatter(FORMAT))
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(logging.WARNING)


def die_with(parent: int) -> None:
    """Be killed when ``parent`` dies (the signal is tied to the thread that
    started this process, which must live as long as the parent: ``serve``'s
    event loop's thread), and exit now if it died before this ran."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def lower_priority(nice: int) -> None:
    """Run at ``nice`` (added to this process's niceness): work done for one mail
    or one robot yields the CPU to ``serve``'s event loop, which answers everybody."""
    if nice:
        with contextlib.suppress(OSError):
            os.nice(nice)


def pool_worker(parent: int, nice: int = 0) -> None:
    """A process-pool worker of ``serve``: dies with it (:func:`die_with`), at ``nice``."""
    die_with(parent)
    lower_priority(nice)


def start_child(parent: int, nice: int = 0) -> None:
    """What a child process of ``serve`` does first: die with it (:func:`die_with`),
    leave SIGINT and SIGTERM to ``serve`` (a Ctrl-C or a service manager's SIGTERM
    reaches the whole group, and ``serve`` says when its children stop; without
    ``serve`` there is nobody to wait for, so they end the child), log as
    ``serve`` does, and run at ``nice`` (:func:`lower_priority`)."""
    die_with(parent)
    lower_priority(nice)

    def stop_signal(signum: int, frame: object) -> None:
        if os.getppid() != parent:
            os._exit(1)

    signal.signal(signal.SIGINT, stop_signal)
    signal.signal(signal.SIGTERM, stop_signal)
    setup_logging()
