"""Solver hints off the mail's path (issue 36): the ``hint`` handler only records
the request (no solver in the handler, no reply yet); the pool's answer is one
board mail with the hint, sent once per (board, position); a player may ask a
few a minute, the waiting hints are bounded; and a player's games against
robots are bounded too."""

from __future__ import annotations

import re

import pytest

from pbmserv_terrace.app import robots as app_robots
from pbmserv_terrace.games.patience import replay
from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service.context import CommandError
from pbmserv_terrace.service.hints import HINTS_PER_MINUTE, PENDING, QUEUE_LIMIT, desk_of, solve
from pbmserv_terrace.service.robots import ROBOT_GAMES_PER_PLAYER, HintTurn, check_robot_games
from pbmserv_terrace.store import UnitOfWork

from .harness import Harness, raw_mail
from .test_patience import board_state, new


@pytest.fixture
def h(monkeypatch):
    monkeypatch.setattr(app_robots, "HINT_SECONDS", 0.05)  # the solver's time in these tests
    harness = Harness()
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def handle_only(h: Harness, sender: str, subject: str):
    """The mail's own transaction, without what pipe mode does after it (the pool's part)."""
    return h.loop.run_until_complete(h.service.handle_mail(parse_message(raw_mail(sender, subject))))


def hint_turn(h: Harness, board: int = 101) -> HintTurn | None:
    turn = h.loop.run_until_complete(h.service.robot_turn("patience", board))
    assert turn is None or isinstance(turn, HintTurn)
    return turn


def test_the_handler_records_the_request_and_the_answer_is_one_mail_with_the_hint(h: Harness, monkeypatch) -> None:
    new(h)
    h.send("ann", "patience move 101 ann pw-ann base 1")

    def no_solver_here(*_args: object) -> None:
        raise AssertionError("the solver ran inside the mail's handler")

    monkeypatch.setattr(type(GAME_TYPES["patience"].solitaire), "hint", no_solver_here)
    result = handle_only(h, "ann@players.test", "patience hint 101 ann pw-ann")
    monkeypatch.undo()
    assert result.status == "ok" and result.replies == 0  # nothing yet: the one answer is the hint
    assert [t.key for t in result.robot_turns] == [("patience", 101)]
    assert PENDING in board_state(h)[2]
    turn = hint_turn(h)
    assert turn is not None and turn.moves == ("base 1",) and turn.position == (1, 0)
    found = solve(turn.game_type, turn.variant, turn.deal, turn.moves, 0.05)
    assert found is not None
    replay("terrace", 4, ["base 1", found])  # a legal move
    sent = h.loop.run_until_complete(h.service.hint_answer(turn, found))
    assert sent.status == "ok" and sent.replies == 1
    again = h.loop.run_until_complete(h.service.hint_answer(turn, found))
    assert again.status == "duplicate" and again.replies == 0  # once per (board, position)
    _, _, options, _ = board_state(h)
    assert PENDING not in options and options["hints"] == 1
    assert hint_turn(h) is None


def test_through_pipe_mode_the_hint_is_the_one_reply(h: Harness) -> None:
    new(h)
    [r] = h.send("ann", "patience hint 101 ann pw-ann")
    assert r.subject == "Patience Board 101 ann hint"
    assert re.search(r"Hint: \S+", r.body) or "found no move" in r.body, r.body
    assert board_state(h)[2]["hints"] == 1


def test_a_hint_overtaken_by_a_move_is_computed_for_the_new_position(h: Harness) -> None:
    new(h)
    handle_only(h, "ann@players.test", "patience hint 101 ann pw-ann")
    old = hint_turn(h)
    assert old is not None
    handle_only(h, "ann@players.test", "patience move 101 ann pw-ann base 1")
    stale = h.loop.run_until_complete(h.service.hint_answer(old, "flip"))
    assert stale.status == "duplicate"
    turn = hint_turn(h)
    assert turn is not None and turn.position == (1, 0) and turn.moves == ("base 1",)


def test_a_second_request_while_one_is_on_its_way_is_answered_clearly(h: Harness) -> None:
    new(h)
    handle_only(h, "ann@players.test", "patience hint 101 ann pw-ann")
    [r] = h.send("ann", "patience hint 101 ann pw-ann")
    assert "a hint for board 101 is on its way already" in r.body


