"""The reply queue: the mails a piece of work produced become outbox rows, one
per address, in the same transaction as the work (ARCHITECTURE.md: exactly-once).

Also the error reply (COMMANDS.md §5) and the merged answer of ``multiple``.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime

from ..commands import Command, strip_subject
from ..commands.parse import redact
from ..gametypes import TITLES_PATTERN, game_title
from ..inbound import InboundMail, is_valid_address, new_message_id
from ..render import render
from ..store import UnitOfWork
from .context import CommandError, Mail

log = logging.getLogger("pbmserv.service")
_ERROR_SUBJECT = re.compile(
    rf"^(?:(?:{TITLES_PATTERN})\s+(?:board\s+\d+\s+)?error|[^:]{{1,100}}: (?:results of multiple|how to play))$", re.IGNORECASE
)
"""the subjects of our error mails, of every game (``Patience Board 5 Error``), and of
the answers that are never answered back when a reply to them holds no command
(``multiple``'s results, the short help a mail of plain words gets)"""
SYNTHETIC_ID_DOMAIN = "@pbmserv.invalid>"
"""Message-IDs made up for mails that had none: never put in In-Reply-To"""


def is_error_reply(subject: str) -> bool:
    """``subject`` answers one of our error mails (or a ``multiple`` result)."""
    return bool(_ERROR_SUBJECT.match(strip_subject(subject)))


def error_mail(
    mail: InboundMail, cmd: Command | None, exc: CommandError, line: str, usage: str, *, keyed: bool = False
) -> Mail | None:
    """The error reply to the sender: the reason, the usage, the mail quoted with
    passwords masked.  None for a reply to one of our own error mails that holds
    no valid command (an auto-responder or a comment): answering it could start a
    mail loop.  ``keyed``: the mail is a reply with a verified key whose first line
    a player wrote as a command (a corrected move that is wrong again is answered)."""
    if not keyed and is_error_reply(mail.subject):
        log.info("not answering %s: a reply to an error mail (%s)", mail.message_id, exc.reason)
        return None
    title = game_title(exc.game_type or (cmd.game_type if cmd else None))
    subject = f"{title} Board {exc.board} Error" if exc.board else f"{title} error"
    usage = exc.usage or usage
    body_lines = [redact(b) for b in mail.body.rstrip().split("\n")[:60]] if mail.body.strip() else []
    quoted = [f"Subject: {redact(mail.subject)}"[:300], *(["", *body_lines] if body_lines else [])]
    hint = "Mail 'help commands' for every command." if not usage else ""
    body = render("error.txt", reason=exc.reason, usage=usage, quoted=[q[:300] for q in quoted], help_hint=hint)
    about = (exc.game_type or (cmd.game_type if cmd else None) or "", exc.board) if exc.board else None
    return Mail([mail.sender], subject, body, for_sender=True, about_board=about)


def merge_for_sender(sender: str, mails: list[Mail], server_name: str) -> list[Mail]:
    """For ``multiple``: everything addressed to the sender becomes one reply; the
    other recipients of a mail still get it as usual."""
    me = sender.lower()
    parts: list[dict[str, str]] = []
    others: list[Mail] = []
    for mail in mails:
        rest = [a for a in mail.to if a.lower() != me]
        if mail.for_sender or len(rest) < len(mail.to):
            parts.append({"command": mail.subject, "body": mail.body.rstrip("\n")})
        if rest and not mail.for_sender:
            others.append(Mail(rest, mail.subject, mail.body))
    if not parts:
        return others
    body = render("multiple.txt", parts=parts)
    return [Mail([sender], f"{server_name}: results of multiple", body, for_sender=True), *others]


def queue_replies(
    uow: UnitOfWork, mails: list[Mail], *, server_address: str, now: datetime, in_reply_to: str | None
) -> list[str]:
    """Write ``mails`` to the outbox of ``uow`` (one row per address, duplicates
    dropped); returns the new rows' Message-IDs."""
    if in_reply_to and in_reply_to.endswith(SYNTHETIC_ID_DOMAIN):
        in_reply_to = None
    queued: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for mail in mails:
        for address in mail.to:
            if not is_valid_address(address):
                log.warning("reply to unusable address %r dropped", address[:80])
                continue
            key = (address.lower(), mail.subject, mail.body + (mail.reply_to or ""))
            if key in seen:
                continue
            seen.add(key)
            message_id = new_message_id(server_address)
            queued.append(message_id)
            uow.outbox.queue(
                message_id=message_id,
                recipient=address,
                subject=mail.subject,
                body=mail.body,
                in_reply_to=in_reply_to,
                reply_to=mail.reply_to,
                reply_key=mail.reply_key,
                html=mail.html,
                picture=mail.picture,
                next_attempt_at=now,
                created_at=now,
            )
    return queued
