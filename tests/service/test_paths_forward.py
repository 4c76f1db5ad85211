"""Every path forward works (issue 38): what a new player tripped over, played
through the service as a player does it (by Reply wherever a player would)."""

from __future__ import annotations

import pytest

from pbmserv_terrace.gametypes import move_example

from .harness import Harness, Reply, answer, mine


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben", "cat")
    yield harness
    harness.close()


def test_a_reply_to_an_error_mail_about_a_board_plays_the_corrected_move(h):
    ann = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    error = answer(h, ann, "a1-a3")
    assert [r.subject for r in error] == ["Terrace Board 101 Error"]
    assert "reply-to" in error[0].headers, "the error mail about board 101 carries its key"
    assert error[0].body.rstrip().endswith("on the first line; or resign, draw, undo, show, chat.")
    played = answer(h, error[0], move_example("terrace"))
    assert h.last is not None and h.last.status == "ok"
    assert any("ann played" in r.body for r in played)


def test_a_wrong_corrected_move_is_answered_again_but_prose_to_an_error_mail_is_not(h):
    ann = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    error = answer(h, ann, "a1-a3")
    again = answer(h, error[0], "a1-a4")
    assert [r.subject for r in again] == ["Terrace Board 101 Error"]
    assert answer(h, again[0], "I am out of the office until Monday.") == []


