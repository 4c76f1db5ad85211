"""Iterative-deepening alpha-beta search for Terrace, two to four armies.

**Two armies: negamax.**  **Three or four: paranoid search** — the root army
maximises, and every other army is assumed to play against it, as one coalition
minimising the root's score.  We chose paranoid over max-n because:

* it keeps alpha-beta's deep cutoffs (max-n allows only shallow pruning), and in
  pure Python the depth we can afford is the whole game: paranoid reaches about twice
  the depth of max-n within the same node budget;
* Terrace's danger is concrete and short: any army may capture any T, and a captured
  T removes its army, so "can someone take my T within the horizon" is the question
  that matters.  Paranoid answers it conservatively, which is what we want of a robot
  that should not lose its T; its known fault (over-caution when the others would
  rather fight each other) costs little here.

Both are one negamax routine: a node's score is from its mover's point of view,
and the sign flips only between the root army and the coalition (an opponent
following an opponent keeps the window).  With two armies it flips on every ply,
which is plain negamax.

Around it: a transposition table keyed by the incremental Zobrist hash (fresh for
each search, so a search depends only on its inputs), move ordering (the TT move,
the T's step home, captures of a T, other captures by victim value and smallest
attacker, two killer moves per ply, the history heuristic; the TT move is searched
before the other moves are generated, so a cutoff by it costs no move generation),
a cache of static evaluations by key, and a quiescence search over captures and the
T's step home.
For robot3 (issue 42) three options: ``t_road`` (its evaluation's term for
the T's open road, see :mod:`.evaluate`), ``evasion_plies`` (in the quiescence's first
plies a side in danger searches every move: see :meth:`Searcher.quiesce`) and
``futility_margin`` (one ply from the horizon, quiet moves that cannot lift the
static view above alpha are skipped).  Late-move reductions, null move and PVS
were measured for robot3 and lost (issue 42's notes), so they are not here.

**Repetitions.**  Terrace has no repetition rule, but a position that recurs has
gained nothing: a side ahead that shuffles back and forth never wins.  So a node
that repeats a position of the game so far (``seen``: Zobrist keys of the
positions before the root, given by the caller) or one on the current search path
scores as a draw: 0, less ``contempt`` for the root army (a robot that expects to
be the stronger side dislikes a draw, and assumes its opponent likes it).  The
side ahead then prefers moves that make progress, the side behind may seek the
repetition; with contempt two equal sides stop shuffling into a repetition too.
The quiescence search needs no check: its captures are irreversible and its
T-step home ends the game.  The search stops at a depth, a node budget
(deterministic) or, if given, a wall-clock deadline (raises :class:`Stop` and the
root keeps its last completed iteration).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pbmserv_terrace.games.terrace.pieces import SIZE

from .board import SearchBoard
from .evaluate import PIECE_VALUE, evaluate

MATE = 100_000
"""A won game scores MATE minus the plies to reach it."""
MATE_BOUND = MATE - 1_000
INF = 1_000_000
MAX_PLY = 128
QUIESCENCE_PLIES = 6
EXACT, LOWER, UPPER = 0, 1, 2
VICTIM_KEY: tuple[int, ...] = tuple(PIECE_VALUE[SIZE[p]] * 16 for p in range(40))
"""Move ordering's capture key by the captured piece int (its value, times 16)."""


class Stop(Exception):
    """The node budget or the deadline ran out; ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Limits:
    max_depth: int
    nodes: int
    deadline: float | None = None
    """time.perf_counter() value after which the search stops (None: no clock)."""


@dataclass(slots=True)
class RootResult:
    move: int
    score: int
    """From the root army's point of view."""
    depth: int
    nodes: int
    stopped: str
    """'depth', 'nodes', 'time', 'mate' (a forced result is found) or 'only move'."""


