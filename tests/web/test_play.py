"""The play page (issue 39 part 2) over HTTP: ``/play/KEY`` on the archive app with
the service as its door (the harness's, SQLite, one event loop): the page, its
headers, the form's token and origin checks, the no-JavaScript confirmation, the
move, a second post, forged keys, a wrong method, the rate limits, and the page
of an archive without a door."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from pbmserv_terrace.web import create_app
from pbmserv_terrace.web.play import Buckets, PlayDesk, PlayDoor

from ..service.harness import Harness, mine

BASE = "https://games.test"
_PLAY = re.compile(r"https://games\.test(/play/[a-z2-7]{31})\n")
_TOKEN = re.compile(r'name="token" value="([0-9a-f]{32})"')
_MOVES = re.compile(r'type="radio" name="move" value="([^"]+)"')


class Site:
    """The archive app over the harness's database, asked over httpx on the harness's loop."""

    def __init__(self, h: Harness, door: PlayDoor | None) -> None:
        self.h = h
        self.app = create_app(h.db, server_name="Play Test", public_url=BASE, play=door)
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url=BASE)

    @property
    def desk(self) -> PlayDesk:
        desk: PlayDesk = self.app.state.play
        return desk

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.h.loop.run_until_complete(self.client.get(path, **kw))

    def post(self, path: str, data: Mapping[str, str], **kw: Any) -> httpx.Response:
        return self.h.loop.run_until_complete(self.client.post(path, data=data, **kw))

    def request(self, method: str, path: str) -> httpx.Response:
        return self.h.loop.run_until_complete(self.client.request(method, path))


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    harness.config.web.public_url = BASE
    harness.signup("ann", "bob")
    yield harness
    harness.close()


def door_of(h: Harness) -> PlayDoor:
    async def door(key: str, move: str | None) -> Mapping[str, Any]:
        return (await h.service.web_play(key, move)).as_dict()

    return door


@pytest.fixture
def site(h: Harness) -> Iterator[Site]:
    s = Site(h, door_of(h))
    yield s
    h.loop.run_until_complete(s.client.aclose())


def new_board(h: Harness) -> str:
    """ann's play page of a new Terrace6x6 board (ann to move)."""
    m = _PLAY.search(mine(h.challenge("ann", "bob", game="terrace6x6"), "ann").body)
    assert m
    return m.group(1)


def form(page: httpx.Response) -> tuple[str, list[str]]:
    token = _TOKEN.search(page.text)
    assert token, page.text
    return token.group(1), _MOVES.findall(page.text)


def test_the_page_draws_the_board_lists_the_moves_and_leaks_nothing(h: Harness, site: Site) -> None:
    path = new_board(h)
    page = site.get(path)
    assert page.status_code == 200
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-store"
    assert "form-action 'self'" in page.headers["content-security-policy"]
    assert "set-cookie" not in page.headers
    _token, moves = form(page)
    assert moves and len(moves) == len(set(moves))
    assert "<svg" in page.text and "Your move on board" in page.text and '<script src="/static/play.js"' in page.text
    assert "@" not in page.text.replace("@pbmserv", "")  # no address (the drawing's ids aside)
    assert not re.search(r'(src|href)="(https?:)?//', page.text), "a third-party resource"
    assert path not in page.text.replace(f'action="{path}"', "").replace(f'href="{path}"', "")


def test_a_move_by_the_form_without_javascript_asks_then_plays_once(h: Harness, site: Site) -> None:
    path = new_board(h)
    token, moves = form(site.get(path))
    asked = site.post(path, {"token": token, "confirm": "0", "move": moves[0]})
    assert asked.status_code == 200 and f"Confirm: play {moves[0]}" in asked.text
    assert site.get(path).status_code == 200 and "Your move on board" in site.get(path).text  # nothing played yet
    played = site.post(path, {"token": token, "confirm": "1", "move": moves[0]}, headers={"Origin": "null"})
    assert played.status_code == 200, played.text
    assert "is played on board" in played.text and "Board mails went to ann and bob." in played.text
    assert played.headers["referrer-policy"] == "no-referrer"
    again = site.post(path, {"token": token, "confirm": "1", "move": moves[0]})
    assert again.status_code == 409 and "was played already" in again.text and "Nothing was played" in again.text


def test_a_post_without_the_right_token_or_from_another_origin_changes_nothing(h: Harness, site: Site) -> None:
    path = new_board(h)
    other = new_board(h)
    token, moves = form(site.get(path))
    other_token, _ = form(site.get(other))
    for fields, headers in (
        ({"confirm": "1", "move": moves[0]}, {}),
        ({"token": "0" * 32, "confirm": "1", "move": moves[0]}, {}),
        ({"token": other_token, "confirm": "1", "move": moves[0]}, {}),
        ({"token": token, "confirm": "1", "move": moves[0]}, {"Origin": "https://evil.test"}),
        ({"token": token, "confirm": "1", "move": moves[0]}, {"Referer": "https://evil.test/x"}),
    ):
        refused = site.post(path, fields, headers=headers)
        assert refused.status_code == 403 and "was not made by this page" in refused.text, (fields, headers)
    assert "Your move on board" in site.get(path).text
    too_big = site.post(path, {"token": token, "confirm": "1", "move": moves[0], "x": "y" * 4000})
    assert too_big.status_code == 403
    same_site = site.post(path, {"token": token, "confirm": "1", "move": moves[0]}, headers={"Origin": BASE})
    assert same_site.status_code == 200 and "is played on board" in same_site.text


