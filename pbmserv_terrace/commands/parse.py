"""Mail text → commands (COMMANDS.md §1): pure, no database, no network.

The parser only normalises and splits: it finds the command word (expanding
abbreviations and aliases), pulls out ``-param`` and ``--option=value`` tokens,
drops ``**`` and ``Re:``-style prefixes, picks the body line when the subject holds
no command, and cuts the comment out of the body.  Checking the arguments of each
command is the service's job, where the usage text lives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..gametypes import DEFAULT_GAME_TYPE, GAME_TYPES, TITLES_PATTERN, move_example
from .quotes import own_text
from .table import ACCOUNT_VERBS, ALIASES, GAME_VERBS, PREFIXES, commands_of, decl_of

MAX_WORDS = 200
"""A command never needs more words; more are refused as unreadable."""
PLAIN_WORDS = 20
"""a Subject of plain words ("Hi there") is a few: a longer one is refused as it
was, not answered with the help"""

_REPLY_PREFIX = re.compile(r"^\s*(?:(?:re|fwd?|aw|sv|wg|tr)\s*(?:\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_SERVER_ONLY = re.compile(
    rf"^(?:new\s+)?(?:{TITLES_PATTERN})\s+board\s+\d+(?:\s+\S+)?"
    r"(?:\s+(?:error|reminder|queue|submitted|subscribed|unsubscribed|hint))?$"
    rf"|^(?:{TITLES_PATTERN})\s+board\s+\d+\s+chat\s+from\s+\S+$"
    rf"|^(?:{TITLES_PATTERN})\s+(?:error|preview|summaries\s+\(\d+\s+boards\)|deal\s+of\s+the\s+day)$"
    r"|^broadcast from \S+ via .*$|^message from \S+ via .*$"
    r"|^[^:]{1,100}: how to play$",  # the short help (a mail of plain words gets it)
    re.IGNORECASE,
)
"""Subjects of server mails that are no command: a reply to one holds its command
in the body or nowhere."""
_SERVER_QUERY = re.compile(rf"^(?:{TITLES_PATTERN})\s+(?:help|games|standings|history)$", re.IGNORECASE)
"""Subjects of server mails that are also commands: a reply repeats the query."""


@dataclass
class Command:
    """One command as written: ``verb`` normalised, ``words`` its remaining arguments."""

    verb: str
    game_type: str | None = None
    """a name in :data:`GAME_TYPES` for game commands; None for account commands"""
    words: list[str] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    """``-long`` → ``long``"""
    options: dict[str, str] = field(default_factory=dict)
    """``--nagtime=3`` → ``{"nagtime": "3"}``"""
    comment: str = ""
    text: str = ""
    """the command line as the player wrote it (for error replies)"""
    stands_in: bool = False
    """the parser put this command in for a mail that holds none: the short help
    for a Subject of plain words (:func:`parse_mail`); its handler says so"""

    @property
    def is_game(self) -> bool:
        return self.game_type is not None


@dataclass
class ParsedMail:
    commands: list[Command]
    comment: str
    error: str | None = None
    """why nothing could be read; None when commands were found"""
    multiple: bool = False
    source_line: str = ""


def strip_subject(subject: str) -> str:
    """Drop reply prefixes (repeatable) and every ``**`` token."""
    text = _REPLY_PREFIX.sub("", subject)
    return " ".join(w for w in text.split() if w != "**")


def is_server_subject(text: str) -> bool:
    """``text`` (already stripped of ``Re:`` and ``**``) is the subject of a mail the
    server sends, so a reply keeps it without meaning it as a command."""
    text = text.strip()
    return bool(_SERVER_ONLY.match(text) or _SERVER_QUERY.match(text))


def _verb(word: str) -> str | None:
    w = word.lower()
    w = ALIASES.get(w, w)
    if w in ACCOUNT_VERBS or w in GAME_VERBS:
        return w
    for prefix, full in PREFIXES.items():
        if w.startswith(prefix) and full.startswith(w):
            return full
    return None


def looks_like_command(line: str) -> bool:
    words = strip_subject(line).split()
    if not words:
        return False
    first = words[0].lower()
    return first in GAME_TYPES or _verb(first) is not None


def parse_line(line: str, comment: str = "") -> Command | str:
    """One command line → :class:`Command`, or an error sentence."""
    raw = strip_subject(line)
    tokens = raw.split()
    if not tokens:
        return "the mail holds no command (put one in the Subject, e.g. 'help')"
    if len(tokens) > MAX_WORDS:
        return f"a command has at most {MAX_WORDS} words; this one has {len(tokens)}"
    words: list[str] = []
    params: list[str] = []
    options: dict[str, str] = {}
    for tok in tokens:
        if tok.startswith("--") and len(tok) > 2:
            key, _, value = tok[2:].partition("=")
            options[key.lower()] = value
        elif tok.startswith("-") and len(tok) > 1 and tok[1:].isalnum() and not tok[1:].isdigit():
            params.append(tok[1:].lower())
        else:
            words.append(tok)
    if not words:
        return "the mail holds no command (put one in the Subject, e.g. 'help')"
    first = words[0].lower()
    game_type: str | None = None
    if first in GAME_TYPES:
        game_type = first
        words = words[1:]
        if not words:
            return f"'{first}' needs a command after it, e.g. '{first} help'"
        verb = _verb(words[0])
        if verb is None or verb not in commands_of(first):
            return f"'{_clip(words[0])}' is not a {first} command; mail '{first} help' for the list"
    else:
        verb = _verb(first)
        if verb is None:
            return f"'{_clip(words[0])}' is not a command; mail 'help' for the list of commands"
        if verb not in ACCOUNT_VERBS:
            game_type = DEFAULT_GAME_TYPE  # the server's main game; 'move 101 …' means 'terrace move 101 …'
            named = words[1].lower() if len(words) > 1 else ""
            if named in GAME_TYPES and verb in commands_of(named):
                game_type, words = named, [words[0], *words[2:]]  # 'standings patience' = 'patience standings'
            if verb not in commands_of(game_type):
                owner = next(name for name in GAME_TYPES if verb in commands_of(name))
                return f"'{_clip(words[0])}' is a {owner} command: write '{owner} {verb} …' (mail '{owner} help')"
    return Command(verb=verb, game_type=game_type, words=words[1:], params=params, options=options, comment=comment, text=raw)


def _clip(word: str, limit: int = 40) -> str:
    return word if len(word) <= limit else word[:limit] + "…"


# ------------------------------------------------------------------ comments
NO_COMMAND = (
    "this mail holds no command: to play, reply with your move on the first line, or put a command in the "
    f"Subject, e.g. '{DEFAULT_GAME_TYPE} move 101 bob PASSWORD {move_example(DEFAULT_GAME_TYPE)}'; mail 'help' for the list"
)
"""The answer to a mail in which neither the Subject nor the body's first own line is
a command (a reply that only quotes, a server subject alone, an empty mail)."""


def extract_comment(body: str) -> str:
    """The player's own words (see :func:`.quotes.own_text`): one definition of
    "own text" for comments, for the command line in the body and for replies."""
    return own_text(body)


def parse_mail(subject: str, body: str) -> ParsedMail:
    """Subject and body → the commands to run (COMMANDS.md §1).

    The body's first own line is the command when the Subject holds none: it is
    empty, or only a server subject (``Re: Terrace Board 101 bob **``).  A server
    subject is never read as a command itself: "Terrace Board 101 bob" would be the
    ``board`` alias of ``move`` with its arguments missing, an answer that tells the
    player nothing.  With no command anywhere the answer says how to reply."""
    comment_text = own_text(body)
    stripped = strip_subject(subject)
    lines = comment_text.split("\n") if comment_text else []
    first_line = lines[0].strip() if lines else ""
    subject_free = not stripped or is_server_subject(stripped)
    if subject_free and first_line and looks_like_command(first_line):
        rest = "\n".join(lines[1:]).strip()
        parsed = parse_line(first_line, rest)
        if isinstance(parsed, str):
            return ParsedMail([], redact_text(rest), error=parsed, source_line=first_line)
        return _expand_multiple(parsed, rest, first_line)
    if not stripped or _SERVER_ONLY.match(stripped):
        return ParsedMail([], redact_text(comment_text), error=NO_COMMAND, source_line=stripped)
    parsed = parse_line(stripped, comment_text)
    if isinstance(parsed, str):
        if is_plain_words(subject):
            return ParsedMail([short_help(stripped)], redact_text(comment_text), source_line=stripped)
        return ParsedMail([], redact_text(comment_text), error=parsed, source_line=stripped)
    return _expand_multiple(parsed, comment_text, stripped)


def is_plain_words(subject: str) -> bool:
    """``subject`` is a new mail's few plain words ("Hi there", "Hello", "question"),
    with no command in it: its first word is neither a command nor a game, it
    has at most :data:`PLAIN_WORDS` words, and it holds no ':'.  So it answers nothing (every reply mark, ``Re:``, ``AW:``,
    ``Antw:``, ``Odp:``, holds one: a reply keeps its own answers, a reply that
    lost its key is still found by its In-Reply-To), and it is none of the
    server's notices (``PBM Server: …``, the short help's own subject among
    them): an automatic answer that sends one back is never given the help
    again, so nothing can loop."""
    text = strip_subject(subject)
    if not text or ":" in subject or len(text.split(maxsplit=PLAIN_WORDS)) > PLAIN_WORDS:
        return False  # (every Re:, AW:, Antw:, Odp: … holds a ':')
    return not looks_like_command(text) and not is_server_subject(text)


def short_help(line: str) -> Command:
    """The command that answers a mail of plain words: the general help, said to
    stand in for the command the mail lacks (nothing of the mail is quoted back:
    plain words may hold a password)."""
    return Command(verb="help", text=line, stands_in=True)


def _expand_multiple(cmd: Command, comment: str, line: str) -> ParsedMail:
    """``multiple`` reads its commands from the comment's first block; every
    comment that reaches the commands has its command lines' passwords masked
    (it may be chatted or quoted to other players)."""
    if cmd.verb != "multiple":
        cmd.comment = redact_text(cmd.comment)
        return ParsedMail([cmd], redact_text(comment), source_line=line)
    commands: list[Command] = []
    block, _, rest = comment.partition("\n\n")
    for raw_line in block.split("\n"):
        if not raw_line.strip():
            continue
        sub = parse_line(raw_line)
        if isinstance(sub, str):
            commands.append(Command(verb="invalid", text=raw_line.strip(), comment=sub))
        elif sub.verb == "multiple":
            commands.append(Command(verb="invalid", text=raw_line.strip(), comment="'multiple' cannot be nested"))
        else:
            sub.comment = redact_text(rest.strip())
            commands.append(sub)
    if not commands:
        return ParsedMail([], comment, error="'multiple' needs one command per line in the body, ending at the first blank line")
    return ParsedMail(commands, redact_text(rest.strip()), multiple=True, source_line=line)


# ------------------------------------------------------------------ redaction
MASK = "********"


def _password_words(line: str) -> tuple[list[str], set[str]] | None:
    """(the line's tokens, the tokens where its command's declaration says a
    password stands: :meth:`.table.CommandDecl.password_words`), or None when the
    line is no command.  A line of more than :data:`MAX_WORDS` words is read by
    its first words (it still carries a real password)."""
    tokens = strip_subject(line).split()
    cmd = parse_line(" ".join(tokens[:MAX_WORDS]) if len(tokens) > MAX_WORDS else line)
    if isinstance(cmd, str):
        return None
    decl = decl_of(cmd.game_type, cmd.verb)
    return tokens, decl.password_words(cmd.words) if decl is not None else set()


def may_hold_password(line: str) -> bool:
    """``line`` is a command with a word where its password goes: it must never
    be chatted or quoted as it is."""
    found = _password_words(line)
    return found is not None and bool(found[1])


def redact(line: str) -> str:
    """``line`` with the password words of its command masked, for quoting in
    replies and storing in logs (a wrong command still carries a real password)."""
    found = _password_words(line)
    if found is None or not found[1]:
        return line
    return " ".join(MASK if token in found[1] else token for token in line.split())


def redact_text(text: str) -> str:
    """Every line of ``text`` that is a command, its passwords masked: comments
    and chat go to other players and into the outbox, and a player may paste a
    command (``change password fay OLD NEW``) below the first line."""
    if not text:
        return text
    lines = text.split("\n")
    changed = False
    for i, line in enumerate(lines):
        if looks_like_command(line):
            masked = redact(line)
            if masked != line:
                lines[i], changed = masked, True
    return "\n".join(lines) if changed else text
