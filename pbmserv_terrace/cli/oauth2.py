"""``pbmserv-terrace oauth2 login``: get the refresh token the server needs for
OAuth2 mail logins, without a browser on the server (RFC 8628 device flow).

It prints a URL and a code; the operator opens the URL on any device, signs in
as the game's mail account and enters the code; the refresh token lands in
``oauth2.refresh_token_file`` (mode 0600).  Then ``check-config`` tries it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from ..mail.oauth2 import OAuth2Error, device_login
from .common import CliError, config_from_args


def cmd_login(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    try:
        asyncio.run(device_login(cfg.oauth2, sys.stdout))
    except OAuth2Error as exc:
        raise CliError(f"oauth2 login: {exc}") from None
    print("Next: pbmserv-terrace check-config  (tries the token and the IMAP/SMTP logins)")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("oauth2", help="OAuth2 for the mail account (Gmail, Microsoft 365)")
    actions = p.add_subparsers(dest="oauth2_command", required=True, metavar="ACTION")
    login = actions.add_parser("login", help="device-flow sign-in; stores the refresh token in oauth2.refresh_token_file")
    login.set_defaults(handler=cmd_login)
