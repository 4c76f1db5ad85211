"""Bounces (issue 43 part 3): a reply that cannot be delivered comes back, is
counted against its address, and an address that keeps bouncing gets no more mail
until its player writes again.

- **VERP.** Each reply leaves with a return path of its own,
  ``LOCAL+bounce-ID-MAC@DOMAIN`` (:func:`bounce_address`): ``ID`` is its outbox
  row, ``MAC`` 80 bits of an HMAC under a key derived from the reply-key secret
  (``server_secrets``, which every worker shares), so a bounce names the reply it
  returns and a forged one names nothing.  The Message-ID stays the row's.
- **Reports.** A mail to such an address, or an RFC 3464 report (or an
  ``X-Failed-Recipients`` header) to the plain address, is a bounce
  (:func:`is_bounce`): it is never answered.  Without a VERP token a report counts
  only for a reply of ours it names by Message-ID (the returned mail's, or the
  report's References) to the recipient it says failed: nobody else knows those.
  Only permanent failures count (``Action: failed``, ``Status: 5.x.x``); a
  delay or a 4.x.x is ignored.  A VERP mail with no report counts only when a
  mailer daemon sent it (an out-of-office reply to the return path does not).
- **At send time.** An MTA that refuses a reply's recipient with a 5xx at
  ``RCPT`` is a hard bounce too (:func:`record_refusal`, called by the outbox
  once that reply's outcome is committed): counted the same way, once per reply.
- **Counting.** One row per bounced reply (``store.bounces``; a second report of
  the same reply adds nothing).  At ``[server] bounce_threshold`` bounces within
  ``bounce_window_days`` the address is marked in ``users.bouncing``: it gets no
  mail (:meth:`.context.Ctx.addresses_of`), the replies still pending to it are
  failed, and the board mails of its player's boards say so in a line
  (:func:`silent_lines`).  A bounce of an address no player has confirmed, or of a
  reply queued before the player last wrote, changes nothing.
- **Clearing.** The next mail in which the player proves who they are (a password
  or a reply key) from one of their confirmed addresses clears the mark, and the
  answer tells them (:meth:`.context.Ctx.auth`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from datetime import datetime, timedelta

from ..config import Config
from ..inbound import InboundMail
from ..store import BounceEvent, Bounces, OutboxMessage, UnitOfWork, User
from .replykeys import SECRET_NAME

log = logging.getLogger("pbmserv.bounces")

BOUNCE_VERDICT = "bounce"
"""the precheck's verdict for a bounce (``Service._prechecks``): counted, never answered"""
BOUNCE_TAG = "bounce-"
"""what the ``+tag`` of a reply's return path begins with"""
_KEY_LABEL = b"pbmserv bounce address"
_MAC_BYTES = 10
"""80 bits of HMAC: 16 base32 letters"""
_SYSTEM_SENDERS = frozenset(("mailer-daemon", "postmaster", "mailer_daemon"))


def bounce_key(secret_hex: str) -> bytes:
    """The key of the return paths' MACs, derived from the reply-key secret (kept
    apart from the reply keys' own use of it)."""
    return hmac.new(bytes.fromhex(secret_hex), _KEY_LABEL, hashlib.sha256).digest()


