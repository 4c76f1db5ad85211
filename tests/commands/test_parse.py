"""COMMANDS.md §1: reading a mail into commands (pure, no database)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbmserv_terrace.commands import extract_comment, parse_line, parse_mail, strip_subject


def one(subject: str, body: str = ""):
    parsed = parse_mail(subject, body)
    assert parsed.error is None, parsed.error
    assert len(parsed.commands) == 1
    return parsed.commands[0]


def test_words_case_and_game_prefix():
    cmd = one("TERRACE Move 101 Alice SeCret d2-e3")
    assert (cmd.game_type, cmd.verb, cmd.words) == ("terrace", "move", ["101", "Alice", "SeCret", "d2-e3"])
    assert one("terrace6x6 show 101").game_type == "terrace6x6"


def test_double_star_and_reply_prefixes_dropped():
    cmd = one("Re: RE: Fwd: AW: SV: terrace move 101 bob pw d7-d6 **")
    assert cmd.words == ["101", "bob", "pw", "d7-d6"]
    assert strip_subject("Re: ** Terrace Board 101 bob **") == "Terrace Board 101 bob"


def test_params_and_options_pulled_out_anywhere():
    cmd = one("terrace challenge -short alice --nagtime=3 bob --forfeittime=9")
    assert cmd.words == ["alice", "bob"]
    assert cmd.params == ["short"]
    assert cmd.options == {"nagtime": "3", "forfeittime": "9"}


@pytest.mark.parametrize(
    ("subject", "verb"),
    [
        ("terrace chall a b", "challenge"),
        ("terrace challen a b", "challenge"),
        ("terrace prev 101 d2-e3", "preview"),
        ("terrace sub 101 a p", "subscribe"),
        ("terrace subscr 101 a p", "subscribe"),
        ("terrace unsub 101 a p", "unsubscribe"),
        ("terrace board 101 a p d2-e3", "move"),
        ("terrace mvoe 101 a p d2-e3", "move"),
        ("terrace ratings", "standings"),
        ("add bob pw", "signup"),
    ],
)
def test_abbreviations_and_aliases(subject, verb):
    assert one(subject).verb == verb


def test_game_commands_default_to_terrace():
    cmd = one("move 101 alice pw d2-e3")
    assert cmd.game_type == "terrace" and cmd.verb == "move"
    assert one("help").game_type is None  # the server's help, not the game's


def test_unknown_command_is_an_error_sentence():
    # (a new mail of plain words gets the short help instead: test_plain_words.py)
    parsed = parse_mail("Re: frobnicate 1 2 3", "")
    assert parsed.commands == [] and "'frobnicate' is not a command" in parsed.error
    assert "not a terrace command" in parse_mail("terrace signup x y", "").error


def test_comment_drops_signature_quotes_and_quoted_tail():
    body = "Nice move!\nSee you.\n\n> old line\n>> older\nOn Tue, 1 Jan 2026, Bob <b@x> wrote:\n> quoted\n"
    assert extract_comment(body) == "Nice move!\nSee you."
    assert extract_comment("Hi\n-- \nAlice, chess club\n") == "Hi"
    assert extract_comment("top\n-----Original Message-----\nFrom: x\n") == "top"
    assert extract_comment("   \n\n") == ""


def test_body_line_is_the_command_when_subject_has_none():
    parsed = parse_mail("", "terrace move 101 bob pw d7-d6\nGood game so far")
    assert parsed.commands[0].verb == "move" and parsed.commands[0].comment == "Good game so far"
    parsed = parse_mail("Re: Terrace Board 101 bob **", "terrace move 101 bob pw d7-d6\n\n> old board")
    assert parsed.commands[0].words == ["101", "bob", "pw", "d7-d6"]


def test_reply_subject_with_password_and_move_appended():
    cmd = one("Re: Terrace Board 101 bob pw d7-d6 **", "> quoted board\n")
    assert (cmd.verb, cmd.words) == ("move", ["101", "bob", "pw", "d7-d6"])


def test_multiple_runs_body_lines_until_blank():
    parsed = parse_mail("multiple", "terrace show 101\nbogus words\nhelp\n\nthe comment\n")
    assert parsed.multiple
    assert [c.verb for c in parsed.commands] == ["show", "invalid", "help"]
    assert parsed.commands[0].comment == "the comment"
    assert parse_mail("multiple", "").error


def test_too_many_words_refused():
    assert "at most" in parse_line("terrace show " + " ".join(["101"] * 500))


@given(st.text(max_size=300), st.text(max_size=2000))
def test_parser_never_raises(subject, body):
    parsed = parse_mail(subject, body)
    assert (parsed.error is None) == bool(parsed.commands)
