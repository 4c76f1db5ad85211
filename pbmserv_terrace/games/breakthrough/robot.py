"""The robot players: an alpha-beta search (negamax, iterative deepening, best
moves remembered per position for ordering, killer moves) over the pawn
bitmasks, with a node budget per level, so a level plays the same move for the
same position and seed on any machine.

What the search knows exactly, at every node and at its leaves:

- a side with a pawn one step from its goal row wins with its next move (any
  pawn there has a diagonal step onto the goal row, which holds no pawn of its
  own while the game goes on);
- so a side whose opponent has such a pawn must capture it at once: with two of
  them, or none of its pawns attacking the one, it has lost; else only those
  captures are searched (whatever the depth left: each one takes a pawn, so the
  chain ends);
- a side without pawns or without a move has lost.

The evaluation (from the side to move) counts pawns (100 each), their advance
(more the nearer the goal row), home-row pawns (the last defence), pawns in the
enemy half that no enemy pawn attacks, and pawns defended by a pawn of their own.

Breakthrough positions never repeat (every move takes a pawn forward), so no
history is needed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache

from ..verdict import robot_verdict
from .notation import format_move
from .position import BLACK, WHITE, Move, Position, bits, forward, geometry, other, targets

WIN = 100_000
"""the score of a won position (less the plies it takes)"""
MATE_BOUND = WIN - 1_000
"""a score at least this is a forced win"""
PAWN = 100
DRAW_MARGIN = 150
"""how much worse the robot must think it stands to accept a draw offer"""

LEVELS: dict[int, tuple[int, int]] = {1: (4, 4_000), 2: (6, 25_000), 3: (8, 100_000)}
"""level → (deepest iteration, node budget); a budget spent mid-iteration keeps the
last whole iteration's move"""


class SearchStopped(Exception):
    """The node budget ran out (caught by :func:`analyse`)."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What the robot chose and how it sees the game after it (``score`` from the
    side to move, in hundredths of a pawn)."""

    move: Move
    score: int
    depth: int
    nodes: int
    level: int


@dataclass(frozen=True, slots=True)
class Tables:
    """Per board size and army: the masks the search asks about."""

    n: int
    near_goal: tuple[int, int, int]
    """per army (index 1, 2): the rank one step from its goal row"""
    attackers: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    """per army, per square: the squares from which that army's pawn captures onto it"""
    advance: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    """per army, per rank (rank 1 first): a pawn's worth there beyond its 100"""
    enemy_half: tuple[int, int, int]
    """per army, the ranks where an unattacked pawn of its is worth a bonus"""
    deep: tuple[int, int, int]
    """per army, the rank two steps from its goal row"""


ADVANCE = {8: (8, 0, 3, 8, 16, 30, 55, 0), 6: (8, 0, 10, 25, 50, 0)}
"""a pawn's bonus by how many ranks it has come from its home row"""
SAFE = 12
"""a pawn in the enemy half that no enemy pawn attacks"""
SAFE_DEEP = 40
"""more when it stands two steps from the goal row"""
DEFENDED = 3
TEMPO = 5


@cache
def tables(n: int) -> Tables:
    g = geometry(n)
    attackers: list[tuple[int, ...]] = [()]
    for army in (WHITE, BLACK):
        per_square = []
        for sq in range(n * n):
            frm = sq - forward(army, n)
            mask = 0
            for df in (-1, 1):
                f = sq % n + df
                if 0 <= f < n and 0 <= frm < n * n:
                    mask |= 1 << (frm + df)
            per_square.append(mask)
        attackers.append(tuple(per_square))
    table = ADVANCE[n]
    white_adv = tuple(table[r] for r in range(n))
    black_adv = tuple(table[n - 1 - r] for r in range(n))
    half = n // 2
    white_half = sum(g.ranks[r] for r in range(half, n))
    black_half = sum(g.ranks[r] for r in range(half))
    return Tables(
        n,
        (0, g.ranks[n - 2], g.ranks[1]),
        (attackers[0], attackers[1], attackers[2]),
        ((), white_adv, black_adv),
        (0, white_half, black_half),
        (0, g.ranks[n - 3], g.ranks[2]),
    )


