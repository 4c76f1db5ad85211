"""The game interface's analysis (issue 42, ``analyze``): a game says whether its
engine can analyse, and Terrace's analysis speaks in the players' move text."""

from __future__ import annotations

from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.gametypes.analysis import AnalysedMove

NODES = 10_000


def test_every_board_game_says_whether_it_analyses():
    said = {g.name: g.board.can_analyse(2) for g in GAME_TYPES.values() if g.family == "board"}
    assert any(said.values()) and not all(said.values())  # Terrace does, Breakthrough does not
    for game in GAME_TYPES.values():
        if game.family == "board" and not game.board.can_analyse(2):
            rules = game.board
            assert rules.analyse(rules.dump(rules.start(rules.two_player_setups[0])), (), NODES) is None


def test_lines_are_in_the_players_move_text_and_replay():
    for game in GAME_TYPES.values():
        if game.family != "board" or not game.board.can_analyse(2):
            continue
        rules = game.board
        start = rules.start(rules.two_player_setups[0])
        result = rules.analyse(rules.dump(start), (), NODES)
        assert result is not None and len(result.moves) == 3 and result.depth >= 1
        for found in result.moves:
            assert found.line[0] == found.move and found.mate_in is None
            pos = start
            for text in found.line:
                move = rules.parse_move(pos, text)
                assert rules.format_move(pos, move) == text
                pos = rules.play(pos, move)


def test_a_finished_position_has_none():
    for game in GAME_TYPES.values():
        if game.family == "board" and game.board.can_analyse(2):
            rules = game.board
            start = rules.start(rules.two_player_setups[0])
            over = start.without_army(start.to_move)
            assert rules.analyse(rules.dump(over), (), NODES) is None


def test_verdicts_in_words():
    assert AnalysedMove("a", 35, ("a",)).verdict() == "+35"
    assert AnalysedMove("a", -120, ("a",)).verdict() == "-120"
    assert AnalysedMove("a", 99_999, ("a",), 1).verdict() == "wins in 1 move"
    assert AnalysedMove("a", -99_996, ("a",), -2).verdict() == "loses in 2 moves"
