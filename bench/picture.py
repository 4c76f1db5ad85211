"""Board pictures (issue 16): how long one PNG takes and how big it is.

Target: a median of <= 15 ms per board_png call for 8x8 and 6x6 on the 2-core
test machine, and <= 25 kB per picture.  The first call per board size builds the
cached background, piece tiles and palette; it is timed separately ("cold").
Run: .venv/bin/python bench/picture.py [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pbmserv_terrace.render.picture import board_png, board_svg
from tests.render.cases import examples

TARGET_MS = 15.0
TARGET_BYTES = 25_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    cases = {
        "8x8 long mid-game": examples()["example-8x8-long-midgame"],
        "8x8 4 players": examples()["example-4p"],
        "6x6 long mid-game": examples()["example-6x6"],
    }
    ok = True
    print(f"{'position':<20}{'cold ms':>9}{'median ms':>11}{'p90 ms':>8}{'PNG bytes':>11}{'SVG ms':>8}")
    for name, case in cases.items():
        t0 = time.perf_counter()
        data = board_png(case.pos, case.last_move, captured=case.captured, threatened=case.threatened)
        cold = (time.perf_counter() - t0) * 1000
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            board_png(case.pos, case.last_move, captured=case.captured, threatened=case.threatened)
            times.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        for _ in range(20):
            board_svg(case.pos, case.last_move, captured=case.captured, threatened=case.threatened)
        svg_ms = (time.perf_counter() - t0) * 1000 / 20
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        ok &= median <= TARGET_MS and len(data) <= TARGET_BYTES
        print(f"{name:<20}{cold:>9.1f}{median:>11.2f}{p90:>8.2f}{len(data):>11}{svg_ms:>8.2f}")
    print(f"targets: median <= {TARGET_MS} ms, <= {TARGET_BYTES} bytes: {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
