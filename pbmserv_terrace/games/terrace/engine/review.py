"""A review of a finished two-army game (issue 42): the engine's evaluation after
each ply, each side's biggest mistakes with the better move, and a reason stated
only where it is proved.

For each position of the game the search (:mod:`.search`, a fixed node budget per
position, so a review is reproducible) gives the best move and its score; the
score of the move played is the next position's score seen from the other side.
A mistake's *swing* is how much the move played gave away against the best one
(both from the mover's point of view, scores clipped to ±CLIP so that a forced win
counts as a big number, not as 100000).  Each side's three largest swings over
MIN_SWING are its mistakes.

Reasons come from the endgame solver (:mod:`.solve`), so they are certain:
* the mover had a proved win in one (a T step home, or a T taken) and played
  something else: "misses a Terrace in 1" / "misses taking the T";
* after the move the other side has a proved forced win within REASON_MOVES of its
  moves, and before it the mover was not already lost that fast: "leaves its T to be
  taken", "lets the opponent's T reach its corner" (a win in one), "lets the
  opponent force a win in N";
* the mover had a proved forced win within REASON_MOVES and the move lets it go:
  "lets a forced win in N go".
Otherwise the review gives no reason (the swing and the better move speak).

The *turning point* is the ply of the largest swing of the game.

:func:`review_next` makes it in small steps (so that a worker pool can put a
robot's move between them): :func:`score_position` for each position (index ``i``
of :func:`positions_of`; plain values out), :func:`judge` over all the scores
(cheap), :func:`reason` for each mistake it chose, then :func:`assemble`.
:func:`review_game` does it all at once by taking those steps in one go, so both
give the same review.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pbmserv_terrace.games.terrace import Move, Position

from .board import SearchBoard, encode, to_move_obj
from .robot import search
from .search import Limits
from .solve import prove_loss, prove_win
from .zobrist import full_hash

CLIP = 2_000
"""Scores are clipped to ±CLIP (a forced win is 'very much', not 100000)."""
MIN_SWING = 60
"""A move that gives away less than this is not called a mistake."""
MISTAKES = 3
REASON_MOVES = 2
"""Reasons are proved for wins within this many moves of the winner."""
SOLVE_NODES = 60_000


@dataclass(frozen=True, slots=True)
class Mistake:
    ply: int
    """The ply number of the move (1 = the first move of the game)."""
    army: int
    played: Move
    better: Move
    swing: int
    reason: str | None


@dataclass(frozen=True, slots=True)
class Review:
    evaluations: tuple[int, ...]
    """Army 1's score after each ply (index 0: the start; clipped to ±CLIP)."""
    mistakes: dict[int, tuple[Mistake, ...]]
    """Each army's biggest mistakes, biggest first."""
    turning_point: int | None
    """The ply of the game's biggest swing (None when nobody made a mistake)."""


def clip(score: int) -> int:
    return max(-CLIP, min(CLIP, score))


def score_position(positions: Sequence[Position], index: int, nodes: int) -> tuple[int, int | None]:
    """The mover's score of ``positions[index]`` (clipped) and its best move, encoded
    as the search's moves (None: the game is over there), searched at ``nodes`` with
    the earlier positions of the game as its history.  Plain values out."""
    pos = positions[index]
    out = pos.outcome()
    if out is not None:
        return (CLIP if out.winner == pos.to_move else -CLIP if out.winner else 0), None
    if not pos.legal_moves():
        return 0, None
    seen = frozenset(full_hash(p) for p in positions[:index])
    res = search(pos, pos.to_move, Limits(64, nodes), seen=seen, contempt=0)
    return clip(res.score), res.move


def reason(before: Position, after: Position, played: Move) -> str | None:
    """What the move did, when the solver can prove it (None otherwise)."""
    mover = before.to_move
    sb_before = SearchBoard(before)
    had_win = prove_win(sb_before, REASON_MOVES, SOLVE_NODES)
    outcome = after.outcome()
    if outcome is not None:
        return None  # the move ended the game: no mistake to explain
    if had_win is not None and had_win.move is not None:
        if had_win.moves == 1:
            win = to_move_obj(had_win.move)
            return "misses taking the T" if before.board[win.to] else "misses a Terrace in 1"
        # The mover had a forced win; does it still have one after this move?
        sb_after = SearchBoard(after)
        still = prove_loss(sb_after, had_win.moves, SOLVE_NODES)
        if still is None:
            return f"lets a forced win in {had_win.moves} go"
        return None
    sb_after = SearchBoard(after)
    threat = prove_win(sb_after, REASON_MOVES, SOLVE_NODES)
    if threat is None or threat.move is None:
        return None
    already = prove_loss(SearchBoard(before), threat.moves, SOLVE_NODES)
    if already is not None:
        return None  # lost whatever it played: not this move's fault
    if threat.moves == 1:
        win = to_move_obj(threat.move)
        if after.board[win.to]:
            return "leaves its T to be taken" if after.board[win.to] >> 3 == mover else "lets the opponent take a T"
        return "lets the opponent's T reach its corner"
    return f"lets the opponent force a win in {threat.moves}"


