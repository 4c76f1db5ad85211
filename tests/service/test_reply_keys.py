"""Reply to play (issue 14): board mails carry Reply-To: LOCAL+KEY@DOMAIN, and a
reply to it needs no password.  Every check refuses clearly and changes nothing."""

from __future__ import annotations

import base64
import random
from email.utils import parseaddr

import pytest

from pbmserv_terrace.games.terrace import parse_tpn
from pbmserv_terrace.service.replykeys import KEY_LENGTH, decode_key, key_in_address, make_key, verify_key

from .harness import SERVER, Harness, Reply, answer, mine, raw_mail


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben", "cat")
    yield harness
    harness.close()


def key_of(reply: Reply) -> str:
    address = parseaddr(reply.headers["reply-to"])[1]
    key = key_in_address(SERVER, address)
    assert key is not None
    return key


def board_tpn(h: Harness, board: int = 101) -> str:
    from pbmserv_terrace.store import UnitOfWork

    async def run() -> str:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace", board)
            assert game is not None
            return game.position

    return h.loop.run_until_complete(run())


def test_keys_are_short_lower_case_and_unforgeable():
    secret = b"k" * 32
    key = make_key(secret, "terrace6x6", 4321, 77, 12, 3)
    assert len(key) == KEY_LENGTH <= 32 and key == key.lower() and key.isalnum()
    parsed = decode_key(key.upper())  # servers that upper- or lower-case local parts
    assert parsed is not None and (parsed.game_type, parsed.board, parsed.user_id, parsed.ply) == ("terrace6x6", 4321, 77, 12)
    assert verify_key(secret, parsed, 3) and not verify_key(secret, parsed, 4) and not verify_key(b"x" * 32, parsed, 3)
    raw = bytearray(base64.b32decode(key.upper() + "="))
    raw[3] ^= 1  # another board, same MAC
    forged = decode_key(base64.b32encode(bytes(raw)).decode().rstrip("=").lower())
    assert forged is not None and forged.board != 4321 and not verify_key(secret, forged, 3)
    assert decode_key("short") is None and decode_key("!" * KEY_LENGTH) is None
    assert (
        key_in_address("PBM@Club.Test", "pbm+ABC@club.test") == "abc"
        and key_in_address("pbm@club.test", "other+abc@club.test") is None
    )


def test_board_mails_carry_a_reply_address_and_say_how_to_use_it(h):
    replies = h.send("ann", "terrace challenge ann pw-ann ben cat", "hello")
    ann, ben = mine(replies, "ann"), mine(replies, "ben")
    assert key_of(ann) != key_of(ben)
    assert parseaddr(ann.headers["reply-to"])[1].startswith("pbmserv+")
    assert ann.body.rstrip().endswith("on the first line; or resign, draw, undo, show, chat.")
    pos = parse_tpn(board_tpn(h))
    example = ann.body.rsplit("(e.g. ", 1)[1].split(")")[0]
    assert any(f"{pos.geo.name(m.frm)}-{pos.geo.name(m.to)}" == example for m in pos.legal_moves())
    assert "It is ann's turn: reply to this mail with queue and your next move (e.g. queue " in ben.body


def test_a_game_played_to_its_end_with_nothing_but_replies(h):
    """-short on 8x8: both players answer each board mail in a different client's
    shape until the game ends (a seeded mover that takes a win when it sees one)."""
    shapes = [
        "{move}",  # Thunderbird-style top line, quote below (harness)
        "{move}\n\nnice one\n\n-- \nAnn's signature",
        "{move}\n\nSent from my iPhone",
        "{move}\n\n________________________________\nFrom: PBM Server\nSent: Monday\nTo: you\nSubject: Terrace Board",
        "{move}\n\nAm 23.11.2026 um 10:02 schrieb PBM Server:\n> old text",
    ]
    rng = random.Random(7)
    last = {r.to.split("@")[0]: r for r in h.send("ann", "terrace challenge ann pw-ann ben -short")}
    mover = "ann"
    for ply in range(400):
        pos = parse_tpn(board_tpn(h))
        moves = pos.legal_moves()
        winning = [m for m in moves if pos.play(m).outcome() is not None]
        move = (winning or moves)[0] if winning else rng.choice(moves)
        text = f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}"
        replies = answer(h, last[mover], shapes[ply % len(shapes)].format(move=text))
        assert h.last is not None and h.last.status == "ok", (h.last, replies[0].body[:400])
        last.update({r.to.split("@")[0]: r for r in replies if r.to.split("@")[0] in ("ann", "ben")})
        if "Game over" in replies[0].body:
            break
        mover = "ben" if mover == "ann" else "ann"
    assert "Game over" in last["ann"].body and "wins" in last["ann"].body
    assert "Reply to this mail with rematch for a new game, show, or chat" in last["ann"].body