def test_forged_and_stale_keys_get_a_clear_page(h: Harness, site: Site) -> None:
    path = new_board(h)
    forged = path[:-4] + ("aaaa" if not path.endswith("aaaa") else "bbbb")
    for bad in (forged, "/play/" + "a" * 31, "/play/not-a-key", "/play/" + "a" * 200):
        page = site.get(bad)
        assert page.status_code == 403 and "This play link is not valid" in page.text, bad
        assert page.headers["referrer-policy"] == "no-referrer"
    token, moves = form(site.get(path))
    forged_post = site.post(forged, {"token": site.desk.token(forged.rsplit("/", 1)[1]), "confirm": "1", "move": moves[0]})
    assert forged_post.status_code == 403 and "not valid" in forged_post.text
    assert site.post(path, {"token": token, "confirm": "1", "move": moves[0]}).status_code == 200
    bob = mine(h.challenge("ann", "bob", game="terrace6x6"), "bob")
    assert "/play/" not in bob.body


def test_an_illegal_move_shows_the_moves_again(h: Harness, site: Site) -> None:
    path = new_board(h)
    token, _ = form(site.get(path))
    page = site.post(path, {"token": token, "confirm": "1", "move": "a1-a6"})
    assert page.status_code == 422 and "was not played" in page.text and _MOVES.search(page.text)
    asked = site.post(path, {"token": token, "confirm": "0", "move": "a1-a6"})
    assert asked.status_code == 422 and "Choose one of the moves" in asked.text


def test_a_wrong_method_is_refused(h: Harness, site: Site) -> None:
    path = new_board(h)
    for method in ("PUT", "DELETE", "PATCH"):
        page = site.request(method, path)
        assert page.status_code == 405 and page.headers["allow"] == "GET, HEAD, POST"
        assert page.headers["referrer-policy"] == "no-referrer"


def test_requests_are_rate_limited_per_key_and_per_client(h: Harness, site: Site) -> None:
    path = new_board(h)
    site.desk.keys = Buckets(3, 0.0)
    assert [site.get(path).status_code for _ in range(4)] == [200, 200, 200, 429]
    limited = site.get(path)
    assert "Too many requests" in limited.text and limited.headers["retry-after"]
    site.desk.keys = Buckets(100, 0.0)
    site.desk.clients = Buckets(2, 0.0)
    assert [site.get(path).status_code for _ in range(3)] == [200, 200, 429]


def test_buckets_fill_again_with_time() -> None:
    b = Buckets(2, 1.0, kept=2)
    assert [b.take("x", 0.0), b.take("x", 0.0), b.take("x", 0.0)] == [True, True, False]
    assert b.take("x", 1.0) and not b.take("x", 1.0)
    b.take("y", 1.0)
    b.take("z", 1.0)
    assert list(b.levels) == ["y", "z"]  # the least recently seen forgotten


def test_an_archive_without_the_mail_server_says_to_reply(h: Harness) -> None:
    path = new_board(h)
    site = Site(h, None)
    page = site.get(path)
    assert page.status_code == 503 and "reply to your board mail" in page.text


def test_a_door_that_fails_is_a_busy_page(h: Harness) -> None:
    async def away(key: str, move: str | None) -> Mapping[str, Any]:
        raise ConnectionError("serve is restarting")

    path = new_board(h)
    page = Site(h, away).get(path)
    assert page.status_code == 503 and "cannot take moves right now" in page.text


def test_the_play_channel_carries_requests_to_serve_and_answers_back() -> None:
    """web/process.py: the web child's PlayChannel and serve's answer_plays over a
    socket pair (as serve makes one per web child): answers find their requests
    whatever their order, a door's failure is an exception in the child, and a
    closed channel fails the requests still waiting."""
    import asyncio
    import contextlib
    import socket

    from pbmserv_terrace.web.process import PlayChannel, answer_plays

    async def run() -> None:
        ours, theirs = socket.socketpair()
        release = asyncio.Event()

        async def door(key: str, move: str | None) -> Mapping[str, Any]:
            if key == "slow":
                await release.wait()
            if key == "boom":
                raise RuntimeError("the database is away")
            return {"status": "ready", "key": key, "move": move}

        serving = asyncio.create_task(answer_plays(ours, door))
        channel = PlayChannel(theirs)
        slow = asyncio.create_task(channel("slow", None))
        assert await channel("k" * 31, "d2-e3") == {"status": "ready", "key": "k" * 31, "move": "d2-e3"}
        release.set()
        assert (await slow)["key"] == "slow"
        with pytest.raises(RuntimeError, match="serve could not answer"):
            await channel("boom", None)
        release.clear()
        waiting = asyncio.create_task(channel("slow", None))
        await asyncio.sleep(0)
        serving.cancel()
        with pytest.raises(ConnectionError):
            await waiting
        await channel.close()
        with contextlib.suppress(asyncio.CancelledError):
            await serving

    asyncio.run(run())
