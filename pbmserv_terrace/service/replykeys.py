"""Reply keys (issue 14): a board mail to a player carries
``Reply-To: LOCAL+KEY@DOMAIN``; replying to it needs no password.

KEY is 31 characters of lower-case base32 (some servers lower-case local parts),
the packing of (game type, board, user id, board version) followed by an HMAC-SHA256 of
those and the user's key generation, truncated to 80 bits, under a secret kept
in the database (``server_secrets``, shared by every worker).  It cannot be made
without the secret, names the board's version when the mail was sent (an older
mail's key is recognised as outdated), and stops verifying when the secret is rotated or the
user's key generation is bumped (password change, ``change keys``).

>>> key = make_key(b"s" * 32, "terrace", 101, 7, 12, 0)
>>> len(key), decode_key(key.upper()) == decode_key(key)
(31, True)
>>> verify_key(b"s" * 32, decode_key(key), 0), verify_key(b"s" * 32, decode_key(key), 1)
(True, False)

The version (:func:`board_version`) is the ply plus twice the plies ever taken
back, so it only grows: after an undo the board returns to an earlier ply, but
never to an earlier version, and a mail from before the undo stays outdated.
Keys made before versions (issue 36) named the ply; the high bit of the packed
game type tells them apart, and they are still read as naming a ply.

The game type is packed as the game's ``key_code``, a number declared in its
entry of :data:`~pbmserv_terrace.gametypes.GAME_TYPES` (terrace 0, terrace6x6 1,
patience 2), never its place in the table: entries may be reordered or inserted
anywhere without changing what a key names.  Until part 2 of issue 37 the number
was the entry's position; the codes declared are those positions, so every key
issued before reads as it did (the packing itself is unchanged).  A key code
must never change or be reused.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ..gametypes import GAME_TYPES, GameType

SECRET_NAME = "reply_keys"  # noqa: S105 (the name of the secret's row, not a secret)
MAC_BYTES = 10
"""80 bits of HMAC-SHA256"""
_FIELDS = struct.Struct(">B3s3sH")
_LIMIT = 1 << 24
KEY_LENGTH = 31
_VERSIONED = 0x80
"""in the packed game type: the key names a board version, not a ply"""


def games_by_code(games: Mapping[str, GameType]) -> dict[int, str]:
    """Each game's ``key_code`` → its name (what a key's packed game type names)."""
    return {g.key_code: g.name for g in games.values()}


_BY_CODE = games_by_code(GAME_TYPES)


@dataclass(frozen=True)
class ReplyKey:
    game_type: str
    board: int
    user_id: int
    ply: int
    """the board version the mail was sent at (or, for a key made before
    versions, its ply: ``versioned`` is False)"""
    payload: bytes
    mac: bytes
    versioned: bool = True


class _Board(Protocol):
    ply: int
    taken_back: int


def board_version(game: _Board) -> int:
    """A number that grows with every change of the board's moves: a move adds
    one, taking back k plies adds k (``ply`` falls by k, ``taken_back`` rises by k)."""
    return (game.ply + 2 * (game.taken_back or 0)) % (1 << 16)


def current_mark(key: ReplyKey, game: _Board) -> int:
    """What ``key.ply`` must equal for the key to be current on ``game``."""
    return board_version(game) if key.versioned else game.ply


def _payload(game_type: str, board: int, user_id: int, ply: int, versioned: bool, games: Mapping[str, GameType]) -> bytes:
    if not (0 <= board < _LIMIT and 0 <= user_id < _LIMIT and 0 <= ply < 1 << 16):
        raise ValueError("board, user or ply out of the key's range")
    kind = games[game_type].key_code | (_VERSIONED if versioned else 0)
    return _FIELDS.pack(kind, board.to_bytes(3, "big"), user_id.to_bytes(3, "big"), ply)


def _mac(secret: bytes, payload: bytes, generation: int) -> bytes:
    return hmac.digest(secret, payload + generation.to_bytes(8, "big", signed=True), "sha256")[:MAC_BYTES]


def make_key(
    secret: bytes,
    game_type: str,
    board: int,
    user_id: int,
    ply: int,
    generation: int,
    *,
    versioned: bool = False,
    games: Mapping[str, GameType] = GAME_TYPES,
) -> str:
    """A key for a mail about ``board`` to the user; ``ply`` is the board's
    version when ``versioned`` (what board mails carry), else a plain number.
    ``games``: the game table whose key codes are packed (tests pass another)."""
    payload = _payload(game_type, board, user_id, ply, versioned, games)
    return key_text(payload + _mac(secret, payload, generation))


def key_text(raw: bytes) -> str:
    """Bytes as the text of a key in a ``+KEY`` address: lower-case base32, no
    padding (some servers lower-case local parts).  Reply keys and confirmation
    keys are both spelt so."""
    return base64.b32encode(raw).decode().rstrip("=").lower()


def key_bytes(text: str, length: int) -> bytes | None:
    """The bytes of a key's text of ``length`` characters (any case), or None."""
    if len(text) != length:
        return None
    try:
        return base64.b32decode(text.upper() + "=")
    except (ValueError, binascii.Error):
        return None


