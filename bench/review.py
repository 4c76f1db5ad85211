"""What a game review costs (issue 42 item 1): a game between two robot levels is
played to its end (or ``--plies``), then reviewed as the worker pool does
(``service.reviews.compute`` at the budget ``service.reviews.budget`` gives for the
default ``[server] review_nodes`` and ``review_game_nodes``, or the ones given).
Prints the plies, the nodes per position, the seconds, and the mistakes found;
then the same review in the steps ``serve`` makes it in (``service.reviews.step``,
each step's values through pickle as to and from a worker): the steps, their total
and the longest step, which is what a robot's move asked during a review waits for
at most with one worker.

Run: python bench/review.py [--game terrace6x6] [--levels 1 2] [--plies 80] [--nodes N] [--cap N]
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.config import ServerConfig, load_config
from pbmserv_terrace.gametypes import board_rules
from pbmserv_terrace.gametypes.review import review_from_json
from pbmserv_terrace.service.reviews import budget, compute, data_of, step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--game", default="terrace")
    parser.add_argument("--levels", type=int, nargs=2, default=(1, 2))
    parser.add_argument("--plies", type=int, default=80)
    parser.add_argument("--nodes", type=int, default=ServerConfig.review_nodes)
    parser.add_argument("--cap", type=int, default=ServerConfig.review_game_nodes)
    args = parser.parse_args()
    rules = board_rules(args.game)
    pos = rules.start(rules.two_player_setups[0])
    start, moves = rules.dump(pos), []
    started = time.perf_counter()
    while not pos.is_over() and len(moves) < args.plies:
        text, _ = rules.robot_move(rules.dump(pos), args.levels[len(moves) % 2], len(moves) + 1)
        move = rules.parse_move(pos, text)
        moves.append(rules.format_move(pos, move))
        pos = rules.play(pos, move)
    played = time.perf_counter() - started
    config = load_config(None, {})
    config.server.review_nodes, config.server.review_game_nodes = args.nodes, args.cap
    nodes = budget(config, len(moves))
    started = time.perf_counter()
    data = compute(args.game, start, moves, nodes)
    took = time.perf_counter() - started
    assert data is not None
    review = review_from_json(data)
    print(f"{args.game}: robot{args.levels[0]} v robot{args.levels[1]}, {len(moves)} plies "
          f"({'ended' if pos.is_over() else 'cut'}; played in {played:.1f} s)")  # fmt: skip
    print(f"review: {nodes:,} nodes a position (budget {args.nodes:,}, cap {args.cap:,}): {took:.1f} s, "
          f"{took / (len(moves) + 1) * 1000:.0f} ms a position")  # fmt: skip
    print(f"mistakes: {len(review.mistakes)} (with a proved reason: {sum(m.reason is not None for m in review.mistakes)}),"
          f" turning point: ply {review.turning_point}")  # fmt: skip
    found: tuple[object, ...] = ()
    times = []
    while True:
        started = time.perf_counter()
        done = pickle.loads(pickle.dumps(step(args.game, start, moves, nodes, found)))
        times.append(time.perf_counter() - started)
        if done.done:
            break
        found = done.found
    assert data_of(done) == data, "the review in steps differs from the review in one go"
    print(f"in steps: {len(times)} steps, {sum(times):.1f} s in all, the longest {max(times) * 1000:.0f} ms "
          f"(mean {sum(times) / len(times) * 1000:.0f} ms); the same review")  # fmt: skip


if __name__ == "__main__":
    main()
