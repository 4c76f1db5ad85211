"""Complete games through the ``handle`` path (raw mail in, mbox out) for every
variant, both sizes, and every way a game ends (COMMANDS.md §3–§5)."""

from __future__ import annotations

import random

import pytest

from pbmserv_terrace.games.terrace import PLAYERS, parse_move, render_board, start_position

from .harness import Harness, confirm, set_position, to
from .policy import choose, text

NAMES = ["ann", "ben", "cat", "dan"]
ADDR = {n: f"{n}@players.test" for n in [*NAMES, "sue", "zed"]}


@pytest.fixture
def h():
    harness = Harness()
    yield harness
    harness.close()


def shortest_seed(variant: str, n: int, limit: int = 400) -> int:
    best = (10**9, 0)
    for seed in range(12):
        rng, pos, k = random.Random(seed), start_position(variant, n), 0
        while pos.outcome() is None and k < limit:
            pos, k = pos.play(choose(pos, rng)), k + 1
        if pos.outcome() is not None and pos.outcome().winner is not None:
            best = min(best, (k, seed))
    return best[1]


@pytest.mark.parametrize("game", ["terrace", "terrace6x6"])
@pytest.mark.parametrize("variant", ["long", "medium", "short", "master", "3p", "4p"])
def test_complete_game_by_mail(h, game, variant):
    n = 6 if game == "terrace6x6" else 8
    title = "Terrace6x6" if n == 6 else "Terrace"
    players = NAMES[: PLAYERS[variant]]
    h.service.throttle.per_minute = 10**6  # a scripted game mails far faster than people do
    h.signup(*players, "sue")
    assert len(h.send("sue", f"{game} subscribe sue pw-sue all")) == 1
    option = f" -{variant}" if PLAYERS[variant] == 2 else ""
    # the pbmserv form without a password: confirmed by Reply from ann's address (issue 36)
    asked = h.send("ann", f"{game} challenge {' '.join(players)}{option}", "Have fun!")
    assert to(asked) == ["ann@players.test"] and "Have fun!" in asked[0].body
    replies = confirm(h, asked[0])
    everyone = sorted(ADDR[p] for p in [*players, "sue"])
    assert to(replies) == everyone
    assert {r.subject for r in replies} == {f"New {title} Board 101 ann **"}
    assert f"A new {title} board (101) has been started" in replies[0].body
    pos = start_position(variant, n)
    assert render_board(pos) in replies[0].body
    rng = random.Random(shortest_seed(variant, n))
    while pos.outcome() is None:
        mover = players[pos.to_move - 1]
        move = choose(pos, rng)
        canonical = text(pos, move)
        pos = pos.play(move)
        replies = h.move(101, mover, canonical.lower() if rng.random() < 0.5 else canonical, game=game)
        assert to(replies) == everyone, replies[0].body
        body = replies[0].body
        assert f"{mover} played {canonical}" in body
        assert render_board(pos) in body
        if pos.outcome() is None:
            assert replies[0].subject == f"{title} Board 101 {players[pos.to_move - 1]}"
            assert f"It is {players[pos.to_move - 1]}'s turn" in body
        else:
            assert replies[0].subject == f"{title} Board 101 finished"
    winner = players[pos.outcome().winner - 1]
    assert f"Game over: {winner} wins" in body
    if variant == "master":
        assert "Rating changes" not in body
    else:
        assert "Rating changes:" in body and f"{winner}: 1600 -> " in body
    # the finished board is in the history and (if rated) the standings
    hist = h.send("zed@players.test", f"{game} history")
    assert f"Board 101  {' vs '.join(players)}: {winner} wins" in hist[0].body
    standings = h.send("zed@players.test", f"{game} standings")[0].body
    assert (winner in standings) == (variant != "master")
    # moves on a finished board are refused and change nothing
    late = h.move(101, players[0], "d2-e3", game=game)
    assert len(late) == 1 and late[0].to == ADDR[players[0]] and "is over" in late[0].body


