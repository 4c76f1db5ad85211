"""Confirmations by Reply (issue 36, "From is not identity").

A From address proves nothing, so two things wait for a mail the server sends
to be answered:

- an address given at ``signup`` or by ``change address`` (or the sender's own,
  when none is given) gets no mail but its one confirmation mail until that is
  answered (it stays in ``User.pending_addresses``; ``User.addresses`` holds the
  confirmed ones);
- a ``challenge`` made without a password is opened only when the confirmation
  mailed to the challenger's registered address is answered.

The confirmation mail's ``Reply-To`` is ``LOCAL+KEY@DOMAIN`` and its Subject
``confirm KEY``, so a plain Reply is the command ``confirm KEY`` (the ``confirm``
handler in :mod:`.play` hands it here).  KEY is 23 characters of lower-case
base32: the row id of the :class:`~..store.Confirmation` and an HMAC-SHA256
(80 bits) of the id, the user, the kind, the address and the user's key
generation, under the reply-key secret.  It is not a board key (those are 31
characters), so the board-reply machinery leaves it alone.  A key is used once
(the row is deleted), lapses after :data:`TTL`, and dies with a password change
or ``change keys``.
"""

from __future__ import annotations

import hmac
import struct
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ..render import render
from ..store import Confirmation, Confirmations, User
from ..store.repos import Users
from .context import CommandError, Ctx, Mail
from .replykeys import key_address, key_bytes, key_text

KEY_LENGTH = 23
TTL = timedelta(days=7)
PER_ADDRESS_PER_DAY = 5
"""at most this many unanswered confirmation mails go to one address in a day
(a forger cannot make the server mail a stranger more than that)"""
_ID = struct.Struct(">I")
_MAC_BYTES = 10


def _mac(secret: bytes, row: Confirmation, generation: int) -> bytes:
    data = b"\0".join(
        [b"confirm", _ID.pack(row.id), str(row.user_id).encode(), row.kind.encode(), row.address.lower().encode(),
         str(generation).encode()]
    )  # fmt: skip
    return hmac.digest(secret, data, "sha256")[:_MAC_BYTES]


def make_key(secret: bytes, row: Confirmation, generation: int) -> str:
    return key_text(_ID.pack(row.id) + _mac(secret, row, generation))


def _decode(text: str) -> tuple[int, bytes] | None:
    raw = key_bytes(text, KEY_LENGTH)
    if raw is None or key_text(raw) != text:
        return None  # one spelling per key (the last letter's spare bits unused)
    return _ID.unpack(raw[: _ID.size])[0], raw[_ID.size :]


def is_key(word: str) -> bool:
    """``word`` has the shape of a confirmation key (not yet verified)."""
    return _decode(word.strip("<>.,;").lower()) is not None


def repo(ctx: Ctx) -> Confirmations:
    return Confirmations(ctx.uow.session)


async def _row(ctx: Ctx, user: User, kind: str, address: str, payload: dict[str, Any]) -> tuple[Confirmation, str] | None:
    """A new confirmation row and its key; None when ``address`` had its share today."""
    store = repo(ctx)
    if await store.sent_to_since(address, ctx.now - timedelta(days=1)) >= PER_ADDRESS_PER_DAY:
        return None
    row = Confirmation(user_id=user.id, kind=kind, address=address, payload=payload, created_at=ctx.now)
    store.add(row)
    await ctx.uow.flush()
    return row, make_key(await ctx.reply_secret(), row, user.key_generation)


def _mail(ctx: Ctx, address: str, key: str, body: str) -> Mail:
    server = ctx.config.server.address
    for_sender = ctx.mail is not None and address.lower() == ctx.sender.lower()
    # no reply_key on the row: a reply that lost its +KEY and Subject is no board reply
    return Mail([address], f"confirm {key}", body, for_sender=for_sender, reply_to=key_address(server, key))


