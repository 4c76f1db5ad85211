"""The move links' choices (issue 39): every legal move once, grouped by piece,
captures marked, and each text read back by the rules as that very move."""

from __future__ import annotations

import contextlib
import itertools
import random

import pytest

from pbmserv_terrace.commands.reply import reply_command
from pbmserv_terrace.games.patience import format_move, progress_moves
from pbmserv_terrace.gametypes import GAME_TYPES

BOARD_GAMES = [name for name, kind in GAME_TYPES.items() if kind.family == "board"]


def positions(name: str, games: int = 6, plies: int = 120):
    """Each setup's start and the positions of a few random playouts from it."""
    rules = GAME_TYPES[name].board
    setups = {rules.setup_for(2, s) for s in rules.two_player_setups}
    for players in (3, 4):
        with contextlib.suppress(ValueError):
            setups.add(rules.setup_for(players, None))
    for setup in sorted(setups):
        for seed in range(games):
            rng = random.Random(f"{name}-{setup}-{seed}")
            pos = rules.start(setup)
            for _ in range(plies):
                yield pos
                choices = rules.move_choices(pos)
                if pos.is_over() or not choices:
                    break
                _, targets = rng.choice(choices)
                pos = rules.play(pos, rules.parse_move(pos, rng.choice(targets)[1]))


@pytest.mark.parametrize("name", BOARD_GAMES)
def test_every_legal_move_once_and_its_text_plays_it(name):
    rules = GAME_TYPES[name].board
    seen_capture = seen_plain = 0
    for pos in positions(name):
        choices = rules.move_choices(pos)
        texts = [move for _, targets in choices for _, move, _ in targets]
        canonical = [rules.format_move(pos, rules.parse_move(pos, t)) for t in texts]
        assert len(set(canonical)) == len(canonical), "a move twice"
        # the same moves as the rules count (perft at depth 1 is the legal moves)
        assert len(canonical) == (0 if pos.is_over() else rules.perft(pos, 1))
        for piece, targets in choices:
            assert targets, piece
            letter, _, square = piece.partition(" ")
            assert letter and square
            for target, move, capture in targets:
                parsed = rules.parse_move(pos, move)
                # a reply whose first line is the text (what a move link sends) is a move
                assert reply_command(move).verb == "move", move
                after = rules.play(pos, parsed)
                assert move.lower().startswith(square) and target in move
                # a capture leaves fewer pieces on the board; a plain move as many
                assert capture == (rules.material(after) < rules.material(pos)), (move, rules.dump(pos))
                seen_capture += capture
                seen_plain += not capture
    assert seen_capture and seen_plain


@pytest.mark.parametrize("name", BOARD_GAMES)
def test_no_choices_once_the_game_is_over(name):
    rules = GAME_TYPES[name].board
    over = [pos for pos in positions(name, games=2, plies=400) if pos.is_over()]
    assert over
    assert all(rules.move_choices(pos) == [] for pos in over)


def test_patience_useful_moves_play_and_make_progress():
    rules = GAME_TYPES["patience"].solitaire
    checked = 0
    for variant in rules.variants:
        for deal in (1, 2, 3):
            state = rules.start(variant, deal)
            for _ in range(60):
                moves = rules.useful_moves(state)
                assert len(moves) == len(set(moves))
                # the advice's moves, the best first (as the reply line's example)
                assert moves == [format_move(m) for m in itertools.islice(progress_moves(state), len(moves))]
                assert moves[:1] == ([rules.example_move(state)] if moves else [])
                for move in moves:
                    rules.play(state, move)  # each one is legal now
                    checked += 1
                if not moves:
                    break
                state, _ = rules.play(state, moves[0])
    assert checked > 100