def decode_key(text: str, games: Mapping[str, GameType] | None = None) -> ReplyKey | None:
    """The fields a key names (not yet verified), or None if it is no key at all
    (or names a key code no game has).  ``games``: the game table to read the
    key code in (default :data:`~pbmserv_terrace.gametypes.GAME_TYPES`)."""
    raw = key_bytes(text, KEY_LENGTH)
    if raw is None:
        return None
    payload, mac = raw[: _FIELDS.size], raw[_FIELDS.size :]
    kind, board, user, ply = _FIELDS.unpack(payload)
    versioned = bool(kind & _VERSIONED)
    name = (_BY_CODE if games is None else games_by_code(games)).get(kind & ~_VERSIONED)
    if name is None or len(mac) != MAC_BYTES:
        return None
    return ReplyKey(name, int.from_bytes(board, "big"), int.from_bytes(user, "big"), ply, payload, mac, versioned)


def verify_key(secret: bytes, key: ReplyKey, generation: int) -> bool:
    """Constant-time check of the key's MAC for the user's current generation."""
    return hmac.compare_digest(key.mac, _mac(secret, key.payload, generation))


def key_address(server_address: str, key: str) -> str:
    local, _, domain = server_address.partition("@")
    return f"{local}+{key}@{domain}"


def key_in_address(server_address: str, address: str) -> str | None:
    """KEY when ``address`` is the server's address with ``+KEY`` (any case)."""
    local, _, domain = server_address.lower().partition("@")
    their_local, _, their_domain = address.strip().strip("<>").lower().rpartition("@")
    if their_domain != domain or not their_local.startswith(local + "+"):
        return None
    return their_local[len(local) + 1 :] or None


# ------------------------------------------------------------ digest keys
DIGEST_KEY_LENGTH = 28
"""a digest's key (issue 40): 28 characters, so it is never taken for a board key
(31) or a confirmation key (23)"""
_DIGEST_FIELDS = struct.Struct(">I3s")
_DIGEST_DOMAIN = b"pbmserv digest key\x00"
"""prefixed to what a digest key's MAC covers: no board key's MAC can be one"""


@dataclass(frozen=True)
class DigestKey:
    digest_id: int
    """the ``digests`` row: the boards (and their versions) the digest listed"""
    user_id: int
    payload: bytes
    mac: bytes


def make_digest_key(secret: bytes, digest_id: int, user_id: int, generation: int) -> str:
    """The Reply-To key of digest ``digest_id`` to the user: the row it names holds
    the boards and their versions, so the MAC covers them through the row's id.

    >>> key = make_digest_key(b"s" * 32, 7, 12, 0)
    >>> len(key), verify_digest_key(b"s" * 32, decode_digest_key(key.upper()), 0)
    (28, True)
    >>> decode_key(key) is None, decode_digest_key(make_key(b"s" * 32, "terrace", 101, 7, 12, 0)) is None
    (True, True)
    """
    if not (0 <= digest_id < 1 << 32 and 0 <= user_id < _LIMIT):
        raise ValueError("digest or user out of the key's range")
    payload = _DIGEST_FIELDS.pack(digest_id, user_id.to_bytes(3, "big"))
    return key_text(payload + _mac(secret, _DIGEST_DOMAIN + payload, generation))


def decode_digest_key(text: str) -> DigestKey | None:
    """The fields a digest key names (not yet verified), or None."""
    if len(text) != DIGEST_KEY_LENGTH:
        return None
    try:
        raw = base64.b32decode(text.upper() + "=" * (-len(text) % 8))
    except (ValueError, binascii.Error):
        return None
    payload, mac = raw[: _DIGEST_FIELDS.size], raw[_DIGEST_FIELDS.size :]
    if len(mac) != MAC_BYTES:
        return None
    digest_id, user = _DIGEST_FIELDS.unpack(payload)
    return DigestKey(digest_id, int.from_bytes(user, "big"), payload, mac)


def verify_digest_key(secret: bytes, key: DigestKey, generation: int) -> bool:
    """Constant-time check of a digest key's MAC for the user's current generation."""
    return hmac.compare_digest(key.mac, _mac(secret, _DIGEST_DOMAIN + key.payload, generation))
