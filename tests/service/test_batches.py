"""Batches (issue 18): mails handled together in one transaction leave exactly
what the same mails handled one by one leave — the boards, the move lists, the
processed Message-IDs and every reply in the outbox, byte for byte — on random
mail streams of good moves, Reply-to-play moves, illegal moves, wrong
passwords, moves out of turn, chat, show, unknown boards and garbage.

The batches are formed the way ``serve`` forms them: from mails in arrival
order, never two that touch the same thing (``Service.conflict_keys``)."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime

import pytest
from sqlalchemy import select

from pbmserv_terrace.games.terrace import format_move, parse_tpn
from pbmserv_terrace.mail.message import parse_message
from pbmserv_terrace.service import HandleResult, Service
from pbmserv_terrace.service.replykeys import SECRET_NAME, key_address, make_key
from pbmserv_terrace.store import Game, MoveRecord, OutboxMessage, ProcessedMessage, Seat, ServerSecret, User

from .harness import SERVER, Harness, raw_mail

NOW = datetime(2026, 11, 23, 12, 0, 0)
SECRET = "5e" * 32
PLAYERS = ["ann", "ben", "cat", "dan", "eve", "fay", "gus", "hal", "ida", "jon", "kim", "lou"]


def _setup(h: Harness) -> None:
    h.service.throttle.per_minute = 100_000  # the stream is far faster than a person
    h.signup(*PLAYERS)
    pairs = [("ann", "ben"), ("cat", "dan"), ("eve", "fay"), ("gus", "hal"), ("ida", "jon"), ("kim", "lou"), ("ann", "cat")]
    for a, b in pairs:
        assert h.send(a, f"terrace challenge {a} pw-{a} {b}")

    async def secret() -> None:
        async with h.db.session() as s:
            row = await s.get(ServerSecret, SECRET_NAME)
            assert row is not None
            row.value = SECRET
            await s.commit()

    h.loop.run_until_complete(secret())


def _boards(h: Harness) -> dict[int, tuple[str, dict[int, tuple[str, int]]]]:
    """board → (position, army → (userid, user id))."""

    async def read() -> dict[int, tuple[str, dict[int, tuple[str, int]]]]:
        async with h.db.reading() as s:
            out: dict[int, tuple[str, dict[int, tuple[str, int]]]] = {}
            for game in (await s.execute(select(Game).order_by(Game.board_number))).scalars():
                rows = await s.execute(select(Seat, User).join(User, User.id == Seat.user_id).where(Seat.game_id == game.id))
                out[game.board_number] = (game.position, {seat.seat: (user.userid, user.id) for seat, user in rows})
            return out

    return h.loop.run_until_complete(read())


def _stream(seed: int, boards: dict[int, tuple[str, dict[int, tuple[str, int]]]], length: int) -> list[bytes]:
    """Random mails; a shadow of each board follows the moves that will be played."""
    rng = random.Random(seed)
    shadow = {n: parse_tpn(tpn) for n, (tpn, _) in boards.items()}
    ply = dict.fromkeys(boards, 0)
    mails: list[bytes] = []
    for k in range(length):
        board = rng.choice(sorted(boards))
        pos, seats = shadow[board], boards[board][1]
        mover, mover_id = seats[pos.to_move]
        other = next(u for a, (u, _) in seats.items() if a != pos.to_move)
        moves = pos.legal_moves()
        mid = f"<s{seed}-{k}@players.test>"
        kind = rng.choices(
            ["move", "reply", "illegal", "password", "turn", "chat", "show", "unknown", "garbage"],
            [40, 15, 8, 6, 6, 6, 6, 4, 4],
        )[0]
        if kind in ("move", "reply") and moves:
            move = rng.choice(moves)
            text = format_move(pos, move)
            if kind == "move":
                mails.append(raw_mail(f"{mover}@players.test", f"terrace move {board} {mover} pw-{mover} {text}", message_id=mid))
            else:
                key = make_key(bytes.fromhex(SECRET), "terrace", board, mover_id, ply[board], 0)
                to = key_address(SERVER, key)
                mails.append(raw_mail(f"{mover}@players.test", f"Re: Terrace Board {board}", f"{text}\n\n> the board\n",
                                      message_id=mid, extra={"To": to}))  # fmt: skip
            shadow[board] = pos.play(move)
            ply[board] += 1
        elif kind == "illegal":
            mails.append(raw_mail(f"{mover}@players.test", f"terrace move {board} {mover} pw-{mover} a1-h8", message_id=mid))
        elif kind == "password":
            mails.append(raw_mail(f"{mover}@players.test", f"terrace move {board} {mover} wrong d2-e3", message_id=mid))
        elif kind == "turn":
            mails.append(raw_mail(f"{other}@players.test", f"terrace move {board} {other} pw-{other} d7-e6", message_id=mid))
        elif kind == "chat":
            mails.append(raw_mail(f"{other}@players.test", f"terrace chat {board} {other} pw-{other}", f"hello {k}\n",
                                  message_id=mid))  # fmt: skip
        elif kind == "show":
            mails.append(raw_mail(f"{other}@players.test", f"terrace show {board}", message_id=mid))
        elif kind == "unknown":
            mails.append(raw_mail(f"{mover}@players.test", f"terrace move 999 {mover} pw-{mover} d2-e3", message_id=mid))
        else:
            mails.append(raw_mail(f"{other}@players.test", rng.choice(["hello there", "terrace", "move move move"]),
                                  message_id=mid))  # fmt: skip
    return mails


def _batches(service: Service, mails: list[bytes], rng: random.Random) -> list[list[bytes]]:
    """Arrival order cut into batches the way serve's ordering allows: a batch
    ends before a mail that shares a key with one in it (or may touch anything)."""
    out: list[list[bytes]] = []
    current: list[bytes] = []
    keys: set[str] = set()
    limit = rng.choice([3, 5, 10, 50])
    for raw in mails:
        mine = service.conflict_keys(parse_message(raw), SERVER)
        if current and (mine is None or keys & mine or len(current) >= limit):
            out.append(current)
            current, keys = [], set()
        current.append(raw)
        if mine is None:
            out.append(current)
            current, keys = [], set()
        else:
            keys |= mine
    if current:
        out.append(current)
    return out


def _state(h: Harness) -> dict[str, list[tuple[object, ...]]]:
    async def read() -> dict[str, list[tuple[object, ...]]]:
        async with h.db.reading() as s:
            games = await s.execute(
                select(Game.game_type, Game.board_number, Game.position, Game.ply, Game.status, Game.result, Game.comment,
                       Game.draw_votes, Game.undo_votes).order_by(Game.id))  # fmt: skip
            moves = await s.execute(
                select(MoveRecord.game_id, MoveRecord.ply, MoveRecord.seat, MoveRecord.move).order_by(MoveRecord.id)
            )
            seats = await s.execute(
                select(Seat.game_id, Seat.seat, Seat.active, Seat.queued_moves).order_by(Seat.game_id, Seat.seat)
            )
            done = await s.execute(select(ProcessedMessage.message_id, ProcessedMessage.summary)
                                   .where(ProcessedMessage.message_id.like("<s%")).order_by(ProcessedMessage.message_id))  # fmt: skip
            outbox = await s.execute(
                select(OutboxMessage.recipient, OutboxMessage.subject, OutboxMessage.body, OutboxMessage.html,
                       OutboxMessage.in_reply_to, OutboxMessage.reply_to, OutboxMessage.reply_key, OutboxMessage.picture)
                .where(OutboxMessage.in_reply_to.like("<s%")).order_by(OutboxMessage.id))  # fmt: skip
            return {
                "games": [tuple(r) for r in games],
                "moves": [tuple(r) for r in moves],
                "seats": [tuple(r) for r in seats],
                "processed": [tuple(r) for r in done],
                "outbox": [tuple(r) for r in outbox],
            }

    return h.loop.run_until_complete(read())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_batches_leave_what_one_by_one_leaves(seed: int) -> None:
    alone, together = Harness(), Harness()
    try:
        _setup(alone)
        _setup(together)
        assert _boards(alone) == _boards(together)
        mails = _stream(seed, _boards(alone), 240)
        one_by_one = [alone.loop.run_until_complete(alone.service.handle_mail(parse_message(raw), now=NOW)) for raw in mails]
        batches = _batches(together.service, mails, random.Random(seed))
        assert max(len(b) for b in batches) > 2, "the stream made no real batch"
        batched: list[HandleResult | Exception] = []
        for batch in batches:
            batched += together.loop.run_until_complete(together.service.handle_batch([parse_message(r) for r in batch], now=NOW))
        assert all(isinstance(r, HandleResult) for r in batched), [r for r in batched if not isinstance(r, HandleResult)]
        statuses = [r.status for r in batched if isinstance(r, HandleResult)]
        assert statuses == [r.status for r in one_by_one]
        assert {"ok", "error"} <= set(statuses)
        a, b = _state(alone), _state(together)
        for table in a:
            assert a[table] == b[table], table
        assert len(a["moves"]) > 40 and len(a["outbox"]) > 200
    finally:
        alone.close()
        together.close()


def test_a_mail_that_crashes_costs_the_others_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handler that raises (not a player's error) undoes the batch; its mails run
    again one by one: the others are played, the bad one reports its exception."""
    h = Harness()
    try:
        _setup(h)
        boards = _boards(h)
        good = _stream(7, {101: boards[101], 102: boards[102]}, 40)
        good = [m for m in good if b"terrace move 10" in m and b"wrong" not in m and b"a1-h8" not in m][:2]
        assert len(good) == 2
        bad = raw_mail("eve@players.test", "terrace move 103 eve pw-eve d2-e3", message_id="<bad@players.test>")
        service = h.service
        original = service.registry.handler

        def handler(cmd):  # type: ignore[no-untyped-def]
            fn = original(cmd)
            if cmd.words and cmd.words[0] == "103":

                async def boom(ctx, cmd):  # type: ignore[no-untyped-def]
                    raise RuntimeError("a bug in a handler")

                return boom
            return fn

        monkeypatch.setattr(service.registry, "handler", handler)
        results = h.loop.run_until_complete(
            service.handle_batch([parse_message(good[0]), parse_message(bad), parse_message(good[1])], now=NOW)
        )
        assert isinstance(results[1], RuntimeError)
        assert [r.status for r in (results[0], results[2]) if isinstance(r, HandleResult)] == ["ok", "ok"]
        processed = {p[0] for p in _state(h)["processed"]}
        assert processed == {parse_message(good[0]).message_id, parse_message(good[1]).message_id}
    finally:
        h.close()


