"""Leaf nodes per second of perft(4) from the 8x8 long start (last ply bulk-counted).

Target (issue 2): at least 1,000,000 leaf nodes per second on the 2-core machine.
Run: python bench/perft.py [--depth N] [--repeat R]
"""

from __future__ import annotations

import argparse
import time

from pbmserv_terrace.rules import start_position
from pbmserv_terrace.rules.perft import perft


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pos = start_position("long")
    best = float("inf")
    nodes = 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        nodes = perft(pos, args.depth)
        best = min(best, time.perf_counter() - start)
    print(f"perft({args.depth}) long 8x8: {nodes} leaf nodes")
    print(f"best of {args.repeat}: {best:.3f} s, {nodes / best:,.0f} leaf nodes/s (target >= 1,000,000)")


if __name__ == "__main__":
    main()
