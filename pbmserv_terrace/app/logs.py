"""How a process of ours logs: to stderr, one line an event (``serve`` and the
processes it starts write to the same log)."""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET = ("mail.log", "alembic.runtime.migration", "aioimaplib.aioimaplib")
"""libraries whose INFO lines say nothing an operator needs"""


def setup() -> None:
    logging.basicConfig(level=logging.INFO, format=FORMAT, stream=sys.stderr)
    for noisy in QUIET:
        logging.getLogger(noisy).setLevel(logging.WARNING)