def test_each_bad_reply_answers_clearly_and_changes_nothing(h):
    first = h.send("ann", "terrace challenge ann pw-ann ben")
    ann0, ben0 = mine(first, "ann"), mine(first, "ben")
    before = board_tpn(h)

    # a forged key
    forged = Reply(
        ann0.to, ann0.subject, ann0.body, {**ann0.headers, "reply-to": f"PBM <pbmserv+{'a' * KEY_LENGTH}@terrace.test>"}
    )
    out = answer(h, forged, "d2-e3")
    assert out[0].to == ann0.to
    assert "this reply address is no longer valid" in out[0].body or "not one the server made" in out[0].body
    # ann's key from ben's address
    out = answer(h, ann0, "d2-e3", sender="ben@players.test")
    assert [r.to for r in out] == ["ben@players.test"]
    assert "this reply address belongs to ann; it cannot be used from ben@players.test" in out[0].body
    # ben answers on ann's turn: the rules say no (not the key)
    out = answer(h, ben0, "d7-d6")
    assert "not your turn" in out[0].body and out[0].subject == "Terrace Board 101 Error"
    assert board_tpn(h) == before

    # a move, then the same reply delivered twice (same Message-ID): applied once
    moved = answer(h, ann0, "d2-e3", message_id="<twice@players.test>")
    assert h.last is not None and h.last.status == "ok"
    again = answer(h, ann0, "d2-e3", message_id="<twice@players.test>")
    assert again == [] and h.last.status == "duplicate"
    after_one = board_tpn(h)
    # a second, different reply to the same (now older) mail: outdated, nothing applied
    stale = answer(h, ann0, "e2-e3")
    assert "your move e2-e3 was not played: board 101 has moved on since the mail you answered (ply 2 is to play now)" in stale[0].body and key_of(stale[0]) != key_of(ann0)
    assert board_tpn(h) == after_one and h.last.status == "error"
    # show and chat accept any valid key of the board, outdated or not
    shown = answer(h, ann0, "show")
    assert "Summary of Terrace Board 101" in shown[0].body or "Terrace Board 101" in shown[0].subject
    chat = answer(h, ann0, "chat see you tomorrow")
    assert any(r.to.startswith("ben@") and "see you tomorrow" in r.body for r in chat)

    ben1 = mine(moved, "ben")
    # the +KEY stripped on the way: found again by In-Reply-To
    out = answer(h, ben1, "d7-d6", strip_key=True)
    assert h.last.status == "ok" and "ben played" in out[0].body
    assert board_tpn(h) != after_one


def test_revocation_password_change_change_keys_and_rotation(h):
    first = h.send("ann", "terrace challenge ann pw-ann ben")
    ann0 = mine(first, "ann")
    h.send("ann", "change password ann pw-ann pw-new")
    out = answer(h, ann0, "d2-e3")
    assert "no longer valid" in out[0].body and board_tpn(h).endswith(" 1")
    fresh = h.send("ann", "terrace show 101")
    assert "reply-to" in fresh[0].headers  # show of a board the sender plays in carries a key
    h.send("ann", "change keys ann pw-new")
    assert "no longer valid" in answer(h, fresh[0], "d2-e3")[0].body
    newest = h.send("ann", "terrace show 101")[0]
    assert "ann played" in mine(answer(h, newest, "d2-e3"), "ben").body  # the newest key works

    ben1 = h.send("ben", "terrace show 101")[0]
    assert "reply-to" in ben1.headers

    async def rotate() -> None:
        from pbmserv_terrace.store import UnitOfWork

        async with UnitOfWork(h.db) as uow:
            await uow.secrets.put("reply_keys", "ab" * 32)
            await uow.commit()

    h.loop.run_until_complete(rotate())
    assert "no longer valid" in answer(h, ben1, "d7-d6")[0].body


