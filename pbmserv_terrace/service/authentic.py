"""Which mails over their sender's throttle limit authenticate (issue 36: From is
not identity).

The throttle counts mails per sender (their From), and a From is easy to forge:
a flood under a player's address would silence the player.  So a mail over its
sender's limit is still answered when it proves who wrote it, with what a forger
lacks: a valid reply key from one of its user's addresses, a valid confirmation
key, or the right password.  It is then counted per (user, sender) instead
(``Service._prechecks``), with the same limit, so a player's own mail loop is
still stopped.  A wrong password here counts as a guess (the mail does not run),
so a flood of guesses is held by the guessing guard and costs at most a few
password checks per sender.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..inbound import InboundMail
from ..store import Confirmations, Database, User
from ..store.repos import Secrets, Users
from . import confirmations, keyed
from .guards import GuessGuard, dummy_hash
from .passwords import PasswordCache
from .registry import Registry
from .replykeys import SECRET_NAME, decode_digest_key, decode_key, verify_digest_key, verify_key


async def refresh_senders(guessing: GuessGuard, registry: Registry, mails: Sequence[InboundMail]) -> None:
    """Let the guessing guard learn every worker's failures from the senders of
    the mails that carry a password (PostgreSQL; nothing to learn on SQLite)."""
    senders = sorted({m.sender.lower() for m in mails if any(registry.credentials(c) for c in m.parsed.commands)})
    if senders:
        await guessing.refresh((), senders)


async def authenticated_as(
    db: Database, passwords: PasswordCache, guessing: GuessGuard, registry: Registry, server_address: str,
    mails: Sequence[InboundMail],
) -> list[str]:  # fmt: skip
    """Per mail, the userid it proves to come from ('' when it proves nothing)."""
    out: list[str] = []
    async with db.reading() as session:
        users, secrets = Users(session), Secrets(session)
        for mail in mails:
            out.append(await _one(mail, users, secrets, Confirmations(session), passwords, guessing, registry, server_address))
    return out


async def _secret(secrets: Secrets) -> bytes | None:
    value = await secrets.get(SECRET_NAME)
    return bytes.fromhex(value) if value else None


def _from_own(mail: InboundMail, user: User) -> bool:
    return mail.sender.lower() in {a.lower() for a in user.addresses}


async def _one(
    mail: InboundMail, users: Users, secrets: Secrets, rows: Confirmations, passwords: PasswordCache, guessing: GuessGuard,
    registry: Registry, server_address: str,
) -> str:  # fmt: skip
    sender = mail.sender.lower()
    key_text = keyed.key_text_of(mail, server_address)
    if key_text is not None and keyed.is_digest_key(key_text):
        digest = decode_digest_key(key_text)  # a Reply to a digest (issue 40): its user's key
        assert digest is not None
        user = await users.by_pk(digest.user_id)
        secret = await _secret(secrets)
        if user is None or secret is None or user.is_deleted:
            return ""
        return user.userid if verify_digest_key(secret, digest, user.key_generation) and _from_own(mail, user) else ""
    if key_text is not None:
        key = decode_key(key_text)
        user = await users.by_pk(key.user_id) if key is not None else None
        secret = await _secret(secrets)
        if key is None or user is None or secret is None or user.is_deleted:
            return ""
        return user.userid if verify_key(secret, key, user.key_generation) and _from_own(mail, user) else ""
    for cmd in mail.parsed.commands:
        if cmd.verb == "confirm" and len(cmd.words) == 1 and confirmations.is_key(cmd.words[0]):
            found = await confirmations.peek(rows, users, await _secret(secrets), cmd.words[0])
            if found is not None:
                return found.userid
    pair = next((p for cmd in mail.parsed.commands if (p := registry.credentials(cmd))), None)
    if pair is None:
        return ""
    userid, password = pair
    first = mail.parsed.commands[0] if mail.parsed.commands else None
    if first is not None and first.verb == "challenge" and await users.get(password) is not None:
        return ""  # 'challenge U1 U2 U3': the second word is a player, not a password
    user = await users.get(userid)
    now = time.monotonic()
    own = user is not None and _from_own(mail, user)
    if guessing.locked_for(userid, now, sender=sender, own=own):
        return ""
    stored = user.password_hash if user is not None else dummy_hash()
    if user is not None and not user.is_deleted and await passwords.check_async(userid, stored, password):
        return userid
    if user is None:
        await passwords.check_async(userid, stored, password)  # the same work as for a user
    guessing.failed(userid, now, sender=sender)  # the mail does not run: its guess counts here
    return ""
