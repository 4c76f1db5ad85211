"""The robots' public face: pick a move, comment on it, answer a draw offer.

Levels:

1. **beginner** — a two-ply search with quiescence, each root move's score blurred
   by up to ±60 of seeded noise, and a hard filter: it never leaves its own T where
   another army can capture it next when some move avoids that.
2. **club** — iterative deepening without noise, stopped by a node budget.
3. **strongest** — the same with a node budget calibrated to about two seconds per
   move on one core of the development machine (``NODES_PER_SECOND``), and four
   things robots 1 and 2 do not do (issue 42; ``search(..., robot3=True)``): it
   plays a move the unfinished last iteration has already proved better than the
   previous best; its quiescence lets a side in danger (its T can be taken, or the
   other T can step home) search all its moves (EVASION_PLIES; when only its T is
   in danger, only the T's moves and the captures: any other loses it); it prunes
   futile quiet moves one ply from the horizon (FUTILITY_MARGIN); and its
   evaluation scores the T's open road (a safe square nearer home, or none:
   ``t_road`` in :mod:`.evaluate`), which breaks the two guarded Ts' shuffle that
   otherwise ends 6x6 games drawn.  Measured against the frozen copy in
   ``bench/robot3_frozen`` (bench/robot.py --pairs 3-f3; CHANGELOG has the figures).

Level 3 asks the endgame solver (:mod:`.solve`) first when two armies and few pieces
are left (SOLVE_PIECES): a short win it proves is played at once, so what robot3
says of a forced win there is certain, not a line its pruned search happened to see.

Game history: ``choose_move(..., history=...)`` takes the game's earlier positions
(rules positions, or their :func:`position_key`); levels 2 and 3 score a return to
any of them as a draw (the beginner ignores it: measured, with it robot1 steered
into repetitions and robot2 scored 72.5 % instead of 77.5 % on 8x8 long), so a robot that stands better does not shuffle back and forth
(Terrace has no repetition rule; a game would just run on).  Levels 2 and 3 also
count such a draw as ``LEVEL_CONTEMPT`` worse than level for themselves, so two
sides that both see the game as equal do not shuffle into a repetition either
(measured: without it robot3 drew robot2 at the ply cap on 6x6 short, repeating
one cycle from ply 10).  Without a history the search still avoids repetitions
within its own lines.

Reproducibility: a choice depends only on (position, ply, level, history).  Noise comes from
a generator seeded with a hash of the position string, the ply and the level; every
level stops by node count, never by the clock, so a replay reproduces every move.
Level 3 also accepts ``time_budget``: the node budget is scaled to it, and the
wall clock then only acts as a safety stop at 1.5x the budget (on a machine much
slower than ours that stop can change the move; the result says ``stopped='time'``).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pbmserv_terrace.games.terrace import Move, Position, format_tpn
from pbmserv_terrace.games.verdict import robot_verdict

from .board import SearchBoard, encode, to_move_obj
from .evaluate import evaluate
from .search import MATE, MATE_BOUND, Limits, RootResult, Searcher, Stop
from .solve import prove_win
from .zobrist import full_hash

NODES_PER_SECOND = {8: 44_000, 6: 85_000}
"""Level 3's node rate by board size on one core of the development machine,
measured (bench/robot.py prints it): a 6x6 node is cheaper (fewer squares to scan)."""
DEFAULT_BUDGET = 2.0
LEVEL_NODES = {1: 3_000, 2: 4_000}
LEVEL_NOISE = {1: 60, 2: 0, 3: 0}
LEVEL_DEPTH = {1: 2, 2: 64, 3: 64}
LEVEL_CONTEMPT = {1: 0, 2: 25, 3: 25}
"""What a repetition of a position costs the robot (it prefers playing on)."""
DRAW_MARGIN = 40
"""accepts_draw: accept when the robot's score is below -DRAW_MARGIN."""
SOLVE_PIECES = 12
"""robot3 asks the endgame solver (:mod:`.solve`) first in two-army positions with at
most this many pieces on the board, for a win of at most SOLVE_MOVES of its moves,
with at most SOLVE_SHARE of its node budget: a win it finds there is proved."""
SOLVE_MOVES, SOLVE_SHARE = 3, 4
EVASION_PLIES = 2
"""robot3's quiescence lets a side whose T is threatened (or whose opponent's T
can step home) search all its moves in its first EVASION_PLIES plies."""
FUTILITY_MARGIN = 150
"""robot3's futility pruning: what a quiet move may gain at most (see search.py)."""


@dataclass(frozen=True, slots=True)
class EngineResult:
    """A robot's choice.  ``score`` is centipawn-like from the mover's point of view
    (about ±100000 for a forced win or loss); ``stopped`` is why the search ended."""

    move: Move
    score: int
    depth: int
    nodes: int
    seconds: float
    level: int
    stopped: str


def _seed(pos: Position, ply: int, level: int) -> int:
    text = f"{format_tpn(pos)}|{ply}|{level}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


def _limits(level: int, time_budget: float | None, start: float, n: int = 8) -> Limits:
    if level not in LEVEL_DEPTH:
        raise ValueError(f"robot level must be 1, 2 or 3, not {level}")
    if level < 3:
        return Limits(LEVEL_DEPTH[level], LEVEL_NODES[level])
    budget = DEFAULT_BUDGET if time_budget is None else time_budget
    deadline = None if time_budget is None else start + 1.5 * time_budget
    rate = NODES_PER_SECOND.get(n, NODES_PER_SECOND[8])
    return Limits(LEVEL_DEPTH[3], max(200, int(rate * budget)), deadline)


