"""``analyze N[#k]`` (issue 42 item 3): the robot's three best moves at a ply of a
finished board, by mail; refused on a board in play (never engine help in a live
game), on a game without an engine, on a bad board or ply, and over the sender's
cap.  The handler only records the request; the pool's answer is mailed once."""

from __future__ import annotations

import re

import pytest

from pbmserv_terrace.app import robots as app_robots
from pbmserv_terrace.gametypes import board_rules
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service import analysis
from pbmserv_terrace.service.analysis import PER_HOUR, STRANGER_SLOTS, AnalysisTurn, compute
from pbmserv_terrace.store import Analyses, UnitOfWork

from .harness import Harness, raw_mail

NODES = 4_000


@pytest.fixture
def h(monkeypatch):
    monkeypatch.setattr(app_robots, "ANALYSIS_NODES", NODES)  # the search's budget in these tests
    harness = Harness()
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def position(h: Harness, board: int = 101, game_type: str = "terrace"):
    async def run():
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get(game_type, board)
            assert game is not None
            return game.status, game.ply, game.position

    return h.loop.run_until_complete(run())


def play(h: Harness, plies: int, board: int = 101, game_type: str = "terrace") -> list[str]:
    """ann and ben play ``plies`` plies of the rules' example moves; the texts."""
    rules = board_rules(game_type)
    played = []
    for ply in range(plies):
        _, _, tpn = position(h, board, game_type)
        pos = rules.load(tpn)
        text = rules.example_move(pos)
        who = "ann" if ply % 2 == 0 else "ben"
        h.move(board, who, text, game=game_type)
        assert h.last is not None and h.last.status == "ok", h.last
        played.append(rules.format_move(pos, rules.parse_move(pos, text)))
    return played


def finished_game(h: Harness, plies: int = 3) -> list[str]:
    """``plies`` plies, then the player to move resigns (a ply too)."""
    h.challenge("ann", "ben", options="-short")
    played = play(h, plies)
    who = "ann" if plies % 2 == 0 else "ben"
    h.send(who, f"terrace resign 101 {who} pw-{who}")
    status, ply, _ = position(h)
    assert status == "won" and ply == plies + 1  # the resignation is a ply
    return played


def handle_only(h: Harness, sender: str, subject: str):
    """The mail's own transaction, without what pipe mode does after it (the pool's part)."""
    return h.loop.run_until_complete(h.service.handle_mail(parse_message(raw_mail(sender, subject))))


def lines_of(body: str) -> list[tuple[str, str, list[str]]]:
    """(move, verdict, line) of each numbered move of an answer."""
    return [(m, v, line.split()) for m, v, line in re.findall(r"^\d\. (\S+) +(\S.*)\n   line: (.+)$", body, re.M)]


def test_a_finished_board_at_a_ply_gets_three_moves_with_scores_and_lines(h: Harness) -> None:
    played = finished_game(h)
    # anyone may ask: a finished board is public
    [r] = h.send("carl@elsewhere.test", "terrace analyze 101#2")
    assert r.to == "carl@elsewhere.test"
    assert r.subject == "Terrace Board 101: analysis after ply 2"
    assert "after ply 2 of 4, ann to move" in r.body
    found = lines_of(r.body)
    assert len(found) == 3 and len({m for m, _, _ in found}) == 3
    rules = board_rules("terrace")

    async def after_two():
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace", 101)
            return game.start_position

    pos = rules.load(h.loop.run_until_complete(after_two()))  # every line replays from the position after ply 2
    for text in played[:2]:
        pos = rules.play(pos, rules.parse_move(pos, text))
    for move, verdict, line in found:
        assert line[0] == move and re.fullmatch(r"[+-]\d+|(wins|loses) in \d+ moves?", verdict), verdict
        at = pos
        for text in line:
            at = rules.play(at, rules.parse_move(at, text))
    assert f"played {played[2]}" in r.body  # what was played there, and how the engine ranks it


def test_by_default_the_last_position_with_a_move_to_choose(h: Harness) -> None:
    finished_game(h, plies=3)
    # the final position is over (ben resigned at ply 4): the one before it
    [r] = h.send("ann", "terrace analyse 101")  # (either spelling)
    assert r.subject == "Terrace Board 101: analysis after ply 3", r.subject
    assert "ben to move" in r.body and len(lines_of(r.body)) == 3


def test_a_board_in_play_is_refused_and_nothing_is_recorded(h: Harness) -> None:
    h.challenge("ann", "ben")
    play(h, 2)
    for sender, subject in (("ann", "terrace analyze 101"), ("ben", "terrace analyze 101#1"), ("carl@x.test", "terrace analyze 101")):
        result = handle_only(h, sender if "@" in sender else f"{sender}@players.test", subject)
        assert result.status == "error" and not result.robot_turns
    [r] = h.send("ann", "terrace analyze 101")
    assert "Error" in r.subject and "still being played" in r.body and "finished games only" in r.body
    assert h.loop.run_until_complete(h.service.robot_turns()) == []  # nothing pending


