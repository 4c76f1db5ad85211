"""Tournaments, pure (issue 41): who plays whom in each round, and the table.

No I/O and nothing of ours is imported, so every layer may use it (as ``elo``).
Players are plain ints (the service passes user ids) given in seed order (the
strongest first); a game's result is the score of its first-named player (who
has the first seat, "white"): 1, 0.5 or 0.

- :mod:`.pairing` — round robin by Berger tables (single and double), Swiss
  (Dutch-style, no repeated pairing while one is avoidable, a bye for an odd
  count, colours balanced), knockout (seeded bracket, two games a match).
- :mod:`.scoring` — the standings with their tie-breaks (Sonneborn–Berger,
  Buchholz) and the crosstable.
"""

from .pairing import (
    SYSTEMS,
    Pairing,
    Result,
    berger_table,
    bracket_order,
    knockout_pairings,
    knockout_winners,
    round_robin_pairings,
    rounds_needed,
    swiss_pairings,
)
from .scoring import Standing, crosstable, points_text, standings

__all__ = [
    "SYSTEMS",
    "Pairing",
    "Result",
    "Standing",
    "berger_table",
    "bracket_order",
    "crosstable",
    "knockout_pairings",
    "knockout_winners",
    "points_text",
    "round_robin_pairings",
    "rounds_needed",
    "standings",
    "swiss_pairings",
]