def test_over_the_quota_a_hint_is_refused_with_a_clear_reply(h: Harness) -> None:
    clock = [1000.0]
    desk_of(h.service).clock = lambda: clock[0]
    new(h)
    for _ in range(HINTS_PER_MINUTE):
        [r] = h.send("ann", "patience hint 101 ann pw-ann")
        assert r.subject.endswith("hint"), r.body
    [r] = h.send("ann", "patience hint 101 ann pw-ann")
    assert f"at most {HINTS_PER_MINUTE} hints a minute" in r.body
    # the refusal is about board 101 and carries its key: a Reply with a move plays
    assert r.subject == "Patience Board 101 Error" and "reply-to" in r.headers
    assert board_state(h)[2]["hints"] == HINTS_PER_MINUTE and PENDING not in board_state(h)[2]
    # another player is not held back, and a minute later ann may ask again
    new(h, "ben")
    [b] = h.send("ben", "patience hint 102 ben pw-ben")
    assert b.subject.endswith("hint")
    clock[0] += 61
    [r] = h.send("ann", "patience hint 101 ann pw-ann")
    assert r.subject.endswith("hint"), r.body


def test_when_the_queue_is_full_a_hint_is_refused_with_server_busy(h: Harness) -> None:
    desk = desk_of(h.service)
    new(h)
    for board in range(QUEUE_LIMIT):  # other boards the pool is working on
        desk.queued(("patience", 1000 + board))
    [r] = h.send("ann", "patience hint 101 ann pw-ann")
    assert "the server is busy with other players' hints: try again in a few minutes" in r.body
    assert PENDING not in board_state(h)[2]
    desk.done(("patience", 1000))
    [r] = h.send("ann", "patience hint 101 ann pw-ann")
    assert r.subject.endswith("hint"), r.body


def challenge(h: Harness, user: str, *others: str) -> list[str]:
    """``user`` challenges ``others`` (with the password: the form that opens a board
    at once, where the server knows it); the bodies of the replies."""
    bodies = [r.body for r in h.send(user, f"terrace challenge {user} pw-{user} {' '.join(others)}")]
    if any(f"pw-{user}: no such user" in b for b in bodies):  # (a server without that form)
        bodies = [r.body for r in h.send(user, f"terrace challenge {user} {' '.join(others)}")]
    return bodies


def robot_games_check(h: Harness, userid: str) -> str:
    """What :func:`check_robot_games` says of ``userid`` starting another game
    against robot1 ('' when it may)."""

    async def run() -> str:
        async with UnitOfWork(h.db) as uow:
            users = await uow.users.get_many([userid, "robot1"])
            try:
                await check_robot_games(uow.session, [users[userid], users["robot1"]])
            except CommandError as exc:
                return exc.reason
            return ""

    return h.loop.run_until_complete(run())


def test_a_player_has_at_most_so_many_games_against_robots(h: Harness) -> None:
    for i in range(ROBOT_GAMES_PER_PLAYER):
        assert robot_games_check(h, "ann") == ""
        bodies = challenge(h, "ann", f"robot{1 + i % 3}")
        assert any(f"board ({101 + i})" in b.lower() for b in bodies), bodies
    refused = robot_games_check(h, "ann")
    assert f"ann already plays {ROBOT_GAMES_PER_PLAYER} games against robots" in refused
    assert "finish or resign one first" in refused
    # games between people are not limited by it, nor other players
    challenge(h, "ann", "ben")
    assert robot_games_check(h, "ben") == ""
    h.send("ann", "terrace resign 101 ann pw-ann")
    assert robot_games_check(h, "ann") == ""


def test_a_challenge_over_the_robot_games_limit_is_refused_with_a_clear_reply(h: Harness) -> None:
    for i in range(ROBOT_GAMES_PER_PLAYER):
        challenge(h, "ann", f"robot{1 + i % 3}")
    bodies = challenge(h, "ann", "robot1")
    assert any(f"ann already plays {ROBOT_GAMES_PER_PLAYER} games against robots" in b for b in bodies), bodies
    assert not any("against robots" in b for b in challenge(h, "ann", "ben"))
