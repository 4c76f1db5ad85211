"""The command table (issue 37): every command declared once, and everything that
reads it (the parser, the password masking, the handlers, the ordering keys, the
help) agreeing with it.  The cases are generated from the table, so a new
command is covered as soon as it is declared."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from pbmserv_terrace.commands import Command, parse_line
from pbmserv_terrace.commands.parse import may_hold_password, redact
from pbmserv_terrace.commands.table import (
    ACCOUNT_VERBS,
    ALIASES,
    FAMILY_COMMANDS,
    GAME_VERBS,
    PREFIXES,
    CommandDecl,
    commands_of,
    decl_of,
    help_commands_template,
)
from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.service.core import Service
from pbmserv_terrace.service.registry import build_registry
from pbmserv_terrace.service.spec import command

GAMES: list[str | None] = [None, *GAME_TYPES]
DECLS = [(game, decl) for game in GAMES for decl in commands_of(game).values()]
PASSWORD = "Pw-secret1"
NEW_PASSWORD = "Pw-new2"
FILL = {
    "BOARD": "101", "USERID": "ann", "USERID1": "ann", "USERID2": "bob", "OPPONENT": "bob", "TO_USERID": "bob",
    "PASSWORD": PASSWORD, "NEWPASSWORD": NEW_PASSWORD, "MOVE": "d2-e3", "PLAYERS": "2", "CARD": "7h", "KEY": "k" * 23,
}  # fmt: skip


def _form_words(form: str) -> list[str]:
    """A usage form as a player would write it: placeholders filled in, optional
    parts and notes left out, the first of each choice."""
    form = re.sub(r"\s\s\(.*\)$", "", form.strip())  # a note after two spaces
    words: list[str] = []
    depth = 0
    for token in form.split():
        opening, closing = token.count("["), token.count("]")
        if depth or token.startswith("["):
            depth += opening - closing
            continue
        word = re.sub(r"\[.*$", "", token).split("|")[0]  # MOVE[#k] → MOVE; on|off → on
        if word in ("...", "…"):
            continue
        words.append(FILL.get(word, word))
    return words


def _cases() -> list[tuple[str | None, CommandDecl, str, list[str]]]:
    cases = []
    for game, decl in DECLS:
        for form in decl.usage.split(" | "):
            words = _form_words(form)
            line = " ".join([game, *words] if game else words)
            cases.append((game, decl, line, words[1:]))
    return cases


CASES = _cases()


@pytest.mark.parametrize(("game", "decl", "line", "words"), CASES, ids=[c[2] for c in CASES])
def test_each_declared_password_is_masked(game, decl, line, words):
    """Each form of each usage line, filled in: the parser reads it as the declared
    command, the password stands where the declaration says, and ``redact`` masks
    it (and ``change password``'s new one)."""
    cmd = parse_line(line)
    assert isinstance(cmd, Command), cmd
    assert (cmd.game_type, cmd.verb) == (game, decl.verb)
    if PASSWORD in words:
        assert decl.password_index(cmd.words) == words.index(PASSWORD)
        assert PASSWORD not in redact(line) and may_hold_password(line)
        if decl.authenticates:
            assert decl.credentials(cmd.words) == (words[words.index(PASSWORD) - 1], PASSWORD)
    else:
        assert decl.credentials(cmd.words) is None
    if NEW_PASSWORD in words:
        assert NEW_PASSWORD not in redact(line)


def test_every_declaration_has_a_usage_form_with_its_password():
    """A command with a password shows it in its usage (the cases above then check it)."""
    for game, decl in DECLS:
        if decl.password_at is not None:
            assert any(PASSWORD in words for g, d, _, words in CASES if (g, d) == (game, decl)), (game, decl.verb)


def test_every_verb_the_parser_accepts_has_one_declaration_and_one_handler():
    registry = build_registry()
    words = {*ACCOUNT_VERBS, *GAME_VERBS, *ALIASES, *PREFIXES}
    seen: set[tuple[str | None, str]] = set()
    for game in GAMES:
        for word in sorted(words):
            cmd = parse_line(f"{game} {word}" if game else word)
            if isinstance(cmd, str):
                continue
            family = GAME_TYPES[cmd.game_type].family if cmd.game_type else None
            decl = decl_of(cmd.game_type, cmd.verb)
            assert decl is not None, (game, word)
            own = [d for d in FAMILY_COMMANDS[family] if d.verb == cmd.verb]
            assert len(own) == (0 if decl.runs else 1), (game, word)
            assert (registry.handler(cmd) is not None) == decl.handled, (game, word)
            seen.add((cmd.game_type, cmd.verb))
    assert seen == {(game, verb) for game in GAMES for verb in commands_of(game)}


def test_build_registry_refuses_a_handler_without_a_declaration():
    module = types.ModuleType("fake_handlers")

    @command("frobnicate", game=True)
    async def frobnicate(ctx, cmd):  # pragma: no cover - never run
        return None

    frobnicate.__module__ = module.__name__
    module.frobnicate = frobnicate
    with pytest.raises(ValueError, match=r"board command 'frobnicate'") as caught:
        build_registry((module,))
    # and every declared command is then without its handler
    assert "declarations without a handler" in str(caught.value) and "'move'" in str(caught.value)


def test_build_registry_binds_every_declaration():
    registry = build_registry()
    for game, decl in DECLS:
        if decl.handled:
            assert registry.handler(Command(verb=decl.verb, game_type=game)) is not None, (game, decl.verb)


def test_per_board_commands_name_board_user_password_first():
    """``Service.conflict_keys`` reads BOARD and USERID of a per-board command."""
    for game, decl in DECLS:
        if decl.per_board:
            assert game is not None
            first = decl.usage.split(" | ")[0].split()
            assert first[:4] == [decl.verb, "BOARD", "USERID", "PASSWORD"], (game, decl.verb)


def test_help_commands_is_generated_from_the_declarations():
    path = Path(__file__).resolve().parents[2] / "templates" / "help_commands.txt"
    assert path.read_text() == help_commands_template(), (
        "templates/help_commands.txt is written from commands/table.py: run\n"
        '.venv/bin/python -c "from pbmserv_terrace.commands.table import help_commands_template as t; '
        "print(t(), end='')\" > templates/help_commands.txt"
    )


HELPED_ELSEWHERE = {("board", "resign"), ("board", "list"), ("solitaire", "help")}
"""in the help under another command (``move N U P resign``, the account ``list``),
or the help itself"""


def test_every_command_is_in_the_help():
    for game, decl in DECLS:
        assert decl.help or (decl.family, decl.verb) in HELPED_ELSEWHERE, (game, decl.verb)


@pytest.mark.parametrize(("game", "decl", "line", "words"), CASES, ids=[c[2] for c in CASES])
def test_the_ordering_keys_follow_per_board(game, decl, line, words):
    """A per-board command runs beside other boards' mails, keyed by its board and
    user; every other command runs alone."""
    keys = Service.conflict_keys(InboundMail(sender="ann@x.test", subject=line, body="", message_id="<1@x>"))
    if decl.per_board and words[:1] == ["101"]:
        assert keys == {"from:ann@x.test", f"board:{game}:101", "user:ann"}
    elif decl.handled:  # (``multiple`` without a body holds no command)
        assert keys is None
