"""The garbage collector, set for a long-running server.

Handling a mail allocates thousands of short-lived objects (ORM rows, template
contexts), and CPython's default thresholds (700, 10, 10) run a collection every
700 of them; every tenth young collection walks the middle generation, and the
full ones walk everything start-up left behind (some 90,000 objects of modules,
mappers and compiled statements that live until exit).  Measured in
``bench/service.py`` (batches of 50): the collector took 0.2 ms of each move
command's 1.5 ms by default and 0.04 ms with :func:`settle`.
"""

from __future__ import annotations

import gc

THRESHOLDS = (7000, 10, 10)
"""young collections every 7,000 net allocations instead of 700: almost all of
a mail's objects are freed by reference counting before then"""


def settle() -> None:
    """Call once start-up is done: what exists now is moved out of the collector's
    sight for good (it lives until exit anyway), and collections run less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
