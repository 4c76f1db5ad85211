"""How a robot words its view of the game after its move, in every board game's
robot comment (shared, like :mod:`.png` and :mod:`.ranking`: pure, imports nothing)."""

from __future__ import annotations

WORDS = ((400, "is winning"), (150, "is clearly better"), (40, "is slightly better"))
"""score bounds (centipawn-like, the side's own view) and what the robot says above them"""


def robot_verdict(level: int, score: int, mate_bound: int) -> str:
    """One line in words: ``robot2 thinks it is clearly better``; a score beyond
    ``mate_bound`` (either way) is a forced win or loss the search has seen."""
    who = f"robot{level}"
    if score >= mate_bound:
        return f"{who} sees a forced win"
    if score <= -mate_bound:
        return f"{who} sees a forced loss"
    for bound, words in WORDS:
        if score >= bound:
            return f"{who} thinks it {words}"
        if score <= -bound:
            return f"{who} thinks it {words.replace('better', 'worse').replace('winning', 'losing')}"
    return f"{who} thinks the game is level"
