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


def test_an_upgrade_at_start_logs_no_alembic_plugin_lines(tmp_path, capsys):
    """The first start migrates the new database: Alembic's 'setup plugin …' INFO
    lines (one per plugin) are not an operator's business."""
    import asyncio

    from pbmserv_terrace.lifecycle import setup_logging
    from pbmserv_terrace.store import Database

    from pbmserv_terrace.lifecycle import QUIET

    root = logging.getLogger()
    saved = root.handlers[:], root.level, {name: logging.getLogger(name).level for name in QUIET}
    root.handlers = []  # (setup_logging adds its handler: on this test's stderr)
    try:
        setup_logging("info", "text", environ={})

        async def migrate() -> None:
            db = Database(f"sqlite:///{tmp_path}/fresh.db")
            await db.migrate()
            await db.close()

        asyncio.run(migrate())
        assert logging.getLogger("alembic.runtime.plugins").getEffectiveLevel() >= logging.WARNING
        assert "setup plugin" not in capsys.readouterr().err
    finally:
        # (every logger setup_logging touched, as it was: later tests read mail.log's lines)
        root.handlers, root.level = saved[0], saved[1]
        for name, level in saved[2].items():
            logging.getLogger(name).setLevel(level)