def test_win_by_reaching_the_goal(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    set_position(h, 101, "6t1/8/8/8/8/8/8/7T 1")  # ann's t on g8 steps down to h8
    replies = h.move(101, "ann", "t-g8-h8")
    assert to(replies) == [ADDR["ann"], ADDR["ben"]]
    assert "Game over: ann wins (reached the goal with the T)" in replies[0].body
    assert replies[0].subject == "Terrace Board 101 finished"


def test_win_by_capturing_the_t(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    set_position(h, 101, "8/7T/8/8/8/8/1D6/t7 2")
    h.move(101, "ann", "propose")  # not ann's turn to move, but voting is allowed
    replies = h.move(101, "ben", "D-b2-a1:T")
    assert "Game over: ben wins (captured the T)" in replies[0].body
    assert "ben: 1600 -> 1632 (+32)" in replies[0].body and "ann: 1600 -> 1568 (-32)" in replies[0].body


def test_draw_by_agreement(h):
    h.signup("ann", "ben", "sue")
    h.send("sue", "terrace notify sue pw-sue")  # every game end
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "d2-e3")
    offer = h.move(101, "ben", "propose", "A draw?")
    assert "ben proposes a draw" in offer[0].body and "still waiting for: ann" in offer[0].body
    assert offer[0].subject == "Terrace Board 101 ben **"
    again = h.move(101, "ben", "accept")
    assert "already agreed" in again[0].body and to(again) == [ADDR["ben"]]
    done = h.move(101, "ann", "accept")
    assert to(done) == sorted([ADDR["ann"], ADDR["ben"], ADDR["sue"]])
    assert "Game over: draw agreed" in done[0].body
    assert "ann: 1600 -> 1600 (+0)" in done[0].body


def test_a_move_cancels_a_draw_offer_and_reject_cancels_too(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "propose")
    r = h.move(101, "ann", "d2-e3")
    assert "draw offer is cancelled" in r[0].body
    h.move(101, "ben", "propose")
    r = h.move(101, "ann", "reject")
    assert "ann rejects the draw offer" in r[0].body
    assert "accept" in h.move(101, "ann", "accept")[0].body.lower()  # nothing to accept


def test_resignation_on_turn_ends_two_player_game(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "d2-e3")
    h.move(101, "ben", "d7-d6")
    r = h.send("ann", "terrace resign 101 ann pw-ann", "gg")
    assert "Game over: ben wins (ann resigned)" in r[0].body
    assert r[0].subject == "Terrace Board 101 finished **"


def test_pending_resignation_takes_effect_on_turn_and_can_be_cancelled(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "d2-e3")
    h.move(101, "ben", "d7-d6")
    r = h.move(101, "ben", "resign")
    assert "ben will resign on their turn" in r[0].body
    r = h.move(101, "ben", "resign")
    assert "withdraws the pending resignation" in r[0].body
    h.move(101, "ben", "resign")
    r = h.move(101, "ann", "c2-d3")
    assert "ben resigns" in r[0].body and "Game over: ann wins (ben resigned)" in r[0].body


def test_first_round_resignation_restarts_three_player_game(h):
    h.signup("ann", "ben", "cat")
    h.send("ann", "terrace challenge ann pw-ann ben cat")
    h.move(101, "ann", "d1-e2")
    r = h.move(101, "cat", "resign")
    assert to(r) == sorted(ADDR[p] for p in ("ann", "ben", "cat"))
    assert "cat resigned in the first round; the game restarts without them (unrated)" in r[0].body
    assert render_board(start_position("long")) in r[0].body
    assert "long, unrated" in r[0].body
    r = h.move(101, "ann", "d2-e3")
    assert "It is ben's turn" in r[0].body and to(r) == [ADDR["ann"], ADDR["ben"]]


def test_first_round_resignation_of_two_player_game_removes_board(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    r = h.move(101, "ben", "resign")
    assert "the board is removed" in r[0].body
    assert "is over" in h.move(101, "ann", "d2-e3")[0].body


def test_undo_by_unanimous_vote(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "d2-e3")
    r = h.move(101, "ann", "undo")
    assert "still waiting for: ben" in r[0].body
    r = h.move(101, "ben", "accept")
    assert "the last ply (C-d2-e3) has been taken back" in r[0].body
    assert render_board(start_position()) in r[0].body and "It is ann's turn" in r[0].body
    # and the move list starts again at ply 1
    r = h.move(101, "ann", "d2-e3#1")
    assert "ann played C-d2-e3" in r[0].body


def test_no_move_draw(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    # ben's lone T on the high corner h1 (level 8) can only step down to g1 or h2
    # or capture an A/T on g2; ann's d's hold g1 and g2, and her move fills h2.
    set_position(h, 101, "8/8/8/8/8/6dd/6d1/t5dT 1")
    replies = h.move(101, "ann", "g3-h2")
    assert "Game over: draw: ben has no legal move" in replies[0].body


def test_three_player_elimination_and_turn_skipping(h):
    h.signup("ann", "ben", "cat")
    h.send("ann", "terrace challenge ann pw-ann ben cat")
    set_position(h, 101, "1d'c'c'b'b't'1/8/8/8/8/2d5/1T6/t7 1")
    r = h.move(101, "ann", "d-c3-b2:T")
    assert "ben's T was captured: army 2 leaves the board" in r[0].body
    assert "It is cat's turn" in r[0].body
    assert "is out of the game" in h.move(101, "ben", "h7-h6")[0].body


def test_move_number_check(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    r = h.move(101, "ann", "d2-e3#2")
    assert r[0].subject == "Terrace Board 101 Error"
    assert "Move d2-e3 received as move #2, but board 101 is at move #1" in r[0].body
    assert "ann played" in h.move(101, "ann", "d2-e3#1")[0].body


def test_queue_plays_automatically_and_drops_illegal(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    q = h.send("ben", "terrace queue 101 ben pw-ben d7-d6")
    assert to(q) == [ADDR["ben"]] and "Queued on board 101: d7-d6" in q[0].body
    r = h.move(101, "ann", "d2-e3")
    assert "ben plays the queued move B-d7-d6 (Auto)" in r[0].body
    assert "B-d7-d6 (Auto)" in r[0].body and "It is ann's turn" in r[0].body
    h.send("ben", "terrace queue 101 ben pw-ben a1-a2")  # ben has no piece on a1
    r = h.move(101, "ann", "c2-d2")
    assert "ben's queued move was dropped" in r[0].body and "It is ben's turn" in r[0].body


def test_submit_and_confirm(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    r = h.send("ann", "terrace submit 101 ann pw-ann d2-e3")
    assert to(r) == [ADDR["ann"]] and "move C-d2-e3 submitted, not yet played" in r[0].body
    r = h.send("ann", "terrace confirm 101 ann pw-ann")
    assert to(r) == [ADDR["ann"], ADDR["ben"]] and "ann played C-d2-e3" in r[0].body
    assert "no submitted move" in h.send("ann", "terrace confirm 101 ann pw-ann")[0].body


def test_preview_saves_nothing(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    r = h.send("zed", "terrace preview 101 d2-e3 d7-d6")
    assert to(r) == [ADDR["zed"]] and "nothing has been saved" in r[0].body
    pos = start_position()
    for m in ("d2-e3", "d7-d6"):
        pos = pos.play(parse_move(pos, m))
    assert render_board(pos) in r[0].body
    r = h.send("zed", "terrace preview new 4 d1-e2")
    assert "Preview of a new Terrace board for 4 players (4p) (nothing has been saved)" in r[0].body
    assert "ann played" not in h.send("zed", "terrace show 101")[0].body
    assert "No moves yet." in h.send("zed", "terrace show 101")[0].body


def test_chat_goes_to_players_and_subscribers(h):
    h.signup("ann", "ben", "sue")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.send("sue", "terrace subscribe 101 sue pw-sue")
    r = h.send("ben", "terrace chat 101 ben pw-ben", "Nice opening!")
    assert to(r) == sorted([ADDR["ann"], ADDR["ben"], ADDR["sue"]])
    assert r[0].subject == "Terrace Board 101 chat from ben" and "Nice opening!" in r[0].body
    assert "Subscribers: sue" in h.send("zed", "terrace show 101")[0].body


def test_unknown_user_and_wrong_password_look_the_same(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    wrong = h.send("ann", "terrace move 101 ann nope d2-e3")[0].body
    unknown = h.send("ann", "terrace move 101 nobody nope d2-e3")[0].body
    assert wrong.split("\n")[0] == unknown.split("\n")[0] == "the userid or the password is not correct"


def test_challenge_errors_list_every_failing_user(h):
    h.signup("ann", "ben", "cat")
    h.send("ben", "terrace reject ben pw-ben")
    h.send("cat", "terrace limit cat pw-cat 0")
    r = h.send("ann", "terrace challenge ann pw-ann ben cat nobody")
    body = r[0].body
    assert "ben: is not accepting challenges" in body and "cat: has reached the limit of 0 active games" in body
    assert "nobody: no such user" in body and to(r) == [ADDR["ann"]]
    assert "no boards match" in h.send("zed", "terrace games")[0].body.lower()


def test_timer_options_are_kept(h):
    h.signup("ann", "ben")
    r = h.send("ann", "terrace challenge ann pw-ann ben -short --nagtime=3 --forfeittime=10")
    assert "Players (short; forfeit after 10 days, reminder after 3 days)" in r[0].body
    bad = h.send("ann", "terrace challenge ann pw-ann ben --nagtime=soon")
    assert "--nagtime needs a number of days" in bad[0].body


def test_show_at_ply_and_games_table(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "d2-e3")
    h.move(101, "ben", "d7-d6")
    r = h.send("zed", "terrace show 101#1")
    pos = start_position()
    pos = pos.play(parse_move(pos, "d2-e3"))
    assert "Position after ply 1 of 2; ben to move." in r[0].body and render_board(pos) in r[0].body
    table = h.send("zed", "terrace games ann")[0].body
    assert "101" in table and "ann* ben" in table and "to move: ann" in table
    assert (
        "There is no" in h.send("zed", "terrace show 999")[0].body
        or "no Terrace board 999" in h.send("zed", "terrace show 999")[0].body
    )


def test_unsubscribe_and_notify_on_boards(h):
    h.signup("ann", "ben", "sue")
    h.send("ann", "terrace challenge ann pw-ann ben")
    assert "You now watch" in h.send("sue", "terrace subscribe 101 sue pw-sue")[0].body
    assert "already watches" in h.send("sue", "terrace subscribe 101 sue pw-sue")[0].body
    assert to(h.move(101, "ann", "d2-e3")) == sorted([ADDR["ann"], ADDR["ben"], ADDR["sue"]])
    assert "no longer watch" in h.send("sue", "terrace unsubscribe 101 sue pw-sue")[0].body
    assert to(h.move(101, "ben", "d7-d6")) == [ADDR["ann"], ADDR["ben"]]
    assert "you will be told when it ends" in h.send("sue", "terrace notify sue pw-sue 101")[0].body
    h.move(101, "ann", "propose")
    end = h.move(101, "ben", "accept")
    assert to(end) == sorted([ADDR["ann"], ADDR["ben"], ADDR["sue"]]) and "draw agreed" in end[0].body


def test_showas_all_show_next_and_list(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.send("ann", "terrace6x6 challenge ben pw-ben ann")
    h.send("ben", "terrace queue 101 ben pw-ben d7-d6")
    mine = h.send("ben", "terrace showas ben pw-ben 101")[0].body
    assert "Your queued moves: d7-d6" in mine
    assert "queued" not in h.send("ann", "terrace show 101")[0].body
    nxt = h.send("x", "all show ben next")
    assert nxt[0].subject == "Terrace6x6 Board 102 ben" and "Summary of Terrace6x6 Board 102" in nxt[0].body
    table = h.send("x", "terrace list")[0].body
    assert "101" in table and "ann* ben" in table
    listing = h.send("x", "list")[0].body
    assert "terrace          1 active board\n" in listing and "1 active boards" not in listing
