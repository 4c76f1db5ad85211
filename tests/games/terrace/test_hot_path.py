"""The rules' hot path trimmed (issue 18): one move's legality from its piece's
target mask, "has a legal move" without the list, remembered position strings and
the board's frame drawn once per size — each checked against the full computation
it replaces, on positions reached by random play (8x8 and 6x6, two to four armies)."""

from __future__ import annotations

import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmserv_terrace.games.terrace import (
    Move,
    NotationError,
    Position,
    format_move,
    format_tpn,
    notation,
    parse_move,
    parse_tpn,
    render_board,
    start_position,
    why_illegal,
)
from pbmserv_terrace.games.terrace import board as board_module
from pbmserv_terrace.games.terrace.pieces import KINDS, piece_text
from pbmserv_terrace.games.terrace.setups import VARIANTS

from .reference import slow_outcome, slow_tpn


def random_game(seed: int, n: int, variant: str, plies: int) -> list[Position]:
    rng = random.Random(seed)
    pos = start_position(variant, n)
    out = [pos]
    for _ in range(plies):
        moves = pos.legal_moves()
        if not moves:
            break
        pos = pos.play(rng.choice(moves))
        out.append(pos)
    return out


def list_parse_move(pos: Position, text: str) -> Move:
    """parse_move as it was: the game-over check and the legality check from the full
    legal-move list."""
    raw = text.strip()
    m = notation._MOVE.match(raw)
    if not m:
        raise NotationError(f"{raw[:40]!r} is not a move; write it as {notation.MOVE_FORMS}")
    letter, src, dst, cap = m.groups()
    geo = pos.geo
    try:
        frm, to = geo.square(src), geo.square(dst)
    except ValueError as exc:
        raise NotationError(f"{raw}: {exc}") from None
    if slow_outcome(pos) is not None:
        raise NotationError(f"{raw}: the game is over")
    piece = pos.board[frm]
    army = pos.to_move
    if not piece:
        raise NotationError(f"{raw}: there is no piece on {src.lower()}")
    if piece >> 3 != army:
        raise NotationError(f"{raw}: the piece on {src.lower()} ({piece_text(piece)}) is not yours; you play army {army}")
    if letter and letter.upper() != KINDS[piece & 7]:
        raise NotationError(f"{raw}: the piece on {src.lower()} is {KINDS[piece & 7]}, not {letter.upper()}")
    target = pos.board[to]
    if cap:
        if not target:
            raise NotationError(f"{raw}: there is nothing to capture on {dst.lower()}")
        if cap.upper() != KINDS[target & 7]:
            raise NotationError(f"{raw}: the piece on {dst.lower()} is {KINDS[target & 7]}, not {cap.upper()}")
    move = Move(frm, to)
    if move not in pos.legal_moves():
        raise NotationError(f"{raw}: {why_illegal(pos, move)}")
    return move


def answer(parse, pos: Position, text: str) -> Move | str:
    try:
        return parse(pos, text)
    except NotationError as exc:
        return f"refused: {exc}"


def outcome_of(pos: Position) -> tuple[int | None, str] | None:
    out = pos.outcome()
    return None if out is None else (out.winner, out.reason)


GAMES = {
    "seed": st.integers(0, 10**9),
    "n": st.sampled_from([8, 6]),
    "variant": st.sampled_from(VARIANTS),
    "plies": st.integers(0, 160),
}


@settings(max_examples=80, deadline=None)
@given(**GAMES)
def test_legality_check_agrees_with_the_legal_move_list(seed, n, variant, plies):
    rng = random.Random(seed ^ 0x5EED)
    count = n * n
    for pos in random_game(seed, n, variant, plies):
        legal = list(pos.legal_moves())
        fresh = pos.copy()  # no move list yet: is_legal must not lean on one
        for move in legal:
            assert fresh.is_legal(move), (format_tpn(pos), move)
        for _ in range(40):
            move = Move(rng.randrange(count), rng.randrange(count))
            assert fresh.is_legal(move) == (move in legal), (format_tpn(pos), move)
        own = [sq for sq, p in enumerate(pos.board) if p >> 3 == pos.to_move]
        for frm in own:
            for to in range(count):
                assert fresh.is_legal(Move(frm, to)) == (Move(frm, to) in legal)


