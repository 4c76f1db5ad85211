"""How a process of ours logs: to stderr, one line an event (``serve`` and the
processes it starts write to the same log).

A log line may carry words from a mail (an unknown command word, a sender):
control characters in it are written escaped (``\\x1b``, ``\\n``), so a mail can
neither forge a log line nor send escape sequences to an operator's terminal.
Tracebacks, which are ours, keep their line breaks."""

from __future__ import annotations

import logging
import re
import sys

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


def setup() -> None:
    logging.basicConfig(level=logging.INFO, format=FORMAT, stream=sys.stderr)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(LineFormatter(FORMAT))
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(logging.WARNING)
