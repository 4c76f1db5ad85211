"""``pbmserv-terrace web``: the read-only web archive alone, for a separate process or
host reading the same database as ``serve`` (which can also run it beside the mail
loop, see ``[web] listen``)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal

from ..config import DEFAULT_WEB_LISTEN, parse_listen
from ..web import create_app, listen_socket, serve_web
from ..web.clockview import Timers
from ..web.process import read_only_database
from .common import CliError, config_from_args

log = logging.getLogger("pbmserv.web")


def cmd_web(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT.  The address is --listen, else ``[web] listen``, else
    127.0.0.1:8080 (so a mail configuration with the web off in ``serve`` still works here)."""
    cfg = config_from_args(args)
    listen = args.listen or (cfg.web.listen if cfg.web.enabled else DEFAULT_WEB_LISTEN)
    try:
        host, port = parse_listen(listen)
    except ValueError:
        raise CliError(f"--listen: {listen!r} is not host:port (e.g. {DEFAULT_WEB_LISTEN})") from None
    try:
        sock = listen_socket(host, port)
    except OSError as exc:
        raise CliError(f"web archive: cannot listen on {listen}: {exc.strerror or exc}") from None

    async def run() -> None:
        db = read_only_database(cfg.server.database_url)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            # the archive only reads: the schema is serve's (or migrate's) to create or upgrade
            if "games" not in await db.table_names():
                raise CliError(
                    f"the database {db.engine.url.render_as_string(hide_password=True)} has no schema yet: "
                    "run `pbmserv-terrace migrate` (or serve) first"
                )
            timers = Timers(cfg.timers.forfeittime, cfg.timers.vacation_days)
            app = create_app(db, server_name=cfg.server.name, public_url=cfg.web.public_url, address=cfg.server.address,
                             timers=timers)  # fmt: skip
            log.info(
                "web archive on http://%s/%s, database %s",
                listen,
                f" (public address {cfg.web.public_url}/)" if cfg.web.public_url else "",
                db.engine.url.render_as_string(hide_password=True),
            )
            await serve_web(app, host, port, stop=stop, sock=sock)
        finally:
            sock.close()
            await db.close()
        log.info("stopped")

    asyncio.run(run())
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("web", help="run the read-only web archive alone (serve also runs it when [web] listen is set)")
    p.add_argument("--listen", help=f"HOST:PORT to serve on (default: [web] listen, else {DEFAULT_WEB_LISTEN})")
    p.set_defaults(handler=cmd_web)