@settings(max_examples=80, deadline=None)
@given(**GAMES)
def test_outcome_and_has_legal_move_agree_with_the_full_list(seed, n, variant, plies):
    for pos in random_game(seed, n, variant, plies)[-12:]:
        fresh = pos.copy()
        assert fresh.has_legal_move() == bool(pos.legal_moves())
        assert outcome_of(pos.copy()) == slow_outcome(pos), format_tpn(pos)
        assert outcome_of(pos) == slow_outcome(pos)  # with its move list built


@settings(max_examples=60, deadline=None)
@given(**GAMES, texts=st.lists(st.tuples(st.integers(0, 63), st.integers(0, 63), st.integers(0, 5)), min_size=1, max_size=30))
def test_parse_move_answers_as_the_list_based_check_did(seed, n, variant, plies, texts):
    """The same move or the same refusal, word for word, for legal and illegal moves
    in every form (piece letters right or wrong, capture suffixes, off-board squares)."""
    pos = random_game(seed, n, variant, plies)[-1]
    geo = pos.geo
    names = [f"{'abcdefgh'[sq % 8]}{sq // 8 + 1}" for sq in range(64)]  # some are off a 6x6 board
    for frm, to, form in texts:
        a, b = names[frm], names[to]
        piece, target = (
            (pos.board[geo.square(a)], pos.board[geo.square(b)])
            if frm % 8 < n and to % 8 < n and max(frm, to) // 8 < n
            else (0, 0)
        )
        letter = KINDS[piece & 7] if piece else "D"
        text = [
            f"{a}-{b}",
            f"{letter}-{a}-{b}",
            f"{'T' if letter != 'T' else 'A'}-{a}-{b}",
            f"{a.upper()}{b.upper()}:{KINDS[target & 7] if target else 'b'}",
            f"{a[0]}0{a[1:]} - {b}",
            f"{a}-{b}:{'T' if target & 7 != 0 else 'C'}",
        ][form]
        assert answer(parse_move, pos.copy(), text) == answer(list_parse_move, pos, text), (format_tpn(pos), text)
    for move in pos.legal_moves()[:20]:
        text = format_move(pos, move)
        assert parse_move(pos.copy(), text) == move == list_parse_move(pos, text)


def test_parse_move_refuses_any_move_once_the_game_is_over():
    # army 1 has no legal move (a draw): every move text gets "the game is over"
    pos = parse_tpn("7T/8/8/8/8/8/DD6/tD6 1")
    for text in ("a1-a2", "b1-a1", "h8-h7"):
        assert answer(parse_move, pos, text) == f"refused: {text}: the game is over"


@pytest.mark.parametrize(
    "move",
    [Move(64, 0), Move(-1, 0), Move(0, 64), (True, 1), (1.0, 2.0), [10, 19], (10,), (10, 19, 0), "d2"],
    ids=repr,
)
def test_is_legal_on_odd_values_answers_as_list_membership(move):
    pos = start_position()
    assert pos.is_legal(move) == (move in pos.legal_moves())


# ------------------------------------------------------------ position strings
@settings(max_examples=60, deadline=None)
@given(**GAMES)
def test_format_tpn_and_remembered_strings_read_as_the_full_parse(seed, n, variant, plies):
    for pos in random_game(seed, n, variant, plies)[-6:]:
        text = format_tpn(pos)
        assert text == slow_tpn(pos)
        again = parse_tpn(text, n)  # remembered by format_tpn
        assert again == pos and again is not pos
        assert again.board == notation._read_tpn(text, n).board
        assert (again.army_mask, again.size_mask, again.occ) == (pos.army_mask, pos.size_mask, pos.occ)
        assert format_tpn(again) == text
        notation.clear_position_cache()
        cold = parse_tpn(text, n)
        assert cold == pos and (cold.army_mask, cold.size_mask, cold.occ) == (pos.army_mask, pos.size_mask, pos.occ)