def _mac(key: bytes, outbox_id: int) -> str:
    digest = hmac.new(key, str(outbox_id).encode("ascii"), hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.b32encode(digest).decode("ascii").lower()


def bounce_token(key: bytes, outbox_id: int) -> str:
    """``ID-MAC`` of the reply ``outbox_id``: lower-case letters, digits and a dash
    (mail systems that lower-case local parts keep it whole)."""
    return f"{outbox_id}-{_mac(key, outbox_id)}"


def bounce_address(server_address: str, key: bytes, outbox_id: int) -> str:
    """The envelope sender (return path) of the reply ``outbox_id``."""
    local, _, domain = server_address.rpartition("@")
    return f"{local.split('+', 1)[0]}+{BOUNCE_TAG}{bounce_token(key, outbox_id)}@{domain}"


def outbox_id_of(token: str, key: bytes) -> int | None:
    """The reply a token names, if its MAC is right (None: forged or damaged)."""
    number, dash, mac = token.lower().partition("-")
    if not dash or not number.isascii() or not number.isdigit() or len(number) > 18:
        return None
    outbox_id = int(number)
    return outbox_id if hmac.compare_digest(mac, _mac(key, outbox_id)) else None


def verp_token(mail: InboundMail, server_address: str) -> str | None:
    """The token of the first recipient of ``mail`` that is one of our return
    paths (``LOCAL+bounce-TOKEN@DOMAIN``), else None."""
    local, _, domain = server_address.lower().rpartition("@")
    base = local.split("+", 1)[0]
    for recipient in mail.recipients:
        r_local, _, r_domain = recipient.lower().rpartition("@")
        name, plus, tag = r_local.partition("+")
        if plus and name == base and r_domain == domain and tag.startswith(BOUNCE_TAG):
            return tag[len(BOUNCE_TAG) : len(BOUNCE_TAG) + 64]
    return None


def is_bounce(mail: InboundMail, server_address: str) -> bool:
    """``mail`` goes to the bounce handler (:func:`record`), never answered: it
    was sent to one of our return paths, or it is a delivery report."""
    return mail.report is not None or verp_token(mail, server_address) is not None


def _from_daemon(mail: InboundMail) -> bool:
    return mail.sender.split("@", 1)[0].lower() in _SYSTEM_SENDERS or mail.headers.get("return-path", "").strip() == "<>"


async def record(uow: UnitOfWork, mail: InboundMail, config: Config, now: datetime) -> str:
    """Count what the bounce ``mail`` reports (in ``uow``, not committed); what
    it did, for the log."""
    secret = await uow.secrets.get(SECRET_NAME)
    token = verp_token(mail, config.server.address)
    report = mail.report
    bounced: list[tuple[OutboxMessage, str]] = []
    if token is not None:
        outbox_id = outbox_id_of(token, bounce_key(secret)) if secret else None
        if outbox_id is None:
            return "a return path whose token does not verify: nothing counted"
        rows = await uow.outbox.of_ids([outbox_id])
        if not rows:
            return f"a bounce of reply {outbox_id}, which is gone: nothing counted"
        if report is not None and report.recipients:
            hard = [r for r in report.recipients if r.hard]
            if not hard:
                return "not a permanent failure (a delay or a 4.x.x status): nothing counted"
            bounced.append((rows[0], hard[0].status))
        elif _from_daemon(mail):
            bounced.append((rows[0], ""))
        else:
            return "mail to a return path that is no delivery report (an automatic reply?): nothing counted"
    elif report is not None:
        hard = [r for r in report.recipients if r.hard]
        if not hard:
            return "a delivery report with no permanent failure: nothing counted"
        rows = await Bounces(uow.session).replies([*report.returned_ids, *mail.references])
        by_address = {r.address: r.status for r in hard}
        bounced = [(row, by_address[row.recipient.lower()]) for row in rows if row.recipient.lower() in by_address]
        if not bounced:
            return "a delivery report that names no reply of ours to the recipient that failed: nothing counted"
    said = [await _count(uow, row, status, config, now) for row, status in bounced]
    return "; ".join(said)


async def record_refusal(uow: UnitOfWork, outbox_id: int, status: str, config: Config, now: datetime) -> tuple[str, bool]:
    """The MTA refused the recipient of the reply ``outbox_id`` when we submitted
    it (``RCPT`` answered 5xx, ``status`` its code): a hard bounce at send time,
    counted as one that comes back later is (once per reply; in ``uow``, not
    committed).  What it did, for the log, and whether the address is now marked
    bouncing (nothing more is to be sent to it)."""
    rows = await uow.outbox.of_ids([outbox_id])
    if not rows:
        return f"reply {outbox_id}, refused at send time, is gone: nothing counted", False
    said = await _count(uow, rows[0], status, config, now)
    address = rows[0].recipient.lower()
    return said, any(address in u.bouncing for u in await uow.users.with_address(address))


async def _count(uow: UnitOfWork, row: OutboxMessage, status: str, config: Config, now: datetime) -> str:
    """One bounce of the reply ``row``: counted, and the address marked bouncing
    when it reaches the threshold."""
    address = row.recipient.lower()
    bounces = Bounces(uow.session)
    users = await uow.users.with_address(address)
    if not users:
        return f"{address} is no player's confirmed address: nothing counted"
    if await bounces.counted(row.id):
        return f"reply {row.id} to {address} was counted before"
    cleared = await bounces.last_cleared(address)
    if cleared is not None and row.created_at <= cleared:
        return f"reply {row.id} to {address} was queued before its player wrote again: nothing counted"
    bounces.add(BounceEvent(address=address, outbox_id=row.id, status=status[:16], bounced_at=now))
    threshold = config.server.bounce_threshold
    recent = await bounces.recent(address, now - timedelta(days=config.server.bounce_window_days))
    said = f"reply {row.id} to {address} bounced ({status or 'no status'}), {len(recent)} in the window"
    if not threshold or len(recent) < threshold or all(address in u.bouncing for u in users):
        return said
    for user in users:
        if address not in user.bouncing:
            user.bouncing = [*user.bouncing, address]
    held = await bounces.hold_replies(address, f"not sent: {address} bounces (marked {now:%Y-%m-%d %H:%M})")
    log.warning("%s bounced %d times since %s: marked bouncing (%s); %d pending replies to it not sent",
                address, len(recent), f"{recent[0].bounced_at:%Y-%m-%d}", ", ".join(u.userid for u in users), held)  # fmt: skip
    return f"{said}: marked bouncing"


def working_addresses(user: User) -> list[str]:
    """The user's confirmed addresses that are not marked bouncing."""
    if not user.bouncing:
        return list(user.addresses)
    marked = set(user.bouncing)
    return [a for a in user.addresses if a.lower() not in marked]


def is_silent(user: User) -> bool:
    """Every confirmed address of ``user`` bounces: the server cannot reach them."""
    return bool(user.bouncing) and not working_addresses(user)


def silent_lines(users: list[User]) -> list[str]:
    """The line a board mail carries for each of its players the server cannot reach."""
    return [
        f"Mail to {u.userid} bounces: {u.userid} gets no mail from the server until {u.userid} writes again."
        for u in users
        if is_silent(u)
    ]


def cleared_lines(addresses: list[str], events: list[BounceEvent]) -> list[str]:
    """What the player is told when their next mail clears the mark."""
    lines = []
    for address in addresses:
        mine = [e for e in events if e.address == address]
        times = f"{len(mine)} times" if len(mine) != 1 else "once"
        last = f" (the last on {max(e.bounced_at for e in mine):%Y-%m-%d})" if mine else ""
        lines.append(
            f"Mail to you at {address} bounced {times}{last}, so the server sent nothing there; "
            "it sends to that address again now."
        )
    return lines
