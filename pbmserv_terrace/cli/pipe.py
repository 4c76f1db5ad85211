"""``handle``: one mail on standard input (pipe mode: Postfix's ``pipe``, procmail).

Postfix runs a process for every mail, so what a mail costs here is the whole
process (issue 43).  When ``[lmtp] listen`` is set and ``serve`` answers there, the
mail is handed to it over LMTP and this process needs nothing but a socket: it
exits 0 once ``serve`` committed the mail, 75 (EX_TEMPFAIL: Postfix keeps the mail
and tries again) when ``serve`` said "try again" or the dialogue broke off, 69
(EX_UNAVAILABLE: Postfix returns it to its sender) when ``serve`` refused it for
good.  Otherwise (no listener configured, nothing answering, ``--print``) the mail
is handled in this process (``app.pipe.handle_raw``), which loads the whole server.

This module imports that machinery inside :func:`handle_here` only (the command
line may: tests/house/test_imports.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from ..configfile import DEFAULT_ADDRESS, quick_setting
from ..mail.lmtpclient import LmtpError, deliver
from .common import CliError, config_from_args

log = logging.getLogger("pbmserv.handle")

EX_UNAVAILABLE = 69
EX_TEMPFAIL = 75


def cmd_handle(args: argparse.Namespace) -> int:
    raw = sys.stdin.buffer.read()
    if not raw.strip():
        raise CliError("handle reads one mail (RFC 5322) on standard input; it was empty")
    # the envelope recipient (a reply key may be only there): --recipient, else what
    # Postfix's pipe(8)/local(8) put in the environment
    recipient = args.recipient or os.environ.get("ORIGINAL_RECIPIENT") or os.environ.get("RECIPIENT")
    listen = "" if args.print else quick_setting(args.config, "lmtp", "listen")
    if listen:
        # (no recipient known: the game address, which an MTA's own delivery names)
        status = pass_to_serve(listen, raw, recipient or quick_setting(args.config, "server", "address") or DEFAULT_ADDRESS)
        if status is not None:
            return status
        log.warning("nothing answers on %s ([lmtp] listen): the mail is handled in this process", listen)
    return handle_here(args, raw, recipient)


def pass_to_serve(listen: str, raw: bytes, recipient: str) -> int | None:
    """Hand the mail to ``serve``'s LMTP listener: the exit status, or None when
    nothing listens there."""
    sender = os.environ.get("SENDER", "")
    try:
        outcome = deliver(listen, raw, sender, [recipient])
    except (OSError, LmtpError) as exc:
        log.warning("LMTP to %s broke off (%s: %s): asking the MTA to try again", listen, type(exc).__name__, exc)
        return EX_TEMPFAIL
    if outcome is None:
        return None
    code, text = outcome
    if code < 400:
        log.info("passed to serve by LMTP on %s: %d %s", listen, code, text)
        return 0
    print(f"pbmserv-terrace handle: serve answered {code} {text}", file=sys.stderr)
    return EX_TEMPFAIL if code < 500 else EX_UNAVAILABLE


def handle_here(args: argparse.Namespace, raw: bytes, recipient: str | None) -> int:
    """The mail handled in this process, as ``serve`` would."""
    import asyncio

    from ..app.pipe import handle_raw
    from ..mail.message import with_envelope_recipients

    cfg = config_from_args(args)
    if recipient:
        raw = with_envelope_recipients(raw, [recipient])
    asyncio.run(handle_raw(cfg, raw, print_to=sys.stdout.buffer if args.print else None))  # it logs its one line
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("handle", help="process one mail from standard input (pipe mode)")
    p.add_argument("--print", action="store_true", help="write the replies to stdout as an mbox; send nothing")
    p.add_argument(
        "--recipient", help="the envelope recipient (default: $ORIGINAL_RECIPIENT or $RECIPIENT, as Postfix sets them)"
    )
    p.set_defaults(handler=cmd_handle)
