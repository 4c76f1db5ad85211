"""Account commands (COMMANDS.md §2), mail that is never answered (§1), duplicates,
'multiple', and replies' headers."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from pbmserv_terrace.store import OutboxMessage, User

from .harness import Harness, confirm, mine, to


@pytest.fixture
def h():
    harness = Harness()
    yield harness
    harness.close()


def count(h: Harness, model) -> int:
    """Rows of ``model``; for users, the people (the robots of migration 0004 always exist)."""

    async def run():
        async with h.db.session() as s:
            stmt = select(func.count()).select_from(model)
            if model is User:
                stmt = stmt.where(User.robot_level.is_(None))
            return (await s.execute(stmt)).scalar_one()

    return h.loop.run_until_complete(run())


def test_signup_with_addresses_and_taken_userid(h):
    r = h.send("ann", "signup ann pw-ann ann@home.test ann@work.test")
    # the welcome to the sender; one confirmation to each given address (issue 36)
    assert to(r) == ["ann@home.test", "ann@players.test", "ann@work.test"]
    assert "ann@home.test, ann@work.test" in mine(r, "ann@players.test").body
    r2 = h.send("eve", "signup ANN other")
    assert "already taken" in r2[0].body and r2[0].subject == "Terrace error"
    h.signup("ben")
    new = h.send("ben", "terrace challenge ann pw-ann ben")
    assert to(new) == ["ben@players.test"]  # ann's addresses are not confirmed yet: no mail there
    confirm(h, mine(r, "ann@home.test"))
    confirm(h, mine(r, "ann@work.test"))
    new = h.send("ben", "terrace challenge ann pw-ann ben")
    assert to(new) == ["ann@home.test", "ann@work.test", "ben@players.test"]


def test_bad_userids_and_addresses(h):
    assert "cannot be a userid" in h.send("x", "signup all pw")[0].body
    assert "cannot be a userid" in h.send("x", "signup 12345 pw")[0].body
    assert "not a mail address" in h.send("x", "signup ok pw bad@@address")[0].body
    assert count(h, User) == 0


def test_change_password_and_address(h):
    h.signup("ann")
    r = h.send("ann", "change password ann pw-ann newpw")
    assert "has been changed" in r[0].body
    assert "not correct" in h.send("ann", "change address ann pw-ann a@b.test")[0].body
    r = h.send("ann", "change address ann newpw ann2@else.test")
    assert "ann2@else.test" in r[0].body


def test_signoff_stops_mail_and_signup_brings_it_back(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.send("ben", "signoff ben pw-ben")
    r = h.move(101, "ann", "d2-e3")
    assert to(r) == ["ann@players.test"]
    assert "Welcome back" in h.send("ben", "signup ben pw-ben")[0].body
    assert "signed off" not in h.send("ann", "terrace challenge ann pw-ann ben")[0].body


def test_delete_forfeits_active_games(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.move(101, "ann", "d2-e3")
    h.move(101, "ben", "d7-d6")
    r = h.send("ben", "delete ben pw-ben")
    assert any("Game over: ann wins (ben forfeited)" in x.body for x in r)
    assert any("has been deleted" in x.body for x in r)
    assert "not correct" in h.send("ben", "signup ben pw-ben")[0].body or "taken" in h.send("ben", "signup ben pw-ben")[0].body


def test_help_topics_and_list(h):
    assert "help commands" in h.send("x", "help")[0].body
    assert "challenge USERID1" not in h.send("x", "help")[0].body
    assert "move N U P MOVE[#k]" in h.send("x", "help commands")[0].body
    assert "Moves, one piece per turn" in h.send("x", "terrace help")[0].body
    assert "(6x6)" in h.send("x", "terrace6x6 help")[0].body
    assert "signup alice secret" in h.send("x", "help tutorial")[0].body
    assert "no help on" in h.send("x", "help nonsense")[0].body
    r = h.send("x", "list")
    assert "terrace" in r[0].body and "terrace6x6" in r[0].body


def test_message_and_broadcast(h):
    h.signup("ann", "ben", "cat")
    r = h.send("ann", "message ann pw-ann ben cat", "Tournament on Friday")
    assert sorted(x.to for x in r) == ["ann@players.test", "ben@players.test", "cat@players.test"]
    msg = next(x for x in r if x.to == "ben@players.test")
    assert msg.subject == "Message from ann via PBM Server" and "Tournament on Friday" in msg.body
    r = h.send("ann", "broadcast ann pw-ann", "Server moves tonight")
    assert {x.subject for x in r} == {"Broadcast from ann via PBM Server"} and len(r) == 3
    assert "empty" in h.send("ann", "broadcast ann pw-ann")[0].body
    [r] = h.send("ann", "message ann pw-ann ben robot2", "hello")
    assert "robot2: a robot player reads no mail" in r.body and r.subject.endswith("error")


def test_vacation_limit_seek(h):
    h.signup("ann")
    assert "Vacation for ann is on" in h.send("ann", "terrace vacation ann pw-ann on")[0].body
    assert "3 active games" in h.send("ann", "terrace limit ann pw-ann 3")[0].body
    assert "no limit" in h.send("ann", "terrace limit ann pw-ann inf")[0].body
    assert "seeks 2" in h.send("ann", "terrace seek ann pw-ann 2")[0].body


def test_all_show(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    h.send("ann", "terrace6x6 challenge ann pw-ann ben")
    r = h.send("x", "all show ann")
    assert r[0].subject == "Terrace summaries (2 boards)"
    assert "Summary of Terrace Board 101" in r[0].body and "Summary of Terrace6x6 Board 102" in r[0].body


@pytest.mark.parametrize(
    "extra",
    [
        {"Auto-Submitted": "auto-replied"},
        {"Precedence": "bulk"},
        {"List-Id": "<club.lists.test>"},
        {"X-Autoreply": "yes"},
    ],
)
def test_auto_replies_are_never_answered(h, extra):
    h.signup("ann")
    r = h.send("ann", "help", extra=extra)
    assert r == [] and h.last.status == "ignored"


def test_bounces_and_own_mail_are_never_answered(h):
    assert h.send("MAILER-DAEMON@mx.test", "Undelivered Mail Returned to Sender") == []
    assert h.send("postmaster@mx.test", "help") == []
    assert h.send("pbmserv@terrace.test", "help") == []


def test_repeated_message_id_is_a_no_op(h):
    first = h.send("ann", "signup ann pw", message_id="<same@players.test>")
    assert len(first) == 1
    again = h.send("ann", "signup ann pw", message_id="<same@players.test>")
    assert again == [] and h.last.status == "duplicate"
    assert count(h, User) == 1


def test_multiple_answers_sender_once_and_others_as_usual(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    body = "terrace move 101 ann pw-ann d2-e3\nterrace show 101\nnonsense here\nhelp\n\nsee you"
    r = h.send("ann", "multiple", body)
    mine = [x for x in r if x.to == "ann@players.test" and x.subject.startswith("PBM Server: results")]
    assert len(mine) == 1 and mine[0].body.count("=" * 60) == 8  # move, show, error, help
    assert len([x for x in r if x.to == "ann@players.test"]) == 1
    assert "'nonsense' is not a command" in mine[0].body
    assert any(x.to == "ben@players.test" and "ann played C-d2-e3" in x.body for x in r)


def test_reply_headers(h):
    r = h.send("ann", "help", message_id="<q1@players.test>")
    hdr = r[0].headers
    assert hdr["in-reply-to"] == "<q1@players.test>" and hdr["references"] == "<q1@players.test>"
    assert hdr["auto-submitted"] == "auto-replied" and hdr["message-id"].endswith("@terrace.test>")


def test_errors_change_nothing(h):
    h.signup("ann", "ben")
    h.send("ann", "terrace challenge ann pw-ann ben")
    before = count(h, OutboxMessage)
    r = h.move(101, "ann", "d2-e4")
    assert len(r) == 1 and "d2-e4: a piece moves up only to a neighbouring square" in r[0].body and to(r) == ["ann@players.test"]
    assert count(h, OutboxMessage) == before + 1  # only the error reply
    assert "No moves yet." in h.send("x", "terrace show 101")[0].body


def test_no_password_in_the_database_or_a_dump(h, tmp_path):
    from pbmserv_terrace.cli.admin import backup

    secret = "Corr3ct-Horse-Battery"
    h.signup("ben")
    h.send("ann", f"signup ann {secret}")
    h.send("ann", f"change password ann {secret} {secret}-2")
    err = h.send("ann", f"terrace move 999 ann {secret}-2 d2-e3")  # an error quotes the command ...
    assert "terrace move 999 ann ******** d2-e3" in err[0].body and secret not in err[0].body  # ... masked
    h.send("ann", "multiple", f"terrace chat 5 ann {secret}-2\nterrace vacation ann {secret}-2 maybe\n")

    class Args:
        file = str(tmp_path / "dump.jsonl")

    h.loop.run_until_complete(backup(h.db, Args()))
    dump = (tmp_path / "dump.jsonl").read_text()
    assert secret not in dump and '"password_hash": "$argon2id$' in dump
