"""Mail text → command objects (COMMANDS.md §1).  Pure: imports only the standard library."""

from .parse import GAME_TYPES, Command, ParsedMail, extract_comment, is_server_subject, parse_line, parse_mail, strip_subject

__all__ = [
    "GAME_TYPES",
    "Command",
    "ParsedMail",
    "extract_comment",
    "is_server_subject",
    "parse_line",
    "parse_mail",
    "strip_subject",
]
