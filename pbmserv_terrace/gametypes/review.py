"""A finished game's review as the service stores it, mails it and the web draws
it (issue 42): game-neutral values, and the one JSON form of them.

A game whose rules can review a game (:meth:`BoardRules.can_review`,
:meth:`BoardRules.review`) turns its engine's review into a :class:`GameReview`:
moves as the game's own move text, armies as seat numbers.  The service keeps it
in ``reviews.data`` (:func:`review_to_json`); the review mail and the web's board
page read it back with :func:`review_from_json`.

The JSON (``reviews.data``), format 1::

    {
      "format": 1,
      "scale": 2000,              # |evaluation| = scale: a won (or lost) game
      "nodes": 20000,             # the engine's search budget per position
      "evaluations": [0, 35, -12, ..., -2000],
                                  # seat 1's evaluation after each ply, from the
                                  # engine's point of view: index 0 is the start,
                                  # index k the position after ply k; positive =
                                  # seat 1 stands better; clipped to ±scale
      "turning_point": 17,        # the ply of the game's biggest mistake, or null
      "mistakes": [               # each seat's biggest mistakes (at most 3 per
        {                         # seat), by seat, biggest first
          "ply": 17,              # the ply of the move (1 = the first move)
          "seat": 1,              # who played it (seat k plays army k)
          "played": "c2-d3",      # the move played (the game's move text)
          "better": "e4xf5",      # the engine's move there
          "swing": 1840,          # how much the move gave away against the
                                  # better one, in evaluation points (> 0)
          "reason": "leaves its T to be taken"
                                  # one line the engine proved, or null
        }
      ]
    }

Evaluation points are the engine's: about 100 for a small piece's worth; a
forced win is ``scale``.  A reader must refuse (``ValueError``) a format it does
not know rather than guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FORMAT = 1
"""the version of the JSON form (bumped when a field changes meaning)"""


@dataclass(frozen=True, slots=True)
class ReviewMistake:
    """One of a player's biggest mistakes."""

    ply: int
    """the ply of the move (1 = the game's first move)"""
    seat: int
    played: str
    """the move played, in the game's move text"""
    better: str
    """the engine's better move there"""
    swing: int
    """what the move gave away, in evaluation points"""
    reason: str | None
    """a one-line reason the engine proved ("loses the T in 2"), or None"""


@dataclass(frozen=True, slots=True)
class GameReview:
    """A finished game's review (see the module's docstring for each field)."""

    evaluations: tuple[int, ...]
    """seat 1's evaluation after each ply (index 0: the start)"""
    mistakes: tuple[ReviewMistake, ...]
    """each seat's biggest mistakes, by seat, biggest first"""
    turning_point: int | None
    scale: int
    nodes: int

    @property
    def plies(self) -> int:
        """The plies reviewed."""
        return len(self.evaluations) - 1

    def of_seat(self, seat: int) -> tuple[ReviewMistake, ...]:
        """The mistakes of ``seat``, biggest first."""
        return tuple(m for m in self.mistakes if m.seat == seat)

    def evaluation_for(self, seat: int, ply: int) -> int:
        """The evaluation after ``ply`` from ``seat``'s point of view (two seats)."""
        value = self.evaluations[ply]
        return value if seat == 1 else -value


@dataclass(frozen=True, slots=True)
class ReviewStep:
    """Where a review made in steps stands (:meth:`BoardRules.review_step`): a robot's
    move can be computed between two steps, where one long job would make it wait
    for the whole review."""

    found: tuple[Any, ...]
    """what the steps so far found: the game's own plain values (picklable), given
    back unchanged to the next step"""
    done: bool
    """True once the review is made: ``review`` is it (None: the game cannot review this)"""
    review: GameReview | None = None
    left: int = 0
    """steps still to do (0 when done)"""


def review_to_json(review: GameReview) -> dict[str, Any]:
    """The JSON form of ``review`` (format 1: the module's docstring)."""
    return {
        "format": FORMAT,
        "scale": review.scale,
        "nodes": review.nodes,
        "evaluations": list(review.evaluations),
        "turning_point": review.turning_point,
        "mistakes": [
            {"ply": m.ply, "seat": m.seat, "played": m.played, "better": m.better, "swing": m.swing, "reason": m.reason}
            for m in review.mistakes
        ],
    }


def _int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"review: {name} is not a whole number")
    return value


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"review: {name} is not a text")
    return value


def review_from_json(data: Mapping[str, Any]) -> GameReview:
    """The review stored as ``data`` (:func:`review_to_json`'s form); ``ValueError``
    for another format or a malformed one."""
    if data.get("format") != FORMAT:
        raise ValueError(f"review: unknown format {data.get('format')!r}")
    evaluations = data.get("evaluations")
    if not isinstance(evaluations, list) or not evaluations:
        raise ValueError("review: no evaluations")
    turning = data.get("turning_point")
    mistakes = data.get("mistakes")
    if not isinstance(mistakes, list):
        raise ValueError("review: no list of mistakes")
    parsed = []
    for m in mistakes:
        if not isinstance(m, Mapping):
            raise ValueError("review: a mistake is not an object")
        reason = m.get("reason")
        parsed.append(ReviewMistake(
            _int(m.get("ply"), "ply"), _int(m.get("seat"), "seat"), _text(m.get("played"), "played"),
            _text(m.get("better"), "better"), _int(m.get("swing"), "swing"),
            None if reason is None else _text(reason, "reason"),
        ))  # fmt: skip
    return GameReview(
        evaluations=tuple(_int(v, "evaluation") for v in evaluations),
        mistakes=tuple(parsed),
        turning_point=None if turning is None else _int(turning, "turning_point"),
        scale=_int(data.get("scale"), "scale"),
        nodes=_int(data.get("nodes"), "nodes"),
    )


__all__ = ["FORMAT", "GameReview", "ReviewMistake", "ReviewStep", "review_from_json", "review_to_json"]
