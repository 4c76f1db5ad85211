"""Start positions of every variant on both board sizes (RULES.md §3).

The setups are written as position strings (§8); SETUPS.txt in the spec holds the
same strings and their diagrams, and the tests check every one against it.

>>> start_position("3p").armies()
[1, 2, 3]
"""

from __future__ import annotations

from .notation import parse_tpn
from .position import Position

VARIANTS = ("long", "medium", "short", "master", "3p", "4p")

_SETUPS: dict[tuple[int, str], str] = {
    (8, "long"): "DDCCBBAT/AABBCCDD/8/8/8/8/ddccbbaa/tabbccdd 1",
    (8, "medium"): "1DCCBBT1/8/8/8/8/8/8/1tbbccd1 1",
    (8, "short"): "1TBBCCD1/8/8/8/8/8/8/1dccbbt1 1",
    (8, "master"): "DDCCBBAT/AABBCCDD/8/8/8/8/8/1dccbbt1 1",
    (8, "3p"): "1d'c'c'b'b't'1/7T/7B/7B/7C/7C/7D/1tbbccd1 1",
    (8, "4p"): "1d'c'c'b'b't'1/D'6T/C'6B/C'6B/B'6C/B'6C/T'6D/1tbbccd1 1",
    (6, "long"): "CCBBAT/AABBCC/6/6/ccbbaa/tabbcc 1",
    (6, "medium"): "1CBBT1/6/6/6/6/1tbbc1 1",
    (6, "short"): "1TBBC1/6/6/6/6/1cbbt1 1",
    (6, "master"): "CCBBAT/AABBCC/6/6/6/1cbbt1 1",
    (6, "3p"): "1TBBC1/t'5/b'5/b'5/c'5/1cbbt1 1",
    (6, "4p"): "1TBBC1/t'4C'/b'4B'/b'4B'/c'4T'/1cbbt1 1",
}

PLAYERS = {"long": 2, "medium": 2, "short": 2, "master": 2, "3p": 3, "4p": 4}


def setup_tpn(variant: str, n: int = 8) -> str:
    """The position string of a variant's start; ValueError for an unknown one."""
    try:
        return _SETUPS[(n, variant)]
    except KeyError:
        raise ValueError(f"unknown setup {variant!r} for the {n}x{n} board; setups are {', '.join(VARIANTS)}") from None


def start_position(variant: str = "long", n: int = 8) -> Position:
    """The start position of ``variant`` on the N x N board."""
    return parse_tpn(setup_tpn(variant, n), n)


def variant_for_players(players: int, variant: str | None) -> str:
    """The setup a challenge of ``players`` players plays: the two-player variant
    named (default ``long``), or ``3p``/``4p``."""
    if players == 2:
        return variant or "long"
    if variant not in (None, "long"):
        raise ValueError(f"the -{variant} setup is for two players; a game of {players} uses the {players}-player setup")
    return f"{players}p"
