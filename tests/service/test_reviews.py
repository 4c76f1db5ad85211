"""A review after every finished game, by mail (issue 42 item 1).

The games are built so that their decisive mistake is known: from a constructed
position, exactly one of the first player's moves leaves the T to be taken (the
finder checked every other move: after it the opponent has no forced win in 2),
the player plays it and the opponent takes the T.  The review must name that move,
at that ply, with the reason the solver proves."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select

from pbmserv_terrace.app.robots import play_inline
from pbmserv_terrace.gametypes import board_rules
from pbmserv_terrace.gametypes.review import review_from_json
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service import Service
from pbmserv_terrace.service.robots import ReviewTurn
from pbmserv_terrace.store import ReviewRecord, UnitOfWork

from .harness import Harness, Reply, raw_mail, set_position

BLUNDERS = [
    # (position, army 1 to move; the one move that leaves its T to be taken, as written; as recorded)
    ("1A6/8/8/2tT4/6a1/8/4D3/5b2 1", "c5-c4", "T-c5-c4"),
    ("8/8/8/7T/B3td2/8/6A1/c7 1", "e4-f3", "T-e4-f3"),
]


@pytest.fixture
def h(db_url: str):
    harness = Harness(db_url)  # SQLite, and PostgreSQL (marked postgres)
    harness.config.server.review_nodes = 10_000  # (the harness has reviews off for the other tests)
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def reviews_of(replies: list[Reply]) -> list[Reply]:
    return [r for r in replies if "the review of your game" in r.subject]


def review_row(h: Harness, board: int = 101, game_type: str = "terrace") -> ReviewRecord | None:
    async def run() -> ReviewRecord | None:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get(game_type, board)
            assert game is not None
            row = (await uow.session.execute(select(ReviewRecord).where(ReviewRecord.game_id == game.id))).scalar_one_or_none()
            uow.session.expunge_all()
            return row

    return h.loop.run_until_complete(run())


@pytest.mark.parametrize(("tpn", "written", "recorded"), BLUNDERS)
def test_a_lost_game_against_robot2_by_mail_gets_a_review_naming_the_losing_move(h: Harness, tpn: str, written: str, recorded: str) -> None:
    h.challenge("ann", "robot2")
    set_position(h, 101, tpn)
    replies = h.move(101, "ann", written)
    subjects = [r.subject for r in replies]
    # ann's move, robot2's capture (the game-end mail), then the review: after the game-end mail
    ended = next(i for i, r in enumerate(replies) if "Game over: robot2 wins" in r.body)
    reviews = reviews_of(replies)
    assert len(reviews) == 1, subjects
    review = reviews[0]
    assert replies.index(review) > ended
    assert review.to == "ann@players.test"  # robots never get mail
    body = review.body
    assert f"The turning point: ply 1, when you played {recorded}" in body
    yours = body.split("Your biggest mistakes:")[1].split("robot2's biggest mistakes:")[0]
    first = yours.strip().splitlines()[0]
    assert first.startswith(f"ply 1: {recorded}; better ") and "gave away the game" in first
    assert first.endswith(": leaves its T to be taken"), first
    assert "change review ann PASSWORD off" in body
    # the HTML part: the chart and the board at the turning point, both inline
    assert review.message is not None
    images = [p for p in review.message.walk() if p.get_content_type() == "image/png"]
    assert len(images) == 2
    html = review.html
    assert "cid:review-chart-terrace-101@pbmserv" in html and "cid:review-board-terrace-101@pbmserv" in html
    assert recorded in html and "leaves its T to be taken" in html
    # the stored review (what the web draws) says the same
    row = review_row(h)
    assert row is not None and row.state == "sent" and row.data is not None and row.done_at is not None
    stored = review_from_json(row.data)
    assert stored.turning_point == 1 and stored.of_seat(1)[0].played == recorded
    assert stored.evaluations[-1] == -stored.scale  # seat 1 lost


def test_change_review_off_means_no_review_and_on_brings_it_back(h: Harness) -> None:
    replies = h.send("ann", "change review ann pw-ann off")
    assert len(replies) == 1 and "You get no more game reviews" in replies[0].body
    h.challenge("ann", "robot2")
    set_position(h, 101, BLUNDERS[0][0])
    replies = h.move(101, "ann", BLUNDERS[0][1])
    assert any("Game over" in r.body for r in replies)
    assert reviews_of(replies) == []
    assert review_row(h) is None  # nobody wants it: nothing is owed, nothing computed
    replies = h.send("ann", "change review ann pw-ann on")
    assert "After each game you finish you get a review by mail" in replies[0].body
    h.challenge("ann", "robot2")
    set_position(h, 102, BLUNDERS[0][0])
    assert len(reviews_of(h.move(102, "ann", BLUNDERS[0][1]))) == 1


def test_change_review_needs_on_or_off(h: Harness) -> None:
    replies = h.send("ann", "change review ann pw-ann maybe")
    assert len(replies) == 1 and "'change review' is followed by on or off" in replies[0].body


def test_two_people_each_get_their_own_review_and_only_those_who_want_one(h: Harness) -> None:
    h.send("ben", "change review ben pw-ben off")
    h.challenge("ann", "ben")
    set_position(h, 101, BLUNDERS[0][0])
    h.move(101, "ann", BLUNDERS[0][1])
    replies = h.move(101, "ben", "d5-c4")
    assert any("Game over: ben wins" in r.body for r in replies)
    reviews = reviews_of(replies)
    assert [r.to for r in reviews] == ["ann@players.test"]
    assert "Your biggest mistakes:\n  ply 1: T-c5-c4" in reviews[0].body


def test_a_resignation_ends_the_game_with_a_review_of_the_moves_before_it(h: Harness) -> None:
    h.challenge("ann", "ben")
    rules = board_rules("terrace")
    pos = rules.start("long")
    for player in ("ann", "ben", "ann"):  # past the first round (a resignation there removes the board)
        move = rules.example_move(pos)
        h.move(101, player, move)
        pos = rules.play(pos, rules.parse_move(pos, move))
    replies = h.send("ben", "terrace resign 101 ben pw-ben")
    assert any("Game over: ann wins" in r.body for r in replies)
    reviews = reviews_of(replies)
    assert sorted(r.to for r in reviews) == ["ann@players.test", "ben@players.test"]
    ben = next(r for r in reviews if r.to == "ben@players.test")
    assert "The robot looked at the 3 plies" in ben.body


def test_other_game_types_get_no_review(h: Harness) -> None:
    replies = h.challenge("ann", "ben", game="breakthrough")
    assert any("Breakthrough Board 101" in r.subject for r in replies)
    rules = board_rules("breakthrough")
    pos = rules.start(rules.two_player_setups[0])
    for player in ("ann", "ben", "ann"):
        move = rules.example_move(pos)
        h.move(101, player, move, game="breakthrough")
        pos = rules.play(pos, rules.parse_move(pos, move))
    replies = h.send("ben", "breakthrough resign 101 ben pw-ben")
    assert any("Game over: ann wins" in r.body for r in replies)
    assert reviews_of(replies) == []
    assert review_row(h, 101, "breakthrough") is None


def handle(h: Harness, sender: str, subject: str) -> None:
    """One mail handled as ``serve`` does, without the robots' pool running after it
    (what a crash right after the mail's commit leaves)."""
    result = h.loop.run_until_complete(h.service.handle_mail(parse_message(raw_mail(f"{sender}@players.test", subject))))
    assert result.status == "ok", result


def pending_reviews(service: Service, loop: asyncio.AbstractEventLoop) -> list[ReviewTurn]:
    return [t for t in loop.run_until_complete(service.robot_turns()) if isinstance(t, ReviewTurn)]


def test_a_review_pending_at_a_crash_is_sent_once_after_the_restart(h: Harness) -> None:
    h.challenge("ann", "ben")
    set_position(h, 101, BLUNDERS[0][0])
    handle(h, "ann", f"terrace move 101 ann pw-ann {BLUNDERS[0][1]}")
    handle(h, "ben", "terrace move 101 ben pw-ben d5-c4")  # the game ends; the server dies before the review
    row = review_row(h)
    assert row is not None and row.state == "pending" and row.data is None
    # the restart: a new service on the same database rescans, as serve's start does
    restarted = Service(h.db, h.config)
    turns = pending_reviews(restarted, h.loop)
    assert [(t.game_type, t.board, t.moves) for t in turns] == [("terrace", 101, ("T-c5-c4", "T-d5-c4:T"))]
    results = h.loop.run_until_complete(play_inline(restarted, turns))
    assert [r.replies for r in results] == [2]
    row = review_row(h)
    assert row is not None and row.state == "sent"
    # the same work again (a second worker, a rescan that raced the commit): nothing more
    again = h.loop.run_until_complete(play_inline(restarted, turns))
    assert [r.status for r in again] == ["duplicate"] and again[0].replies == 0
    assert pending_reviews(Service(h.db, h.config), h.loop) == []
    assert count_reviews_queued(h) == 2


def count_reviews_queued(h: Harness) -> int:
    from pbmserv_terrace.store import OutboxMessage

    async def run() -> int:
        async with UnitOfWork(h.db) as uow:
            rows = (await uow.session.execute(select(OutboxMessage.subject))).scalars().all()
            return sum("the review of your game" in s for s in rows)

    return h.loop.run_until_complete(run())


def test_the_budget_per_game_lowers_the_search_per_position(h: Harness) -> None:
    from pbmserv_terrace.service.reviews import MIN_NODES, budget

    h.config.server.review_nodes, h.config.server.review_game_nodes = 20_000, 100_000
    assert budget(h.config, 3) == 20_000  # 4 positions: within the cap
    assert budget(h.config, 99) == 1_000
    assert budget(h.config, 10_000) == MIN_NODES
    h.config.server.review_game_nodes = 0
    assert budget(h.config, 10_000) == 20_000


def test_no_reviews_when_the_operator_turns_them_off(h: Harness) -> None:
    h.config.server.review_nodes = 0
    h.challenge("ann", "robot2")
    set_position(h, 101, BLUNDERS[0][0])
    assert reviews_of(h.move(101, "ann", BLUNDERS[0][1])) == []
    assert review_row(h) is None
