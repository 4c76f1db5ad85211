"""Newcomer wording (issue 38 item 13): a mail of plain words gets the short help,
``status`` answers with your boards, settings and ratings, the welcome mail and
the tutorial teach Reply, and ``rematch`` starts the same game again with the
colours swapped."""

from __future__ import annotations

import pytest

from pbmserv_terrace.commands import reply_command
from pbmserv_terrace.games.terrace import parse_tpn
from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.store import UnitOfWork
from pbmserv_terrace.store.models import ROBOTS

from .harness import Harness, mine
from .test_reply_keys import board_tpn

SHORT_HELP = "Your mail did not start with a command, so here is how to play:"


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben", "cat", "dan")
    yield harness
    harness.close()


# ------------------------------------------------------------- 1. short help
@pytest.mark.parametrize("subject", ["Hi there", "Hello", "question", "How do I play?", "frobnicate 1 2 3"])
def test_plain_words_get_the_short_help_not_an_error(h, subject):
    r = h.send("newbie", subject, "Hello, my password would be hunter2.\nHow does this work?")
    assert len(r) == 1 and r[0].to == "newbie@players.test"
    assert r[0].body.startswith(SHORT_HELP)
    assert "help commands" in r[0].body and "signup YOURNAME YOURPASSWORD" in r[0].body
    assert "is not a command" not in r[0].body and "error" not in r[0].subject.lower()
    assert "hunter2" not in r[0].body  # nothing of the mail is quoted back


def test_real_errors_stay_errors(h):
    assert h.send("ann", "terrace move 101")[0].body.startswith("the userid, the password and the move are missing")
    assert "not correct" in h.send("ann", "signoff ann wrong")[0].body
    assert "not a terrace command" in h.send("ann", "terrace hello")[0].body
    # a reply to a server notice still says how to answer it
    r = h.send("ben", "Re: PBM Server: password changed", "thanks!")
    assert "this mail holds no command" in r[0].body and SHORT_HELP not in r[0].body


def test_the_short_help_never_loops(h):
    # automatic mail is never answered
    assert h.send("newbie", "Hi there", extra={"Auto-Submitted": "auto-replied"}) == []
    assert h.send("MAILER-DAEMON@players.test", "Hello") == []
    # a responder that sends our subject back (with or without Re:) gets nothing
    first = h.send("newbie", "Hi there")[0]
    assert first.subject == "PBM Server: how to play"
    for subject in (first.subject, "Re: " + first.subject):
        assert h.send("newbie", subject, "I am away.\n\n> " + first.body[:40]) == []
    # a 10,000-word subject is no greeting: refused as before
    assert "at most 200 words" in h.send("newbie", " ".join(["word"] * 10_000))[0].body


def test_a_reply_to_the_short_help_may_hold_its_command_in_the_body(h):
    first = h.send("newbie", "Hello")[0]
    r = h.send("newbie", "Re: " + first.subject, "signup newbie pw-newbie\n\n> " + first.body[:40])
    assert len(r) == 1 and "Welcome to PBM Server, newbie!" in r[0].body


# ----------------------------------------------------------------- 2. status
def test_status_lists_boards_yours_first_settings_and_ratings(h):
    h.challenge("ben", "ann")  # 101: ben to move
    h.challenge("ann", "cat", "dan")  # 102: ann to move
    h.send("ann", "patience new ann pw-ann")
    h.send("ann", "terrace vacation ann pw-ann on")
    r = h.send("ann", "status ann pw-ann")
    assert len(r) == 1 and r[0].to == "ann@players.test"
    body = r[0].body
    assert body.index("terrace 102") < body.index("terrace 101")  # your turn first
    line101 = next(line for line in body.splitlines() if "terrace 101" in line)
    line102 = next(line for line in body.splitlines() if "terrace 102" in line)
    assert "ben" in line101 and "ben to move" in line101
    assert "cat" in line102 and "dan" in line102 and "your turn" in line102
    assert any("patience" in line and "your turn" in line for line in body.splitlines())
    assert "Pictures in board mails:   on" in body and "Vacation:                  on" in body
    assert "Mail when games end:       off" in body and "ann@players.test (confirmed)" in body
    assert "Ratings:" in body and "none yet" in body


def test_status_is_private_it_needs_the_password(h):
    assert h.send("ben", "status ann")[0].body.startswith("the password is missing")
    assert "not correct" in h.send("ben", "status ann pw-ben")[0].body
    assert "status U P" in h.send("ann", "help commands")[0].body


# ---------------------------------------------------------------- 3. welcome
def test_the_welcome_mail_teaches_reply_robots_patience_and_the_games(h):
    body = h.send("zed", "signup zed pw-zed")[0].body
    assert "Welcome to PBM Server, zed!" in body
    assert "press Reply" in body and "first line" in body
    robot = sorted(ROBOTS)[0]
    assert f"challenge zed PASSWORD {robot}" in body and all(r in body for r in ROBOTS)
    solitaire = next(g.name for g in GAME_TYPES.values() if g.family == "solitaire")
    assert f"{solitaire} new zed PASSWORD" in body
    assert all(name in body for name in GAME_TYPES)
    assert "help tutorial" in body


