"""Terrace patience: how many deals of each variant the solver proves won or lost within a budget.

For deals 1..N of every variant (N = ``--deals``, default 1000) the solver runs on the
opening position with ``--seconds`` (default 1) and prints one row per variant:
the share proved winnable, proved lost and left unknown, and the median time per deal.
The solver sees the stock, so "won" means a winning line exists.

Run: python bench/patience.py [--deals 1000] [--seconds 1.0] [--variant ID ...] [--workers 2]

With ``--workers`` the deals are solved in that many processes (one deal per
process at a time, each with its own full budget); use no more than the idle
cores, or the time budget measures the machine's load instead of the solver.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ProcessPoolExecutor

from pbmserv_terrace.games.patience import VARIANTS, new_game, solve


def solve_one(key: str, number: int, seconds: float) -> tuple[str, float]:
    """The verdict on deal ``number`` of ``key`` and the milliseconds it took."""
    start = time.perf_counter()
    result = solve(new_game(key, number), max_seconds=seconds)
    return result.verdict, (time.perf_counter() - start) * 1000


def bench_variant(key: str, deals: int, seconds: float, workers: int = 1) -> tuple[int, int, int, float]:
    """(won, lost, unknown, median ms) over deals 1..``deals`` of variant ``key``."""
    counts = {"won": 0, "lost": 0, "unknown": 0}
    times: list[float] = []
    numbers = range(1, deals + 1)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(solve_one, [key] * deals, numbers, [seconds] * deals, chunksize=4))
    else:
        results = [solve_one(key, n, seconds) for n in numbers]
    for verdict, ms in results:
        times.append(ms)
        counts[verdict] += 1
    return counts["won"], counts["lost"], counts["unknown"], statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deals", type=int, default=1000, help="deals per variant (1..N)")
    parser.add_argument("--seconds", type=float, default=1.0, help="solver time budget per deal")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="only these variants")
    parser.add_argument("--workers", type=int, default=1, help="solver processes")
    args = parser.parse_args()
    keys = args.variant or list(VARIANTS)
    print(f"Terrace patience solver, deals 1..{args.deals}, {args.seconds:g} s per deal")
    print(f"{'variant':<22}{'deals':>6}{'won %':>8}{'lost %':>8}{'unknown %':>11}{'median ms':>11}")
    for key in keys:
        won, lost, unknown, median = bench_variant(key, args.deals, args.seconds, args.workers)
        n = args.deals
        print(f"{key:<22}{n:>6}{100 * won / n:>8.1f}{100 * lost / n:>8.1f}{100 * unknown / n:>11.1f}{median:>11.0f}", flush=True)


if __name__ == "__main__":
    main()
