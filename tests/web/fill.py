"""Fill a migrated database with users and games written through the store, the way
the service leaves them: random legal games played with the rules, finished games
with their history line and Elo ratings (pbmserv_terrace.elo, as service.ratings applies it), comments kept with games."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import timedelta

from pbmserv_terrace.elo import new_ratings
from pbmserv_terrace.elo import scores as elo_scores
from pbmserv_terrace.games.terrace import format_move, format_tpn, setup_tpn, start_position
from pbmserv_terrace.store import Database, FinishedGame, Game, MoveRecord, Seat, UnitOfWork, User, utcnow

HOSTILE = '<script>alert("x")</script> & <img src=x onerror=alert(1)> {{ 7*7 }} "quoted"'
USERS = ("alice", "bob", "carol", "dave", "erin")


def address(userid: str) -> str:
    return f"{userid}.mailbox@players.test"


def password_hash(userid: str) -> str:
    return f"scrypt$16384$8$1$SALT{userid}$HASHVALUE{userid}"


@dataclass
class Filled:
    boards: dict[str, tuple[str, int]] = field(default_factory=dict)
    """name → (game type, board number)"""
    plies: dict[str, list[str]] = field(default_factory=dict)
    """name → the moves as stored"""
    positions: dict[str, list[str]] = field(default_factory=dict)
    """name → TPN after each ply (index 0 = start)"""


def random_game(
    variant: str, n: int, seed: int, *, max_plies: int | None = None
) -> tuple[list[tuple[int, str]], list[str], int | None]:
    """(seat, move) per ply, TPN after each ply, the winning army (None if unfinished)."""
    rnd = random.Random(seed)
    pos = start_position(variant, n)
    plies, tpns = [], [format_tpn(pos)]
    while pos.outcome() is None and (max_plies is None or len(plies) < max_plies):
        moves = pos.legal_moves()
        captures = [m for m in moves if pos.board[m.to]]
        if max_plies is not None:  # a game that must stay open: no capture, no step into the goal
            quiet = [m for m in moves if not pos.board[m.to] and pos.play(m).outcome() is None]
            moves = quiet or moves
        move = rnd.choice(captures) if captures and max_plies is None and rnd.random() < 0.7 else rnd.choice(moves)
        plies.append((pos.to_move, format_move(pos, move)))
        pos = pos.play(move)
        tpns.append(format_tpn(pos))
    outcome = pos.outcome()
    return plies, tpns, (outcome.winner if outcome else None)


async def fill(db: Database, *, hidden: tuple[str, ...] = ("dave",)) -> Filled:
    out = Filled()
    start = utcnow() - timedelta(days=30)
    async with UnitOfWork(db) as uow:
        users = {}
        for i, name in enumerate(USERS):
            user = User(
                userid=name,
                password_hash=password_hash(name),
                addresses=[address(name)],
                created_at=start + timedelta(minutes=i),
                public_comments=name not in hidden,
            )
            uow.users.add(user)
            users[name] = user
        await uow.flush()
        specs = [
            # name, type, variant, players, seed, plies cap, comment author
            ("live", "terrace", "long", ("alice", "bob"), 3, 12, "alice"),
            ("four", "terrace", "4p", ("alice", "bob", "carol", "dave"), 1, None, "bob"),
            ("small", "terrace6x6", "long", ("carol", "dave"), 5, None, "dave"),
            ("three", "terrace", "3p", ("erin", "carol", "alice"), 2, None, None),
        ]
        when = start
        for name, game_type, variant, seats, seed, cap, author in specs:
            n = 6 if game_type == "terrace6x6" else 8
            plies, tpns, winner = random_game(variant, n, seed, max_plies=cap)
            number = await uow.games.next_board_number(game_type)
            when += timedelta(hours=1)
            game = Game(
                game_type=game_type,
                board_number=number,
                variant=variant,
                options={},
                position=tpns[-1],
                start_position=setup_tpn(variant, n),
                ply=len(plies),
                created_at=when,
                last_move_at=when + timedelta(minutes=len(plies)),
                seats=[Seat(seat=i + 1, user_id=users[u].id, active=True) for i, u in enumerate(seats)],
                comment=f"{author} writes:\n{HOSTILE}" if author else None,
            )
            uow.games.add(game)
            await uow.flush()
            for k, (seat, move) in enumerate(plies, start=1):
                uow.moves.add(
                    MoveRecord(game_id=game.id, ply=k, seat=seat, move=move, auto=False, played_at=when + timedelta(minutes=k))
                )
            if winner is not None:
                await finish(uow, game, [users[u] for u in seats], winner, when + timedelta(minutes=len(plies)))
            out.boards[name] = (game_type, number)
            out.plies[name] = [m for _, m in plies]
            out.positions[name] = tpns
        await uow.commit()
    return out


async def finish(uow: UnitOfWork, game: Game, players: list[User], winner: int, when: object) -> None:
    """What service.boards.finish does: state, result, ratings, the history line."""
    game.status, game.winner_seat, game.finished_at = "won", winner, when  # type: ignore[assignment]
    game.result = f"{players[winner - 1].userid} wins (is the last army on the board)"
    for seat in game.seats:
        seat.active = seat.seat == winner
    rows = await uow.ratings.for_update([u.id for u in players], game.game_type)
    scores = elo_scores(range(1, len(players) + 1), winner)
    after = new_ratings([r.rating for r in rows], [r.games for r in rows], scores)
    for row, new, score in zip(rows, after, scores, strict=True):
        row.rating, row.games = new, row.games + 1
        row.won += score == 1.0
        row.lost += score == 0.0
    uow.history.add(
        FinishedGame(
            game_id=game.id,
            game_type=game.game_type,
            board_number=game.board_number,
            players=[u.userid for u in players],
            result=game.result,
            plies=game.ply,
            finished_at=when,  # type: ignore[arg-type]
        )
    )
