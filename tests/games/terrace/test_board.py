"""The ASCII board (COMMANDS.md §5) printed exactly as SETUPS.txt draws every setup."""

from __future__ import annotations

from pathlib import Path

import pytest

from pbmserv_terrace.games.terrace import format_tpn, parse_tpn, render_board, start_position

# A copy of the spec's SETUPS.txt (see the file's first line): tests read nothing outside the repository.
SETUPS = Path(__file__).resolve().parents[2] / "data" / "spec" / "SETUPS.txt"
NAMES = {
    "long": (8, "long"),
    "medium": (8, "medium"),
    "short": (8, "short"),
    "master": (8, "master"),
    "3p": (8, "3p"),
    "4p": (8, "4p"),
    "6x6-long": (6, "long"),
    "6x6-medium": (6, "medium"),
    "6x6-short": (6, "short"),
    "6x6-master": (6, "master"),
    "6x6-3p": (6, "3p"),
    "6x6-4p": (6, "4p"),
}


def spec_blocks() -> list[tuple[str, str, str]]:
    text = SETUPS.read_text()
    out = []
    for block in text.split("== ")[1:]:
        name, tpn, _blank, *diagram = block.rstrip("\n").split("\n")
        out.append((name, tpn, "\n".join(diagram).rstrip("\n")))
    return out


def test_the_spec_lists_every_setup():
    assert [name for name, _, _ in spec_blocks()] == list(NAMES)


@pytest.mark.parametrize(("name", "tpn", "diagram"), spec_blocks(), ids=[b[0] for b in spec_blocks()])
def test_every_start_prints_exactly_as_setups_txt(name, tpn, diagram):
    n, variant = NAMES[name]
    pos = start_position(variant, n)
    assert format_tpn(pos) == tpn
    assert render_board(pos) == diagram


def test_walls_only_between_different_heights():
    drawing = render_board(parse_tpn("8/8/8/8/8/8/8/t6T 1")).splitlines()
    assert drawing[1].startswith("      H---") and drawing[1].endswith("---L")
    assert drawing[-2].startswith("      L---") and drawing[-2].endswith("---H")
    # between ranks 5 and 4 every file changes height: a full wall
    assert drawing[9] == "      +---+---+---+---+---+---+---+---+"
    # rank 5: a5..d5 one terrace (no inner walls), then the wall to e5
    assert drawing[8] == "    5 |               |               | 5"


def test_primes_for_armies_three_and_four():
    text = render_board(start_position("4p"))
    assert "| d'|" in text and "| T'    |" in text
