"""Every mail tells the player what to do next (issue 15): one test per defect
found by playing as a new user (items 1–14)."""

from __future__ import annotations

import re

import pytest

from pbmserv_terrace.games.terrace import parse_tpn

from .harness import Harness, mine
from .test_reply_keys import board_tpn


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben", "cat", "dan")
    yield harness
    harness.close()


def test_1_a_challenge_comment_is_signed_with_the_userid_and_no_address_leaks(h):
    replies = h.send("ben", "terrace challenge ben pw-ben ann ben", "Good luck!")
    for r in replies:
        assert "ben writes:" in r.body and "@players.test" not in r.body


@pytest.mark.parametrize(("game", "setup", "players"), [("terrace", "-short", 2), ("terrace", "-medium", 2), ("terrace", "", 3),
                                                         ("terrace", "", 4), ("terrace6x6", "-long", 2), ("terrace6x6", "", 4)])  # fmt: skip
def test_2_the_new_board_example_is_legal_on_that_board(h, game, setup, players):
    names = ["ann", "ben", "cat", "dan"][:players]
    ann = mine(h.send("ann", f"{game} challenge ann pw-ann {' '.join(names[1:])} {setup}"), "ann")
    example = re.search(r"with your move \(e\.g\. (\S+)\) on the first line", ann.body)
    assert example is not None
    pos = parse_tpn(board_tpn(h) if game == "terrace" else _tpn6(h))
    legal = {f"{pos.geo.name(m.frm)}-{pos.geo.name(m.to)}" for m in pos.legal_moves()}
    assert example.group(1) in legal


def _tpn6(h: Harness) -> str:
    from pbmserv_terrace.store import UnitOfWork

    async def run() -> str:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace6x6", 101)
            assert game is not None
            return game.position

    return h.loop.run_until_complete(run())


def test_3_hints_name_the_game_type(h):
    h.send("ann", "terrace6x6 challenge ann pw-ann ben -long")
    pos = parse_tpn(_tpn6(h))
    for _ in range(14):  # more rounds than a routine mail lists
        move = pos.legal_moves()[0]
        last = h.move(
            101, "ann" if pos.to_move == 1 else "ben", f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}", game="terrace6x6"
        )
        pos = parse_tpn(_tpn6(h))
        if pos.outcome() is not None:
            break
    assert "'terrace6x6 show 101' lists all" in last[0].body and "'show 101' lists all" not in last[0].body


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Re: Message from ann via PBM Server", "to answer ann, mail 'message YOURID PASSWORD ann'"),
        ("Re: Terrace Board 103 chat from ann", "to chat back to ann, reply 'chat' and your text"),
        ("Re: Terrace Board 103 finished **", "to play on board 103, reply to your newest board mail"),
        ("Re: PBM Server: password changed", "this mail holds no command"),
    ],
)
def test_4_a_reply_to_a_server_mail_that_is_no_board_mail(h, subject, expected):
    r = h.send("ben", subject, "thanks!\n\n> the quoted mail")
    assert "this mail holds no command" in r[0].body and expected in r[0].body
    assert "not correct" not in r[0].body and "missing arguments" not in r[0].body


