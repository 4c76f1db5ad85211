"""The one rule every process ``serve`` starts follows: it dies with ``serve``.

A child process (the sender, the web archive, an engine worker) calls
:func:`die_with` first thing: the kernel then sends it SIGKILL when its parent
dies (Linux, PR_SET_PDEATHSIG), so a ``serve`` killed with SIGKILL leaves no
process behind to hold a port, a database connection or memory; and if the
parent is gone already, the child goes at once.  Standard library only (every
layer may use it)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> None:
    """Be killed when ``parent`` dies (the signal is tied to the thread that
    started this process, which must live as long as the parent: ``serve``'s
    event loop's thread), and exit now if it died before this ran."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
