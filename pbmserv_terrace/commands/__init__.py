"""Mail text → command objects (COMMANDS.md §1).  Pure: no database, no network;
the game types come from :mod:`pbmserv_terrace.gametypes`."""

from .parse import (
    NO_COMMAND,
    Command,
    ParsedMail,
    extract_comment,
    is_server_subject,
    parse_line,
    parse_mail,
    strip_subject,
)
from .quotes import own_text
from .reply import REPLY_VERBS, ReplyCommand, reply_command

__all__ = [
    "NO_COMMAND",
    "REPLY_VERBS",
    "Command",
    "ParsedMail",
    "ReplyCommand",
    "extract_comment",
    "is_server_subject",
    "own_text",
    "parse_line",
    "parse_mail",
    "reply_command",
    "strip_subject",
]