def _safe_moves(sb: SearchBoard, moves: list[int]) -> list[int]:
    """The moves after which no other army can capture the mover's T at once (or
    that end the game); all of them when none is safe."""
    army = sb.to_move
    safe = []
    for m in moves:
        undo = sb.make(m)
        if sb.winner == army or (not sb.winner and sb.am[army] and not sb.t_attackers(army)):
            safe.append(m)
        sb.unmake(undo)
    return safe or moves


def position_key(pos: Position) -> int:
    """The engine's key (Zobrist hash) of a position, for ``history``."""
    return full_hash(pos)


def history_keys(history: Sequence[Position | int]) -> frozenset[int]:
    """The keys of a game history given as positions or keys."""
    return frozenset(h if isinstance(h, int) else full_hash(h) for h in history)


def search(
    pos: Position,
    root: int,
    limits: Limits,
    *,
    noise: int = 0,
    seed: int = 0,
    safe_only: bool = False,
    seen: frozenset[int] = frozenset(),
    contempt: int = 0,
    robot3: bool = True,
) -> RootResult:
    """Iterative deepening from ``pos``; the score is from army ``root``'s view.
    ``seen``: keys of earlier positions of the game (a return to one is a draw).
    ``robot3``: robot3's search (see the module docstring: the unfinished
    iteration's better move, evasions in the quiescence, futility pruning); robots
    1 and 2 search without them, as they always did."""
    sb = SearchBoard(pos)
    moves = sb.moves()
    if not moves:
        raise ValueError("the game is over: there is no move to choose")
    if safe_only:
        moves = _safe_moves(sb, moves)
    searcher = Searcher(
        sb,
        root,
        limits,
        seen - {sb.hash},
        contempt,
        EVASION_PLIES if robot3 else 0,
        FUTILITY_MARGIN if robot3 else 0,
        t_road=robot3,
    )
    sign = 1 if sb.to_move == root else -1
    order = searcher.order(moves, 0, 0)
    if len(order) == 1:
        return RootResult(order[0], evaluate(sb, root, robot3), 0, 0, "only move")
    rng = random.Random(seed)
    blur = {m: rng.randint(-noise, noise) for m in sorted(order)} if noise else {}
    best, best_score, done, stopped = order[0], 0, 0, "depth"
    for depth in range(1, limits.max_depth + 1):
        try:
            scored = searcher.root_scores(order, depth, exact=bool(noise))
        except Stop as stop:
            stopped = stop.reason
            # The unfinished iteration searched the previous best first; a move it
            # then proved better (scores above the first are exact) is played.
            part = searcher.partial
            if robot3 and not noise and done and len(part) > 1:
                top = max(part, key=lambda sm: sm[0])
                if top[0] > part[0][0] and abs(best_score) < MATE_BOUND:
                    best, best_score = top[1], top[0]
            break
        ranked = sorted(scored, key=lambda sm: -(sm[0] + (blur.get(sm[1], 0) if abs(sm[0]) < MATE_BOUND else 0)))
        best, best_score = ranked[0][1], ranked[0][0]
        order = [m for _, m in ranked]
        done = depth
        if abs(best_score) >= MATE_BOUND:
            stopped = "mate"
            break
    else:
        stopped = "depth"
    if done == 0:  # not even one iteration: fall back on the static view
        best_score = evaluate(SearchBoard(pos), root, robot3) * sign
    return RootResult(best, best_score * sign, done, searcher.nodes, stopped)


def choose_move(
    pos: Position,
    *,
    level: int,
    ply: int,
    time_budget: float | None = None,
    history: Sequence[Position | int] = (),
) -> EngineResult:
    """The move robot ``level`` plays in ``pos`` (``ply``: moves played so far;
    ``history``: the game's earlier positions, or their :func:`position_key`)."""
    start = time.perf_counter()
    limits = _limits(level, time_budget, start, pos.n)
    if level == 3 and len(pos.armies()) == 2 and sum(1 for p in pos.board if p) <= SOLVE_PIECES:
        proof = prove_win(SearchBoard(pos), SOLVE_MOVES, limits.nodes // SOLVE_SHARE)
        if proof is not None and proof.move is not None:
            return EngineResult(
                to_move_obj(proof.move), MATE - proof.plies, proof.plies, 0, time.perf_counter() - start, level, "mate"
            )
    res = search(
        pos,
        pos.to_move,
        limits,
        noise=LEVEL_NOISE[level],
        seed=_seed(pos, ply, level),
        safe_only=level == 1,
        seen=history_keys(history) if level > 1 else frozenset(),
        contempt=LEVEL_CONTEMPT[level],
        robot3=level == 3,
    )
    return EngineResult(to_move_obj(res.move), res.score, res.depth, res.nodes, time.perf_counter() - start, level, res.stopped)


def accepts_draw(pos: Position, army: int, *, level: int, ply: int, history: Sequence[Position | int] = ()) -> bool:
    """Whether robot ``level`` playing ``army`` accepts a draw offer in ``pos``:
    only when its own search says it stands worse (below -DRAW_MARGIN)."""
    if army not in pos.armies():
        raise ValueError(f"army {army} is not in the game")
    if pos.is_over():
        return False
    limits = _limits(level, None, time.perf_counter(), pos.n)
    res = search(pos, army, Limits(limits.max_depth, limits.nodes), seed=_seed(pos, ply, level), seen=history_keys(history))
    return res.score < -DRAW_MARGIN


def describe(result: EngineResult) -> str:
    """One line in words about how the robot sees the game after its move."""
    return robot_verdict(result.level, result.score, MATE_BOUND)


__all__ = ["EngineResult", "accepts_draw", "choose_move", "describe", "encode", "history_keys", "position_key", "search"]
