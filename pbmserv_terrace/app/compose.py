"""An outbox row → the message that is sent: headers, the text part, and (where
the row carries them) the HTML part with the board picture.  Built when the
reply is sent, outside any database transaction: the picture is drawn here, once
per (position, last move) however many players the mail goes to."""

from __future__ import annotations

import functools
from email.message import Message

from ..config import Config
from ..mail.message import build_message
from ..render.picture import board_png, threatened_squares
from ..rules import Move, NotationError, parse_tpn
from ..store import OutboxMessage


@functools.lru_cache(maxsize=256)
def board_picture(tpn: str, last_move: str) -> bytes:
    """The PNG of a board mail: the position, its last move marked (and a capture),
    and the T's that Terrace! announces ringed."""
    pos = parse_tpn(tpn)
    move: Move | None = None
    captured: int | None = None
    if last_move:
        try:
            squares = last_move.split("-")[1:3]
            frm, to = pos.geo.square(squares[0]), pos.geo.square(squares[1].split(":")[0])
            move = Move(frm, to)
            captured = to if ":" in last_move else None
        except (IndexError, ValueError, NotationError):
            move = None
    return board_png(pos, move, captured=captured, threatened=threatened_squares(pos))


def to_email(row: OutboxMessage, config: Config) -> Message:
    images: list[tuple[str, bytes]] = []
    if row.html and row.picture:
        spec = row.picture
        images.append((str(spec["cid"]), board_picture(str(spec["tpn"]), str(spec.get("last_move") or ""))))
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
        html=row.html if images else None,
        images=images,
    )
