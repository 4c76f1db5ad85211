"""An outbox row → the message that is sent: headers, the text part, and (where
the row carries them) the HTML part with the board picture.  Built when the
reply is sent, outside any database transaction."""

from __future__ import annotations

from email.message import Message

from ..config import Config
from ..mail.message import build_message
from ..store import OutboxMessage


def to_email(row: OutboxMessage, config: Config) -> Message:
    return build_message(
        sender=config.server.address,
        sender_name=config.server.name,
        recipient=row.recipient,
        subject=row.subject,
        body=row.body,
        message_id=row.message_id,
        in_reply_to=row.in_reply_to,
        date=row.created_at,
        reply_to=row.reply_to,
    )
