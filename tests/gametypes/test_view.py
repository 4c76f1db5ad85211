"""The one board view (gametypes/view): the status block and the players' states
as both the mail and the web say them."""

from __future__ import annotations

from pbmserv_terrace.gametypes import DEFAULT_GAME_TYPE, board_rules, move_example
from pbmserv_terrace.gametypes.view import BoardFacts, SeatFacts, player_state, position_after, replay, status_lines

GAME = DEFAULT_GAME_TYPE


def board(status: str = "active", ply: int = 0, *, players: int = 2, active: tuple[bool, ...] = (), **kw: object) -> BoardFacts:
    names = ["ann", "ben", "cat", "dan"][:players]
    seats = tuple(SeatFacts(n, i + 1, active[i] if active else True) for i, n in enumerate(names))
    return BoardFacts(GAME, 101, status, str(kw.pop("result", "")), ply, seats, **kw)  # type: ignore[arg-type]


def start() -> object:
    rules = board_rules(GAME)
    return rules.start(rules.two_player_setups[0])


def test_the_board_being_played_names_the_ply_to_play() -> None:
    assert status_lines(board(ply=4), start())[0].endswith(", ply 5.")


def test_a_position_of_the_past_says_which_ply_it_follows_and_who_moves() -> None:
    rules = board_rules(GAME)
    first = move_example(GAME)
    pos = position_after(GAME, rules.dump(start()), [(1, 1, first)])
    assert status_lines(board(ply=18), pos, 1) == ["Position after ply 1 of 18; ben to move."]


def test_replay_yields_the_start_then_each_ply_with_its_canonical_text() -> None:
    rules = board_rules(GAME)
    steps = list(replay(GAME, rules.dump(start()), [(1, 1, move_example(GAME)), (2, 2, "Resign")]))
    assert [s.ply for s in steps] == [0, 1, 2]
    assert steps[1].last_move and steps[2].last_move == ""
    assert 2 not in steps[2].pos.armies()


def test_votes_wait_for_the_players_still_in_and_a_finished_game_says_how_it_ended() -> None:
    lines = status_lines(board(draw_votes=(1,)), start())
    assert "A draw has been proposed; still waiting for: ben." in lines
    assert status_lines(board("won", 7, result="ann wins (ben resigned)", winner_seat=1), start()) == [
        "Game over: ann wins (ben resigned)."
    ]


def test_out_is_said_of_an_army_gone_from_a_game_that_goes_on_or_of_three_not_of_the_loser_of_two() -> None:
    two = board("won", 7, active=(True, False), winner_seat=1)
    assert [player_state(two, s) for s in two.seats] == ["winner", ""]
    three = board("active", 9, players=3, active=(True, False, True))
    assert [player_state(three, s) for s in three.seats] == ["", "out", ""]
    over = board("won", 30, players=3, active=(True, False, False), winner_seat=1)
    assert [player_state(over, s) for s in over.seats] == ["winner", "out", "out"]
