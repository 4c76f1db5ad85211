"""An outbox row → the message that is sent: headers, the text part, and (where
the row carries them) the HTML part with the board picture.  Built when the
reply is sent, outside any database transaction: the picture is drawn here, once
per (position, last move) however many players the mail goes to, and its base64
text made once too (``mail.message``).  :func:`to_outgoing` serialises the message
as well, once, for whichever delivery sends it.

The row's picture spec says what to draw.  A spec whose ``game`` names a solitaire
(family ``solitaire`` in :data:`~pbmserv_terrace.gametypes.GAME_TYPES`) holds the
deal and the moves played (``variant``, ``deal``, ``moves``, and ``resigned`` when
the game was given up): the table is replayed and drawn by the game's rules.  Any
other spec (``game``, ``tpn``, ``last_move``) is a board, drawn by its game's rules
(rows queued before specs named their game are read by the rules that read them).
A spec with ``chart`` ``evaluation`` is a game review's chart (issue 42: ``values``,
``scale``, ``marks``, ``turning``, ``width``, ``height``; :mod:`..render.chart`)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from email.message import Message

from ..config import Config
from ..gametypes import DEFAULT_GAME_TYPE, GAME_TYPES, board_game_of
from ..mail.message import Outgoing, build_message
from ..render.chart import evaluation_chart
from ..service.bounces import bounce_address
from ..store import OutboxMessage

log = logging.getLogger("pbmserv.outbound")


@functools.lru_cache(maxsize=256)
def board_picture(game: str, position: str, last_move: str) -> bytes:
    """The PNG of a board mail, drawn by the game's rules (:meth:`BoardRules.picture_png`)."""
    rules = GAME_TYPES[game].board
    return rules.picture_png(rules.load(position), last_move)


def spec_game(spec: Mapping[str, object]) -> str:
    """The board game a picture spec is of: its ``game``; a row queued before specs
    named their game (only Terrace's boards had pictures then) by the board game whose
    rules read its position."""
    game = spec.get("game")
    if isinstance(game, str) and game in GAME_TYPES:
        return game
    try:
        return board_game_of(str(spec["tpn"]))
    except (ValueError, KeyError):
        return DEFAULT_GAME_TYPE


@functools.lru_cache(maxsize=256)
def solitaire_picture(game: str, variant: str, deal: int, moves: tuple[str, ...], resigned: bool = False) -> bytes:
    """The PNG of a solitaire's board mail: the deal replayed through ``moves``."""
    rules = GAME_TYPES[game].solitaire
    state = rules.replay(variant, deal, moves)
    if resigned:
        state = rules.resign(state)
    return rules.picture(state)


def is_solitaire(spec: Mapping[str, object]) -> bool:
    game = spec.get("game")
    return isinstance(game, str) and game in GAME_TYPES and GAME_TYPES[game].family == "solitaire"


def chart_png(spec: Mapping[str, object]) -> bytes | None:
    """The PNG of a review's evaluation chart (None, logged, for a spec it cannot read)."""
    try:
        values, marks = spec["values"], spec.get("marks") or []
        if not isinstance(values, list) or not isinstance(marks, list):
            raise TypeError("values and marks are lists")
        turning = spec.get("turning")
        return evaluation_chart(
            [int(v) for v in values], int(str(spec["scale"])), [(int(p), str(c)) for p, c in marks],
            int(str(turning)) if turning is not None else None, int(str(spec.get("width", 560))),
            int(str(spec.get("height", 160))),
        )  # fmt: skip
    except (KeyError, ValueError, TypeError):
        log.warning("no chart for %s: its spec cannot be read", str(spec.get("cid"))[:80], exc_info=True)
        return None


def picture_png(spec: Mapping[str, object]) -> bytes | None:
    """The PNG a row's picture spec asks for; None when a solitaire's table cannot be
    replayed (the mail then goes as text only rather than not at all)."""
    if spec.get("chart") == "evaluation":
        return chart_png(spec)
    if not is_solitaire(spec):
        return board_picture(spec_game(spec), str(spec["tpn"]), str(spec.get("last_move") or ""))
    moves = spec.get("moves", [])
    try:
        if not isinstance(moves, list):
            raise TypeError(f"moves is a {type(moves).__name__}, not a list")
        return solitaire_picture(str(spec["game"]), str(spec["variant"]), int(str(spec["deal"])),
                                 tuple(str(m) for m in moves), bool(spec.get("resigned")))  # fmt: skip
    except (KeyError, ValueError, TypeError):
        log.warning("no picture for %s: its table cannot be replayed", str(spec.get("cid"))[:80], exc_info=True)
        return None


def to_outgoing(row: OutboxMessage, config: Config, bounce_key: bytes | None = None) -> Outgoing:
    """The row's message and its bytes (what :mod:`app.outbox` hands the delivery).
    With ``bounce_key`` its envelope sender is the row's own return path
    (:func:`~pbmserv_terrace.service.bounces.bounce_address`, VERP), so a bounce
    names the reply; the message, its Message-ID included, is the same either way."""
    sender = bounce_address(config.server.address, bounce_key, row.id) if bounce_key else config.server.address
    return Outgoing.of(to_email(row, config), sender)


def to_email(row: OutboxMessage, config: Config) -> Message:
    images: list[tuple[str, bytes]] = []
    if row.html and row.picture:
        # a digest (issue 40) shows a picture per board: its spec lists them
        for spec in row.picture.get("pictures") or [row.picture]:
            png = picture_png(spec)
            if png is not None:
                images.append((str(spec["cid"]), png))
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