def test_group_commit_gathers_what_is_ready() -> None:
    """serve's group commit: mails made ready together share a batch; a lone mail waits for nobody."""
    from pbmserv_terrace.app.batching import GroupCommit

    seen: list[int] = []

    async def handle_batch(mails: list[object]) -> list[HandleResult | Exception]:
        seen.append(len(mails))
        await asyncio.sleep(0.01)
        return [HandleResult("ok") for _ in mails]

    async def run() -> None:
        group = GroupCommit(handle_batch, limit=4, lanes=1)  # type: ignore[arg-type]
        assert (await group.handle(parse_message(raw_mail("a@p.test", "help")))).status == "ok"
        results = await asyncio.gather(*(group.handle(parse_message(raw_mail(f"u{i}@p.test", "help"))) for i in range(10)))
        assert [r.status for r in results] == ["ok"] * 10

    asyncio.run(run())
    assert seen[0] == 1
    assert sorted(seen[1:], reverse=True)[0] == 4 and sum(seen[1:]) == 10


def test_a_mails_password_outcomes_count_once_and_when_final() -> None:
    """The guard journal: a mail's wrong passwords hold its own later commands
    back at once, but reach the guard only when applied (after the commit)."""
    from pbmserv_terrace.service.guards import GuardJournal, GuessGuard

    guard = GuessGuard()
    journal = GuardJournal(guard)
    for k in range(GuessGuard.FREE):
        assert journal.locked_for("zed", 1000.0 + k) == 0
        journal.failed("zed", 1000.0 + k)
    assert journal.locked_for("zed", 1010.0) > 0
    assert guard.locked_for("zed", 1010.0) == 0
    journal.apply()
    assert guard.locked_for("zed", 1010.0) == journal.locked_for("zed", 1010.0) > 0
    journal.succeeded("zed")
    assert journal.locked_for("zed", 1010.0) == 0


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_batch_asks_the_throttle_once_and_hears_what_one_by_one_hears(kind: str, request: pytest.FixtureRequest) -> None:
    """Senders over the per-minute limit, in batches (never two mails of one sender
    in a batch, as serve forms them): each mail's verdict (played, the one notice,
    dropped) is what it is one by one; on PostgreSQL the shared counts are asked in
    one statement per batch."""
    from pbmserv_terrace.store import counters

    urls = [None, None] if kind == "sqlite" else [request.getfixturevalue("pg_cluster").create_database() for _ in range(2)]
    alone, together = Harness(urls[0]), Harness(urls[1])
    asked: list[int] = []
    real = counters.throttle_check_many

    async def counted(db, mails, now, limit, userids=None):  # type: ignore[no-untyped-def]
        asked.append(len(mails))
        return await real(db, mails, now, limit, userids)

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(counters, "throttle_check_many", counted)
    try:
        for h in (alone, together):
            h.service.throttle.per_minute = 2
        rounds = [
            [raw_mail(f"p{i}@players.test", "help", message_id=f"<t{r}.{i}@players.test>") for i in range(4)] for r in range(4)
        ]
        one_by_one = [
            alone.loop.run_until_complete(alone.service.handle_mail(parse_message(m), now=NOW)) for b in rounds for m in b
        ]
        asked.clear()
        batched: list[HandleResult | Exception] = []
        for batch in rounds:
            batched += together.loop.run_until_complete(together.service.handle_batch([parse_message(m) for m in batch], now=NOW))
        statuses = [r.status if isinstance(r, HandleResult) else repr(r) for r in batched]
        assert statuses == [r.status for r in one_by_one]
        assert statuses == ["ok"] * 8 + ["throttled"] * 8
        notices = [r.replies for r in batched[8:] if isinstance(r, HandleResult)]
        assert notices == [1] * 4 + [0] * 4  # one notice per sender, then silence
        assert asked == ([] if kind == "sqlite" else [4, 4, 4, 4])
    finally:
        monkeypatch.undo()
        alone.close()
        together.close()
