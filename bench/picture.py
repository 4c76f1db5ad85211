"""Board pictures (issue 16): how long one PNG takes and how big it is.

Target: a median of <= 15 ms per board_png call for 8x8 and 6x6 on the 2-core
test machine, and <= 25 kB per picture.  The first call per board size builds the
cached background, piece tiles and palette; it is timed separately ("cold").

Then old path against new, in one run on the same positions (random mid-games of
every setup and size, with their marks): the old path draws in RGB and maps the
whole picture onto the palette (``to_png(board_rgb(...))``), the new one draws on
the mapped background and tiles (``board_png``).  Prints ms per picture (best and
median of the rounds), the same without the PNG encoding (saving the finished
palette image, timed alone and subtracted), PNG sizes and how many PNGs differ.

Last, streams of games as mails show them (issue 18): 20 games of every setup
and size played move by move, each position drawn once with its last move,
capture and Terrace! rings.  The whole picture drawn and encoded band by band
with SHA-256-keyed bands (``to_png(_draw(...))``, what board_png did before)
against board_png, whose bands are keyed by what is drawn in them and drawn only
when new; each path with an encoder of its own, fresh each round.  Prints ms per
picture, the share of bands from the cache, and how many PNGs differ (none may).
Run: .venv/bin/python bench/picture.py [--runs 200] [--rounds 7]
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pbmserv_terrace.games.terrace import Move, Position, picture
from pbmserv_terrace.games.terrace.picture import board_png, board_rgb, board_svg, threatened_squares, to_png
from tests.games.terrace.cases import SETUPS, SIZES, Case, examples, play_out, random_game

TARGET_MS = 15.0
TARGET_BYTES = 25_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the old/new comparison")
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
    old_and_new(args.rounds)
    streams(args.rounds)


def old_png(case: Case) -> bytes:
    pos, move = case.pos, case.last_move
    return to_png(board_rgb(pos, move, captured=case.captured, threatened=case.threatened), pos.n)


def new_png(case: Case) -> bytes:
    return board_png(case.pos, case.last_move, captured=case.captured, threatened=case.threatened)


def per_picture(items: list[Case], work: Callable[[Case], object]) -> float:
    """ms per picture for drawing every item once."""
    t0 = time.perf_counter()
    for item in items:
        work(item)
    return (time.perf_counter() - t0) * 1000 / len(items)


def old_and_new(rounds: int) -> None:
    cases = [play_out(v, n, 4 + 3 * seed, seed) for v in SETUPS for n in SIZES for seed in range(25)]
    old = [old_png(c) for c in cases]  # also warms every cache
    new = [new_png(c) for c in cases]
    finished = {id(c): Image.open(io.BytesIO(data)) for c, data in zip(cases, new, strict=True)}
    for im in finished.values():
        im.load()  # the palette image board_png saves, to time the save alone

    def save(case: Case) -> bytes:
        return to_png(finished[id(case)], case.pos.n)

    times: dict[str, list[float]] = {"old": [], "new": [], "save": []}
    for _ in range(rounds):  # interleaved, so that drift hits all three alike
        for path, work in (("old", old_png), ("new", new_png), ("save", save)):
            times[path].append(per_picture(cases, work))
    best = {k: min(v) for k, v in times.items()}
    median = {k: statistics.median(v) for k, v in times.items()}
    sizes = ", ".join(f"{n}x{n}" for n in SIZES)
    print(f"\nold vs new: {len(cases)} positions ({', '.join(SETUPS)}; {sizes}), {rounds} rounds, ms per picture")
    print(f"{'path':<6}{'best':>8}{'median':>8}{'best w/o save':>15}{'median w/o save':>17}")
    for path in ("old", "new"):
        no_save = best[path] - best["save"], median[path] - median["save"]
        print(f"{path:<6}{best[path]:>8.3f}{median[path]:>8.3f}{no_save[0]:>15.3f}{no_save[1]:>17.3f}")
    print(f"{'save':<6}{best['save']:>8.3f}{median['save']:>8.3f}   (the PNG encoding alone, the same image for both)")
    ratio = (median["old"] - median["save"]) / (median["new"] - median["save"])
    print(f"speed-up (medians): {median['old'] / median['new']:.2f}x whole, {ratio:.1f}x without the save")
    for path, pngs in (("old", old), ("new", new)):
        lengths = sorted(map(len, pngs))
        print(f"{path} PNG bytes: median {statistics.median(lengths):,.0f}, min {lengths[0]:,}, max {lengths[-1]:,}")
    print(f"PNGs that differ between old and new: {sum(a != b for a, b in zip(old, new, strict=True))} of {len(cases)}")


def stream_positions(games: int, plies: int) -> list[tuple[Position, Move, int | None, list[int]]]:
    rng = random.Random(18)
    out = []
    for variant in SETUPS:
        for n in SIZES:
            for _ in range(games):
                for pos, move, captured in random_game(variant, n, plies, rng):
                    out.append((pos, move, captured, threatened_squares(pos)))
    return out


def streams(rounds: int) -> None:
    positions = stream_positions(20, 30)

    def whole(item: tuple[Position, Move, int | None, list[int]]) -> bytes:
        pos, move, captured, threatened = item
        return to_png(picture._draw(pos, move, captured=captured, threatened=threatened, scale=2), pos.n)

    def keyed(item: tuple[Position, Move, int | None, list[int]]) -> bytes:
        pos, move, captured, threatened = item
        return board_png(pos, move, captured=captured, threatened=threatened)

    times: dict[str, list[float]] = {"whole": [], "keyed": []}
    hits: dict[str, float] = {}
    made: dict[str, list[bytes]] = {}
    kept = picture.PNG
    try:
        for _ in range(rounds):
            for path, work in (("whole", whole), ("keyed", keyed)):
                picture.PNG = encoder = picture.BandedPng(entries=4096, level=picture.COMPRESS_LEVEL)
                t0 = time.perf_counter()
                made[path] = [work(item) for item in positions]
                times[path].append((time.perf_counter() - t0) * 1000 / len(positions))
                hits[path] = encoder.hits / (encoder.hits + encoder.misses)
    finally:
        picture.PNG = kept
    print(
        f"\nstreams: {len(positions)} positions (20 games of each setup and size, move by move), {rounds} rounds, ms per picture"
    )
    for path in ("whole", "keyed"):
        print(
            f"{path:<6} best {min(times[path]):.3f}  median {statistics.median(times[path]):.3f}  bands from the cache {hits[path]:.0%}"
        )
    ratio = statistics.median(times["whole"]) / statistics.median(times["keyed"])
    differ = sum(a != b for a, b in zip(made["whole"], made["keyed"], strict=True))
    print(f"keyed bands: {ratio:.2f}x faster (medians); PNGs that differ: {differ} of {len(positions)}")


if __name__ == "__main__":
    main()