# --------------------------------------------------------------- 4. tutorial
def test_the_tutorial_teaches_reply_first_and_the_subject_line_second(h):
    body = h.send("ann", "help tutorial")[0].body
    assert body.startswith("Your first game, step by step")
    reply = body.index("Play by Reply: press Reply on your newest board mail")
    assert reply < body.index("The same by the Subject line") < body.index("terrace move 101 alice secret d2-e3")
    assert "first line" in body[reply : reply + 200].lower()
    assert "rematch" in body


# ---------------------------------------------------------------- 5. rematch
def _legal(h: Harness, board: int) -> str:
    pos = parse_tpn(board_tpn(h, board))
    move = pos.legal_moves()[0]
    return f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}"


def _finished_two_player(h: Harness) -> None:
    """Board 101: ann (first) and ben, -short with --nagtime=3; ann resigns at ply 2."""
    h.challenge("ann", "ben", options="-short --nagtime=3")
    h.move(101, "ann", _legal(h, 101))
    h.move(101, "ben", _legal(h, 101))
    h.send("ann", "terrace resign 101 ann pw-ann")


def _board(h: Harness, number: int, game_type: str = "terrace"):
    async def run():
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get(game_type, number)
            assert game is not None
            return (
                [s.user.userid for s in sorted(game.seats, key=lambda s: s.seat)],
                game.variant,
                dict(game.options),
                game.rated,
                game.status,
            )

    return h.loop.run_until_complete(run())


def _end(h: Harness, number: int) -> None:
    async def run():
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace", number, lock=True)
            game.status, game.result = "won", "test"
            await uow.commit()

    h.loop.run_until_complete(run())


@pytest.mark.parametrize("who", ["ann", "ben"])
def test_rematch_swaps_the_colours_and_keeps_setup_and_options(h, who):
    _finished_two_player(h)
    assert _board(h, 101)[4] == "won"
    r = h.send(who, f"terrace rematch 101 {who} pw-{who}", "Again!")
    assert _board(h, 102) == (["ben", "ann"], "short", {"nagtime": 3.0}, True, "active")
    new = mine(r, "ann")
    assert new.subject.startswith("New Terrace Board 102 ben")
    assert f"{who} writes:\nAgain!" in new.body
    assert mine(r, "ben").subject.startswith("New Terrace Board 102 ben")


def test_rematch_only_of_a_finished_game_by_one_of_its_players(h):
    h.challenge("ann", "ben")
    r = h.send("ann", "terrace rematch 101 ann pw-ann")
    assert "still in play" in r[0].body and r[0].subject == "Terrace Board 101 Error"
    _end(h, 101)
    assert "cat is not playing on board 101" in h.send("cat", "terrace rematch 101 cat pw-cat")[0].body
    assert "not correct" in h.send("ann", "terrace rematch 101 ann pw-ben")[0].body
    assert h.send("ann", "terrace rematch 101 ann")[0].body.startswith("the password is missing")
    assert "there is no Terrace board 109" in h.send("ann", "terrace rematch 109 ann pw-ann")[0].body
    assert "rematch BOARD USERID PASSWORD" in h.send("ann", "terrace rematch")[0].body


@pytest.mark.parametrize(("players", "who", "seated"), [
    (["ann", "ben", "cat"], "ann", ["ben", "cat", "ann"]),
    (["ann", "ben", "cat", "dan"], "ben", ["ben", "cat", "dan", "ann"]),
    (["ann", "ben", "cat", "dan"], "dan", ["ben", "cat", "dan", "ann"]),
])  # fmt: skip
def test_rematch_of_more_players_rotates_the_seats(h, players, who, seated):
    h.challenge(*players, options="--forfeittime=30")
    _end(h, 101)
    r = h.send(who, f"rematch 101 {who} pw-{who}")
    assert _board(h, 102)[:3] == (seated, f"{len(players)}p", {"forfeittime": 30.0})
    assert sorted(x.to.split("@")[0] for x in r if x.subject.startswith("New Terrace Board 102")) == sorted(players)


def test_a_rematch_goes_out_as_any_challenge_does(h):
    h.challenge("ann", "ben")
    _end(h, 101)
    h.send("ben", "terrace reject ben pw-ben")
    assert "ben: is not accepting challenges" in h.send("ann", "terrace rematch 101 ann pw-ann")[0].body
    robot = sorted(ROBOTS)[0]
    h.challenge("cat", robot)
    _end(h, 102)
    h.send("cat", "terrace rematch 102 cat pw-cat")
    assert _board(h, 103)[0] == [robot, "cat"]


def test_rematch_is_a_reply_verb():
    for line in ("rematch", "Rematch!", "rematch please", "REMATCH."):
        said = reply_command(line + "\n\n> the board mail")
        assert said.verb == "rematch" and not said.implicit_chat, line
    said = reply_command("rematch\nsame again?")
    assert said.verb == "rematch" and said.comment == "same again?"