def test_5_the_missing_argument_is_named(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    r = h.send("ann", "Re: Terrace Board 101 ann d2-e3 **")
    assert r[0].body.startswith("the password is missing")
    assert h.send("ann", "signup zed")[0].body.startswith("the password is missing")
    assert h.send("ann", "terrace move 101")[0].body.startswith("the userid, the password and the move are missing")


def test_6_a_long_chat_is_cut_at_a_word_with_a_note_and_the_sender_is_told(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    r = h.send("ben", "terrace chat 101 ben pw-ben", "hello " * 5000)
    chat = next(m for m in r if m.to.startswith("ann") and "chat from ben" in m.subject)
    assert re.search(r"hello\n\[… message shortened: [\d,]+ characters left out\]", chat.body)
    assert any("shortened" in m.subject and m.to.startswith("ben") for m in r)


def test_7_seeking_players_show_and_can_be_challenged(h):
    h.send("ann", "terrace reject ann pw-ann")
    h.send("ann", "terrace seek ann pw-ann 1")
    assert "ann              wants 1 more game" in h.send("ben", "terrace standings")[0].body
    assert "New Terrace Board 101" in h.send("ben", "terrace challenge ben pw-ben ann")[0].subject
    assert "wants" not in h.send("ben", "terrace standings")[0].body  # the one game sought is found
    assert "not accepting challenges" in h.send("ben", "terrace challenge ben pw-ben ann")[0].body


def test_8_previews_are_consistent(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "d2-e3")
    h.move(101, "ben", "d7-d6")
    sub = h.send("ann", "terrace submit 101 ann pw-ann e3-e4")[0].body
    assert "It is ben's turn (army 2, T), ply 4." in sub and "2. C-e3-e4 (submitted)" in sub
    pre = h.send("ann", "terrace preview 101 e3-e4")[0].body
    assert "1. C-d2-e3" in pre and "B-d7-d6" in pre and "2. C-e3-e4 (tried)" in pre
    wrong = h.send("ann", "terrace preview 101#1 e3-e4")[0].body
    assert "after ply 1 it is ben's turn: army 2, T" in wrong
    assert "Preview of a new Terrace board for 2 players (long)" in h.send("ann", "terrace preview new 2 d2-e3")[0].body


@pytest.mark.parametrize("written", ["d2e3", "d2–e3", "Cd2-e3", "d2 - e3", "D2-E3"])
def test_9_move_notation_forms(h, written):
    h.send("ann", "terrace challenge ann pw-ann ben")
    r = h.send("ann", f"terrace move 101 ann pw-ann {written}")
    assert "ann played C-d2-e3" in r[0].body


def test_10_an_illegal_move_says_where_the_piece_can_go(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    r = h.move(101, "ann", "d2-d5")
    assert re.search(r"the C on d2 can go to [a-h]\d", r[0].body) or "this piece has no legal move" in r[0].body


def test_11_votes_say_how_to_answer(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "d2-e3")
    r = h.move(101, "ben", "undo")
    ann = mine(r, "ann")
    assert "ben asks to undo the last ply" in ann.body
    assert "To answer: terrace move 101 ann PASSWORD accept (or reject)" in ann.body
    assert ann.body.rstrip().splitlines()[-1].startswith("Reply to this mail with accept or reject")


def test_12_games_next_knows_the_sender_and_show_says_what_is_what(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    assert "Terrace boards of ann (next)" in h.send("ann", "terrace games next")[0].body
    body = h.send("ann", "terrace show 101 xxx")[0].body
    assert body.startswith("101 is a board and xxx is no user")


def test_13_the_heights_are_in_the_help(h):
    board = h.send("ann", "help board")[0].body
    assert "  1 | 1 2 3 4 5 6 7 8" in board and "  8 | 8 7 6 5 4 3 2 1" in board
    assert "  1 | 1 2 3 4 5 6" in h.send("ann", "terrace6x6 help")[0].body


def test_14_standings_options_plurals_help_and_userids(h):
    h.send("ann", "terrace challenge ann pw-ann ben -short --nagtime=1 --forfeittime=2")
    r = h.send("ann", "terrace show 101")[0].body
    assert "forfeit after 2 days, reminder after 1 day" in r and "forfeittime 2.0" not in r
    assert "1 active board\n" in h.send("ann", "list")[0].body
    six = h.send("ann", "terrace6x6 help")[0].body
    assert "there is no D on 6x6" in six
    assert "the letters a-z (no accents)" in h.send("zoe@x.test", "signup zoë pw")[0].body
    assert "Boards  Limit" in h.send("ann", "terrace standings")[0].body or "(none)" in h.send("ann", "terrace standings")[0].body