def test_an_error_mail_from_a_password_mail_carries_the_key_a_wrong_password_none(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    right = h.send("ann", "terrace move 101 ann pw-ann a1-a3")
    assert right[0].subject == "Terrace Board 101 Error" and "reply-to" in right[0].headers
    wrong = h.send("ann", "terrace move 101 ann not-her-password d2-e3")
    assert "reply-to" not in wrong[0].headers


def test_new_by_reply_starts_a_new_deal_for_the_keys_user_and_patience_errors_speak_patience(h):
    first = h.send("ann", "patience new ann pw-ann --deal=7")
    table = first[0]
    assert "reply-to" in table.headers
    bad = answer(h, table, "zz-qq")
    assert bad[0].subject.endswith("Error")
    assert "resign, draw" not in bad[0].body and "undo [COUNT], hint, show" in bad[0].body
    again = answer(h, table, "new --deal=8")
    assert h.last is not None and h.last.status == "ok", [r.body[:300] for r in again]
    assert again[0].subject.startswith("New Patience Board") and "ann" in again[0].subject
    assert "ann starts deal 8." in again[0].body


def example_in(mail: Reply) -> str:
    """The example move a board mail's reply line offers its player."""
    return mail.body.rsplit("(e.g. ", 1)[1].split(")")[0]


def test_games_without_a_game_word_lists_every_board_game_and_not_a_board_she_left(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.send("ann", "terrace6x6 challenge ann pw-ann ben")
    replies = h.send("ann", "terrace challenge ann pw-ann ben cat")
    for mover in ("ann", "ben", "cat"):  # one round, then ann resigns: the game goes on without her
        replies = h.move(103, mover, example_in(mine(replies, mover)))
    assert "ann" in h.move(103, "ann", "resign")[0].body
    listing = h.send("ann", "games ann")[0].body
    rows = [line.split()[:2] for line in listing.splitlines() if line[:1].isdigit()]
    assert ["101", "terrace"] in rows and ["102", "terrace6x6"] in rows
    assert ["103", "terrace"] not in rows, listing
    assert ["103", "terrace"] in [line.split()[:2] for line in h.send("ann", "games ann inactive")[0].body.splitlines()]
    only = h.send("ann", "terrace6x6 games ann")[0].body
    assert [line.split()[1] for line in only.splitlines() if line[:1].isdigit()] == ["terrace6x6"]


def test_a_reply_to_an_older_board_mail_says_what_was_not_played_and_the_ply_as_the_status_does(h):
    first = h.send("ann", "terrace challenge ann pw-ann ben")
    ann0 = mine(first, "ann")
    assert "It is ann's turn (army 1, t), ply 1." in ann0.body
    ben1 = mine(answer(h, ann0, example_in(ann0)), "ben")
    ann2 = mine(answer(h, ben1, example_in(ben1)), "ann")
    assert "It is ann's turn (army 1, t), ply 3." in ann2.body
    stale = answer(h, ann0, "f2-f3")
    assert stale[0].body.startswith(
        "Terrace Board 101: your move f2-f3 was not played: board 101 has moved on since the mail you answered "
        "(ply 3 is to play now)"
    ), stale[0].body[:300]
    assert "It is ann's turn (army 1, t), ply 3." in stale[0].body


def test_instructions_go_to_the_right_person(h):
    first = h.send("ann", "terrace challenge ann pw-ann ben")
    ben0 = mine(first, "ben")
    # the player not to move is shown a move of their own to queue
    queue = ben0.body.rsplit("(e.g. queue ", 1)[1].split(")")[0]
    assert "ann" not in queue and len(queue) >= 5
    assert "terrace move 101 YOURNAME YOURPASSWORD MOVE" in ben0.body and "ann PASSWORD" not in ben0.body
    queued = answer(h, ben0, f"queue {queue}")
    assert h.last is not None and h.last.status == "ok", [r.body[:300] for r in queued]
    # a draw offer to a robot: nobody is told how to answer for the robot
    robot = h.send("ann", "terrace challenge ann pw-ann robot1")
    offer = h.send("ann", "terrace move 102 ann pw-ann draw")
    assert offer and all("robot1 PASSWORD" not in r.body for r in offer), [r.body[:400] for r in offer]
    assert robot


def test_chat_by_reply_on_a_finished_board_does_not_offer_moves(h):
    first = h.send("ann", "terrace challenge ann pw-ann ben")
    over = mine(h.move(101, "ann", "resign"), "ben")
    chat = answer(h, over, "well played!")
    notes = [r for r in chat if "went to the board as chat" in r.subject]
    assert notes and "resign, draw" not in notes[0].body and "The game is over" in notes[0].body
    assert first


def test_the_new_board_html_has_a_whole_heading_and_folds_the_ascii_board(h):
    ann = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    html = ann.html
    heading = html.split("<h1", 1)[1].split(">", 1)[1].split("</h1>", 1)[0]
    assert heading == "Terrace Board 101: new board, it is ann&#39;s turn (army 1, t), ply 1", heading
    assert "<details" in html and html.index("<details") < html.index("<pre")


def test_the_embedded_default_links_each_board_mail_to_its_page_on_the_local_archive(h):
    assert h.config.web.link_base == "http://127.0.0.1:8080", "the harness runs the embedded default"
    ann = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    assert "This board on the web: http://127.0.0.1:8080/boards/terrace/101" in ann.body


def test_rematch_by_reply_starts_the_same_game_with_the_colours_swapped(h):
    replies = h.send("ann", "terrace challenge ann pw-ann ben -short")
    for mover in ("ann", "ben"):  # a round, so that a resignation ends the game (not removes the board)
        replies = h.move(101, mover, example_in(mine(replies, mover)))
    over = mine(h.move(101, "ann", "resign"), "ben")
    assert "Reply to this mail with rematch for a new game" in over.body
    again = answer(h, over, "rematch")
    assert h.last is not None and h.last.status == "ok", [r.body[:300] for r in again]
    ben = mine(again, "ben")
    assert ben.subject.startswith("New Terrace Board 102 ben") and "Players (short" in ben.body
    assert "It is ben's turn (army 1" in ben.body


def test_every_game_numbers_its_boards_from_one_series(h):
    terrace = h.send("ann", "terrace challenge ann pw-ann ben")
    six = h.send("ann", "terrace6x6 challenge ann pw-ann ben")
    deal = h.send("ann", "patience new ann pw-ann")
    subjects = [mine(terrace, "ann").subject, mine(six, "ann").subject, deal[0].subject]
    assert subjects == ["New Terrace Board 101 ann", "New Terrace6x6 Board 102 ann", "New Patience Board 103 ann"]


def test_the_html_part_links_the_board_on_the_web_as_the_text_part_does(h):
    ann = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    url = "http://127.0.0.1:8080/boards/terrace/101"
    assert f"This board on the web: {url}" in ann.body
    assert f'<a href="{url}"' in ann.html
    stale_source = mine(answer(h, ann, example_in(ann)), "ann")
    assert stale_source
    notice = answer(h, ann, example_in(ann))
    assert "was not played" in notice[0].body and f"This board on the web: {url}" in notice[0].body


def test_the_went_to_chat_notice_can_be_answered_with_the_move_it_offers(h):
    ann = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    notes = [r for r in answer(h, ann, "hello ben, good luck!") if "went to the board as chat" in r.subject]
    assert notes and "reply-to" in notes[0].headers
    move = example_in(notes[0])  # the reply line of the board mail: this position's example
    played = answer(h, notes[0], move)
    assert h.last is not None and h.last.status == "ok" and any("ann played" in r.body for r in played)


def test_pressing_reply_on_a_chat_mail_chats_back(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    chat = mine(h.send("ann", "terrace chat 101 ann pw-ann", "good luck!"), "ben")
    assert chat.subject == "Terrace Board 101 chat from ann" and "reply-to" in chat.headers
    back = answer(h, chat, "chat thanks, you too")
    assert h.last is not None and h.last.status == "ok"
    assert any(r.subject == "Terrace Board 101 chat from ben" for r in back)
