"""Reply to play (issue 14): the command in a plain reply to a board mail.

A board mail's ``Reply-To`` carries a key that names the board and the player, so a
reply needs no Subject command and no password: the first line of the sender's own
text is the command (``e7-e6``, ``resign``, ``draw``, ``chat good game``, ...) and the
rest is the comment.  This module only reads the text; checking the key, the turn and
the move is the service's job.  Pure: standard library and this package only.

Anything that is not one of the short reply forms is treated as a chat message
(``implicit_chat``), so a friendly "nice move!" reaches the opponent and the service
can tell the sender how to play.  The exception is a command line with a word
where its password goes ("terrace move 101 bob PASSWORD d7-d6", "change password
fay OLD NEW", "signoff ann PW"): it may carry a password, so it is never chatted; it comes
back as verb ``command`` for the service to run as an ordinary mail, its password
checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..gametypes import GAME_TYPES
from .parse import looks_like_command, may_hold_password, redact_text
from .quotes import own_text

__all__ = ["REPLY_VERBS", "ReplyCommand", "own_text", "reply_command"]

REPLY_VERBS = ("move", "resign", "propose", "accept", "reject", "undo", "claim", "show", "chat", "queue", "rematch", "command")
"""``command``: the first line is a complete mail command (see the module docstring);
``rematch``: a new game of the (finished) board, as ``rematch BOARD USERID`` would
start it."""

_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2212"
_SEP = rf"\s*[{_DASHES}]?\s*"
_SQUARE = r"[a-z]\d{1,2}"
_MOVE_SHAPE = re.compile(
    rf"^(?:[tabcd]{_SEP})?{_SQUARE}(?:{_SEP}|\s*x\s*){_SQUARE}(?:\s*:\s*[tabcd])?(?:\s*#\s*\d+)?$",
    re.IGNORECASE,
)
"""The forms ``rules.notation.parse_move`` reads (RULES.md §7 and the relaxed ones:
``d7d6``, en dash, ``Cd7-d6``, spaces around the dash; ``d4xe5``, a capture as
Breakthrough writes it), plus the ``#k`` ply number
the service checks.  Shape only: whether the move is legal is the service's
question.  Kept in step with the rules by a test, since this package may not import
the rules."""

_WORDS: dict[str, str] = {
    "resign": "resign",
    "i resign": "resign",
    "draw": "propose",
    "propose": "propose",
    "propose draw": "propose",
    "propose a draw": "propose",
    "offer draw": "propose",
    "offer a draw": "propose",
    "draw offer": "propose",
    "accept": "accept",
    "accept draw": "accept",
    "accept the draw": "accept",
    "accept undo": "accept",
    "reject": "reject",
    "reject draw": "reject",
    "reject undo": "reject",
    "decline": "reject",
    "decline draw": "reject",
    "decline undo": "reject",
    "undo": "undo",
    "claim": "claim",
    "claim win": "claim",
    "claim the win": "claim",
    "claim on time": "claim",
    "i claim the win": "claim",
    "show": "show",
    "show board": "show",
    "rematch": "rematch",
    "rematch please": "rematch",
    "a rematch": "rematch",
    "play again": "rematch",
}
"""Whole first lines (lower-case, single spaces, no trailing '.'/'!') → verb."""


@dataclass(frozen=True)
class ReplyCommand:
    """What a reply asks for.

    ``verb`` is one of :data:`REPLY_VERBS`.  ``argument`` is the move for ``move`` and
    ``queue`` (dashes made ASCII and spaces removed, case and any ``#k`` kept), the
    whole command line for ``command``, else ``""``.  ``comment`` is the rest of the
    sender's own text; for ``chat`` it is the message.  ``implicit_chat`` says the
    first line was no command, so all the own text is the chat message.  ``empty``
    says the reply holds no own text at all (``verb`` is then ``chat`` with nothing
    to send: the service should answer how to reply instead)."""

    verb: str
    argument: str = ""
    comment: str = ""
    implicit_chat: bool = False
    empty: bool = False


def _trim(line: str) -> str:
    """``line`` without surrounding space and the trailing '.'/'!' people add."""
    return line.strip().rstrip(".!").strip()


def compact_move(text: str) -> str:
    """A move as one word with ASCII dashes: ``"d7 – d6"`` → ``"d7-d6"``, so it can be
    put into a command line and read back by the notation unchanged."""
    text = re.sub(rf"\s*([{_DASHES}])\s*", "-", text.strip())
    return re.sub(r"\s+", "", text)


_QUERIES = ("help", "games", "standings", "ratings", "history", "list")
"""Commands that need no password: a short reply line starting with one (``help``,
``help terrace``) is run as a command rather than chatted to the opponent."""


def _is_full_command(line: str) -> bool:
    """A line such as ``terrace move 101 bob PW d7-d6`` or ``move 101 bob PW d7-d6``:
    a game name first, or a command word followed by a board number; or a short
    query such as ``help``."""
    line = _trim(line)
    words = line.split()
    if not words or not looks_like_command(line):
        return False
    if words[0].lower() in GAME_TYPES:
        return True
    if words[0].lower() in _QUERIES and len(words) <= 2:
        return True
    return len(words) > 1 and words[1].split("#")[0].isdigit()


def reply_command(body: str) -> ReplyCommand:
    """The command in a reply's ``body`` (already decoded to text): the first line of
    its :func:`own_text` is the command, the rest the comment."""
    text = own_text(body)
    if not text:
        return ReplyCommand(verb="chat", empty=True)
    first, _, rest = text.partition("\n")
    rest = redact_text(rest.strip())
    line = _trim(first)
    key = " ".join(line.lower().split())
    if _MOVE_SHAPE.match(line):
        return ReplyCommand(verb="move", argument=compact_move(line), comment=rest)
    words = line.split(None, 1)
    head = words[0].lower() if words else ""
    tail = words[1] if len(words) > 1 else ""
    if head in ("move", "play", "queue") and _MOVE_SHAPE.match(tail):
        return ReplyCommand(verb="move" if head != "queue" else "queue", argument=compact_move(tail), comment=rest)
    if key in _WORDS:
        return ReplyCommand(verb=_WORDS[key], comment=rest)
    if _is_full_command(first):
        return ReplyCommand(verb="command", argument=_trim(first), comment=rest)
    chat = _CHAT.match(first)
    if chat:
        message = "\n".join(part for part in (chat.group(1).strip(), rest) if part)
        return ReplyCommand(verb="chat", comment=message)
    if may_hold_password(first):
        # any other command with a word where its password goes ("change
        # password fay OLD NEW", "signoff ann PW", "vacation …"): it is run as a
        # command (its password checked) and never chatted
        return ReplyCommand(verb="command", argument=_trim(first), comment=rest)
    return ReplyCommand(verb="chat", comment=redact_text(text), implicit_chat=True)


_CHAT = re.compile(r"^\s*chat\b\s*:?\s*(.*)$", re.IGNORECASE | re.DOTALL)