def test_words_other_than_commands_go_to_the_board_as_chat_and_the_sender_is_told(h):
    ann0 = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    out = answer(h, ann0, "what a lovely board!\nsee you")
    assert any(r.to.startswith("ben@") and "what a lovely board!" in r.body for r in out)
    note = [r for r in out if r.to.startswith("ann@") and "went to the board as a chat message" in r.body]
    assert note and "with the move alone on the first line" in note[0].body
    assert board_tpn(h).endswith(" 1")


def test_the_old_way_still_works_on_a_keyed_reply_and_draws_by_reply(h):
    ann0 = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    # the pbmserv way: keep the subject, add password and move; no own text in the body
    raw = raw_mail("ann@players.test", "Re: Terrace Board 101 ann pw-ann d2-e3 **", "",
                   extra={"To": parseaddr(ann0.headers["reply-to"])[1]})  # fmt: skip
    assert "ann played C-d2-e3" in mine(h.raw(raw), "ben").body
    ben1 = h.send("ben", "terrace show 101")[0]
    offer = answer(h, ben1, "draw")
    ann1 = mine(offer, "ann")
    assert "accept or reject" in ann1.body.splitlines()[-1]
    done = answer(h, ann1, "accept")
    assert "Game over: draw agreed" in done[0].body


def test_a_subject_alone_is_never_a_command_and_server_mails_answer_no_command(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    out = h.send("ben", "Re: Terrace Board 101 ben **", "On Mon ann wrote:\n> board\n\nterrace move 101 ben pw-ben d7-d6")
    assert h.last is not None and h.last.status == "error"  # not ben's turn: the command was read
    assert "not your turn" in out[0].body
    out = h.send("ben", "Re: Terrace Board 101 ben **", "> only quotes")
    assert "this mail holds no command" in out[0].body and "missing arguments" not in out[0].body


# ------------------------------------------------- issue 36: a key does one thing
def stored_text(h: Harness) -> str:
    """Everything the outbox holds (bodies and HTML), and the inbound log."""
    from sqlalchemy import text

    async def run() -> str:
        async with h.db.reading() as session:
            rows = (await session.execute(text("SELECT body, coalesce(html, '') FROM outbox"))).all()
            logged = (await session.execute(text("SELECT * FROM processed_messages"))).all()
        return "\n".join(f"{a}\n{b}" for a, b in rows) + "\n".join(map(str, logged))

    return h.loop.run_until_complete(run())


def test_a_key_is_no_password_for_other_boards_or_other_commands(h):
    """A whole command in a keyed reply runs as an ordinary mail: a wrong password
    fails there, on another board as for an account verb."""
    ann101 = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    h.send("ann", "terrace challenge ann pw-ann cat")  # board 102
    before = board_tpn(h, 102)
    out = answer(h, ann101, "terrace move 102 ann WRONGPASS d2-e3")
    assert "the userid or the password is not correct" in out[0].body
    assert board_tpn(h, 102) == before and "WRONGPASS" not in stored_text(h)
    for line in ("vacation ann WRONGPASS 3", "showas ann WRONGPASS 102", "signoff ann WRONGPASS"):
        out = answer(h, ann101, line)
        assert [r.to for r in out] == ["ann@players.test"], line
        assert "the userid or the password is not correct" in out[0].body, (line, out[0].body[:300])
    # with the right password, the command is what it would be in any mail
    assert "ann played" in mine(answer(h, ann101, "terrace move 102 ann pw-ann d2-e3"), "cat").body


def test_a_password_in_a_keyed_reply_is_never_chatted_or_stored(h):
    ann0 = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")
    secret_lines = [
        "change password ann pw-ann NEWSECRET1",
        "signoff ann pw-ann",
        "change keys ann pw-ann",
        "message ben pw-ann hello there",
        "delete ann pw-ann",
        "terrace move 101 ann pw-ann " + " ".join(["flip"] * 250),
    ]
    for line in secret_lines:
        out = answer(h, ann0, line)
        assert all(r.to == "ann@players.test" for r in out if "pw-ann" in r.body), line
        assert not any(r.to.startswith("ben@") and "chat" in r.subject.lower() for r in out), line
    # below a move, as its comment: masked
    ann0 = mine(h.send("ann", "terrace show 101"), "ann")
    out = answer(h, ann0, "d2-e3\nchange password ann pw-ann NEWSECRET2")
    ben = mine(out, "ben")
    assert "ann played" in ben.body and "NEWSECRET2" not in ben.body and "change password ann ********" in ben.body
    stored = stored_text(h)
    assert "pw-ann" not in stored and "NEWSECRET" not in stored


def test_a_key_never_becomes_valid_again_after_an_undo(h):
    """The board mail of a ply that was taken back does not carry the same key as
    the new one, and a reply to it changes nothing."""
    first = h.send("ann", "terrace challenge ann pw-ann ben")
    ann0 = mine(first, "ann")
    after_move = answer(h, ann0, "d2-e3")
    ben1 = mine(after_move, "ben")
    ann1 = mine(answer(h, ben1, "undo"), "ann")  # ben asks to take ann's move back
    out = answer(h, ann1, "accept")
    assert board_tpn(h).endswith(" 1"), [r.body[:200] for r in out]
    fresh = mine(h.send("ann", "terrace show 101"), "ann")
    assert key_of(fresh) != key_of(ann0)
    stale = answer(h, ann0, "e2-e3")
    assert "has moved on since the mail you answered" in stale[0].body and board_tpn(h).endswith(" 1")
    assert "ann played" in mine(answer(h, fresh, "e2-e3"), "ben").body


def test_keys_made_before_board_versions_still_work(h):
    """A key issued before issue 36 named the ply: it is still read so."""
    from pbmserv_terrace.service.replykeys import key_address

    ann0 = mine(h.send("ann", "terrace challenge ann pw-ann ben"), "ann")

    async def secret() -> bytes:
        from pbmserv_terrace.store import UnitOfWork

        async with UnitOfWork(h.db) as uow:
            value = await uow.secrets.get("reply_keys")
            assert value is not None
            return bytes.fromhex(value)

    old = make_key(h.loop.run_until_complete(secret()), "terrace", 101, decode_key(key_of(ann0)).user_id, 0, 0)
    legacy = Reply(ann0.to, ann0.subject, ann0.body, {**ann0.headers, "reply-to": key_address(SERVER, old)})
    assert "ann played" in mine(answer(h, legacy, "d2-e3"), "ben").body


def test_a_player_whose_address_waits_for_confirmation_can_play_by_reply():
    """The board mail answering a password mail from an unconfirmed address carries
    a key; a reply from that address plays (and is answered there)."""
    h = Harness()
    try:
        h.send("dee", "signup dee pw-dee")  # (no confirmation answered)
        h.signup("eve")
        dee = mine(h.send("dee", "terrace challenge dee pw-dee eve"), "dee")
        assert "reply-to" in dee.headers
        out = answer(h, dee, "d2-e3", sender="dee@players.test")
        assert any(r.to == "dee@players.test" and "dee played" in r.body for r in out), [r.body[:200] for r in out]
        assert "dee played" in mine(out, "eve").body
        # from an address that is none of dee's, the key is refused
        out = answer(h, dee, "e2-e3", sender="eve@players.test")
        assert "this reply address belongs to dee" in out[0].body
    finally:
        h.close()
