"""Patience table pictures: how long one PNG takes and how big it is.

Target: a median of <= 20 ms per table_png call on the 2-core test machine, and
<= 40 kB per picture.  The first call builds the cached card faces, background
and palette; it is timed separately ("cold").  Wall-clock and CPU time are both
printed: on a shared machine the wall clock also counts other processes' turns.  The tables: the start of a
Terrace deal (base to choose), Redheads' start (21-card reserve), and a won
Terrace deal's solver line at 60, 120 and 180 moves and at its end (long tableau
piles, full foundations).
Run: .venv/bin/python bench/patience_picture.py [--runs 100] [--write DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pbmserv_terrace.games.patience import State, new_game, solve
from pbmserv_terrace.games.patience.picture import table_png

TARGET_MS = 20.0
TARGET_BYTES = 40_000


def tables() -> dict[str, State]:
    out = {"terrace start": new_game("terrace", 4), "redheads start": new_game("redheads", 7)}
    state = new_game("terrace", 4)
    line = solve(state, max_seconds=10).line
    for i, move in enumerate(line, 1):
        state = state.play(move)
        if i in (60, 120, 180) or i == len(line):
            out[f"terrace after {i}"] = state
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--write", type=Path, help="write each PNG into this folder")
    args = parser.parse_args()
    ok = True
    print(f"{'table':<20}{'cold ms':>9}{'median ms':>11}{'p90 ms':>8}{'CPU ms':>8}{'PNG bytes':>11}")
    for name, state in tables().items():
        t0 = time.perf_counter()
        data = table_png(state)
        cold = (time.perf_counter() - t0) * 1000
        times, cpu = [], []
        for _ in range(args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            table_png(state)
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        ok &= median <= TARGET_MS and len(data) <= TARGET_BYTES
        print(f"{name:<20}{cold:>9.1f}{median:>11.2f}{p90:>8.2f}{statistics.median(cpu):>8.2f}{len(data):>11}")
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            (args.write / (name.replace(" ", "-") + ".png")).write_bytes(data)
    print(f"targets: median <= {TARGET_MS} ms, <= {TARGET_BYTES} bytes: {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