def positions_of(start: Position, moves: Sequence[Move]) -> list[Position]:
    """The game's positions: ``start``, then the one after each move."""
    positions = [start]
    for m in moves:
        positions.append(positions[-1].play(m))
    return positions


def judge(
    positions: Sequence[Position], moves: Sequence[Move], scored: Sequence[tuple[int, int | None]]
) -> tuple[tuple[int, ...], dict[int, tuple[Mistake, ...]], int | None]:
    """From every position's :func:`score_position`: army 1's evaluation after each
    ply, each army's biggest mistakes (biggest first, their reasons not yet looked
    for: None) and the turning point."""
    evaluations = tuple(s if pos.to_move == 1 else -s for (s, _), pos in zip(scored, positions, strict=True))
    candidates: list[Mistake] = []
    for i, played in enumerate(moves):
        before, after = positions[i], positions[i + 1]
        best_score, best_code = scored[i]
        ended = after.outcome()
        if ended is None:
            played_score = -scored[i + 1][0]
        else:
            played_score = CLIP if ended.winner == before.to_move else -CLIP if ended.winner else 0
        if best_code is None or best_code == encode(played):
            continue
        swing = best_score - played_score
        if swing >= MIN_SWING:
            candidates.append(Mistake(i + 1, before.to_move, played, to_move_obj(best_code), swing, None))
    mistakes: dict[int, tuple[Mistake, ...]] = {}
    for army in positions[0].armies():
        mistakes[army] = tuple(sorted((c for c in candidates if c.army == army), key=lambda c: (-c.swing, c.ply))[:MISTAKES])
    turning = max(candidates, key=lambda c: (c.swing, -c.ply)).ply if candidates else None
    return evaluations, mistakes, turning


def assemble(
    evaluations: tuple[int, ...], mistakes: dict[int, tuple[Mistake, ...]], turning: int | None, reasons: Sequence[str | None]
) -> Review:
    """The review from :func:`judge`'s answer and the :func:`reason` of each of its
    mistakes (in the order of ``mistakes``: by army, as :func:`judge` made it, then
    biggest first)."""
    given = iter(reasons)
    found = {army: tuple(replace(m, reason=next(given)) for m in chosen) for army, chosen in mistakes.items()}
    return Review(evaluations, found, turning)


def review_next(
    positions: Sequence[Position], moves: Sequence[Move], nodes: int, found: tuple[Any, ...]
) -> tuple[tuple[Any, ...], Review | None, int]:
    """One step of the review of the game ``positions`` (:func:`positions_of`) played
    by ``moves``; ``found`` is what the steps before found (plain, picklable values:
    each scored position's :func:`score_position`, then each mistake's
    :func:`reason`), ``()`` at the start.  While positions are unscored, the next one
    is searched; then, while a mistake :func:`judge` chose has no reason looked for,
    its proof; then the review is made (:func:`assemble`).  Returns what is found now,
    the review (None until the last step) and about how many steps are left."""
    count = len(positions)
    if len(found) < count:
        scored = score_position(positions, len(found), nodes)
        return (*found, scored), None, count - len(found) - 1 + 2 * MISTAKES
    evaluations, chosen, turning = judge(positions, moves, found[:count])
    order = [m for army in chosen for m in chosen[army]]
    reasons = found[count:]
    if len(reasons) < len(order):
        m = order[len(reasons)]
        return (*found, reason(positions[m.ply - 1], positions[m.ply], m.played)), None, len(order) - len(reasons)
    return found, assemble(evaluations, chosen, turning, reasons), 0


def review_game(start: Position, moves: Sequence[Move], nodes: int = 20_000) -> Review:
    """Review a two-army game played from ``start`` by ``moves`` (``nodes``: the
    search budget per position; the whole review costs about (plies + 1) times it,
    plus the solver's proofs for the mistakes): :func:`review_next` until it is done."""
    if len(start.armies()) != 2:
        raise ValueError("a review is for two-army games")
    positions = positions_of(start, moves)
    found: tuple[Any, ...] = ()
    while True:
        found, review, _ = review_next(positions, moves, nodes, found)
        if review is not None:
            return review


__all__ = [
    "CLIP",
    "MIN_SWING",
    "MISTAKES",
    "Mistake",
    "Review",
    "assemble",
    "clip",
    "judge",
    "positions_of",
    "reason",
    "review_game",
    "review_next",
    "score_position",
]
