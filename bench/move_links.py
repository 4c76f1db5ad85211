"""Issue 39: how large the move links make a board mail's HTML part.

For every board game and setup, random playouts (seeds 0..GAMES-1) find the
position with the most legal moves; prints its move count, the links block's
bytes, the mover's whole HTML part at the start (a real mail through the service
harness) with that block instead, against Gmail's clip (HTML_CLIP_BYTES), and the
time to render the block.  For patience, the same over the first deals of every
variant.  Figures only, no assertions.

    .venv/bin/python bench/move_links.py [GAMES]
"""

from __future__ import annotations

import contextlib
import random
import sys
import time
from email.utils import parseaddr
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.render.html import HTML_CLIP_BYTES, move_links_html
from tests.service.harness import Harness, mine


def setups(rules):
    found = list(rules.two_player_setups)
    for n in (3, 4):
        with contextlib.suppress(ValueError):
            found.append(rules.setup_for(n, None))
    return list(dict.fromkeys(found))


def main(games: int) -> None:
    h = Harness()
    try:
        h.signup("ann", "bob")
        print(f"HTML clip: {HTML_CLIP_BYTES} bytes; {games} random playouts per setup")
        print(f"{'game':13} {'setup':7} {'moves':>5} {'block B':>8} {'HTML B':>8} {'render ms':>9}")
        for name, kind in GAME_TYPES.items():
            if kind.family != "board":
                continue
            rules = kind.board
            ann = mine(h.challenge("ann", "bob", game=name), "ann")
            address = parseaddr(ann.headers["reply-to"])[1]
            subject = ann.subject + " **"
            start = move_links_html(
                rules.move_choices(rules.start(rules.two_player_setups[0])), address=address, subject=ann.subject,
                heading="Your move: tap one to answer", note="Each link opens a reply with the move in it; send it to play.",
            )  # fmt: skip
            rest = len(ann.html.encode()) - len(start.encode())
            for setup in setups(rules):
                best, best_pos = -1, None
                for seed in range(games):
                    rng, pos = random.Random(seed), rules.start(setup)
                    while not pos.is_over():
                        choices = rules.move_choices(pos)
                        count = sum(len(t) for _, t in choices)
                        if count > best:
                            best, best_pos = count, pos
                        _, targets = rng.choice(choices)
                        pos = rules.play(pos, rules.parse_move(pos, rng.choice(targets)[1]))
                choices = rules.move_choices(best_pos)
                t0 = time.perf_counter()
                for _ in range(20):
                    block = move_links_html(choices, address=address, subject=subject, heading="Your move: tap one to answer",
                                            note="Each link opens a reply with the move in it; send it to play.")  # fmt: skip
                ms = (time.perf_counter() - t0) / 20 * 1000
                size = len(block.encode())
                print(f"{name:13} {setup:7} {best:5} {size:8} {rest + size:8} {ms:9.2f}")
        rules = GAME_TYPES["patience"].solitaire
        most, size = 0, 0
        for variant in rules.variants:
            for deal in range(1, 6):
                state = rules.start(variant, deal)
                for _ in range(200):
                    moves = rules.useful_moves(state)
                    if not moves:
                        break
                    block = move_links_html([("", [(m, m, False) for m in moves])], address="pbmserv+" + "k" * 32 + "@x.test",
                                            subject="Patience Board 101 ann", heading="h", note="n")  # fmt: skip
                    most, size = max(most, len(moves)), max(size, len(block.encode()))
                    state, _ = rules.play(state, moves[0])
        print(f"patience: at most {most} useful moves offered, links block at most {size} bytes")
    finally:
        h.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
