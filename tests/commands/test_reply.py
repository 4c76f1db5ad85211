"""Reply to play (issue 14): the sender's own text of a reply and the command in it,
on replies shaped as real clients write them (tests/data/replies/*.eml) and on
edge cases; and the parse_mail fix for bottom-posted and quote-only replies."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbmserv_terrace.commands import NO_COMMAND, REPLY_VERBS, own_text, parse_mail, reply_command
from pbmserv_terrace.commands.reply import _MOVE_SHAPE, compact_move
from pbmserv_terrace.games.terrace import NotationError, parse_move, start_position
from pbmserv_terrace.games.terrace.notation import _MOVE
from pbmserv_terrace.mail.message import parse_message

REPLIES = Path(__file__).resolve().parent.parent / "data" / "replies"

# file: (verb, argument, comment, implicit_chat, empty)
EXPECT: dict[str, tuple[str, str, str, bool, bool]] = {
    "thunderbird-bottom-move.eml": ("move", "e7-e6", "", False, False),
    "thunderbird-top-move-comment-signature.eml": ("move", "b7-b6", "I think this one is forced.", False, False),
    "thunderbird-german-bottom-accept.eml": ("accept", "", "Viele Grüße\nBob", False, False),
    "thunderbird-empty-reply.eml": ("chat", "", "", False, True),
    "thunderbird-bottom-full-command.eml": (
        "command",
        "terrace move 101 bob secret d7-d6",
        "Forgot the key, so the old way.",
        False,
        False,
    ),
    "gmail-web-top-move.eml": ("move", "d7-d6", "", False, False),
    "gmail-html-only-move.eml": ("move", "e7-e6", "", False, False),
    "gmail-android-top-implicit-chat.eml": (
        "chat",
        "",
        "nice move!\nDidn't see that coming. I'll think about it tonight.",
        True,
        False,
    ),
    "gmail-french-top-undo-qp.eml": ("undo", "", "Désolé, je me suis trompé de case.", False, False),
    "outlook-desktop-top-draw.eml": ("propose", "", "", False, False),
    "outlook-web-html-base64-move-comment.eml": ("move", "C-e7-e6", "Let’s see how you deal with that.", False, False),
    "outlook-german-top-reject-qp.eml": ("reject", "", "Ich möchte weiterspielen.", False, False),
    "apple-mail-top-move-comment-qp.eml": ("move", "e7e6", "That should hold the centre — your turn.", False, False),
    "ios-mail-top-resign.eml": ("resign", "", "", False, False),
    "k9-mail-bottom-chat.eml": ("chat", "", "good game, see you\nI'm on the train until Friday.", False, False),
    "webmail-base64-top-move-numbered.eml": ("move", "d7-d6#4", "", False, False),
    "horde-qp-top-queue.eml": ("queue", "e7-e6", "", False, False),
    "dutch-top-show.eml": ("show", "", "", False, False),
    "spanish-top-move-letter.eml": ("move", "Cd7-d6", "¡Suerte!", False, False),
}

BOARD_LINES = ("8 | D | D | C | C | B | B | A | T | 8", "It is bob's turn", "alice writes:", "wrote", "From:")


def test_every_fixture_has_an_expectation():
    assert sorted(EXPECT) == sorted(p.name for p in REPLIES.glob("*.eml"))


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_reply_fixture(name):
    mail = parse_message((REPLIES / name).read_bytes())
    assert mail.subject == "Re: Terrace Board 101 bob **"
    # the fixture really carries a copy of the board, so quote removal is tested
    assert "8 | D | D | C | C | B | B | A | T | 8" in mail.body
    assert "It is bob's turn" in mail.body
    got = reply_command(mail.body)
    verb, argument, comment, implicit, empty = EXPECT[name]
    assert (got.verb, got.argument, got.comment, got.implicit_chat, got.empty) == (verb, argument, comment, implicit, empty)
    text = own_text(mail.body)
    for line in BOARD_LINES:
        assert line not in text, (name, line)


@pytest.mark.parametrize("name", [n for n, e in EXPECT.items() if e[0] in ("move", "queue")])
def test_fixture_moves_are_read_by_the_notation(name):
    # The argument goes to parse_move after the service strips '#k': its shape must be accepted.
    argument = reply_command(parse_message((REPLIES / name).read_bytes()).body).argument
    move_text = argument.partition("#")[0]
    assert _MOVE.match(move_text), argument


# ------------------------------------------------------------------ own_text
BOARD = (
    "Terrace Board 101: alice played C-c2-d2\n\nIt is bob's turn (army 2, T), ply 4.\n\n    8 | D | D | C | C | B | B | A | T | 8"
)


def q(text: str, prefix: str = "> ") -> str:
    return "\n".join(prefix + line for line in text.split("\n"))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("e7-e6\n-- \nBob\nChess club", "e7-e6"),
        ("e7-e6\n--\nBob", "e7-e6"),
        ("e7-e6\n\nSent from my iPhone", "e7-e6"),
        ("e7-e6\n\nSent from my Samsung Galaxy smartphone.", "e7-e6"),
        ("e7-e6\nGet Outlook for Android", "e7-e6"),
        ("e7-e6\nGet Outlook for iOS<https://aka.example/o0ukef>", "e7-e6"),
        ("e7-e6\n\nVon meinem iPhone gesendet", "e7-e6"),
        ("e7-e6\n\nEnvoyé de mon iPhone", "e7-e6"),
        ("e7-e6\n\nSent from Yahoo Mail on Android", "e7-e6"),
        ("e7-e6\nSent from my desk at work, as usual", "e7-e6\nSent from my desk at work, as usual"),
    ],
)
def test_signatures_and_mobile_footers(body, expected):
    assert own_text(body + "\n\n> On Mon, bob wrote:\n" + q(BOARD)) == expected


def test_bottom_posted_text_after_the_quote_is_kept():
    body = "On 23/11/2026 10:02, Terrace PBM wrote:\n" + q(BOARD) + "\n\nresign\n\nWell played."
    assert own_text(body) == "resign\n\nWell played."


def test_interleaved_replies_keep_every_own_part():
    body = "On Mon, Terrace PBM wrote:\n> It is bob's turn\n\nd7-d6\n\n> alice writes:\n> Your turn\n\nThanks, you too."
    assert own_text(body) == "d7-d6\n\nThanks, you too."


def test_nested_and_spaced_quotes_dropped():
    body = "draw\n>> older\n> > also older\n   > indented quote\n>plain\nafter"
    assert own_text(body) == "draw\nafter"


def test_crlf_and_cr_line_ends():
    body = "undo\r\nsorry\r\n\r\nOn Mon, 23 Nov 2026 at 10:02, Terrace PBM <t@pbm.example> wrote:\r\n> board\r\n"
    assert own_text(body) == "undo\nsorry"
    assert own_text("undo\rsorry\r\r> x") == "undo\nsorry"


@pytest.mark.parametrize(
    "body", ["", "   \n\n", "> only\n> quotes", "On Mon, X wrote:\n> q", "-- \nsig only", "\n\nSent from my iPhone"]
)
def test_empty_reply(body):
    assert own_text(body) == ""
    assert reply_command(body).empty


def test_blank_line_runs_collapse():
    assert own_text("\n\na\n\n\n\n  \nb\n\n") == "a\n\nb"


@pytest.mark.parametrize(
    "attribution",
    [
        "On Mon, Nov 23, 2026 at 10:02 AM Terrace PBM <terrace+k@pbm.example> wrote:",
        "On Mon, Nov 23, 2026 at 10:02 AM Terrace PBM <\nterrace+k@pbm.example> wrote:",
        "On Mon, Nov 23, 2026 at 10:02 AM\nTerrace PBM <terrace+k@pbm.example>\nwrote:",
        "Am 23.11.2026 um 10:02 schrieb Terrace PBM:",
        "Am Mo., 23. Nov. 2026 um 10:02 Uhr schrieb Terrace PBM <terrace+k@pbm.example>:",
        "Le lun. 23 nov. 2026 à 10:02, Terrace PBM <terrace+k@pbm.example> a écrit :",
        "Op ma 23 nov. 2026 om 10:02 schreef Terrace PBM <terrace+k@pbm.example>:",
        "El lun, 23 nov 2026 a las 10:02, Terrace PBM (<terrace+k@pbm.example>) escribió:",
    ],
)
def test_attributions_top_posted_with_quote_or_unquoted_original(attribution):
    # with a '>' quote after it, and with the original pasted unquoted (HTML made text)
    assert own_text(f"d7-d6\nok\n\n{attribution}\n\n" + q(BOARD)) == "d7-d6\nok"
    assert own_text(f"d7-d6\nok\n\n{attribution}\n\n{BOARD}") == "d7-d6\nok"
    # bottom-posted: the attribution and the quote go, the reply below stays
    assert own_text(f"{attribution}\n" + q(BOARD) + "\n\nd7-d6") == "d7-d6"


@pytest.mark.parametrize(
    "separator",
    [
        "-----Original Message-----",
        "----- Original Message -----",
        "-----Ursprüngliche Nachricht-----",
        "-------- Forwarded Message --------",
        "________________________________\nFrom: Terrace PBM <terrace+k@pbm.example>\nSent: Monday, November 23, 2026 10:02 AM\nTo: bob\nSubject: Terrace Board 101 bob **",
        "From: Terrace PBM <terrace+k@pbm.example>\nSent: Monday, November 23, 2026 10:02 AM\nTo: bob\nSubject: Terrace Board 101 bob **",
        "________________________________\n\nFrom: Terrace PBM\n\nSent: Monday\n\nTo: bob\n\nSubject: x",
        "De : Terrace PBM <terrace+k@pbm.example>\nEnvoyé : lundi 23 novembre 2026 10:02\nÀ : bob\nObjet : Terrace Board 101 bob **",
        "Von: Terrace PBM\nGesendet: Montag, 23. November 2026 10:02\nAn: bob\nBetreff: Terrace Board 101 bob **",
    ],
)
def test_outlook_unquoted_original_cut(separator):
    assert own_text(f"draw\nplease\n\n{separator}\n\n{BOARD}\n\nmore original") == "draw\nplease"


def test_prose_that_resembles_headers_is_kept():
    body = "From: my side it looks lost.\nHere is what I wrote:\nnothing more\n_____________\nthanks"
    assert own_text(body) == body
    # "X wrote:" without a date counts only when a quote follows
    assert own_text("d7-d6\nTerrace PBM <t@pbm.example> wrote:\n> board\n\nbye") == "d7-d6\n\nbye"


@given(st.text(max_size=2000))
def test_own_text_and_reply_command_never_raise(body):
    text = own_text(body)
    assert text == text.strip()
    assert "\n\n\n" not in text
    got = reply_command(body)
    assert got.verb in REPLY_VERBS
    assert got.empty == (text == "")


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n>"), max_size=40), max_size=8))
def test_quoted_lines_never_reach_own_text(quoted):
    body = "e7-e6\n" + "\n".join("> QUOTED " + line for line in quoted)
    assert own_text(body) == "e7-e6"


# ------------------------------------------------------------- reply_command
@pytest.mark.parametrize(
    ("first", "verb", "argument"),
    [
        ("e7-e6", "move", "e7-e6"),
        ("E7-E6.", "move", "E7-E6"),
        ("e7-e6!", "move", "e7-e6"),
        ("C-e7-e6", "move", "C-e7-e6"),
        ("e7-e6#8", "move", "e7-e6#8"),
        ("b4-c3:C", "move", "b4-c3:C"),
        ("e7e6", "move", "e7e6"),
        ("e7 \u2013 e6", "move", "e7-e6"),
        ("Cd7\u2014d6 #9", "move", "Cd7-d6#9"),
        ("move e7-e6", "move", "e7-e6"),
        ("queue e7-e6", "queue", "e7-e6"),
        ("Queue C-e7-e6.", "queue", "C-e7-e6"),
        ("resign", "resign", ""),
        ("Resign.", "resign", ""),
        ("RESIGN!", "resign", ""),
        ("draw", "propose", ""),
        ("Offer draw", "propose", ""),
        ("propose", "propose", ""),
        ("accept", "accept", ""),
        ("reject", "reject", ""),
        ("Decline.", "reject", ""),
        ("undo", "undo", ""),
        ("show", "show", ""),
        ("terrace move 101 bob pw d7-d6", "command", "terrace move 101 bob pw d7-d6"),
        ("move 101 bob pw d7-d6", "command", "move 101 bob pw d7-d6"),
        ("resign 101 bob pw", "command", "resign 101 bob pw"),
        ("chat 101 bob pw", "command", "chat 101 bob pw"),
        ("Help.", "command", "Help"),
        ("help terrace", "command", "help terrace"),
    ],
)
def test_reply_forms(first, verb, argument):
    got = reply_command(f"{first}\nthe comment\n\n> quoted board")
    assert (got.verb, got.argument, got.comment, got.implicit_chat, got.empty) == (verb, argument, "the comment", False, False)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("chat good game, see you", "good game, see you"),
        ("Chat: good game\nsee you", "good game\nsee you"),
        ("chat\nline one\nline two", "line one\nline two"),
        ("chat good game!\n-- \nBob", "good game!"),
    ],
)
def test_chat_message_is_rest_of_line_and_following_lines(body, message):
    got = reply_command(body)
    assert (got.verb, got.comment, got.implicit_chat) == ("chat", message, False)


@pytest.mark.parametrize(
    "first",
    [
        "nice move!",
        "resign?",
        "I resign tomorrow",
        "draw?",
        "e7-e6 is bold",
        "chatting later",
        "All the best",
        "queue up",
        "d7-",
        "History is on my side",
    ],
)
def test_anything_else_is_an_implicit_chat(first):
    got = reply_command(f"{first}\nsecond line\n\n> On Mon, X wrote:\n> board")
    assert (got.verb, got.argument, got.implicit_chat) == ("chat", "", True)
    assert got.comment == f"{first}\nsecond line"


def test_a_full_command_is_never_chatted():
    # it carries a password: the service runs it as a mail command instead
    got = reply_command("terrace move 101 bob s3cret d7-d6")
    assert got.verb == "command" and not got.implicit_chat and "s3cret" not in got.comment


@pytest.mark.parametrize(
    "text", ["d7-d6", "D7D6", "Cd7-d6", "c-d7-d6", "d7 - d6", "d7\u2013d6", "b4-c3:C", "b4c3:c", "C - b4 - c3 : C"]
)
def test_reply_move_shape_agrees_with_the_notation(text):
    # what reply_command calls a move, parse_move reads (legality aside), after compacting
    assert _MOVE_SHAPE.match(text)
    assert _MOVE.match(compact_move(text))
    assert _MOVE.match(text)


@pytest.mark.parametrize("text", ["d7--d6", "d7-d6-d5", "x-d7-d6", "d7", "resign", "d7_d6"])
def test_reply_move_shape_refuses_what_the_notation_refuses(text):
    assert not _MOVE_SHAPE.match(text)
    with pytest.raises(NotationError, match="is not a move"):
        parse_move(start_position(), text)


# ------------------------------------------------------------ parse_mail fix
SERVER_SUBJECT = "Re: Terrace Board 101 bob **"


def test_bottom_posted_command_after_the_quote():
    body = "On 23/11/2026 10:02, Terrace PBM wrote:\n" + q(BOARD) + "\n\nterrace move 101 bob secret d7-d6\nyour turn"
    parsed = parse_mail(SERVER_SUBJECT, body)
    assert parsed.error is None
    [cmd] = parsed.commands
    assert (cmd.verb, cmd.words, cmd.comment) == ("move", ["101", "bob", "secret", "d7-d6"], "your turn")


def test_bottom_posted_fixture_through_parse_mail():
    mail = parse_message((REPLIES / "thunderbird-bottom-full-command.eml").read_bytes())
    [cmd] = parse_mail(mail.subject, mail.body).commands
    assert (cmd.verb, cmd.words) == ("move", ["101", "bob", "secret", "d7-d6"])
    assert cmd.comment == "Forgot the key, so the old way."


@pytest.mark.parametrize(
    "subject",
    [
        SERVER_SUBJECT,
        "Re: New Terrace Board 101 alice **",
        "AW: Terrace Board 101 Error",
        "Re: Terrace error",
        "Re: Message from ann via PBM",
        "",
    ],
)
@pytest.mark.parametrize("body", ["> " + BOARD.replace("\n", "\n> "), "", "nice move!\n\n> quoted"])
def test_server_subject_alone_is_no_command(subject, body):
    parsed = parse_mail(subject, body)
    assert parsed.commands == []
    assert parsed.error == NO_COMMAND
    assert "missing arguments" not in parsed.error


def test_server_query_subjects_stay_commands():
    # 'Terrace help' is both a server subject and a command: a reply repeats the query
    assert [c.verb for c in parse_mail("Re: Terrace help", "> the help text").commands] == ["help"]
    assert [c.verb for c in parse_mail("terrace games", "").commands] == ["games"]


def test_comment_of_a_subject_command_is_cut_like_own_text():
    body = "Good luck!\n\nSent from my iPhone\n\n> On 23 Nov 2026, at 10:02, Terrace PBM wrote:\n> board"
    [cmd] = parse_mail("terrace move 101 bob pw d7-d6", body).commands
    assert cmd.comment == "Good luck!"


def test_a_capture_written_with_x_is_a_move_not_chat():
    """Breakthrough writes a capture ``d4xe5`` (its move list, its help): a reply of
    that form is a move (it was chatted to the opponent)."""
    from pbmserv_terrace.commands.reply import reply_command

    for text in ("d4xe5", "d4 x e5", "D4XE5"):
        said = reply_command(text)
        assert (said.verb, said.argument.lower()) == ("move", "d4xe5"), text
    assert reply_command("xylophone practice tonight").verb == "chat"
