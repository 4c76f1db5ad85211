"""Digests, Replies to a digest, reminders (issue 40 items 1, 2, 5): held board
mails, one digest at its time, exactly once through a crash, one Reply that moves
on several boards, one reminder per board and turn.  The clock is the timers'
``now`` (``Service.run_timers(at)``, what ``admin timers --at`` runs): no test
sleeps."""

from __future__ import annotations

from datetime import datetime, timedelta
from email.utils import parseaddr

import pytest
from sqlalchemy import func, select

from pbmserv_terrace.app.compose import to_email
from pbmserv_terrace.service import digests as digest_module
from pbmserv_terrace.service.digests import next_at, parse_digest, reply_lines
from pbmserv_terrace.service.replykeys import DIGEST_KEY_LENGTH, KEY_LENGTH, key_in_address
from pbmserv_terrace.store import DigestEntry, OutboxMessage, UnitOfWork, utcnow

from .harness import SERVER, Harness, Reply, answer, mine, part_text, to


def timers_at(h: Harness, at: datetime) -> list[Reply]:
    """Run every timer due at ``at``; the mails they queued, as sent (headers, parts)."""

    async def run() -> list[Reply]:
        queued: list[str] = []
        await h.service.run_timers(at, queued=queued)
        async with h.db.session() as s:
            rows = (await s.execute(select(OutboxMessage).where(OutboxMessage.message_id.in_(queued)))).scalars().all()
            out = []
            for row in sorted(rows, key=lambda r: r.id):
                msg = to_email(row, h.config)
                headers = {k.lower(): str(v) for k, v in msg.items()}
                out.append(Reply(row.recipient, row.subject, row.body, headers, msg))
                row.state = "printed"
            await s.commit()
        return out

    return h.loop.run_until_complete(run())


def count(h: Harness, stmt) -> int:
    async def run() -> int:
        async with UnitOfWork(h.db) as uow:
            return int((await uow.session.execute(stmt)).scalar_one())

    return h.loop.run_until_complete(run())


def tomorrow_at(hour: int, minute: int = 0) -> datetime:
    """``hour:minute`` UTC on the day of the fixture's first digest: the first 08:00
    after now (today before 08:00 UTC, else tomorrow: the test passes at any hour)."""
    now = utcnow()
    day = now if now < now.replace(hour=8, minute=0, second=0, microsecond=0) else now + timedelta(days=1)
    return day.replace(hour=hour, minute=minute, second=0, microsecond=0)


@pytest.fixture
def h():
    """ann (a digest daily at 08:00 UTC) on three boards against ben, where ann moved first."""
    harness = Harness()
    harness.signup("ann", "ben", "cat")
    for _ in range(3):
        harness.challenge("ann", "ben")
    for board in (101, 102, 103):
        harness.move(board, "ann", "d2-e3")
    out = harness.send("ann", "change digest ann pw-ann daily 08:00")
    assert "your digest comes daily at 08:00 (UTC)" in mine(out, "ann").body
    yield harness
    harness.close()


# ------------------------------------------------------------------- settings
def test_digest_settings_are_checked():
    assert parse_digest(["daily", "8:05"]) == {"times": ["08:05"], "zone": "UTC"}
    assert parse_digest(["twice", "18:00", "07:30", "Europe/Paris"]) == {"times": ["07:30", "18:00"], "zone": "Europe/Paris"}
    assert parse_digest(["off"]) is None
    for bad in (["daily", "25:00"], ["daily", "8"], ["twice", "08:00"], ["twice", "08:00", "08:00"], ["weekly", "08:00"],
                ["daily", "08:00", "Mars/Olympus"], ["daily", "08:00", "../../etc/passwd"], []):  # fmt: skip
        with pytest.raises(digest_module.CommandError):
            parse_digest(bad)


