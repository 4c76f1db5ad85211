"""RULES.md §7, the forms players really type (issue 15): no dash, typographic dashes,
a piece letter without its dash, spaces around the dash; and refusals that say where
the piece can go instead."""

from __future__ import annotations

import pytest

from pbmserv_terrace.games.terrace import Move, NotationError, format_move, parse_move, parse_tpn, start_position, why_illegal
from pbmserv_terrace.games.terrace.notation import _MOVE

LEVEL_EXAMPLE = "8/7T/8/8/1C6/8/ddcc4/tabb4 1"
"""Army 1's c on d2 walks d3, d4, c4 but not past army 2's C on b4 (RULES.md §4.1)."""
CAPTURE_EXAMPLE = "8/7T/8/8/1C6/d1c5/1d1c4/tabb4 2"


@pytest.mark.parametrize(
    "text",
    [
        "d2e3",
        "D2E3",
        "d2\u2013e3",  # en dash, as phones and word processors write it
        "d2\u2014e3",  # em dash
        "d2\u2212e3",  # minus sign
        "Cd2-e3",
        "cd2e3",
        "c\u2013d2\u2013e3",
        "d2 - e3",
        "d2 -e3",
        "C - d2 - e3",
        "  d2 \u2013 e3  ",
    ],
)
def test_s7_relaxed_input_forms(text: str) -> None:
    pos = start_position()
    assert format_move(pos, parse_move(pos, text)) == "C-d2-e3"


@pytest.mark.parametrize("text", ["b4c3", "b4c3:c", "Cb4c3:C", "b4 \u2013 c3 : C"])
def test_s7_relaxed_capture_forms(text: str) -> None:
    pos = parse_tpn(CAPTURE_EXAMPLE)
    assert format_move(pos, parse_move(pos, text)) == "C-b4-c3:C"


def test_s7_relaxed_forms_keep_the_letter_checks() -> None:
    pos = start_position()
    with pytest.raises(NotationError, match="is C, not A"):
        parse_move(pos, "ad2e3")
    with pytest.raises(NotationError, match="nothing to capture"):
        parse_move(pos, "d2e3:b")


@pytest.mark.parametrize("text", ["d2xe3", "d2--e3", "d2-e3-f4", "e3", "d2-e3#5", "x-d2-e3", "d2_e3", ""])
def test_s7_other_text_is_refused_with_the_forms(text: str) -> None:
    # '#k' belongs to the command (the service strips it), never to the move itself.
    with pytest.raises(NotationError, match=r"is not a move; write it as .*d2-e3"):
        parse_move(start_position(), text)


def test_queue_shape_check_accepts_the_same_forms() -> None:
    # The service checks a queued move's shape with _MOVE before storing it.
    for text in ("d7d6", "d7\u2013d6", "Cd7-d6", "C-e7-e6", "b4-c3:C"):
        assert _MOVE.match(text), text
    assert not _MOVE.match("d7-d6#3")


def test_refusal_says_where_the_piece_can_go() -> None:
    pos = parse_tpn(LEVEL_EXAMPLE)
    with pytest.raises(NotationError) as err:
        parse_move(pos, "d2-a4")
    legal = sorted(
        (pos.geo.name(m.to) for m in pos.legal_moves() if m.frm == pos.geo.square("d2")), key=lambda s: (s[0], int(s[1:]))
    )
    assert legal and "a4" not in legal
    assert str(err.value) == (
        f"d2-a4: the way along the terrace is blocked by the opponent's piece on b4; the C on d2 can go to {', '.join(legal)}"
    )


def test_refusal_says_when_the_piece_cannot_move() -> None:
    # a1's t is walled in by its own pieces at the start.
    pos = start_position()
    g = pos.geo
    assert not [m for m in pos.legal_moves() if m.frm == g.square("a1")]
    with pytest.raises(NotationError, match=r"occupied.*; this piece has no legal move$"):
        parse_move(pos, "a1-a2")


def test_why_illegal_names_every_target_in_file_then_rank_order() -> None:
    pos = parse_tpn(LEVEL_EXAMPLE)
    g = pos.geo
    reason = why_illegal(pos, Move(g.square("d2"), g.square("d2")))
    assert reason.startswith("a piece must move to another square; the C on d2 can go to ")
    listed = reason.rsplit(" can go to ", 1)[1].split(", ")
    expected = {g.name(m.to) for m in pos.legal_moves() if m.frm == g.square("d2")}
    assert set(listed) == expected and len(listed) == len(expected)
    assert listed == sorted(listed, key=lambda s: (s[0], int(s[1:])))
