"""The play page's door into the service (issue 39 part 2): ``Service.web_play``
checks a board mail's reply key as a keyed Reply does and plays the move through
the same handler, queuing the same replies; a used, stale, forged or refused key
changes nothing.  Real mails in and out (the harness, SQLite)."""

from __future__ import annotations

import io
import re
import tempfile
from collections.abc import Iterator

import pytest

from pbmserv_terrace.app.pipe import print_replies
from pbmserv_terrace.service import WebPlay

from .harness import Harness, Reply, answer, mine, part_text

BASE = "https://games.test"
_PLAY = re.compile(r"Play your move on the web: https://games\.test/play/([a-z2-7]{31})\n")
_KEYS = re.compile(r"[a-z2-7]{31}")


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    harness.config.web.public_url = BASE
    harness.signup("ann", "bob")
    yield harness
    harness.close()


def play_key(reply: Reply) -> str:
    """The key of the play link in a board mail's text part (and the HTML part links the same page)."""
    m = _PLAY.search(reply.body)
    assert m, reply.body
    assert f'href="{BASE}/play/{m.group(1)}"' in reply.html
    return m.group(1)


def web(h: Harness, key: str, move: str | None = None) -> WebPlay:
    return h.loop.run_until_complete(h.service.web_play(key, move))


def printed(h: Harness, ids: list[str]) -> list[Reply]:
    """The replies queued under ``ids``, as the sender would send them."""
    import mailbox

    out = io.BytesIO()
    h.loop.run_until_complete(print_replies(h.db, h.config, ids, out))
    with tempfile.NamedTemporaryFile(suffix=".mbox") as f:
        f.write(out.getvalue())
        f.flush()
        box = mailbox.mbox(f.name)
        replies = [Reply(m["To"], str(m["Subject"]), part_text(m, "text/plain"), {k.lower(): str(v) for k, v in m.items()}, m)
                   for m in box]  # fmt: skip
        box.close()
    return replies


def start(h: Harness) -> tuple[Reply, Reply]:
    """A new Terrace6x6 board of ann (to move) and bob: their board mails."""
    replies = h.challenge("ann", "bob", game="terrace6x6")
    return mine(replies, "ann"), mine(replies, "bob")


def test_only_the_mover_gets_a_play_link(h: Harness) -> None:
    ann, bob = start(h)
    play_key(ann)
    assert "/play/" not in bob.body and "/play/" not in bob.html


def test_no_play_link_without_a_web_address(h: Harness) -> None:
    h.config.web.public_url, h.config.web.listen = "", "off"
    ann, _ = start(h)
    assert "/play/" not in ann.body and "/play/" not in ann.html


def test_the_page_of_a_fresh_key_is_ready(h: Harness) -> None:
    ann, _ = start(h)
    page = web(h, play_key(ann))
    assert page.status == "ready" and page.userid == "ann" and page.game_type == "terrace6x6"
    assert page.players == ["ann", "bob"] and page.position and page.ply == 0
    assert "@" not in repr(page.as_dict())


def test_a_move_from_the_page_plays_and_mails_everyone_as_a_reply_would(h: Harness) -> None:
    ann, _ = start(h)
    key = play_key(ann)
    move = re.search(r"your move \(e\.g\. (\S+)\)", ann.body).group(1)  # type: ignore[union-attr]
    page = web(h, key, move)
    assert page.status == "played", page
    assert page.move and page.mailed == ["ann", "bob"] and page.others == 0 and page.ply == 1
    by_web = printed(h, page.outbox_ids)
    # the same board played by a Reply, on a second server: the same replies but for the keys
    other = Harness()
    other.config.web.public_url = BASE
    try:
        other.signup("ann", "bob")
        o_ann, _ = start(other)
        by_reply = [r for r in answer(other, o_ann, move) if "board" in r.subject.lower()]
        assert other.last is not None and other.last.status == "ok"
    finally:
        other.close()

    def shape(replies: list[Reply]) -> list[tuple[str, str, str, str]]:
        return sorted((r.to, r.subject, _KEYS.sub("KEY", r.body), _KEYS.sub("KEY", r.html)) for r in replies)

    assert shape(by_web) == shape(by_reply)
    assert "bob" in mine(by_web, "bob").to and play_key(mine(by_web, "bob"))


def test_the_same_post_twice_plays_once(h: Harness) -> None:
    ann, _ = start(h)
    key = play_key(ann)
    move = web(h, key).position and re.search(r"your move \(e\.g\. (\S+)\)", ann.body).group(1)  # type: ignore[union-attr]
    assert web(h, key, move).status == "played"
    again = web(h, key, move)
    assert again.status == "used" and again.outbox_ids == [] and again.ply == 1, again
    assert "played already" in again.message
    assert web(h, key).status == "used"


def test_a_forged_or_mangled_key_changes_nothing(h: Harness) -> None:
    ann, _ = start(h)
    key = play_key(ann)
    forged = key[:-3] + ("aaa" if not key.endswith("aaa") else "bbb")
    for bad in (forged, "x" * 31, "not-a-key", ""):
        page = web(h, bad, "a1-b2")
        assert page.status == "invalid" and page.outbox_ids == [] and not page.position, (bad, page)
    assert web(h, key).status == "ready"  # nothing was played


def test_a_stale_key_and_the_other_players_key(h: Harness) -> None:
    ann, bob = start(h)
    bob_key = re.search(r"\+([a-z2-7]{31})@", bob.headers["reply-to"]).group(1)  # type: ignore[union-attr]
    waiting = web(h, bob_key, "a1-b2")
    assert waiting.status == "wait" and "ann's turn" in waiting.message and waiting.outbox_ids == []
    move = re.search(r"your move \(e\.g\. (\S+)\)", ann.body).group(1)  # type: ignore[union-attr]
    played = web(h, play_key(ann), move)
    assert played.status == "played"
    stale = web(h, bob_key, "a1-b2")
    assert stale.status == "stale" and "newest board mail" in stale.message and stale.outbox_ids == []


def test_an_illegal_move_is_refused_and_the_page_offered_again(h: Harness) -> None:
    ann, _ = start(h)
    key = play_key(ann)
    page = web(h, key, "a1-a6")
    assert page.status == "illegal" and "was not played" in page.message and page.outbox_ids == [], page
    assert web(h, key).status == "ready"


def test_a_password_change_cancels_the_link(h: Harness) -> None:
    ann, _ = start(h)
    key = play_key(ann)
    h.send("ann", "change keys ann pw-ann")
    page = web(h, key)
    assert page.status == "invalid" and "no longer valid" in page.message


def test_a_solitaire_has_no_play_link_and_its_key_gets_a_play_by_reply_page(h: Harness) -> None:
    [deal] = h.send("ann", "patience new ann pw-ann")
    assert "/play/" not in deal.body and "/play/" not in deal.html
    key = re.search(r"\+([a-z2-7]{31})@", deal.headers["reply-to"]).group(1)  # type: ignore[union-attr]
    page = web(h, key, "w-t2")
    assert page.status == "solitaire" and "played by Reply" in page.message and page.outbox_ids == []
