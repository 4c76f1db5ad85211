"""robot3's search speed, and whether a change kept the search identical (issue 42).

On a fixed set of positions (random openings of 8x8 long and 6x6 short, seeded,
plus robot-played middlegames) it runs robot3's search at a fixed node budget,
today's engine and the frozen copy (``bench/robot3_frozen``) one after the other,
and prints for each position the move, score, depth and nodes of today's robot3 (and the
nodes of a search to that depth without a budget), and
both engines' process-time nodes/s with their ratio.  ``--save FILE`` writes
today's (move, score, depth, nodes) per position; ``--check FILE`` compares them
with a saved run and says which positions differ: a change meant as pure speed
must leave every line the same.

Run: nice -n 19 python bench/search_speed.py [--nodes 20000] [--boards 8long,6short]
     [--positions 8] [--save F | --check F] [--no-frozen]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.games.terrace import Position, format_tpn, start_position
from pbmserv_terrace.games.terrace.engine import robot as current_robot
from pbmserv_terrace.games.terrace.engine.search import Limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import robot3_frozen.robot as frozen_robot


def positions(n: int, variant: str, count: int) -> list[Position]:
    """``count`` positions: random openings of 2..40 plies, seeded by the board."""
    rng = random.Random(f"speed-{n}{variant}")
    out: list[Position] = []
    while len(out) < count:
        pos = start_position(variant, n)
        plies = rng.choice((2, 6, 12, 20, 30, 40))
        for _ in range(plies):
            nxt = [q for q in map(pos.play, pos.legal_moves()) if q.outcome() is None]
            if not nxt:
                break
            pos = rng.choice(nxt)
        if pos.outcome() is None:
            out.append(pos)
    return out


def run(eng: object, pos: Position, nodes: int) -> tuple[tuple[int, ...], float]:
    limits = Limits(64, nodes)
    t0 = time.process_time()
    res = eng.search(pos, pos.to_move, limits, contempt=eng.LEVEL_CONTEMPT[3])  # type: ignore[attr-defined]
    sec = time.process_time() - t0
    # the completed depth again without a node budget: its node count shows any change
    full = eng.search(pos, pos.to_move, Limits(max(res.depth, 1), 10**9), contempt=eng.LEVEL_CONTEMPT[3])  # type: ignore[attr-defined]
    return (res.move, res.score, res.depth, res.nodes, full.move, full.score, full.nodes), sec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--boards", default="8long,6short")
    parser.add_argument("--positions", type=int, default=8)
    parser.add_argument("--save")
    parser.add_argument("--check")
    parser.add_argument("--no-frozen", action="store_true")
    args = parser.parse_args()
    results: dict[str, list[int]] = {}
    for board in args.boards.split(","):
        n, variant = int(board[0]), board[1:]
        tot = {"3": [0, 0.0], "f3": [0, 0.0]}
        for pos in positions(n, variant, args.positions):
            line, sec = run(current_robot, pos, args.nodes)
            tot["3"][0] += line[3]
            tot["3"][1] += sec
            results[format_tpn(pos)] = list(line)
            extra = ""
            if not args.no_frozen:
                fline, fsec = run(frozen_robot, pos, args.nodes)
                tot["f3"][0] += fline[3]
                tot["f3"][1] += fsec
                extra = f"  f3 {fline[3] / fsec:8,.0f}/s"
            print(
                f"{board:<7} move {line[0]:>5} score {line[1]:>7} depth {line[2]:>2} nodes {line[3]:>7}  {line[3] / sec:8,.0f}/s{extra}",
                flush=True,
            )
        r3 = tot["3"][0] / tot["3"][1]
        msg = f"{board}: robot3 {r3:,.0f} nodes/s"
        if not args.no_frozen:
            rf = tot["f3"][0] / tot["f3"][1]
            msg += f", frozen {rf:,.0f} nodes/s, ratio {r3 / rf:.3f}"
        print(msg, flush=True)
    if args.save:
        Path(args.save).write_text(json.dumps(results, indent=1))
    if args.check:
        want = json.loads(Path(args.check).read_text())
        bad = [k for k in want if want[k] != results.get(k)]
        print(
            f"identical: {len(want) - len(bad)} of {len(want)} positions"
            + "".join(f"\n  DIFF {k}: {want[k]} -> {results.get(k)}" for k in bad)
        )


if __name__ == "__main__":
    main()
