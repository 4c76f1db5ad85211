"""What the board mail's example move costs (issue 38): mean time of
``example_move`` over positions from random playouts of every setup.

Run: python bench/example.py [--games 30]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.games.terrace.example import example_move
from pbmserv_terrace.games.terrace.setups import VARIANTS


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=30)
    args = parser.parse_args()
    rng = random.Random(5)
    positions = []
    for game in range(args.games):
        pos = start_position(VARIANTS[game % len(VARIANTS)])
        for _ in range(rng.randrange(10, 70)):
            moves = pos.legal_moves()
            if not moves:
                break
            pos = pos.play(rng.choice(moves))
            positions.append(pos.copy())
    started = time.perf_counter()
    for pos in positions:
        example_move(pos)
    mean = (time.perf_counter() - started) / len(positions)
    print(f"example_move: {len(positions)} positions, {mean * 1000:.3f} ms each (mean)")


if __name__ == "__main__":
    main()
