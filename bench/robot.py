"""Robot strength: matches between levels (and a uniformly random mover).

For each pairing and board (8x8 long, 6x6 short) it plays --games games, colours
alternated, each opening varied by two uniformly random plies (seeded by the game
number, so a run is reproducible), capped at --cap plies (a draw).  It prints wins,
draws and losses of the first-named player, its score, the Elo difference with a
95 % interval, and each robot's average nodes/s and seconds per move.  Targets
(issue 17): robot1 >= 95 % against random, robot2 >= 75 % against robot1, robot3
>= 65 % against robot2; and robot3 finds the forced wins of PUZZLES in its budget.

Issue 42: ``f3`` is a frozen copy of robot3's engine from before that issue
(``bench/robot3_frozen/``).  ``--pairs 3-f3 --clock 0.5`` plays today's robot3
against it at equal wall-clock time per move (both search until the same
deadline; no node budget), or ``--nodes N`` at an equal node budget (the
same thing when both engines' nodes/s, printed, are equal, and not skewed by
other work on the machine), ``--jobs 2`` plays games in parallel processes (the
clock is per move, so each process should have a core of its own).

``--first K`` numbers the games from K (their openings are games K, K+1, ... of
the seeded series): a run with ``--first 40`` after one of 40 games is a second,
independent sample of openings.

Run: python bench/robot.py [--games N] [--pairs 1-random,2-1,3-2,3-f3] [--boards 8long,6short]
     [--cap 200] [--l3-budget SECONDS] [--clock SECONDS] [--jobs N] [--first K] [--no-puzzles]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.games.terrace import Position, format_move, parse_tpn, start_position
from pbmserv_terrace.games.terrace.engine import choose_move, describe
from pbmserv_terrace.games.terrace.engine import robot as current_robot
from pbmserv_terrace.games.terrace.engine.search import MATE_BOUND, Limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import robot3_frozen.robot as frozen_robot  # noqa: E402

ENGINES = {"3": current_robot, "f3": frozen_robot}
"""The engines ``--clock`` drives directly (at equal wall-clock time per move)."""

TARGETS = {("1", "random"): 0.95, ("2", "1"): 0.75, ("3", "2"): 0.65}
PUZZLES = [
    # Forced wins in three moves of the side to move (five plies), found by a
    # brute-force prover over the rules alone (tests/games/terrace/engine/solver.py), as checked in
    # tests/games/terrace/engine/test_engine.py (WIN_IN_3).
    "C2t2/3T2/6/1a4/6/3A2 1",
    "2t3/6/d5/1B4/2TC2/6 2",
    "4C1/3b2/6/1T4/5D/1C1b1t 2",
    "8/1t5c/5c2/8/8/2T5/5b2/6D1 2",
]


@dataclass
class Stats:
    moves: int = 0
    nodes: int = 0
    seconds: float = 0.0


@dataclass
class Match:
    wins: int = 0
    draws: int = 0
    losses: int = 0
    scores: list[float] = field(default_factory=list)


def clocked_move(who: str, pos: Position, clock: float, history: list[Position]) -> tuple[object, int]:
    """Engine ``who`` searches ``pos`` until ``clock`` seconds have passed (no node
    budget), or, for a negative ``clock``, for ``-clock`` nodes: (move, nodes)."""
    eng = ENGINES[who]
    limits = Limits(64, int(-clock)) if clock < 0 else Limits(64, 10**12, time.perf_counter() + clock)
    res = eng.search(
        pos, pos.to_move, limits, seen=eng.history_keys(history), contempt=eng.LEVEL_CONTEMPT[3]
    )
    return eng.to_move_obj(res.move), res.nodes


def play_game(
    players: tuple[str, str],
    pos: Position,
    cap: int,
    budget: float | None,
    stats: dict[str, Stats],
    rng: random.Random,
    clock: float | None = None,
) -> int | None:
    """Play from ``pos``; players[0] is army 1.  Returns the winning army or None.
    The robots get the game's history (the positions before the current one), as
    the mail service gives it, so they can avoid repeating positions."""
    ply = 2
    history: list[Position] = []
    while ply < cap:
        out = pos.outcome()
        if out is not None:
            return out.winner
        who = players[pos.to_move - 1]
        if who == "random":
            move = rng.choice(pos.legal_moves())
        elif clock is not None and who in ENGINES:
            t0 = time.perf_counter()
            move, nodes = clocked_move(who, pos, clock, history)
            st = stats.setdefault(who, Stats())
            st.moves += 1
            st.nodes += nodes
            st.seconds += time.perf_counter() - t0
        else:
            level = int(who)
            res = choose_move(pos, level=level, ply=ply, time_budget=budget if level == 3 else None, history=history)
            st = stats.setdefault(who, Stats())
            st.moves += 1
            st.nodes += res.nodes
            st.seconds += res.seconds
            move = res.move
        history.append(pos)
        pos = pos.play(move)
        ply += 1
    out = pos.outcome()
    return out.winner if out else None


def elo(scores: list[float]) -> str:
    """Elo difference with a 95 % interval from per-game scores (1, 0.5, 0)."""
    n = len(scores)
    p = sum(scores) / n
    sd = math.sqrt(sum((s - p) ** 2 for s in scores) / n) / math.sqrt(n)

    def to_elo(x: float) -> float:
        x = min(max(x, 1e-3), 1 - 1e-3)
        return -400 * math.log10(1 / x - 1)

    return f"{to_elo(p):+.0f} [{to_elo(p - 1.96 * sd):+.0f}, {to_elo(p + 1.96 * sd):+.0f}]"


def one_game(job: tuple[str, str, int, str, int, int, float | None, float | None]) -> tuple[float, dict[str, Stats]]:
    """Game ``g`` of a match: a's score (1, 0.5, 0) and the robots' stats."""
    a, b, n, variant, g, cap, budget, clock = job
    stats: dict[str, Stats] = {}
    rng = random.Random(f"{a}-{b}-{n}{variant}-{g // 2}")
    pos = start_position(variant, n)
    for _ in range(2):  # (never a move that ends the game: taking one's own T does)
        pos = rng.choice([q for q in map(pos.play, pos.legal_moves()) if q.outcome() is None])
    a_first = g % 2 == 0  # each opening is played twice, colours swapped
    players = (a, b) if a_first else (b, a)
    winner = play_game(players, pos, cap, budget, stats, rng, clock)
    a_army = 1 if a_first else 2
    return (0.5 if winner is None else 1.0 if winner == a_army else 0.0), stats


def run_match(
    a: str,
    b: str,
    n: int,
    variant: str,
    games: int,
    cap: int,
    budget: float | None,
    stats: dict[str, Stats],
    clock: float | None = None,
    jobs: int = 1,
    first: int = 0,
) -> Match:
    match = Match()
    work = [(a, b, n, variant, g, cap, budget, clock) for g in range(first, first + games)]
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(one_game, work, chunksize=1)
    else:
        results = [one_game(w) for w in work]
    for score, game_stats in results:
        match.scores.append(score)
        if score == 1.0:
            match.wins += 1
        elif score == 0.0:
            match.losses += 1
        else:
            match.draws += 1
        for who, st in game_stats.items():
            total = stats.setdefault(who, Stats())
            total.moves += st.moves
            total.nodes += st.nodes
            total.seconds += st.seconds
    return match


def name(p: str) -> str:
    return p if p == "random" else "frozen robot3" if p == "f3" else f"robot{p}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=10, help="games per pairing and board")
    parser.add_argument("--pairs", default="1-random,2-1,3-2")
    parser.add_argument("--boards", default="8long,6short")
    parser.add_argument("--cap", type=int, default=200, help="plies before a game is scored a draw")
    parser.add_argument(
        "--l3-budget", type=float, default=None, help="seconds per move for robot3 (default: its 2 s node budget)"
    )
    parser.add_argument("--clock", type=float, default=None, help="robot3 and f3 search this many seconds a move")
    parser.add_argument(
        "--nodes",
        type=int,
        default=None,
        help="robot3 and f3 search this many nodes a move (equal time when their nodes/s, printed, are equal; "
        "unlike --clock, not skewed by a busy machine)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="games played in parallel processes")
    parser.add_argument("--first", type=int, default=0, help="number of the first game (its opening): another sample of openings")
    parser.add_argument("--no-puzzles", action="store_true")
    args = parser.parse_args()
    if args.nodes is not None:
        args.clock = -float(args.nodes)
    stats: dict[str, Stats] = {}
    print(f"{'match':<20} {'board':<8} {'W':>3} {'D':>3} {'L':>3} {'score':>6}  Elo [95 %]          target")
    for pair in args.pairs.split(",") if args.games > 0 else []:
        a, b = pair.split("-")
        for board in args.boards.split(","):
            n, variant = int(board[0]), board[1:]
            t0 = time.perf_counter()
            m = run_match(a, b, n, variant, args.games, args.cap, args.l3_budget, stats, args.clock, args.jobs, args.first)
            p = sum(m.scores) / len(m.scores)
            target = TARGETS.get((a, b))
            verdict = "" if target is None else f">= {target:.0%}: {'PASS' if p >= target else 'FAIL'}"
            label = f"{name(a)} v {name(b)}"
            print(
                f"{label:<20} {n}x{n} {variant:<4} {m.wins:>3} {m.draws:>3} {m.losses:>3} {p:>6.1%}  {elo(m.scores):<18} {verdict}  ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
    for who, st in sorted(stats.items()):
        if st.moves:
            print(
                f"{name(who)}: {st.moves} moves, {st.nodes / max(st.seconds, 1e-9):,.0f} nodes/s, {st.seconds / st.moves:.3f} s/move"
            )
    if not args.no_puzzles:
        for tpn in PUZZLES:
            pos = parse_tpn(tpn)
            res = choose_move(pos, level=3, ply=0, time_budget=args.l3_budget)
            found = res.score >= MATE_BOUND
            print(
                f"puzzle {tpn}: {format_move(pos, res.move)} depth {res.depth}, {res.nodes} nodes, {res.seconds:.2f} s — {describe(res)}: {'PASS' if found else 'FAIL'}"
            )


if __name__ == "__main__":
    main()
