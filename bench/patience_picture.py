"""Patience table pictures: how long one PNG takes and how big it is.

Target: a median of <= 20 ms per table_png call on the 2-core test machine, and
<= 40 kB per picture.  The first call builds the cached card faces, background
and palette; it is timed separately ("cold").  Wall-clock and CPU time are both
printed: on a shared machine the wall clock also counts other processes' turns.  The tables: the start of a
Terrace deal (base to choose), Redheads' start (21-card reserve), and a won
Terrace deal's solver line at 60, 120 and 180 moves and at its end (long tableau
piles, full foundations).

Each table is also timed the old way, drawn in RGB and then mapped onto the palette
whole (``to_png(table_rgb(...))``, the reference), and the two PNGs compared; then
``--sample`` more tables along random play-outs of every variant are compared byte
for byte (none may differ).
Run: .venv/bin/python bench/patience_picture.py [--runs 100] [--sample 300] [--write DIR]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collections.abc import Callable

from pbmserv_terrace.games.patience import VARIANTS, State, new_game, solve
from pbmserv_terrace.games.patience.picture import table_png, table_rgb, to_png

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


def old_png(state: State) -> bytes:
    """The reference: drawn in RGB, the whole picture then mapped onto the palette."""
    return to_png(table_rgb(state))


def sample(count: int, seed: int = 1) -> list[State]:
    """``count`` tables along random play-outs of every variant (some resigned)."""
    rng, out = random.Random(seed), []
    while len(out) < count:
        state = new_game(rng.choice(sorted(VARIANTS)), rng.randrange(1, 1_000_000))
        for _ in range(rng.randrange(0, 150)):
            moves = state.legal_moves()
            if not moves:
                break
            state = state.play(rng.choice(moves))
        out.append(state.apply("resign") if not state.is_over() and rng.random() < 0.1 else state)
    return out


def timed(draw: Callable[[State], bytes], state: State, runs: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds of ``runs`` calls."""
    times, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        draw(state)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--sample", type=int, default=300, help="tables of random play-outs compared byte for byte")
    parser.add_argument("--write", type=Path, help="write each PNG into this folder")
    args = parser.parse_args()
    ok = True
    print(f"{'table':<20}{'cold ms':>9}{'median ms':>11}{'p90 ms':>8}{'CPU ms':>8}{'old ms':>8}{'old CPU':>9}"
          f"{'PNG bytes':>11}{'old bytes':>11}{'same':>6}")  # fmt: skip
    new_all, old_all = [], []
    for name, state in tables().items():
        t0 = time.perf_counter()
        data = table_png(state)
        cold = (time.perf_counter() - t0) * 1000
        reference = old_png(state)
        # interleaved, so that both see the same load on a shared machine
        times, cpu, old_times, old_cpu = [], [], [], []
        for _ in range(args.runs):
            for draw, wall, proc in ((table_png, times, cpu), (old_png, old_times, old_cpu)):
                w, c = timed(draw, state, 1)
                wall += w
                proc += c
        new_all += times
        old_all += old_times
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        ok &= median <= TARGET_MS and len(data) <= TARGET_BYTES and data == reference
        print(f"{name:<20}{cold:>9.1f}{median:>11.2f}{p90:>8.2f}{statistics.median(cpu):>8.2f}"
              f"{statistics.median(old_times):>8.2f}{statistics.median(old_cpu):>9.2f}"
              f"{len(data):>11}{len(reference):>11}{'yes' if data == reference else 'NO':>6}")  # fmt: skip
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            (args.write / (name.replace(" ", "-") + ".png")).write_bytes(data)
    new_ms, old_ms = statistics.median(new_all), statistics.median(old_all)
    print(f"all tables: new {new_ms:.2f} ms, old {old_ms:.2f} ms per picture (median), {old_ms / new_ms:.2f}x")
    states = sample(args.sample)
    differ = sum(table_png(state) != old_png(state) for state in states)
    ok &= differ == 0
    print(f"random tables: {differ} of {len(states)} PNGs differ from the old way's (must be 0)")
    print(f"targets: median <= {TARGET_MS} ms, <= {TARGET_BYTES} bytes, identical PNGs: {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
