"""Perft speed against the slow reference generator, measured in one run.

Prints the leaf nodes per second of perft(DEPTH) from the 8x8 long start (default 4),
the reference generator's (tests/games/terrace/reference.py) leaves per second on the same
start at a smaller depth (default 3: it is some 50-200 times slower), and the ratio,
with a verdict against the target of issue 17: at least 50x the reference's rate.
Both are timed in this process, best of --repeat, so a busy machine slows both.

Run: python bench/perft.py [--depth N] [--ref-depth M] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.games.terrace.perft import perft
from tests.games.terrace.reference import pieces, slow_perft

TARGET_RATIO = 50.0


def best_rate(run: Callable[[], int], repeat: int) -> tuple[int, float]:
    """(leaves, best seconds) over ``repeat`` runs."""
    best = float("inf")
    leaves = 0
    for _ in range(repeat):
        start = time.perf_counter()
        leaves = run()
        best = min(best, time.perf_counter() - start)
    return leaves, best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--ref-depth", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pos = start_position("long")
    fast_leaves, fast_s = best_rate(lambda: perft(pos, args.depth), args.repeat)
    ref_leaves, ref_s = best_rate(lambda: slow_perft(8, pieces(pos), pos.to_move, args.ref_depth), args.repeat)
    check = perft(pos, args.ref_depth)
    if check != ref_leaves:
        raise SystemExit(f"perft({args.ref_depth}) = {check} but the reference counts {ref_leaves}")
    fast_rate = fast_leaves / fast_s
    ref_rate = ref_leaves / ref_s
    ratio = fast_rate / ref_rate
    print(f"perft({args.depth}) long 8x8: {fast_leaves} leaves in {fast_s:.3f} s = {fast_rate:,.0f} leaves/s")
    print(f"reference perft({args.ref_depth}) long 8x8: {ref_leaves} leaves in {ref_s:.3f} s = {ref_rate:,.0f} leaves/s")
    verdict = "PASS" if ratio >= TARGET_RATIO else "FAIL"
    print(f"ratio {ratio:.1f}x (target >= {TARGET_RATIO:.0f}x): {verdict}")


if __name__ == "__main__":
    main()
