"""Issue 41: a Swiss of 200 players paired for 7 rounds.

Two figures per round:

- ``pairing``: the pure Swiss pairing of the round (:func:`pbmserv_terrace.tournament.swiss_pairings`:
  score groups, Dutch order, backtracking so that no two players meet twice);
- ``round mail``: the service's time for the mail that ends the round's last board
  (through the harness: real mails in, SQLite), which in its one transaction records
  the result, pairs the next round, opens its 100 boards and queues every board mail
  and the 200 round mails (``HandleResult.ms``).

The players are 200 accounts; each game ends by the resignation of a player a seeded
random choice names (a robot's game takes about a minute, so robots would measure the
engine, not the pairing).  Also checked and printed: no pairing repeats a game.

    .venv/bin/python bench/tournament.py [PLAYERS] [ROUNDS]
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import select

from pbmserv_terrace.store import Game, TournamentGame, User
from pbmserv_terrace.tournament import Result, swiss_pairings
from tests.service.harness import Harness


def pure(players: int, rounds: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    ids = list(range(1, players + 1))
    results: list[Result] = []
    times = []
    for r in range(1, rounds + 1):
        started = time.perf_counter()
        pairs = swiss_pairings(ids, results)
        times.append(time.perf_counter() - started)
        met = {frozenset((x.white, x.black)) for x in results if x.black is not None}
        assert not any(p.black is not None and frozenset((p.white, p.black)) in met for p in pairs), "a repeated game"
        results += [Result(r, p.white, p.black, 1.0 if p.black is None else rng.choice((1.0, 0.0, 0.0, 1.0, 0.5)))
                    for p in pairs]  # fmt: skip
    return times


def rows(h: Harness, round_no: int) -> list[tuple[int, str, str]]:
    """(board, first seat, second seat) of each game of ``round_no``."""

    async def run() -> list[tuple[int, str, str]]:
        async with h.db.session() as s:
            names = {u.id: u.userid for u in (await s.execute(select(User))).scalars()}
            boards = {g.id: g.board_number for g in (await s.execute(select(Game))).scalars()}
            found = (await s.execute(select(TournamentGame).where(TournamentGame.round == round_no))).scalars().all()
            return [(boards[r.game_id], names[r.white_id], names[r.black_id or 0])
                    for r in found if r.game_id is not None]  # fmt: skip

    return h.loop.run_until_complete(run())


def service(players: int, rounds: int, seed: int = 2) -> list[float]:
    rng = random.Random(seed)
    h = Harness()
    try:
        names = [f"p{i:03d}" for i in range(players)]
        h.signup("org")
        h.send("org", f"terrace tournament new org pw-org Bench -swiss {rounds} --players=2-{players}")
        for name in names:
            h.signup(name)
            h.send(name, f"terrace tournament join 1 {name} pw-{name}")
        started = time.perf_counter()
        h.send("org", "terrace tournament start 1 org pw-org")
        assert h.last is not None and h.last.status == "ok"
        times = [h.last.ms / 1000]
        print(f"  round 1 paired and started: {h.last.ms / 1000:.2f} s (service), {time.perf_counter() - started:.2f} s "
              f"(with the harness reading {h.last.replies} mails)")  # fmt: skip
        for r in range(1, rounds + 1):
            games = rows(h, r)
            for board, white, black in games:
                loser = rng.choice((white, black))
                h.send(loser, f"terrace resign {board} {loser} pw-{loser}")
                assert h.last is not None and h.last.status == "ok", h.last
            times.append(h.last.ms / 1000)
            what = "the final table" if r == rounds else f"round {r + 1} paired and started"
            print(f"  round {r} ended, {what}: {h.last.ms / 1000:.2f} s (service, {h.last.replies} mails queued)")
        return times
    finally:
        h.close()


def main() -> None:
    players = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    print(f"Swiss of {players} players, {rounds} rounds")
    times = pure(players, rounds)
    for r, t in enumerate(times, start=1):
        print(f"  pairing round {r}: {t * 1000:.1f} ms (pure)")
    print(f"  pure pairing: worst round {max(times) * 1000:.1f} ms")
    print("By mail (harness, SQLite):")
    done = service(players, rounds)
    print(f"  worst round transaction (result, pairing, {players // 2} boards, mails): {max(done):.2f} s")


if __name__ == "__main__":
    main()
