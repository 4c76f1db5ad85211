"""Hostile and random input: handled as data, answered or refused cleanly, and an
invalid command changes nothing (COMMANDS.md §1, issue 4)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from pbmserv_terrace.store import Game, MoveRecord, Notifier, Rating, Seat, Subscription, User

from .harness import Harness, raw_mail, to


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben")
    harness.send("ann", "terrace challenge ann pw-ann ben")
    yield harness
    harness.close()


def snapshot(h: Harness) -> list:
    """Every table a command may change, except the outbox and processed ids."""

    async def run():
        out = []
        async with h.db.session() as s:
            for model in (User, Game, Seat, MoveRecord, Subscription, Notifier, Rating):
                rows = (await s.execute(select(model))).scalars().all()
                cols = [c.key for c in model.__table__.columns]
                out.append(sorted(tuple(repr(getattr(r, c)) for c in cols) for r in rows))
        return out

    return h.loop.run_until_complete(run())


def test_template_syntax_in_comment_is_printed_as_written(h):
    text = "{{ 7*7 }} {% for x in y %} ${HOME} <script>"
    r = h.move(101, "ann", "d2-e3", text)
    assert text in r[0].body and "49" not in r[0].body


def test_header_injection_in_subject_and_addresses(h):
    r = h.raw(raw_mail("ann@players.test", "=?utf-8?q?help=0D=0ABcc:_victim@else.test?="))
    assert to(r) == ["ann@players.test"] and "bcc" not in r[0].headers
    r = h.send("eve", "signup eve pw eve@x.test\r\nBcc:victim@else.test")
    assert all("victim" not in x.to for x in r)
    evil = b"From: ann@players.test\r\nBcc: victim@else.test\r\nSubject: help\r\nMessage-ID: <inj@x>\r\n\r\nhi\r\n"
    r = h.raw(evil)
    assert to(r) == ["ann@players.test"]


def test_huge_body_and_huge_subject(h):
    before = snapshot(h)
    r = h.send("ann", " ".join(["word"] * 10_000))
    assert len(r) == 1 and "at most 200 words" in r[0].body
    assert snapshot(h) == before
    r = h.move(101, "ann", "d2-e3", "x" * 1_000_000)
    # the board mail to both (the comment cut), and a notice to the sender that it was cut
    assert to(r) == ["ann@players.test", "ann@players.test", "ben@players.test"]
    assert all(len(m.body) < 30_000 for m in r)
    board = next(m for m in r if m.to.startswith("ben"))
    # the mail itself is cut before that (at most 256 kB of a body is parsed, 200,000 characters kept)
    shortened = re.search(r"\[… message shortened: ([\d,]+) characters left out\]", board.body)
    assert shortened is not None and int(shortened.group(1).replace(",", "")) >= 150_000
    note = next(m for m in r if "shortened" in m.subject)
    assert f"{shortened.group(1)} characters were left out" in note.body


def test_nul_bytes_are_removed(h):
    r = h.raw(b"From: ann@players.test\r\nSubject: terrace show\x00 101\r\nMessage-ID: <nul@x>\r\n\r\nbody\x00text\r\n")
    assert len(r) == 1 and "Summary of Terrace Board 101" in r[0].body


def test_garbage_bytes_do_not_crash(h):
    for i, junk in enumerate(
        [
            b"",
            b"\xff\xfe\x00garbage",
            b"Subject: help\r\n\r\n",
            b"From: <>\r\n\r\n",
            b"From: a@b\r\nContent-Type: multipart/mixed\r\n\r\n--x",
        ]
    ):
        h.raw(junk + f"\r\nMessage-ID: <g{i}@x>".encode())
        assert h.last.status != "failed"


WORDS = ["terrace", "terrace6x6", "move", "show", "challenge", "resign", "queue", "submit", "confirm", "propose", "accept",
         "reject", "undo", "101", "102", "101#1", "ann", "ben", "pw-ann", "pw-ben", "nobody", "d2-e3", "e7-d6", "x9-z0",
         "-short", "-huge", "--nagtime=2", "--x=", "**", "Re:", "help", "games", "list", "preview", "new", "2", "chat",
         "subscribe", "notify", "limit", "seek", "vacation", "on", "signup", "change", "password", "all", "#", "{{", "'", ":"]  # fmt: skip


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    subject=st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=12)), max_size=8).map(" ".join),
    body=st.text(max_size=400),
)
def test_random_mail_never_crashes_and_invalid_changes_nothing(h, subject, body):
    h.service.throttle.per_minute = 10**9  # hundreds of mails from one sender here
    before = snapshot(h)
    replies = h.send("ann", subject, body)
    result = h.last
    assert result.status in ("ok", "error", "ignored"), result
    if result.status == "error":
        assert snapshot(h) == before
        assert to(replies) == ["ann@players.test"]
    # one reply per recipient (each address gets one mail per command)
    counts = Counter(r.to for r in replies)
    assert all(c == 1 for c in counts.values()), counts


def test_a_flooding_sender_is_throttled_with_one_notice(h):
    h.service.throttle.per_minute = 5
    replies = [h.send("zed", "help") for _ in range(12)]
    assert [len(r) for r in replies[:5]] == [1] * 5
    assert len(replies[5]) == 1 and "more than 5 commands in a minute" in replies[5][0].body
    assert all(r == [] for r in replies[6:]) and h.last.status == "throttled"
    # other players are not affected
    assert "Summary of Terrace Board 101" in h.send("ben", "terrace show 101")[0].body


def test_password_guessing_is_slowed(h):
    for _ in range(5):
        assert "not correct" in h.send("eve", "terrace move 101 ann guess d2-e3")[0].body
    locked = h.send("eve", "terrace move 101 ann guess d2-e3")[0].body
    assert "too many wrong passwords for ann; try again in 1 minute" in locked
    # even the right password waits from eve's address (issue 36: counted per
    # (user, sender)); ann's own address is not held, nor are other users
    assert "too many wrong passwords" in h.send("eve", "terrace move 101 ann pw-ann d2-e3")[0].body
    assert "not your turn" in h.move(101, "ben", "d7-d6")[0].body
    assert "ann played" in h.move(101, "ann", "d2-e3")[0].body
    # unknown userids are treated alike
    for _ in range(6):
        last = h.send("eve", "terrace move 101 nosuch guess d2-e3")[0].body
    assert "too many wrong passwords for nosuch" in last


def test_auto_responder_does_not_start_a_mail_loop(h):
    # plain words get the short help (issue 38); an auto-responder without
    # Auto-Submitted headers that answers it gets nothing, and neither does an
    # answer to one of our error mails
    first = h.send("bot", "Hello there", "Please buy our product")
    assert len(first) == 1 and first[0].subject == "PBM Server: how to play"
    echo = h.send("bot", f"Re: {first[0].subject}", "Thank you for your mail, I am away.\n\n> " + first[0].body[:50])
    assert echo == [] and h.last.status == "error"
    echo = h.send("bot", "Re: Terrace error", "Thank you for your mail, I am away.")
    assert echo == [] and h.last.status == "error"
    echo = h.send("bot", "AW: Terrace Board 101 Error", "Automatische Antwort")
    assert echo == []


@pytest.mark.parametrize(
    "extra",
    [
        {"X-Auto-Response-Suppress": "All"},
        {"X-Auto-Response-Suppress": "DR, AutoReply"},
        {"Return-Path": "<>"},
    ],
)
def test_automatic_mail_with_a_from_is_not_answered(h, extra):
    """Issue 36: headers that say "do not answer" (ours say so too) are obeyed
    even with a usable From: answering could start a loop with another robot."""
    out = h.raw(raw_mail("ann@players.test", "help", "", extra=extra))
    assert out == [] and h.last is not None and h.last.status == "ignored"


def test_mail_from_our_own_tagged_address_is_not_answered(h):
    from .harness import SERVER

    local, _, domain = SERVER.partition("@")
    out = h.raw(raw_mail(f"{local}+abcdefghijklmnopqrstuvwxyz23456@{domain.upper()}", "help", ""))
    assert out == [] and h.last is not None and h.last.status == "ignored"


def test_a_mail_over_a_parsing_limit_is_answered_and_runs_nothing(h):
    opening = "".join(f"Content-Type: multipart/mixed; boundary=b{i}\n\n--b{i}\n" for i in range(50))
    raw = (
        "From: ann@players.test\nTo: pbmserv@terrace.test\nMessage-ID: <deep@players.test>\n"
        "Subject: signup eve secret\n" + opening + "Content-Type: text/plain\n\nhi\n"
    ).encode()
    out = h.raw(raw)
    assert len(out) == 1 and out[0].to == "ann@players.test" and "did not read your mail's text" in out[0].body
    assert "nests more than" in out[0].body and h.last is not None and h.last.status == "error"
    assert "secret" not in out[0].body  # the Subject is quoted with its password masked
