"""Log lines carry no control characters from a mail (issue 36)."""

from __future__ import annotations

import io
import logging

from pbmserv_terrace.lifecycle import FORMAT, LineFormatter


def test_control_characters_in_a_log_line_are_escaped_and_tracebacks_keep_their_lines():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(LineFormatter(FORMAT))
    log = logging.getLogger("test.logs")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("result=error: '%s' is not a command", "x\x1b[2J\nFAKE INFO line\x00\u202e")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("crash")
    finally:
        log.removeHandler(handler)
    first, *rest = out.getvalue().split("\n")
    assert "\x1b" not in first and "\x00" not in first and "\u202e" not in first
    assert "x\\x1b[2J\\nFAKE INFO line\\x00\\u202e' is not a command" in first
    assert rest[0].endswith("crash") and rest[1].startswith("Traceback") and "ValueError: boom" in out.getvalue()