async def set_addresses(ctx: Ctx, user: User, wanted: list[str], *, welcome: list[str] | None = None) -> list[str]:
    """Make ``wanted`` the user's addresses: those confirmed before stay confirmed,
    each other one gets a confirmation mail (``welcome`` lines head the one to the
    sender, when the sender is among them).  The lines telling the sender where
    mail goes now; ``welcome`` is emptied when it went out in a confirmation."""
    confirmed = {a.lower() for a in user.addresses}
    user.addresses = [a for a in wanted if a.lower() in confirmed]
    user.pending_addresses = [a for a in wanted if a.lower() not in confirmed]
    if user.id is not None:
        await repo(ctx).drop_addresses_of(user.id)
    held: list[str] = []
    for address in user.pending_addresses:
        made = await _row(ctx, user, "address", address, {})
        if made is None:
            held.append(address)
            continue
        _, key = made
        own = ctx.mail is not None and address.lower() == ctx.sender.lower()
        before = list(welcome or []) if own else []
        if own and welcome:
            welcome.clear()  # said in this mail: the sender gets one mail
        body = render("confirm_address.txt", before=before, server_name=ctx.server_name, userid=user.userid,
                      address=address, server=ctx.config.server.address, key=key, days=TTL.days)  # fmt: skip
        ctx.out.append(_mail(ctx, address, key, body))
    lines = []
    if user.addresses:
        lines.append(f"Mail for {user.userid} goes to: {', '.join(user.addresses)}")
    sent = [a for a in user.pending_addresses if a not in held]
    if sent:
        lines.append(f"Waiting for confirmation (a mail went there; answer it by Reply): {', '.join(sent)}")
    if held:
        lines.append(f"No confirmation mail went to {', '.join(held)}: it had {PER_ADDRESS_PER_DAY} unanswered ones today; "
                     "try 'change address' again tomorrow")  # fmt: skip
    if user.pending_addresses:
        lines.append("Until an address is confirmed it gets no mail; the answers to your own mails (with your password) "
                     "still go to the address you send them from.")  # fmt: skip
    return lines


async def ask_challenge(ctx: Ctx, user: User, address: str, payload: dict[str, Any], values: Mapping[str, object]) -> None:
    """Mail ``user``'s registered ``address`` the challenge ``payload`` to confirm
    (stored in the row as JSON; its ``game_type`` is the game's ``name``, its stable
    id in :data:`~pbmserv_terrace.gametypes.GAME_TYPES`, never a position)."""
    made = await _row(ctx, user, "challenge", address, payload)
    if made is None:
        raise CommandError(
            f"{PER_ADDRESS_PER_DAY} confirmations to your address are unanswered today; give your password instead: "
            f"challenge {user.userid} PASSWORD OPPONENT..."
        )
    _, key = made
    body = render("confirm_challenge.txt", server_name=ctx.server_name, server=ctx.config.server.address, key=key,
                  days=TTL.days, userid=user.userid, **values)  # fmt: skip
    ctx.out.append(_mail(ctx, address, key, body))


async def _verified(store: Confirmations, users: Users, secret: bytes | None, key_text: str) -> tuple[Confirmation, User] | None:
    decoded = _decode(key_text.strip("<>.,;").lower())
    if decoded is None or secret is None:
        return None
    row_id, mac = decoded
    row = await store.get(row_id)
    if row is None:
        return None
    user = await users.by_pk(row.user_id)
    if user is None or user.is_deleted or not hmac.compare_digest(mac, _mac(secret, row, user.key_generation)):
        return None
    return row, user


async def peek(store: Confirmations, users: Users, secret: bytes | None, key_text: str) -> User | None:
    """The user a valid, unused confirmation key belongs to (nothing is used up)."""
    found = await _verified(store, users, secret, key_text)
    return found[1] if found is not None else None


async def take(ctx: Ctx, key_text: str) -> tuple[Confirmation, User]:
    """The confirmation ``key_text`` names, verified and used up (deleted)."""
    found = await _verified(repo(ctx), ctx.uow.users, await ctx.reply_secret(), key_text)
    if found is None or found[0].created_at < ctx.now - TTL:
        raise CommandError(
            "this confirmation is not valid: it was answered already, it lapsed, or a newer one replaced it"
            " (a password change or 'change keys' cancels them too)",
            "reply to the confirmation mail as it is",
        )
    row, user = found
    await repo(ctx).remove(row)
    ctx.user = user.userid
    return row, user


def confirm_address(ctx: Ctx, row: Confirmation, user: User) -> None:
    """The address ``row`` names is confirmed: mail for ``user`` goes there too."""
    pending = {a.lower(): a for a in user.pending_addresses}
    address = pending.get(row.address.lower())
    if address is None:
        raise CommandError(f"{row.address} is no longer among the addresses of {user.userid}; nothing changed")
    user.pending_addresses = [a for a in user.pending_addresses if a.lower() != row.address.lower()]
    user.addresses = [*user.addresses, address]
    ctx.reply(
        f"{ctx.server_name}: address confirmed",
        "notice.txt",
        lines=[f"Thank you: {address} is confirmed. Mail for {user.userid} goes to: {', '.join(user.addresses)}"],
        comment=None,
    )
