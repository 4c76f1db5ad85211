"""``migrate``: create or upgrade the database schema, saying each revision applied."""

from __future__ import annotations

import argparse
import asyncio
import sys

from ..store import Database
from ..store.db import head_revision
from .admin import print_migration
from .common import config_from_args


def cmd_migrate(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)

    async def run() -> None:
        db = Database(cfg.server.database_url)
        try:
            print(f"migrating {db.engine.url.render_as_string(hide_password=True)} to the newest schema ...", file=sys.stderr)
            print_migration(await db.migrate(), head_revision())
        finally:
            await db.close()

    asyncio.run(run())
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("migrate", help="create or upgrade the database schema")
    p.set_defaults(handler=cmd_migrate)