def test_the_next_digest_time_follows_the_zone_and_its_clock_changes():
    paris = {"times": ["08:00"], "zone": "Europe/Paris"}
    assert next_at(paris, datetime(2026, 7, 1, 5, 0)) == datetime(2026, 7, 1, 6, 0)  # summer: UTC+2
    assert next_at(paris, datetime(2026, 12, 1, 7, 0)) == datetime(2026, 12, 2, 7, 0)  # winter: UTC+1, 08:00 just passed
    twice = {"times": ["07:00", "19:00"], "zone": "UTC"}
    assert next_at(twice, datetime(2026, 12, 1, 7, 0)) == datetime(2026, 12, 1, 19, 0)


def test_bad_digest_commands_get_a_clear_answer_and_change_nothing(h):
    out = h.send("ann", "change digest ann pw-ann daily 8h")
    assert "'8h' is not a time of day" in mine(out, "ann").body
    out = h.send("ann", "change digest ann pw-ann daily 08:00 Atlantis/Capital")
    assert "not a time zone the server knows" in mine(out, "ann").body
    out = h.send("ann", "change remind ann pw-ann soon")
    assert "not a number of hours" in mine(out, "ann").body


# ---------------------------------------------------------------- held mails
def test_moves_are_held_for_the_digest_and_sent_once_at_its_time(h):
    # ben's moves: ben gets his boards at once, ann nothing (held for her digest)
    for board in (101, 102):
        out = h.move(board, "ben", "d7-d6")
        assert to(out) == ["ben@players.test"]
    assert timers_at(h, tomorrow_at(7, 59)) == []
    sent = timers_at(h, tomorrow_at(8, 0))
    assert to(sent) == ["ann@players.test"]
    digest = sent[0]
    assert digest.subject == "PBM Server: digest for ann, your turn on 2 boards"
    assert "Terrace Board 101 against ben: your move, ply 3" in digest.body
    assert "Terrace Board 102 against ben" in digest.body and "Board 103 against" not in digest.body
    assert "Last move: ben played B-d7-d6" in digest.body and "Time left: 20d " in digest.body
    assert "Since your last digest: Terrace Board 101: ben played B-d7-d6" in digest.body
    key = key_in_address(SERVER, parseaddr(digest.headers["reply-to"])[1])
    assert key is not None and len(key) == DIGEST_KEY_LENGTH != KEY_LENGTH
    # ann wants pictures (the default): one per board where it is her turn
    cids = [p["Content-ID"] for p in digest.message.walk() if p.get_content_type() == "image/png"]
    assert cids == ["<board-terrace-101@pbmserv>", "<board-terrace-102@pbmserv>"]
    assert 'src="cid:board-terrace-102@pbmserv"' in part_text(digest.message, "text/html")
    # the same time again, or later that day: nothing more
    assert timers_at(h, tomorrow_at(8, 0)) == []
    assert timers_at(h, tomorrow_at(20, 0)) == []
    assert count(h, select(func.count()).select_from(DigestEntry).where(DigestEntry.digest_id.is_(None))) == 0


def test_game_ends_chat_and_own_moves_go_at_once(h):
    out = h.send("ben", "terrace chat 101 ben pw-ben", "hello ann")
    assert "ann@players.test" in to(out)
    out = h.move(103, "ben", "resign")
    assert "ann@players.test" in to(out) and "removed" in mine(out, "ann").body
    h.move(101, "ben", "d7-d6")
    out = h.move(101, "ann", "c2-d2")  # her own move: answered at once
    assert "ann@players.test" in to(out)
    out = h.challenge("cat", "ann")
    assert "ann@players.test" in to(out)


def test_a_server_down_at_digest_time_sends_it_once_when_back(h):
    h.move(101, "ben", "d7-d6")
    # the timers did not run at 08:00; at 11:00 the digest due at 08:00 goes, once
    sent = timers_at(h, tomorrow_at(11, 0))
    assert to(sent) == ["ann@players.test"]
    assert timers_at(h, tomorrow_at(11, 30)) == []


