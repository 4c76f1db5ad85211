"""From is not identity (issue 36 part 5): a challenge needs the challenger's
password or a keyed confirmation from their registered address; addresses get
mail only once confirmed; throttle and password-guess counts are kept per (user,
sender) and per sender, so a forged From neither silences nor locks out a player.
Each test here failed before the change."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from pbmserv_terrace.service.guards import GuessGuard
from pbmserv_terrace.store import Confirmation, Game, OutboxMessage, User

from .harness import Harness, answer, confirm, mine, to

ANN = "ann@players.test"


@pytest.fixture
def h(db_url: str):
    harness = Harness(db_url)
    harness.signup("ann", "ben")
    yield harness
    harness.close()


def boards(h: Harness) -> int:
    async def run() -> int:
        async with h.db.session() as s:
            return int((await s.execute(select(func.count()).select_from(Game))).scalar_one())

    return h.loop.run_until_complete(run())


def outbox_to(h: Harness, address: str) -> int:
    async def run() -> int:
        async with h.db.session() as s:
            stmt = select(func.count()).select_from(OutboxMessage).where(OutboxMessage.recipient == address)
            return int((await s.execute(stmt)).scalar_one())

    return h.loop.run_until_complete(run())


def user(h: Harness, userid: str) -> User:
    async def run() -> User:
        async with h.db.session() as s:
            found = (await s.execute(select(User).where(User.userid == userid))).scalar_one()
            s.expunge(found)
            return found

    return h.loop.run_until_complete(run())


# ------------------------------------------------------------------ challenge
def test_a_challenge_from_a_stranger_without_a_password_opens_nothing(h: Harness) -> None:
    before = outbox_to(h, ANN)
    for players in ("ann ben", "ann robot3", "ben ann"):
        replies = h.send("eve@evil.test", f"terrace challenge {players}")
        assert to(replies) == ["eve@evil.test"] and "give your password" in replies[0].body
    assert boards(h) == 0 and outbox_to(h, ANN) == before


def test_a_forged_from_only_gets_the_challenger_a_confirmation_she_can_ignore(h: Harness) -> None:
    """eve forges ann's From: the board (a robot game too) opens only when the
    confirmation mailed to ann's registered address is answered."""
    asked = h.send(ANN, "terrace challenge ann robot3 -short", "Forged!")
    assert to(asked) == [ANN] and asked[0].subject.startswith("confirm ") and boards(h) == 0
    assert "+" in asked[0].headers["reply-to"] and "Forged!" in asked[0].body
    assert "ben@players.test" not in to(h.send(ANN, "terrace challenge ann ben"))
    assert boards(h) == 0  # nothing happens until a Reply: ignoring it is enough
    opened = confirm(h, asked[0])
    assert boards(h) == 1 and "New Terrace Board 101 ann **" in {r.subject for r in opened}
    assert "ann writes:\nForged!" in mine(opened, "ann").body
    again = answer(h, asked[0], "")  # a key is used once
    assert "not valid" in again[0].body and boards(h) == 1


def test_a_confirmation_key_is_checked(h: Harness) -> None:
    asked = h.send(ANN, "terrace challenge ann ben")[0]
    key = asked.subject.split()[1]
    forged = key[:10] + ("a" if key[10] != "a" else "b") + key[11:]
    assert "not valid" in h.send("eve@evil.test", f"confirm {forged}")[0].body
    h.send(ANN, "change keys ann pw-ann")  # cancels unanswered confirmations too
    assert "not valid" in answer(h, asked, "")[0].body and boards(h) == 0


def test_a_challenge_with_the_password_opens_at_once(h: Harness) -> None:
    wrong = h.send("eve@evil.test", "terrace challenge ann guess ben")
    assert "not correct" in wrong[0].body and boards(h) == 0
    opened = h.send("anywhere@else.test", "terrace challenge ann pw-ann ben", "Hi")
    assert to(opened) == [ANN, "ben@players.test"] and boards(h) == 1
    assert "ann writes:\nHi" in opened[0].body
    # named again among the players, the challenger takes that seat
    second = h.send(ANN, "terrace challenge ann pw-ann ben ann")
    assert second[0].subject == "New Terrace Board 102 ben"
    # the password is masked wherever the command is quoted or stored
    error = h.send(ANN, "terrace challenge ann pw-ann nosuch")
    assert "pw-ann" not in error[0].body and "nosuch: no such user" in error[0].body