def evaluate(n: int, white: int, black: int) -> int:
    """The position's worth for White (no side to move assumed)."""
    t, g = tables(n), geometry(n)
    score = PAWN * (white.bit_count() - black.bit_count())
    wadv, badv = t.advance[WHITE], t.advance[BLACK]
    for r, mask in enumerate(g.ranks):
        score += wadv[r] * (white & mask).bit_count() - badv[r] * (black & mask).bit_count()
    nf, nl = g.not_first_file, g.not_last_file
    w_att = (((white & nf) << (n - 1)) | ((white & nl) << (n + 1))) & g.full
    b_att = ((black & nf) >> (n + 1)) | ((black & nl) >> (n - 1))
    w_safe, b_safe = white & ~b_att, black & ~w_att
    score += SAFE * ((w_safe & t.enemy_half[WHITE]).bit_count() - (b_safe & t.enemy_half[BLACK]).bit_count())
    score += SAFE_DEEP * ((w_safe & t.deep[WHITE]).bit_count() - (b_safe & t.deep[BLACK]).bit_count())
    score += DEFENDED * ((white & w_att).bit_count() - (black & b_att).bit_count())
    return score


class Searcher:
    """One search: its budget, counters and move-ordering memory."""

    def __init__(self, n: int, budget: int) -> None:
        self.n = n
        self.tables = tables(n)
        self.budget = budget
        self.nodes = 0
        self.stoppable = False
        self.best: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.killers: list[list[tuple[int, int] | None]] = [[None, None] for _ in range(128)]

    def moves(self, own: int, opp: int, army: int, ply: int) -> list[tuple[int, int]]:
        """Every move, best-looking first: remembered best, captures of the most
        advanced enemy pawns, killers, then the furthest steps forward."""
        n = self.n
        straight, left, right = targets(n, own, opp, army)
        step = forward(army, n)
        white = army == WHITE
        scored: list[tuple[int, int, int]] = []
        for mask, back in ((left, step - 1), (right, step + 1)):
            for to in bits(mask):
                rank = to // n if white else n - 1 - to // n
                key = 1000 + (100 * (n - rank) if opp >> to & 1 else 0) + rank
                scored.append((key, to - back, to))
        for to in bits(straight):
            scored.append((to // n if white else n - 1 - to // n, to - step, to))
        scored.sort(reverse=True)
        order = [(frm, to) for _, frm, to in scored]
        first = [m for m in (self.best.get((own, opp, army)), *self.killers[ply]) if m is not None and m in order]
        if first:
            order = list(dict.fromkeys([*first, *order]))
        return order

    def negamax(self, own: int, opp: int, army: int, depth: int, alpha: int, beta: int, ply: int) -> int:
        """The worth of the position for ``army`` (to move, pawns ``own``) within (alpha, beta)."""
        self.nodes += 1
        if self.stoppable and self.nodes > self.budget:
            raise SearchStopped
        t = self.tables
        enemy = other(army)
        if own & t.near_goal[army]:
            return WIN - ply - 1
        if not own:
            return -(WIN - ply)
        threats = opp & t.near_goal[enemy]
        if threats:
            if threats & (threats - 1):
                return -(WIN - ply - 2)
            target = threats.bit_length() - 1
            capturers = own & t.attackers[army][target]
            if not capturers:
                return -(WIN - ply - 2)
            moves = [(frm, target) for frm in bits(capturers)]
        elif depth <= 0:
            score = evaluate(self.n, own, opp) if army == WHITE else evaluate(self.n, opp, own)
            return (score if army == WHITE else -score) + TEMPO
        else:
            moves = self.moves(own, opp, army, ply)
            if not moves:
                return -(WIN - ply)
        best_score, best_move = -WIN - 1, moves[0]
        for frm, to in moves:
            bit = 1 << to
            score = -self.negamax(opp & ~bit, own ^ (1 << frm) | bit, enemy, depth - 1, -beta, -alpha, ply + 1)
            if score > best_score:
                best_score, best_move = score, (frm, to)
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        if not opp >> to & 1 and ply < len(self.killers):
                            killers = self.killers[ply]
                            if killers[0] != best_move:
                                killers[1], killers[0] = killers[0], best_move
                        break
        self.best[(own, opp, army)] = best_move
        return best_score


def analyse(pos: Position, level: int = 1, seed: int | str = 0) -> SearchResult:
    """The robot of ``level``'s move in ``pos`` with its score, depth and nodes
    (deterministic for the position, level and seed; ValueError when the game is over)."""
    if pos.is_over():
        raise ValueError("the game is over: there is no move to choose")
    max_depth, budget = LEVELS.get(level, LEVELS[max(LEVELS)] if level > max(LEVELS) else LEVELS[1])
    army, n = pos.to_move, pos.n
    own, opp = pos.pawns(army), pos.pawns(other(army))
    salt = f"{seed}:{level}:{n}:{pos.white}:{pos.black}:{army}"
    roots = [(m.frm, m.to) for m in pos.legal_moves()]
    # ties go to the first searched: the seed orders the moves (and so picks among equals)
    roots.sort(key=lambda m: hashlib.blake2b(f"{salt}:{m}".encode(), digest_size=8).digest())
    goal = geometry(n).ranks[n - 1 if army == WHITE else 0]
    winning = [m for m in roots if goal >> m[1] & 1]
    if winning:
        return SearchResult(Move(*winning[0]), WIN - 1, 1, 1, level)
    searcher = Searcher(n, budget)
    scores = {m: 0 for m in roots}
    chosen, chosen_score, reached = roots[0], 0, 0
    for depth in range(1, max_depth + 1):
        searcher.stoppable = depth > 1
        alpha, beta = -WIN - 1, WIN + 1
        best, best_score = roots[0], -WIN - 1
        new_scores: dict[tuple[int, int], int] = {}
        try:
            for frm, to in roots:
                bit = 1 << to
                score = -searcher.negamax(opp & ~bit, own ^ (1 << frm) | bit, other(army), depth - 1, -beta, -alpha, 1)
                new_scores[(frm, to)] = score
                if score > best_score:
                    best, best_score = (frm, to), score
                    alpha = max(alpha, score)
        except SearchStopped:
            break
        chosen, chosen_score, reached = best, best_score, depth
        # next iteration: the best first, the others by this one's (lower bound) scores
        scores = {m: new_scores.get(m, -WIN - 1) for m in roots}
        roots.sort(key=lambda m: -WIN - 2 if m == best else -scores[m])
        if abs(best_score) >= MATE_BOUND:
            break
    return SearchResult(Move(*chosen), chosen_score, reached, searcher.nodes, level)


def describe(result: SearchResult) -> str:
    """One line in words about how the robot sees the game after its move."""
    return robot_verdict(result.level, result.score, MATE_BOUND)


def choose_move(pos: Position, level: int = 1, seed: int | str = 0) -> tuple[Move, str]:
    """The robot's move in ``pos`` and its one-line comment (deterministic for the
    position, level and seed)."""
    result = analyse(pos, level, seed)
    return result.move, describe(result)


def accepts_draw(pos: Position, army: int, level: int = 1, seed: int | str = 0) -> bool:
    """Whether robot ``level`` playing ``army`` accepts a draw offer in ``pos``: only
    when its own search says it stands worse (below -:data:`DRAW_MARGIN`)."""
    if pos.is_over():
        return False
    result = analyse(pos, level, seed)
    score = result.score if pos.to_move == army else -result.score
    return score < -DRAW_MARGIN


def loses_at_once(pos: Position, move: Move) -> bool:
    """Whether ``move`` (legal in ``pos``) hands the game away: afterwards the
    opponent has a reply that wins (a pawn onto the goal row, the mover's last
    pawn taken, the mover left without a move).  A move that wins does not."""
    mover, n = pos.to_move, pos.n
    after = pos.play(move)
    outcome = after.outcome()
    if outcome is not None:
        return outcome.winner != mover
    enemy = other(mover)
    mine, theirs = after.pawns(mover), after.pawns(enemy)
    if theirs & tables(n).near_goal[enemy]:
        return True  # (a pawn there always has a diagonal step onto the goal row)
    straight, left, right = targets(n, mine, theirs, mover)
    step = forward(mover, n)
    movers = _sources(straight, step) | _sources(left, step - 1) | _sources(right, step + 1)
    if movers.bit_count() >= 3:
        return False  # (one reply takes one pawn and blocks one straight step at most)
    for frm, to in after.legal_moves():
        left_over = mine & ~(1 << to)
        if not left_over or not any(targets(n, left_over, theirs ^ (1 << frm) | (1 << to), mover)):
            return True
    return False


def _sources(mask: int, back: int) -> int:
    """The squares the steps onto ``mask`` start from (``to - back``)."""
    return mask >> back if back >= 0 else mask << -back


def reading_order(pos: Position) -> list[Move]:
    """The legal moves, best example first (as :func:`.notation.example_move`
    ranks them): a straight step before a diagonal one before a capture, the most
    central file first, then by their text."""
    n = pos.n

    def rank(m: Move) -> tuple[bool, bool, float, str]:
        return pos.is_capture(m), m.frm % n != m.to % n, abs(m.frm % n - (n - 1) / 2), format_move(pos, m)

    return sorted(pos.legal_moves(), key=rank)


def example_move(pos: Position) -> Move | None:
    """A reply's example move: the first in :func:`reading_order` that does not
    :func:`lose at once <loses_at_once>`, else the first of all (None: no move)."""
    moves = reading_order(pos)
    return next((m for m in moves if not loses_at_once(pos, m)), moves[0] if moves else None)