def test_bad_boards_and_plies_get_a_clear_error(h: Harness) -> None:
    finished_game(h, plies=2)
    cases = {
        "terrace analyze 999": "there is no Terrace board 999",
        "terrace analyze 101#9": "board 101 has 3 plies; there is no ply 9",
        "terrace analyze 101#3": "was over after ply 3",  # after the resignation
        "terrace analyze": "analyze",
        "terrace analyze 101 102": "analyze",
        "terrace analyze x7": "",
    }
    for subject, words in cases.items():
        [r] = h.send("ann", subject)
        assert "error" in r.subject.lower(), (subject, r.subject, r.body)
        assert words in r.body, (subject, r.body)
        assert "Usage: terrace analyze BOARD[#k]" in r.body
    assert h.loop.run_until_complete(h.service.robot_turns()) == []


def test_a_game_without_an_engine_is_refused(h: Harness) -> None:
    h.challenge("ann", "ben", game="breakthrough")
    h.send("ben", "breakthrough resign 101 ben pw-ben")
    [r] = h.send("ann", "breakthrough analyze 101")
    assert "Error" in r.subject and "has no engine to analyse" in r.body


def test_the_answer_is_mailed_once_and_a_restart_finds_a_pending_one(h: Harness) -> None:
    finished_game(h, plies=2)
    result = handle_only(h, "carl@elsewhere.test", "terrace analyze 101#1")
    assert result.status == "ok" and result.replies == 0  # nothing yet: the one answer comes from the pool
    [asked] = result.robot_turns
    assert isinstance(asked, AnalysisTurn)
    # a restart before the pool answered: serve's rescan finds it
    assert [t.key for t in h.loop.run_until_complete(h.service.robot_turns())] == [asked.key]
    turn = h.loop.run_until_complete(h.service.analysis_turn(asked.analysis_id))
    assert turn is not None and turn.ply == 1 and turn.board == 101
    found = compute(turn.game_type, turn.tpn, turn.history, NODES)
    assert found is not None and len(found.moves) == 3
    sent = h.loop.run_until_complete(h.service.analysis_answer(turn, found))
    assert sent.status == "ok" and sent.replies == 1
    again = h.loop.run_until_complete(h.service.analysis_answer(turn, found))
    assert again.status == "duplicate" and again.replies == 0
    assert h.loop.run_until_complete(h.service.analysis_turn(asked.analysis_id)) is None
    assert h.loop.run_until_complete(h.service.robot_turns()) == []


def test_each_sender_has_a_cap_an_hour(h: Harness) -> None:
    finished_game(h, plies=2)
    for i in range(PER_HOUR):
        result = handle_only(h, "ann@players.test", f"terrace analyze 101#{i % 3}")
        assert result.status == "ok", result
    [r] = h.send("ann", "terrace analyze 101#0")
    assert "Error" in r.subject and f"at most {PER_HOUR} analyses an hour" in r.body
    # another sender is not held up by ann's count
    [r] = h.send("ben", "terrace analyze 101#0")
    assert r.subject == "Terrace Board 101: analysis after ply 0"


def test_made_up_senders_cannot_crowd_the_players_out(h: Harness) -> None:
    """Anyone may ask, but addresses that are no player's share STRANGER_SLOTS of the
    queue: a forger with a new From for every mail fills those, never the players'."""
    finished_game(h, plies=2)
    for i in range(STRANGER_SLOTS):
        assert handle_only(h, f"forged{i}@elsewhere.test", "terrace analyze 101").status == "ok"
    [r] = h.send("forged-next@elsewhere.test", "terrace analyze 101")
    assert "Error" in r.subject and "no player's" in r.body and "signup" in r.body
    async def waiting() -> int:
        async with UnitOfWork(h.db) as uow:
            return len(await Analyses(uow.session).pending_addresses())
    assert h.loop.run_until_complete(waiting()) == STRANGER_SLOTS  # the refused one recorded nothing
    [r] = h.send("ann", "terrace analyze 101#1")  # a player still gets hers
    assert r.subject == "Terrace Board 101: analysis after ply 1"


def test_the_waiting_analyses_are_bounded(h: Harness, monkeypatch) -> None:
    finished_game(h, plies=2)
    monkeypatch.setattr(analysis, "QUEUE_LIMIT", 2)
    for who in ("a1", "a2"):
        assert handle_only(h, f"{who}@x.test", "terrace analyze 101").status == "ok"
    [r] = h.send("a3@x.test", "terrace analyze 101")
    assert "busy" in r.body