# ------------------------------------------------------------------ addresses
def test_signup_mails_a_stranger_once_and_claims_nothing(h: Harness) -> None:
    replies = h.send("eve@evil.test", "signup eve pw victim@victim.test ann@players.test")
    assert to(replies) == ["ann@players.test", "eve@evil.test", "victim@victim.test"]
    assert all(r.subject.startswith("confirm ") for r in replies if r.to != "eve@evil.test")
    ann_before = outbox_to(h, ANN) - 1
    eve = user(h, "eve")
    assert eve.addresses == [] and eve.pending_addresses == ["victim@victim.test", "ann@players.test"]
    # nothing else reaches them: a message, a board made with eve's password
    h.send("ben", "message ben pw-ben eve", "hello eve")
    board = h.send("eve@evil.test", "terrace challenge eve pw ben")
    assert to(board) == ["ben@players.test"]  # eve@evil.test is none of eve's addresses
    assert outbox_to(h, "victim@victim.test") == 1 and outbox_to(h, ANN) == ann_before + 1  # one each
    # a stranger's address is mailed at most PER_ADDRESS_PER_DAY times
    for k in range(8):
        h.send(f"eve{k}@evil.test", f"signup eve{k} pw victim@victim.test")
    assert outbox_to(h, "victim@victim.test") == 5


def test_an_unconfirmed_player_plays_by_password_and_hears_only_at_the_sender(h: Harness) -> None:
    signed = h.send("cy@players.test", "signup cy pw-cy")
    assert to(signed) == ["cy@players.test"] and "Welcome" in signed[0].body and signed[0].subject.startswith("confirm ")
    new = h.send("ben", "terrace challenge ben pw-ben cy")
    assert to(new) == ["ben@players.test"]  # cy's address is unconfirmed: no board mail there
    moved = h.send("ben", "terrace move 101 ben pw-ben d2-e3")
    assert to(moved) == ["ben@players.test"]
    mine_ = h.send("cy@players.test", "terrace move 101 cy pw-cy d7-d6")
    assert to(mine_) == ["ben@players.test", "cy@players.test"]  # the answer to her own mail goes to its From
    confirm(h, signed[0])
    assert "cy@players.test" in to(h.send("ben", "terrace chat 101 ben pw-ben", "now you hear me"))


def test_change_address_waits_for_the_new_address(h: Harness) -> None:
    replies = h.send(ANN, "change address ann pw-ann ann@players.test ann@new.test")
    assert to(replies) == ["ann@new.test", ANN]
    assert user(h, "ann").addresses == [ANN] and user(h, "ann").pending_addresses == ["ann@new.test"]
    new = h.send("ben", "terrace challenge ben pw-ben ann")
    assert to(new) == [ANN, "ben@players.test"]
    confirm(h, mine(replies, "ann@new.test"), sender="ann@new.test")
    assert user(h, "ann").addresses == [ANN, "ann@new.test"] and user(h, "ann").pending_addresses == []
    # a list without the old address drops it at once; an unanswered key lapses with its address
    moved = h.send(ANN, "change address ann pw-ann ann@third.test")
    assert user(h, "ann").addresses == [] and "No confirmed address is left" in mine(moved, ANN).body
    h.send(ANN, "change address ann pw-ann ann@new.test")
    assert "not valid" in confirm_fails(h, mine(moved, "ann@third.test"))


def confirm_fails(h: Harness, mail) -> str:  # type: ignore[no-untyped-def]
    return answer(h, mail, "")[0].body


