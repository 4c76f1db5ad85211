"""A new mail whose Subject is plain words, no command at all, is answered with
the short help (issue 38 item 13): the parser puts a ``help`` in its place.
Replies, notices sent back, real commands with errors keep their answers."""

from __future__ import annotations

import pytest

from pbmserv_terrace.commands import NO_COMMAND, parse_line, parse_mail
from pbmserv_terrace.commands.parse import is_plain_words


@pytest.mark.parametrize("subject", ["Hi there", "Hello", "question", "How do I play?", "frobnicate 1 2 3", " hi ** "])
def test_plain_words_stand_for_the_short_help(subject):
    parsed = parse_mail(subject, "my password is hunter2\n\nbye")
    assert parsed.error is None and len(parsed.commands) == 1
    cmd = parsed.commands[0]
    assert (cmd.verb, cmd.game_type, cmd.words, cmd.stands_in) == ("help", None, [], True)
    assert isinstance(parse_line(subject), str)  # (the line alone is still an error sentence)


@pytest.mark.parametrize(
    "subject",
    [
        "Re: Hi there",  # an answer: it keeps the error (and a lost reply key is found by In-Reply-To)
        "AW: hello",
        "Antw: Terrace Board 101 ann",
        "Question: how do I play",
        "PBM Server: how to play",  # the short help's own subject, sent back by a responder
        "Re: PBM Server: password changed",
        "terrace hello",  # a game with an unknown command
        "terrace",
    ],
)
def test_answers_notices_and_game_words_keep_their_error(subject):
    parsed = parse_mail(subject, "")
    assert parsed.commands == [] and parsed.error


def test_empty_and_server_subjects_still_say_how_to_reply():
    assert parse_mail("", "Hello, how do I play?").error == NO_COMMAND
    assert parse_mail("Terrace Board 101 ann **", "> quoted").error == NO_COMMAND


def test_commands_are_never_plain_words():
    for subject in ("help", "signup ann pw", "move 101 ann pw d2-e3", "chall ann pw ben", "terrace help", "status ann pw"):
        assert not is_plain_words(subject), subject
        assert not any(c.stands_in for c in parse_mail(subject, "").commands)
    assert parse_mail("status ann", "").commands[0].verb == "status"