class Searcher:
    """One search from one position for army ``root``."""

    def __init__(
        self,
        sb: SearchBoard,
        root: int,
        limits: Limits,
        seen: frozenset[int] = frozenset(),
        contempt: int = 0,
        evasion_plies: int = 0,
        futility_margin: int = 0,
        t_road: bool = False,
    ) -> None:
        self.sb = sb
        self.t_road = t_road
        """Evaluate with robot3's term for the T's open road (see evaluate.py)."""
        self.futility_margin = futility_margin
        """The most a quiet move may gain in the static view, for futility pruning
        one ply from the horizon (0: no pruning)."""
        self.evasion_plies = evasion_plies
        """Quiescence plies in which a side in danger searches every move (0: never)."""
        self.contempt = contempt
        """What a draw by repetition costs the root army (from its point of view)."""
        self.seen = seen
        """Zobrist keys of the game's earlier positions: reaching one again is a draw."""
        self.path = {sb.hash}
        """Keys of the full-width nodes on the current search path (the root first)."""
        self.root = root
        self.limits = limits
        self.tt: dict[int, tuple[int, int, int, int]] = {}
        self.killers = [[0, 0] for _ in range(MAX_PLY + QUIESCENCE_PLIES + 2)]
        self.history: dict[int, int] = {}
        self.nodes = 0
        self.evals: dict[int, int] = {}
        """Static evaluations by position key (from the root's view): a leaf reached
        again by another path is not evaluated twice."""
        self.partial: list[tuple[int, int]] = []
        """The root moves scored so far in the current iteration (see root_scores)."""

    def _terminal(self, ply: int) -> int:
        """Score of a finished game for the side to move at this node."""
        root_view = MATE - ply if self.sb.winner == self.root else -(MATE - ply)
        return root_view if self.sb.to_move == self.root else -root_view

    def _static(self) -> int:
        sb = self.sb
        key = sb.hash
        v = self.evals.get(key)
        if v is None:
            v = self.evals[key] = evaluate(sb, self.root, self.t_road)
        return v if sb.to_move == self.root else -v

    def order(self, moves: list[int], tt_move: int, ply: int) -> list[int]:
        """Moves best-first: TT move, T home, T captures, captures, killers, history.
        (Each move's key is its score shifted over the move, ``s << 12 | m``: one
        sort of ints, ties broken by the larger move, as a sort of (s, m) pairs.)"""
        sb = self.sb
        board = sb.board
        army = sb.to_move
        goal = sb.goal[army]
        k0, k1 = self.killers[ply]
        hget = self.history.get
        hbase = army << 12
        keys = []
        for m in moves:
            to = m & 63
            victim = board[to]
            if m == tt_move:
                s = 1 << 40
            elif victim:
                if victim >> 3 == army:
                    s = -(1 << 30)  # taking one's own piece: rarely right, tried last
                elif victim & 7 == 0:
                    s = 1 << 38
                else:
                    s = (1 << 36) + VICTIM_KEY[victim] - SIZE[board[m >> 6]]
            elif to == goal and board[m >> 6] & 7 == 0:
                s = 1 << 39
            elif m == k0:
                s = 1 << 35
            elif m == k1:
                s = (1 << 35) - 1
            else:
                s = hget(hbase | m, 0)
            keys.append(s << 12 | m)
        keys.sort(reverse=True)
        return [k & 4095 for k in keys]

    def order_split(self, quiet: list[int], caps: list[int], tt_move: int, ply: int) -> list[int]:
        """:meth:`order` of the moves ``quiet + caps`` (from :meth:`SearchBoard.split_moves`),
        in the same order: the quiet moves' history keys by one comprehension, then the
        few special ones (TT move, T home, killers) given their own key instead."""
        sb = self.sb
        board = sb.board
        army = sb.to_move
        hget = self.history.get
        hbase = army << 12
        keys = [hget(hbase | m, 0) << 12 | m for m in quiet]
        if quiet:
            tsq = sb.tsq[army]
            home = tsq << 6 | sb.goal[army] if tsq >= 0 else 0
            k0, k1 = self.killers[ply]
            for m, s in ((tt_move, 1 << 40), (home, 1 << 39), (k0, 1 << 35), (k1, (1 << 35) - 1)):
                if m and m in quiet:
                    old = hget(hbase | m, 0) << 12 | m
                    if old in keys:  # (not when an earlier special was this move)
                        keys.remove(old)
                        keys.append(s << 12 | m)
        for m in caps:
            victim = board[m & 63]
            if m == tt_move:
                s = 1 << 40
            elif victim >> 3 == army:
                s = -(1 << 30)
            elif victim & 7 == 0:
                s = 1 << 38
            else:
                s = (1 << 36) + VICTIM_KEY[victim] - SIZE[board[m >> 6]]
            keys.append(s << 12 | m)
        keys.sort(reverse=True)
        return [k & 4095 for k in keys]

    def order_tactical(self, moves: list[int]) -> list[int]:
        """:meth:`order` for the quiescence's moves (captures of other armies' pieces
        and the T's step home: no TT move, killers or history), in the same order."""
        board = self.sb.board
        keys = []
        for m in moves:
            victim = board[m & 63]
            if not victim:
                s = 1 << 39  # the T's step home
            elif victim & 7 == 0:
                s = 1 << 38
            else:
                s = (1 << 36) + VICTIM_KEY[victim] - SIZE[board[m >> 6]]
            keys.append(s << 12 | m)
        keys.sort(reverse=True)
        return [k & 4095 for k in keys]

    def negamax(self, depth: int, alpha: int, beta: int, ply: int) -> int:
        sb = self.sb
        if sb.winner:
            return self._terminal(ply)
        key = sb.hash
        path = self.path
        if key in path or key in self.seen:  # a repetition: a draw
            return -self.contempt if sb.to_move == self.root else self.contempt
        if depth <= 0 or ply >= MAX_PLY:
            return self.quiesce(alpha, beta, ply, 0)
        # count the node; stop at the budget or, every 128 nodes, the deadline
        self.nodes = nodes = self.nodes + 1
        limits = self.limits
        if nodes >= limits.nodes:
            raise Stop("nodes")
        if limits.deadline is not None and not nodes & 127 and time.perf_counter() > limits.deadline:
            raise Stop("time")
        entry = self.tt.get(key)
        tt_move = 0
        if entry is not None:
            e_depth, flag, e_score, tt_move = entry
            if e_depth >= depth:
                s = _from_tt(e_score, ply)
                if flag == EXACT or (flag == LOWER and s >= beta) or (flag == UPPER and s <= alpha):
                    return s
        mover = sb.to_move
        root = self.root
        me_root = mover == root
        # Futility (robot3): one ply from the horizon, in a two-army game, when even
        # a quiet move's largest gain leaves the static view at or below alpha, only
        # moves that can change more are searched (captures, the T's own moves, a
        # move to a square that attacks the other T), unless the mover is in danger.
        futile, stand, own_t, threat = False, 0, -1, 0
        if depth == 1 and self.futility_margin and abs(alpha) < MATE_BOUND:
            stand = self._static() + self.futility_margin
            if stand <= alpha and sum(1 for a in sb.am if a) == 2 and not self.in_danger():
                futile, own_t = True, sb.tsq[mover]
                for a in (1, 2, 3, 4):
                    if a != mover and sb.tsq[a] >= 0:
                        threat |= sb.attackers_of[sb.tsq[a]]
        # The TT move (a legal move of this very position) is searched before the
        # moves are generated: when it cuts off, they never are.  The others are
        # then ordered with the killers and history its subtree left (fresher than
        # ordering them all first, so node counts differ a little from that).
        first = tt_move if tt_move and not futile else 0
        if not first:
            quiet, caps = sb.split_moves()
            if not quiet and not caps:
                return 0  # the side to move is stuck: a draw (RULES.md §5.4)
        orig_alpha = alpha
        best, best_move = -INF, 0
        path.add(key)
        if first:
            undo = sb.make(first)
            if (sb.to_move == root) != me_root:
                best = -self.negamax(depth - 1, -beta, -alpha, ply + 1)
            else:
                best = self.negamax(depth - 1, alpha, beta, ply + 1)
            sb.unmake(undo)
            best_move = first
            if best > alpha:
                alpha = best
        if alpha < beta:
            if first:
                quiet, caps = sb.split_moves()
                ordered = self.order_split(quiet, caps, first, ply)
                del ordered[0]  # the TT move, searched
            else:
                ordered = self.order_split(quiet, caps, tt_move, ply)
                best_move = min(quiet[0], caps[0]) if quiet and caps else (quiet or caps)[0]  # moves()[0]
            board = sb.board
            for m in ordered:
                if futile and not board[m & 63] and m >> 6 != own_t and not threat >> (m & 63) & 1:
                    if stand > best:
                        best = stand
                    continue
                undo = sb.make(m)
                if (sb.to_move == root) != me_root:
                    score = -self.negamax(depth - 1, -beta, -alpha, ply + 1)
                else:
                    score = self.negamax(depth - 1, alpha, beta, ply + 1)
                sb.unmake(undo)
                if score > best:
                    best, best_move = score, m
                    if score > alpha:
                        alpha = score
                        if alpha >= beta:
                            break
        if alpha >= beta and not sb.board[best_move & 63]:
            killers = self.killers[ply]
            if killers[0] != best_move:
                killers[1], killers[0] = killers[0], best_move
            hkey = mover << 12 | best_move
            self.history[hkey] = self.history.get(hkey, 0) + depth * depth
        path.discard(key)
        flag = UPPER if best <= orig_alpha else LOWER if best >= beta else EXACT
        self.tt[key] = (depth, flag, _to_tt(best, ply), best_move)
        return best

    def in_danger(self) -> bool:
        """Whether the side to move must answer a threat at once: another army can
        capture its T, or another army's T can reach its goal (RULES.md §5)."""
        sb = self.sb
        mover = sb.to_move
        tsq, am = sb.tsq, sb.am
        t = tsq[mover]
        if t >= 0 and sb.attackers_of[t] & sb.occ & ~am[mover]:
            return True
        goal = sb.goal
        for a in (1, 2, 3, 4):  # noqa: SIM110 (a loop is faster than any() of a generator here)
            if a != mover and am[a] and tsq[a] >= 0 and sb.targets(tsq[a]) >> goal[a] & 1:
                return True
        return False

    def evasions(self, quiet: list[int], caps: list[int]) -> list[int]:
        """The quiet moves worth searching when the side to move is in danger: in a
        two-army game where its T can be taken and the other T cannot step home, only
        the T's own (any other quiet move lets the T be taken: the game is lost), when
        it has a move at all besides; otherwise all of them."""
        sb = self.sb
        mover = sb.to_move
        tsq, am = sb.tsq, sb.am
        t = tsq[mover]
        if t < 0 or not sb.attackers_of[t] & sb.occ & ~am[mover] or sum(1 for a in am if a) != 2:
            return quiet
        goal = sb.goal
        for a in (1, 2, 3, 4):
            if a != mover and am[a] and tsq[a] >= 0 and sb.targets(tsq[a]) >> goal[a] & 1:
                return quiet
        own = [m for m in quiet if m >> 6 == t]
        return own if own or caps else quiet

    def quiesce(self, alpha: int, beta: int, ply: int, qply: int) -> int:
        """Captures and the T's step home until the position is quiet.  In its first
        ``evasion_plies`` plies a side in danger (:meth:`in_danger`) may not stand
        pat: it searches all its moves, as a chess program does when in check, so
        a T lost or a goal reached one move past the horizon is seen (of its quiet
        moves only those :meth:`evasions` keeps: the others lose at once)."""
        sb = self.sb
        if sb.winner:
            return self._terminal(ply)
        # count the node; stop at the budget or, every 128 nodes, the deadline
        self.nodes = nodes = self.nodes + 1
        limits = self.limits
        if nodes >= limits.nodes:
            raise Stop("nodes")
        if limits.deadline is not None and not nodes & 127 and time.perf_counter() > limits.deadline:
            raise Stop("time")
        if qply < self.evasion_plies and self.in_danger():
            quiet, caps = sb.split_moves()
            if not quiet and not caps:
                return 0  # stuck: a draw (RULES.md §5.4)
            quiet = self.evasions(quiet, caps)
            moves = self.order_split(quiet, caps, 0, ply)
            best = -INF
        else:
            stand = self._static()
            if stand >= beta or qply >= QUIESCENCE_PLIES:
                return stand
            if stand > alpha:
                alpha = stand
            best = stand
            moves = self.order_tactical(sb.tactical_moves())
        root = self.root
        me_root = sb.to_move == root
        for m in moves:
            undo = sb.make(m)
            if (sb.to_move == root) != me_root:
                score = -self.quiesce(-beta, -alpha, ply + 1, qply + 1)
            else:
                score = self.quiesce(alpha, beta, ply + 1, qply + 1)
            sb.unmake(undo)
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best

    def root_scores(self, moves: list[int], depth: int, exact: bool) -> list[tuple[int, int]]:
        """(score from the mover's point of view, move) for each root move at ``depth``.

        With ``exact`` every move gets its true score (needed to add noise fairly);
        otherwise moves after the first get only a bound, as usual in alpha-beta.
        Each move's score is also appended to ``self.partial`` as soon as it is known,
        so a caller whose search stops mid-iteration still has the moves done.
        """
        sb = self.sb
        me_root = sb.to_move == self.root
        alpha = -INF
        out = self.partial = []
        for m in moves:
            undo = sb.make(m)
            window_alpha = -INF if exact else alpha
            if (sb.to_move == self.root) != me_root:
                score = -self.negamax(depth - 1, -INF, -window_alpha, 1)
            else:
                score = self.negamax(depth - 1, window_alpha, INF, 1)
            sb.unmake(undo)
            alpha = max(alpha, score)
            out.append((score, m))
        return out


def _to_tt(score: int, ply: int) -> int:
    """Mate scores are stored relative to the node, not the root."""
    if score >= MATE_BOUND:
        return score + ply
    if score <= -MATE_BOUND:
        return score - ply
    return score


def _from_tt(score: int, ply: int) -> int:
    if score >= MATE_BOUND:
        return score - ply
    if score <= -MATE_BOUND:
        return score + ply
    return score
