"""CLI commands around the running server: serve, send, inbox, check-config, status."""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import logging
import os
import signal
import sys
import urllib.error
import urllib.request
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from typing import Any

import aiosmtplib

from ..app import heap
from ..app.server import Server
from ..app.systemd import Notifier
from ..config import Config, SmtpConfig
from ..gametypes import DEFAULT_GAME_TYPE, GAME_TYPES
from ..lifecycle import LEVELS, LOG_FORMAT_ENV, LOG_LEVEL_ENV
from ..mail.delivery import MaildirDelivery, PermanentFailure, SmtpDelivery
from ..mail.imap import connect
from ..store import Database
from ..store.repos import Games, Outbox
from .common import CliError, config_from_args
from .inbox import cmd_inbox, mail_text, newest_mail
from .pidfile import pid_path, remove_pid, running_pid, write_pid

SERVE_UMASK = 0o077
"""what serve creates (database, Maildirs, failed mails, pid file) is its user's
alone, whatever the shell's umask (issue 36)"""


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the server.  Under systemd (``Type=notify``, deploy/pbmserv-terrace.service)
    it says ``READY=1`` once it takes mail, ``STOPPING=1`` at SIGTERM, and sends
    ``WATCHDOG=1`` from its event loop (:mod:`..app.systemd`).  A configuration
    error exits 2 (the unit's ``RestartPreventExitStatus=2``: no restart loop)."""
    os.umask(SERVE_UMASK)
    cfg = config_from_args(args)
    # the processes serve starts (sender, web, workers) log as it does
    os.environ[LOG_LEVEL_ENV], os.environ[LOG_FORMAT_ENV] = cfg.server.log_level.lower(), cfg.server.log_format.lower()
    heap.settle()
    notifier = Notifier()
    pid_file = pid_path(cfg)

    async def run() -> None:
        server = Server(cfg)
        loop = asyncio.get_running_loop()
        watchdog: list[asyncio.Task[None]] = []

        def stop() -> None:
            if not server.stopping.is_set():
                notifier.stopping("stopping: finishing the mail in hand")
            server.stop()

        def started() -> None:
            try:
                write_pid(pid_file)
            except OSError as exc:
                logging.getLogger("pbmserv.serve").warning(
                    "cannot write the pid file %s (%s): `status` finds this serve by its health_port only",
                    pid_file, exc.strerror or exc,
                )  # fmt: skip
            notifier.ready(f"serving: mail in by {cfg.inbound}, replies out by {cfg.outbound}")
            if notifier.interval is not None:  # (a task on the loop: a held loop misses its beat)
                watchdog.append(loop.create_task(notifier.watchdog(server.stopping), name="systemd-watchdog"))

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop)
        notifier.status("starting: migrating the database, starting the listeners")
        try:
            await server.run(started=started)
        finally:
            for task in watchdog:
                task.cancel()

    try:
        asyncio.run(run())
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        holder = running_pid(pid_file)
        who = f"pbmserv-terrace serve (pid {holder}, see {pid_file})" if holder else "another program"
        raise CliError(
            f"cannot listen: {exc.strerror} ({address_of(exc)}), held by {who}; stop it or choose another port"
        ) from None
    finally:
        remove_pid(pid_file)
        notifier.close()
    return 0


def address_of(exc: OSError) -> str:
    """The host:port of an 'address in use' error (asyncio puts it in the message)."""
    text = str(exc)
    if "(" in text and ")" in text:
        inner = text[text.index("(") + 1 : text.index(")")].replace("'", "").replace(" ", "")
        return inner.replace(",", ":", 1)
    return text