# ------------------------------------------------------------------- throttle
def test_a_forged_flood_does_not_silence_mails_that_authenticate(h: Harness) -> None:
    h.service.throttle.per_minute = 5
    board = h.send("ben", "terrace challenge ben pw-ben ann ben")
    key_mail = mine(board, "ann")
    for _ in range(8):  # eve floods under ann's From
        h.send(ANN, "help")
    assert h.last is not None and h.last.status == "throttled"
    assert h.send(ANN, "terrace show 101") == []  # no password: still silent
    assert h.send(ANN, "terrace move 101 ann wrong d7-d6") == []  # a wrong one too
    assert h.last is not None and h.last.status == "throttled"
    played = h.send(ANN, "terrace move 101 ann pw-ann d2-e3")  # the real ann
    assert "ann played C-d2-e3" in mine(played, "ben").body
    by_reply = answer(h, mine(h.send("ben", "terrace move 101 ben pw-ben d7-d6"), "ann"), "show")
    assert to(by_reply) == [ANN] and "Summary of Terrace Board 101" in by_reply[0].body
    assert "show" in answer(h, key_mail, "show")[0].body.lower()
    # a confirmation answered by Reply is let through as well
    asked = h.send("ben", "terrace challenge ben ann")[0]
    for _ in range(8):
        h.send("ben", "help")
    assert boards(h) == 1 and confirm(h, asked) and boards(h) == 2
    # a player's own authenticated mails are still counted (a loop stops): per (user, sender)
    statuses = []
    for _ in range(7):
        h.send(ANN, "vacation ann pw-ann off")
        statuses.append(h.last.status if h.last else "")
    assert statuses[0] == "ok" and statuses[-1] == "throttled"


# ------------------------------------------------------------ password guessing
def test_wrong_passwords_from_other_addresses_do_not_lock_the_owner_out(h: Harness) -> None:
    for k in range(7):
        assert "not correct" in h.send(f"eve{k}@evil.test", "vacation ann wrong on")[0].body
    assert "vacation" in h.send(ANN, "vacation ann pw-ann on")[0].body.lower()
    # one address that keeps guessing is held ...
    for _ in range(GuessGuard.FREE):
        h.send("eve@evil.test", "vacation ann wrong on")
    assert "too many wrong passwords" in h.send("eve@evil.test", "vacation ann pw-ann on")[0].body
    # ... and so is one that guesses across many userids, but not on its owner's own userid
    for k in range(GuessGuard.SENDER_FREE):
        h.send("ben", f"vacation nosuch{k} wrong on")
    assert "too many wrong passwords" in h.send("ben", "vacation another wrong on")[0].body
    assert "not correct" not in h.send("ben", "vacation ben pw-ben on")[0].body
    assert "too many" not in h.send(ANN, "vacation ann pw-ann off")[0].body


def test_above_the_high_cap_everyone_waits(h: Harness) -> None:
    for k in range(GuessGuard.USER_FREE):
        h.send(f"eve{k}@evil.test", "vacation ann wrong on")
    assert "too many wrong passwords for ann" in h.send(ANN, "vacation ann pw-ann on")[0].body


def test_the_confirmation_rows_are_used_once(h: Harness) -> None:
    async def rows() -> int:
        async with h.db.session() as s:
            return int((await s.execute(select(func.count()).select_from(Confirmation))).scalar_one())

    assert h.loop.run_until_complete(rows()) == 0  # the harness's signups were confirmed
    h.send(ANN, "terrace challenge ann ben")
    assert h.loop.run_until_complete(rows()) == 1


def test_expired_confirmations_are_forgotten_by_the_timers(h: Harness) -> None:
    """A confirmation nobody answered is deleted once its key stopped working (TTL),
    not kept for good; a young one stays."""
    from .harness import run_timers

    async def rows() -> int:
        async with h.db.session() as s:
            return int((await s.execute(select(func.count()).select_from(Confirmation))).scalar_one())

    h.send(ANN, "terrace challenge ann ben")
    assert h.loop.run_until_complete(rows()) == 1
    run_timers(h, 1)
    assert h.loop.run_until_complete(rows()) == 1
    run_timers(h, 7.5)
    assert h.loop.run_until_complete(rows()) == 0