def read_with(read, text: str, n: int | None) -> object:
    try:
        pos = read(text, n)
    except Exception as exc:  # the same refusal, word for word, or the same crash
        return type(exc).__name__, str(exc)
    return pos.board, pos.to_move, pos.army_mask, pos.size_mask, pos.occ


@settings(max_examples=300, deadline=None)
@given(
    **GAMES,
    edits=st.lists(
        st.tuples(st.integers(0, 200), st.integers(0, 2), st.sampled_from(list("tabcdTABCD'0123456789/ x"))), max_size=4
    ),
    size=st.sampled_from([None, 8, 6]),
)
def test_any_string_reads_as_the_square_by_square_reader_reads_it(seed, n, variant, plies, edits, size):
    """Position strings with a few characters changed, added or removed: the quick
    reader (whole ranks at a time, remembered) and the cache give what the square by
    square reader gives, or the same refusal."""
    text = format_tpn(random_game(seed, n, variant, plies)[-1])
    for at, how, char in edits:
        at %= len(text) + 1
        text = (
            (text[:at] + char + text[at + 1 :])
            if how == 0
            else (text[:at] + char + text[at:])
            if how == 1
            else (text[:at] + text[at + 1 :])
        )
    notation.clear_position_cache()
    expected = read_with(notation._read_tpn, text, size)
    assert read_with(parse_tpn, text, size) == expected, text  # read
    assert read_with(parse_tpn, text, size) == expected, text  # remembered


@pytest.mark.parametrize(
    "text",
    [
        "08/7T/8/8/1C6/8/ddcc4/tabb4 1",  # a count written with a leading zero
        "0t7/7T/8/8/1C6/8/ddcc4/tabb4 1",
        "8/7T/8/8/1C6/8/ddcc4/tabb4 01",
        "8/7T/8/8/1C6/8/ddcc4/tabb4\t1",  # a tab for the space
        f"{'9' * 5000}/7T/8/8/1C6/8/ddcc4/tabb4 1",  # int() refuses that many digits
        "x7/7T/8/8/1C6/8/ddcc4/" + "9" * 5000 + " 1",  # the top rank's fault is the one told
        "16/7T/8/8/1C6/8/ddcc4/tabb4 1",
    ],
)
def test_odd_strings_read_as_the_square_by_square_reader_reads_them(text):
    for size in (None, 8):
        notation.clear_position_cache()
        expected = read_with(notation._read_tpn, text, size)
        assert read_with(parse_tpn, text, size) == expected
        assert read_with(parse_tpn, text, size) == expected


def test_each_parse_is_a_position_of_its_own():
    text = "8/7T/8/8/1C6/8/ddcc4/tabb4 1"
    first = parse_tpn(text)
    first.legal_moves().clear()  # a caller breaking the rules spoils only its own copy
    first.board[0] = 0
    first.army_mask[1] = 0
    second = parse_tpn(text)
    assert second.board[0] == 1 << 3 and second.army_mask[1] and len(second.legal_moves()) > 0
    assert second.board is not first.board and second.army_mask is not first.army_mask


def test_a_position_changed_after_format_tpn_does_not_reach_the_cache():
    pos = start_position("short").play(Move(1, 9))
    text = format_tpn(pos)
    pos.board[9] = 0  # forbidden, but it must not change what the string reads as
    assert parse_tpn(text).board[9] != 0
    assert parse_tpn(text) == notation._read_tpn(text, None)


def test_a_position_changed_before_format_tpn_is_remembered_as_its_board_says():
    # Forbidden, but a board changed without its masks must not put wrong masks in
    # the cache: what is remembered is built afresh from the board.
    text = "8/7T/8/8/1C6/8/ddcc4/tabb4 1"
    pos = parse_tpn(text).play(Move(11, 19))
    pos.board[1] = 0  # b1's a gone; the masks still count it
    notation.clear_position_cache()
    changed = format_tpn(pos)
    assert changed == "8/7T/8/8/1C6/3c4/ddc5/t1bb4 2" == slow_tpn(pos)
    read = parse_tpn(changed)
    full = notation._read_tpn(changed, None)
    assert read == full and (read.army_mask, read.size_mask, read.occ) == (full.army_mask, full.size_mask, full.occ)
    assert read.army_mask != pos.army_mask
    assert parse_tpn(text).board[1] == 1 << 3 | 1