def cmd_send(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    msg = EmailMessage()
    msg["From"] = args.sender
    msg["Date"] = formatdate(localtime=True)
    msg["Message-ID"] = make_msgid(domain=args.sender.rpartition("@")[2] or "localhost")
    if args.reply_to_last:
        # what a mail client's Reply does: to the Reply-To (else From), Re: subject,
        # In-Reply-To/References, the text on top and the original quoted below
        text = args.subject if args.body is None else f"{args.subject}\n{args.body}"
        original = newest_mail(MaildirDelivery(cfg.embedded.maildir_root).folder(args.sender), args.sender)
        to = parseaddr(str(original["Reply-To"] or original["From"]))[1]
        subject = str(original["Subject"] or "")
        msg["To"] = to
        msg["Subject"] = subject if subject.lower().startswith("re:") else f"Re: {subject}"
        msg["In-Reply-To"] = msg["References"] = str(original["Message-ID"])
        quoted = "\n".join("> " + line for line in mail_text(original).splitlines())
        msg.set_content(f"{text}\n\nOn {original['Date']}, {original['From']} wrote:\n{quoted}\n")
        recipient, shown = to, f"reply to {to}"
    else:
        msg["To"] = cfg.server.address
        msg["Subject"] = args.subject
        body = args.body if args.body is not None else ("" if sys.stdin.isatty() else sys.stdin.read())
        msg.set_content(body or "\n")
        recipient, shown = cfg.server.address, args.subject
    if not cfg.uses_smtp:  # the embedded listener: plain SMTP on loopback
        cfg.smtp = SmtpConfig(host=cfg.embedded.listen_host, port=cfg.embedded.listen_port, tls="none")
    host, port = cfg.smtp.host, cfg.smtp.port
    delivery = SmtpDelivery(cfg)

    async def submit() -> None:
        try:
            await delivery.deliver(msg, recipient)
        finally:
            await delivery.close()

    try:
        asyncio.run(submit())
    except (OSError, aiosmtplib.SMTPException, PermanentFailure) as exc:
        raise CliError(f"could not hand the mail to {host}:{port}: {exc} (is `pbmserv-terrace serve` running?)") from None
    print(f"sent to {recipient} via {host}:{port}: {shown}")
    return 0


def cmd_check_config(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    print(f"configuration from {cfg.source}: valid")
    print(f"  server address  {cfg.server.address} ({cfg.server.name})")
    problems = asyncio.run(_check_connections(cfg, args.offline))
    for line in problems:
        print(line)
    return 1 if any(line.startswith("  FAIL") for line in problems) else 0


async def _check_connections(cfg: Config, offline: bool) -> list[str]:
    out = []
    db = Database(cfg.server.database_url)
    try:
        tables = await db.table_names()
        state = "schema present" if "games" in tables else "empty (serve or migrate will create the schema)"
        out.append(f"  ok    database {db.engine.url.render_as_string(hide_password=True)}: {state}")
    except Exception as exc:
        out.append(f"  FAIL  database: {exc}")
    finally:
        await db.close()
    if not cfg.uses_imap:
        out.append(f"  ok    embedded mail: SMTP listener on {cfg.embedded.listen_host}:{cfg.embedded.listen_port}, "
                   f"replies into ./{cfg.embedded.maildir_root}/")  # fmt: skip
        return out
    if offline:
        out.append("  skip  IMAP and SMTP connections (--offline)")
        return out
    try:
        client = await asyncio.wait_for(connect(cfg), 30)
        await client.logout()
        out.append(f"  ok    IMAP {cfg.imap.host}:{cfg.imap.port} ({cfg.imap.tls}) login as {cfg.imap.user}")
    except Exception as exc:
        out.append(f"  FAIL  IMAP {cfg.imap.host}:{cfg.imap.port}: {type(exc).__name__}: {exc}")
    try:
        delivery = SmtpDelivery(cfg)
        client = await delivery.connect()
        await delivery.quit(client)  # the check's connection is its own: close() ends only the pool's idle ones
        out.append(f"  ok    SMTP {cfg.smtp.host}:{cfg.smtp.port} ({cfg.smtp.tls})")
    except Exception as exc:
        out.append(f"  FAIL  SMTP {cfg.smtp.host}:{cfg.smtp.port}: {type(exc).__name__}: {exc}")
    return out


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON) of the /healthz on this port (OSError: nothing answers)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:  # 503: it runs, and says what is down
        with exc:
            return exc.code, json.loads(exc.read() or b"{}")


def cmd_status(args: argparse.Namespace) -> int:
    """The health of a server, found from the configuration (never the current
    directory): its /healthz when ``health_port`` is set, else the pid file
    (:func:`.pidfile.pid_path`); and the database's view.  Exit status 0: running
    and well, 1: running with a part down (named), 3: not running."""
    cfg = config_from_args(args)
    status = 0
    if cfg.server.health_port:
        try:
            code, info = healthz(cfg.server.health_port)
        except (OSError, ValueError) as exc:
            print(f"serve: not running (nothing answers on 127.0.0.1:{cfg.server.health_port}: {exc})")
            status = 3
        else:
            mails = ", ".join(f"{n} {what}" for what, n in sorted(info.get("mails", {}).items())) or "none yet"
            waiting = "?" if info.get("pending_replies") is None else info["pending_replies"]
            print(f"serve: running, answering on 127.0.0.1:{cfg.server.health_port}; {waiting} replies "
                  f"waiting; mails handled: {mails}; inbound {info.get('inbound')}")  # fmt: skip
            down = info.get("down", [])
            for part in down:
                print(f"  DOWN  {part}: {info.get('checks', {}).get(part, '')}")
            if code != 200 or down:
                status = 1
    else:
        pid_file = pid_path(cfg)
        pid = running_pid(pid_file)
        print(f"serve: running (pid {pid}, {pid_file})" if pid else f"serve: not running (no live pid in {pid_file})")
        status = 0 if pid is not None else 3

    async def db_view() -> str:
        db = Database(cfg.server.database_url)
        try:
            if "outbox" not in await db.table_names():
                return (
                    f"database {db.engine.url.render_as_string(hide_password=True)}: empty (serve or migrate creates the schema)"
                )
            async with db.reading() as session:
                uow_outbox, uow_games = Outbox(session), Games(session)
                pending = await uow_outbox.pending_count()
                failed = len(await uow_outbox.by_state("failed"))
                active = [f"{await uow_games.count_active(t)} {GAME_TYPES[t].title}" for t in GAME_TYPES]
            return f"database: {pending} replies pending, {failed} failed; active boards: {', '.join(active)}"
        finally:
            await db.close()

    try:
        print(asyncio.run(db_view()))
    except Exception as exc:  # (the database down: said, not a traceback)
        print(f"database: unreachable ({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''})")
        status = status or 1
    return status


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text)  # (each takes --config: cli/common.CommandParser)

    p = add("serve", "run the server (embedded default without [imap]/[smtp] settings)")
    p.add_argument("--log-level", choices=list(LEVELS), help="how much to log (default: [server] log_level, else info)")
    p.set_defaults(handler=cmd_serve)
    p = add("send", "mail a command to the server (embedded listener or configured SMTP)")
    p.add_argument("--from", dest="sender", required=True, help="your address")
    p.add_argument(
        "subject", help=f"the command, e.g. '{DEFAULT_GAME_TYPE} show 101' (with --reply-to-last: the reply's first line, e.g. d2-e3)"
    )
    p.add_argument("body", nargs="?", help="the message (default: standard input if it is not a terminal)")
    p.add_argument("--reply-to-last", action="store_true",
                   help="answer the newest mail in your local inbox the way a mail client's Reply does (no password needed)")  # fmt: skip
    p.set_defaults(handler=cmd_send)
    p = add("inbox", "print the replies in a local Maildir (embedded default)")
    p.add_argument("address")
    p.add_argument("--last", type=int, default=0, help="only the last N mails")
    p.set_defaults(handler=cmd_inbox)
    p = add("check-config", "validate the configuration and try the database and mail connections")
    p.add_argument("--offline", action="store_true", help="do not connect to IMAP/SMTP")
    p.set_defaults(handler=cmd_check_config)
    p = add("status", "health of the server and the database")
    p.set_defaults(handler=cmd_status)
