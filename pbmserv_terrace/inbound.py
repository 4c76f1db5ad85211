"""The inbound mail as both sides see it: the mail adapters (IMAP, embedded SMTP,
pipe) make one from raw bytes, the service answers it.  It lives here, between
the two, so that the service never imports the mail package.

The mail's commands are parsed once (:attr:`InboundMail.parsed`) and that parsed
form travels with it through ordering, the password prewarm and the handling.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from email.utils import make_msgid
from functools import cached_property

from .commands import ParsedMail, ReplyCommand, parse_mail, reply_command


@dataclass(frozen=True)
class BouncedRecipient:
    """One recipient of a delivery report (RFC 3464's per-recipient fields, or an
    ``X-Failed-Recipients`` address)."""

    address: str
    """Final-Recipient (else Original-Recipient), the address part, lower-case"""
    action: str
    """failed | delayed | delivered | relayed | expanded (lower-case)"""
    status: str
    """the DSN status code (``5.1.1``), '' when none was given"""

    @property
    def hard(self) -> bool:
        """A permanent failure: ``Action: failed`` with a 5.x.x status (4.x.x and
        delays are soft: the mail may still arrive)."""
        return self.action == "failed" and self.status.startswith("5.")


@dataclass
class DeliveryReport:
    """What a bounce says (:func:`pbmserv_terrace.mail.message.parse_message`
    reads it from a ``multipart/report; report-type=delivery-status`` or an
    ``X-Failed-Recipients`` header; nothing is guessed from free text)."""

    recipients: list[BouncedRecipient] = field(default_factory=list)
    returned_ids: list[str] = field(default_factory=list)
    """Message-IDs of the mail that bounced (from the returned message or its headers)"""
    dsn: bool = False
    """an RFC 3464 delivery status notification (else only X-Failed-Recipients)"""


@dataclass
class InboundMail:
    sender: str
    """bare address of From (lower-cased domain), '' when missing"""
    subject: str
    body: str
    message_id: str
    headers: dict[str, str] = field(default_factory=dict)
    """the headers that decide about auto-replies (lower-case names)"""
    is_report: bool = False
    """multipart/report (delivery or disposition notification)"""
    raw_size: int = 0
    recipients: list[str] = field(default_factory=list)
    """where it was addressed: envelope recipients (X-Original-To, Delivered-To)
    first, then To and Cc (bare addresses)"""
    references: list[str] = field(default_factory=list)
    """Message-IDs it answers: In-Reply-To, then References (newest first)"""
    report: DeliveryReport | None = None
    """what it says as a bounce, if it is one (a DSN or X-Failed-Recipients)"""
    problem: str | None = None
    """why its body was not read (over a parsing limit: ``mail.message.LIMITS``);
    such a mail is answered with this and runs nothing"""

    @cached_property
    def parsed(self) -> ParsedMail:
        """The commands of this mail (COMMANDS.md §1), parsed on first use only."""
        return parse_mail(self.subject, self.body)

    @cached_property
    def reply(self) -> ReplyCommand:
        """What the body says as a reply to a board mail (its first own line as a
        move, a draw, a chat …: :func:`..commands.reply_command`), read on first use."""
        return reply_command(self.body)


def never_answer(mail: InboundMail, server_address: str) -> str | None:
    """Why ``mail`` must get no reply and change nothing (COMMANDS.md §1), or None."""
    auto = mail.headers.get("auto-submitted", "").lower()
    if auto and auto != "no":
        return f"Auto-Submitted: {auto}"
    precedence = mail.headers.get("precedence", "").lower()
    if precedence in ("bulk", "junk", "list", "auto_reply"):
        return f"Precedence: {precedence}"
    if "list-id" in mail.headers:
        return "mailing-list mail (List-Id)"
    if "x-autoreply" in mail.headers:
        return "X-Autoreply"
    suppress = mail.headers.get("x-auto-response-suppress", "").lower()
    if any(word in suppress for word in ("all", "autoreply", "oof")):
        return f"X-Auto-Response-Suppress: {suppress[:40]}"  # (what every mail we send carries)
    if mail.headers.get("return-path", "").strip() == "<>":
        return "null return path (a bounce or an automatic mail)"
    if mail.is_report:
        return "delivery or disposition report"
    if not mail.sender or "@" not in mail.sender:
        return "no sender address"
    local = mail.sender.split("@", 1)[0].lower()
    if local in ("mailer-daemon", "postmaster", "mailer_daemon", "noreply", "no-reply"):
        return f"system sender {mail.sender}"
    if _untagged(mail.sender) == _untagged(server_address):
        return "mail from the server's own address"
    return None


def _untagged(address: str) -> str:
    """``local+tag@domain`` → ``local@domain``, lower-case (our own +KEY addresses are us)."""
    local, _, domain = address.lower().rpartition("@")
    return f"{local.split('+', 1)[0]}@{domain}"


ADDRESS = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$")


def is_valid_address(address: str) -> bool:
    """A plain addr-spec with no spaces, CR/LF, quotes or angle brackets."""
    return len(address) <= 254 and bool(ADDRESS.match(address))


def new_message_id(domain: str) -> str:
    # make_msgid's own random part comes from the random module, which anything
    # may seed (hypothesis does, per example); the idstring comes from the OS
    return make_msgid(idstring=secrets.token_hex(6), domain=domain.split("@")[-1] or "pbmserv.invalid")