def test_no_legal_move_is_a_draw_with_or_without_the_move_list():
    for tpn in ("7T/8/8/8/8/8/DD6/tD6 1", "5T/6/6/6/CC4/tC4 1"):
        pos = parse_tpn(tpn)
        assert not pos.has_legal_move() and outcome_of(pos) == (None, "army 1 has no legal move")
        assert pos.legal_moves() == []
        assert not pos.has_legal_move() and outcome_of(pos) == (None, "army 1 has no legal move") == slow_outcome(pos)


def test_a_remembered_string_still_checks_the_board_size():
    text = format_tpn(start_position("long", 6))
    parse_tpn(text)
    with pytest.raises(NotationError, match="6 ranks but the board is 8x8"):
        parse_tpn(text, 8)
    notation.clear_position_cache()
    with pytest.raises(NotationError, match="6 ranks but the board is 8x8"):
        parse_tpn(text, 8)


@pytest.mark.parametrize(
    ("board", "to_move"),
    [
        ({0: 1 << 3, 63: 2 << 3, 62: 2 << 3}, 1),  # army 2 has two Ts
        ({0: 1 << 3, 63: 2 << 3}, 3),  # army 3 to move, not on the board
        ({0: 1 << 3, 63: 2 << 3 | 1}, 1),  # army 2 has no T
    ],
)
def test_positions_no_string_reads_as_are_never_remembered(board, to_move):
    squares = [0] * 64
    for sq, p in board.items():
        squares[sq] = p
    text = format_tpn(Position(8, squares, to_move))
    for _ in range(2):
        with pytest.raises(NotationError):
            parse_tpn(text)


def test_refused_strings_are_refused_every_time():
    for _ in range(2):
        with pytest.raises(NotationError, match="covers 7 squares"):
            parse_tpn("DDCCBBAT/AABBCCDD/8/8/8/8/ddccbbaa/tabbccd 1")


def test_the_cache_is_bounded():
    notation.clear_position_cache()
    pos = start_position("long")
    rng = random.Random(7)
    seen = 0
    while seen < notation.POSITION_CACHE_SIZE + 50:
        moves = pos.legal_moves()
        if not moves:
            pos = start_position("long")
            continue
        pos = pos.play(rng.choice(moves))
        format_tpn(pos)
        seen += 1
    assert len(notation._cache) == notation.POSITION_CACHE_SIZE


def test_threads_reading_and_writing_strings_agree():
    texts = [format_tpn(p) for p in random_game(3, 8, "long", 60)]
    notation.clear_position_cache()
    expected = [notation._read_tpn(t, 8) for t in texts]
    errors: list[str] = []

    def work(k: int) -> None:
        for i in range(300):
            j = (i * 7 + k) % len(texts)
            pos = parse_tpn(texts[j], 8)
            if pos != expected[j] or format_tpn(pos) != texts[j]:
                errors.append(texts[j])
            if i % 50 == k:
                notation.clear_position_cache()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# ------------------------------------------------------------------- the board
@settings(max_examples=60, deadline=None)
@given(**GAMES)
def test_board_from_the_cached_frame_equals_the_full_drawing(seed, n, variant, plies):
    for pos in random_game(seed, n, variant, plies)[-4:]:
        full = board_module._draw(pos.geo, lambda sq, pos=pos: board_module._cell(pos.board[sq]))
        assert render_board(pos) == full


def test_a_board_with_an_odd_piece_int_is_drawn_the_long_way():
    pos = start_position("medium", 6)
    odd = Position.__new__(Position)
    for name in ("geo", "army_mask", "size_mask", "occ", "to_move"):
        setattr(odd, name, getattr(pos, name))
    odd.board = [*pos.board[:-1], -8]  # no piece int: the frame's lookup misses it
    assert render_board(odd) == board_module._draw(pos.geo, lambda sq: board_module._cell(odd.board[sq]))
