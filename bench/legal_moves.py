"""Issue 39: what the legal moves add to a board page on the web.

For every board game and setup, random playouts (seeds 0..GAMES-1) find the
position with the most legal moves; prints its move count, the picture's bytes
(the SVG as the page inlines it) without and with the squares' ``data-square``
names, and the moves' JSON data block as the page embeds it, each raw and as the
page's gzip adds it (the page is kept gzipped at level 6).  Figures only.

    .venv/bin/python bench/legal_moves.py [GAMES]
"""

from __future__ import annotations

import contextlib
import gzip
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.store.archive import GameRow
from pbmserv_terrace.store import utcnow
from pbmserv_terrace.web.boardview import Frame, legal_moves
from pbmserv_terrace.web.site import environment

BLOCK = environment().from_string('<script type="application/json" id="legal-data">{{ moves|tojson }}</script>')
NAMES = re.compile(r' data-square="[a-z][0-9]+"')


def packed(text: str) -> int:
    return len(gzip.compress(text.encode(), compresslevel=6, mtime=0))


def busiest(name: str, setup: str, games: int):
    rules = GAME_TYPES[name].board
    best, most = rules.start(setup), -1
    for seed in range(games):
        rng = random.Random(f"{name}-{setup}-{seed}")
        pos = rules.start(setup)
        for _ in range(300):
            texts = [m for _, targets in rules.move_choices(pos) for _, m, _ in targets]
            if len(texts) > most:
                best, most = pos, len(texts)
            if not texts:
                break
            pos = rules.play(pos, rules.parse_move(pos, rng.choice(texts)))
    return best, most


def main(games: int) -> None:
    now = utcnow()
    print(f"{'game':13} {'setup':8} {'moves':>5}  {'svg raw/gz':>13}  {'+names raw/gz':>13}  {'+moves raw/gz':>13}")
    for name, kind in GAME_TYPES.items():
        if kind.family != "board":
            continue
        rules = kind.board
        setups = list(rules.two_player_setups)
        for n in (3, 4):
            with contextlib.suppress(ValueError):
                setups.append(rules.setup_for(n, None))
        for setup in dict.fromkeys(setups):
            pos, count = busiest(name, setup, games)
            game = GameRow(1, name, 1, setup, {}, True, "active", 999, "", "", None, None, (), (), None, now, now, None, ())
            block = BLOCK.render(moves=legal_moves(game, Frame(1, pos)))
            svg = rules.picture_svg(pos)
            bare = NAMES.sub("", svg)
            print(
                f"{name:13} {setup:8} {count:5}  {len(bare):6}/{packed(bare):6}  "
                f"{len(svg) - len(bare):6}/{packed(svg) - packed(bare):6}  "
                f"{len(block):6}/{packed(svg + block) - packed(svg):6}"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