def test_a_crash_while_sending_digests_loses_and_doubles_nothing(h, monkeypatch):
    h.send("ben", "change digest ben pw-ben daily 08:00")
    h.move(101, "ben", "d7-d6")  # held for ann
    h.move(102, "ben", "d7-d6")
    h.move(101, "ann", "c2-d2")  # held for ben
    real = digest_module.render
    calls = []

    def crash_on_second(template, **values):
        if template == "digest.txt":
            calls.append(values["user"])
            if len(calls) == 2:
                raise RuntimeError("the server died while writing digests")
        return real(template, **values)

    monkeypatch.setattr(digest_module, "render", crash_on_second)
    with pytest.raises(RuntimeError):
        timers_at(h, tomorrow_at(8, 0))
    monkeypatch.setattr(digest_module, "render", real)
    assert count(h, select(func.count()).select_from(OutboxMessage).where(OutboxMessage.subject.like("%digest for%"))) == 0
    sent = timers_at(h, tomorrow_at(8, 1))
    assert to(sent) == ["ann@players.test", "ben@players.test"]
    assert timers_at(h, tomorrow_at(8, 2)) == []
    assert count(h, select(func.count()).select_from(DigestEntry).where(DigestEntry.digest_id.is_(None))) == 0


def test_digest_off_sends_what_was_held_at_once(h):
    h.move(101, "ben", "d7-d6")
    out = h.send("ann", "change digest ann pw-ann off")
    subjects = sorted(r.subject for r in out)
    assert subjects == ["PBM Server: digest for ann, your turn on 1 board", "PBM Server: digest off"]
    out = h.move(102, "ben", "d7-d6")
    assert "ann@players.test" in to(out)
    assert timers_at(h, tomorrow_at(8, 0)) == []


# ------------------------------------------------------------ one reply, many
def test_reply_lines_are_read_linearly_and_capped():
    lines = reply_lines("101 d2-e3\n\n102: c7-c6 #4\n#103 resign\nthanks!\n" + "104 a1-a2\n" * 60)
    assert [(x.board, x.said) for x in lines[:3]] == [(101, "d2-e3"), (102, "c7-c6 #4"), (103, "resign")]
    assert lines[3].board is None and lines[3].result.startswith("not read")
    assert len(lines) == 51 and "first 50 lines" in lines[-1].result


def test_one_reply_moves_on_several_boards_and_a_stale_line_is_refused_alone(h):
    for board in (101, 102, 103):
        h.move(board, "ben", "d7-d6")
    digest = timers_at(h, tomorrow_at(8, 0))[0]
    h.move(103, "ann", "c2-d2")  # board 103 moves on after the digest
    out = answer(h, digest, "101 c2-d2\n102: c2-d2 #3\n103 b2-c2\n104 a2-a3\n101 b2-c2")
    assert h.last is not None and h.last.status == "ok"
    summary = mine(out, "ann")
    assert summary.subject == "PBM Server: your reply to the digest, 2 of 5 lines played"
    body = summary.body
    assert "101 c2-d2\n      played" in body and "102: c2-d2 #3\n      played" in body
    assert "103 b2-c2\n      not played: board 103 has moved on since the digest" in body
    assert "104 a2-a3\n      not played: board 104 is not one of this digest's boards" in body
    assert "one line per board" in body
    # ben gets the board mails of the boards played
    assert sorted(r.subject for r in out if r.to.startswith("ben")) == ["Terrace Board 101 ben", "Terrace Board 102 ben"]
    assert len([r for r in out if r.to.startswith("ann")]) == 1
    # the same reply again: every board has moved on, nothing is played twice
    again = mine(answer(h, digest, "101 c2-d2\n102 c2-d2"), "ann")
    assert "0 of 2 lines played" in again.subject and again.body.count("has moved on since the digest") == 2


