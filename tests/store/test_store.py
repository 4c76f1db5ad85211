"""The store on SQLite and on a real PostgreSQL 15: entities, the Unit of Work,
locking, board numbers, duplicate Message-IDs."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy.exc import IntegrityError

from pbmserv_terrace.store import (
    Database,
    FinishedGame,
    Game,
    MoveRecord,
    Notifier,
    Seat,
    Subscription,
    UnitOfWork,
    User,
    utcnow,
)


def run(coro):
    return asyncio.run(coro)


async def migrated(url: str) -> Database:
    db = Database(url)
    await db.migrate()
    return db


def new_user(userid: str) -> User:
    return User(userid=userid, password_hash="scrypt$test", addresses=[f"{userid}@example.org"], created_at=utcnow())


async def make_game(uow: UnitOfWork, users: list[User], number: int | None = None) -> Game:
    now = utcnow()
    number = number or await uow.games.next_board_number("terrace")
    game = Game(
        game_type="terrace",
        board_number=number,
        variant="long",
        options={"nagtime": 7},
        position="DDCCBBAT/AABBCCDD/8/8/8/8/ddccbbaa/tabbccdd 1",
        start_position="DDCCBBAT/AABBCCDD/8/8/8/8/ddccbbaa/tabbccdd 1",
        created_at=now,
        last_move_at=now,
        seats=[Seat(seat=i + 1, user_id=u.id) for i, u in enumerate(users)],
    )
    uow.games.add(game)
    await uow.flush()
    return game


def test_round_trip_of_every_entity(db_url):
    async def scenario():
        db = await migrated(db_url)
        now = utcnow()
        async with UnitOfWork(db) as uow:
            alice, bob = new_user("alice"), new_user("bob")
            alice.challenge_limit, alice.vacation = 5, True
            uow.users.add(alice)
            uow.users.add(bob)
            await uow.flush()
            game = await make_game(uow, [alice, bob])
            game.draw_votes = [1]
            game.seats[1].queued_moves = ["D-d7-e6"]
            uow.moves.add(MoveRecord(game_id=game.id, ply=1, seat=1, move="C-d2-e3", auto=False, played_at=now))
            uow.watchers.add(Subscription(game_type="terrace", game_id=game.id, user_id=bob.id))
            uow.watchers.add(Subscription(game_type="terrace", game_id=None, user_id=alice.id))
            uow.watchers.add(Notifier(game_id=game.id, user_id=alice.id))
            (rating,) = await uow.ratings.for_update([alice.id], "terrace")
            rating.rating, rating.won = 1616.0, 1
            uow.history.add(
                FinishedGame(
                    game_id=game.id,
                    game_type="terrace",
                    board_number=game.board_number,
                    players=["alice", "bob"],
                    result="alice won",
                    plies=1,
                    finished_at=now,
                )
            )
            uow.processed.record("<m1@example.org>", now, "alice@example.org", "move 101")
            uow.outbox.queue(
                message_id="<r1@server>",
                recipient="bob@example.org",
                subject="Terrace Board 101 bob",
                body="board",
                next_attempt_at=now,
                created_at=now,
            )
            await uow.commit()
        async with UnitOfWork(db) as uow:
            alice = await uow.users.get("ALICE")
            assert (
                alice is not None and alice.challenge_limit == 5 and alice.vacation and alice.addresses == ["alice@example.org"]
            )
            game = await uow.games.get("terrace", 101)
            assert game is not None and game.options == {"nagtime": 7} and game.draw_votes == [1]
            assert [s.user.userid for s in game.seats] == ["alice", "bob"]
            assert game.seats[1].queued_moves == ["D-d7-e6"]
            assert [m.move for m in await uow.moves.of_game(game.id)] == ["C-d2-e3"]
            assert [u.userid for u in await uow.watchers.subscribers(game.id)] == ["bob"]
            assert [u.userid for u in await uow.watchers.subscribers_of_all("terrace")] == ["alice"]
            assert [u.userid for u in await uow.watchers.notifiers(game.id)] == ["alice"]
            table = await uow.ratings.table("terrace")
            assert [(u.userid, r.rating, r.won, r.provisional) for r, u in table] == [("alice", 1616.0, 1, True)]
            assert [h.result for h in await uow.history.recent("terrace")] == ["alice won"]
            assert await uow.processed.seen("<m1@example.org>")
            assert not await uow.processed.seen("<m2@example.org>")
            claimed = await uow.outbox.claim(utcnow() + timedelta(seconds=1))
            assert [m.subject for m in claimed] == ["Terrace Board 101 bob"]
            assert await uow.games.count_active("terrace") == 1
            assert await uow.games.count_active_for_user(alice.id) == 1
        await db.close()

    run(scenario())


def test_unit_of_work_rolls_back_everything_on_exception(db_url):
    async def scenario():
        db = await migrated(db_url)
        with pytest.raises(RuntimeError):
            async with UnitOfWork(db) as uow:
                uow.users.add(new_user("carol"))
                await uow.flush()
                await make_game(uow, [await uow.users.get("carol"), await uow.users.get("carol")])
                uow.processed.record("<boom@x>", utcnow())
                raise RuntimeError("handler crashed")
        async with UnitOfWork(db) as uow:
            assert await uow.users.get("carol") is None
            assert await uow.games.get("terrace", 101) is None
            assert not await uow.processed.seen("<boom@x>")
            # the board number used by the failed transaction is not lost either
            assert await uow.games.next_board_number("terrace") == 101
        # and leaving without commit rolls back too
        async with UnitOfWork(db) as uow:
            uow.users.add(new_user("dave"))
        async with UnitOfWork(db) as uow:
            assert await uow.users.get("dave") is None
        await db.close()

    run(scenario())


def test_duplicate_message_id_is_detected(db_url):
    async def scenario():
        db = await migrated(db_url)
        async with UnitOfWork(db) as uow:
            uow.processed.record("<same@x>", utcnow())
            await uow.commit()
        async with UnitOfWork(db) as uow:
            assert await uow.processed.seen("<same@x>")
        # a worker that missed the check still cannot commit the same id twice
        with pytest.raises(IntegrityError):
            async with UnitOfWork(db) as uow:
                uow.processed.record("<same@x>", utcnow())
                await uow.commit()
        await db.close()

    run(scenario())


def test_concurrent_challenges_get_different_board_numbers(db_url):
    async def scenario():
        db = await migrated(db_url)
        async with UnitOfWork(db) as uow:
            for name in ("p1", "p2"):
                uow.users.add(new_user(name))
            await uow.commit()

        async def challenge() -> int:
            async with UnitOfWork(db) as uow:
                users = await uow.users.get_many(["p1", "p2"])
                game = await make_game(uow, [users["p1"], users["p2"]])
                await asyncio.sleep(0.01)
                await uow.commit()
                return game.board_number

        numbers = await asyncio.gather(*(challenge() for _ in range(8)))
        assert sorted(numbers) == list(range(101, 109))
        await db.close()

    run(scenario())


@pytest.mark.postgres
def test_two_commands_on_one_game_serialise_on_postgres(pg_url):
    """Two real connections read-modify-write the same game: the row lock makes the
    second wait for the first, so no update is lost and plies stay unique."""

    async def scenario():
        db = await migrated(pg_url)
        async with UnitOfWork(db) as uow:
            a, b = new_user("a"), new_user("b")
            uow.users.add(a)
            uow.users.add(b)
            await uow.flush()
            await make_game(uow, [a, b])
            await uow.commit()
        order: list[str] = []

        async def move(tag: str) -> None:
            async with UnitOfWork(db) as uow:
                game = await uow.games.get("terrace", 101, lock=True)
                assert game is not None
                order.append(f"{tag}-locked")
                ply = game.ply + 1
                await asyncio.sleep(0.3)  # the other command must wait here
                game.ply = ply
                uow.moves.add(MoveRecord(game_id=game.id, ply=ply, seat=1, move=tag, auto=False, played_at=utcnow()))
                order.append(f"{tag}-commit")
                await uow.commit()

        await asyncio.gather(move("x"), move("y"))
        async with UnitOfWork(db) as uow:
            game = await uow.games.get("terrace", 101)
            assert game is not None and game.ply == 2
            assert [m.ply for m in await uow.moves.of_game(game.id)] == [1, 2]
        # each lock was taken only after the other's commit
        assert order[1].endswith("-commit") and order[0][0] == order[1][0]
        await db.close()

    run(scenario())


@pytest.mark.postgres
def test_outbox_claims_skip_locked_rows_on_postgres(pg_url):
    async def scenario():
        db = await migrated(pg_url)
        now = utcnow()
        async with UnitOfWork(db) as uow:
            for i in range(10):
                uow.outbox.queue(
                    message_id=f"<{i}@s>", recipient="x@y", subject=str(i), body="", next_attempt_at=now, created_at=now
                )
            await uow.commit()
        first = UnitOfWork(db)
        async with first:
            mine = await first.outbox.claim(utcnow(), limit=4)
            async with UnitOfWork(db) as second:
                theirs = {m.id for m in await second.outbox.claim(utcnow(), limit=10)}
            assert len(mine) == 4 and len(theirs) == 6
            assert not {m.id for m in mine} & theirs
        await db.close()

    run(scenario())


def test_sqlite_writers_in_two_engines_never_see_database_locked(tmp_path):
    """Two engines on one file (as two processes would be) writing at once: with
    BEGIN IMMEDIATE and the busy timeout they wait for each other."""

    async def scenario():
        url = f"sqlite+aiosqlite:///{tmp_path}/shared.db"
        one = await migrated(url)
        two = Database(url)

        async def writer(db: Database, prefix: str) -> None:
            for i in range(40):
                async with UnitOfWork(db) as uow:
                    await uow.processed.seen(f"<{prefix}{i}>")  # read first, then write
                    uow.processed.record(f"<{prefix}{i}>", utcnow())
                    await uow.commit()

        await asyncio.gather(writer(one, "a"), writer(two, "b"), writer(one, "c"), writer(two, "d"))
        async with UnitOfWork(one) as uow:
            assert all([await uow.processed.seen(f"<{p}{i}>") for p in "abcd" for i in range(40)])
        await one.close()
        await two.close()

    run(scenario())