def test_a_bad_move_in_one_line_leaves_the_others_played(h):
    for board in (101, 102):
        h.move(board, "ben", "d7-d6")
    digest = timers_at(h, tomorrow_at(8, 0))[0]
    out = answer(h, digest, "101 z9-z8\n102 c2-d2")
    summary = mine(out, "ann")
    assert "1 of 2 lines played" in summary.subject
    assert "101 z9-z8\n      not played:" in summary.body and "102 c2-d2\n      played" in summary.body
    # the summary carries a key for what still waits: its Reply plays board 101
    assert "Terrace Board 101: your move" in summary.body
    out = answer(h, summary, "101 c2-d2")
    assert "1 of 1 line played" in mine(out, "ann").subject


def test_a_digest_key_works_only_for_its_user_and_from_their_address(h):
    h.move(101, "ben", "d7-d6")
    digest = timers_at(h, tomorrow_at(8, 0))[0]
    out = answer(h, digest, "101 c2-d2", sender="ben@players.test")
    assert "belongs to ann" in mine(out, "ben").body
    h.send("ann", "change keys ann pw-ann")
    out = answer(h, digest, "101 c2-d2")
    assert "no longer valid" in mine(out, "ann").body


def test_a_reply_to_a_digest_gets_through_a_forged_flood(h):
    """Over the sender's throttle limit a mail is still answered when it proves
    its writer: a digest key does, as a board key does (issue 36)."""
    h.move(101, "ben", "d7-d6")
    digest = timers_at(h, tomorrow_at(8, 0))[0]
    h.service.throttle.per_minute = 5
    for _ in range(8):  # eve floods under ann's From
        h.send("ann", "help")
    assert h.last is not None and h.last.status == "throttled"
    out = answer(h, digest, "101 c2-d2")
    assert "1 of 1 line played" in mine(out, "ann").subject and "ann played" in mine(out, "ben").body
    forged = answer(h, digest, "102 c2-d2", strip_key=True)  # no key: the flood's limit holds it
    assert forged == []


# ----------------------------------------------------------------- reminders
def test_a_reminder_once_per_board_and_turn_at_the_hours_chosen():
    h = Harness()
    try:
        h.signup("ann", "ben")
        h.send("ann", "terrace challenge ann pw-ann ben --nagtime=2 --forfeittime=5")
        h.move(101, "ann", "d2-e3")
        out = h.send("ben", "change remind ben pw-ben 24")
        assert "fewer than 24 hours" in mine(out, "ben").body
        start = utcnow()
        assert timers_at(h, start + timedelta(days=3.9)) == []
        nag = timers_at(h, start + timedelta(days=4.1))
        assert to(nag) == ["ben@players.test"] and nag[0].subject == "Terrace Board 101 ben reminder"
        assert "Without a move within 22 hours you forfeit" in nag[0].body and "+" in nag[0].headers["reply-to"]
        assert timers_at(h, start + timedelta(days=4.5)) == []  # once per turn
        # the reminder's Reply is the move
        assert answer(h, nag[0], "d7-d6") and h.last is not None and h.last.status == "ok"
        h.send("ben", "change remind ben pw-ben off")
        h.send("ann", "change remind ann pw-ann off")
        h.move(101, "ann", "c2-d2")
        later = utcnow()
        assert timers_at(h, later + timedelta(days=4.9)) == []  # no reminder at all
        assert "forfeits on time" in timers_at(h, later + timedelta(days=5.1))[0].body
    finally:
        h.close()


def test_no_reminder_while_a_queued_move_answers(h):
    async def queue_for_ben() -> None:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("terrace", 101, lock=True)
            assert game is not None
            game.seats[1].queued_moves = ["d7-d6"]
            await uow.commit()

    h.loop.run_until_complete(queue_for_ben())
    assert [r for r in timers_at(h, utcnow() + timedelta(days=7.5)) if "reminder" in r.subject and "101" in r.subject] == []


def test_status_shows_the_digest_and_the_reminders(h):
    h.send("ann", "change remind ann pw-ann 36")
    text = mine(h.send("ann", "status ann pw-ann"), "ann").body
    assert "Digest:                    daily at 08:00 (UTC)" in text
    assert "Reminders:                 36 hours before a forfeit" in text
