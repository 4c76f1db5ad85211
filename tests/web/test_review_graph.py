"""A finished board's page shows its review (issue 42 item 2): the evaluation graph
as inline SVG with a text alternative (a table of the same numbers), and the marked
mistakes, once the review is made; a board in play never shows one, even with a
row (SQLite and PostgreSQL, the real app)."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import httpx
from sqlalchemy import select

from pbmserv_terrace.gametypes.review import GameReview, ReviewMistake, review_to_json
from pbmserv_terrace.store import Game, ReviewRecord, UnitOfWork, utcnow
from pbmserv_terrace.web import create_app

from ..service.harness import Harness
from ..service.test_analyze import play
from .conftest import Site

SVG = "{http://www.w3.org/2000/svg}"


def made_review(plies: list[str]) -> GameReview:
    """A review of a game of these plies: seat 1 ahead, then a blunder at ply 3
    (seat 1) and a smaller slip at ply 4 (seat 2)."""
    evaluations = [0, 20, 35, -1400, -900, *([-2000] * (len(plies) - 4))]
    mistakes = (
        ReviewMistake(3, 1, plies[2], "zz-better", 1435, "leaves its T to be taken"),
        ReviewMistake(4, 2, plies[3], "yy-better", 500, None),
    )
    return GameReview(tuple(evaluations), mistakes, 3, 2000, 20_000)


def store_review(site: Site, name: str, review: GameReview | None = None, data: object = None) -> None:
    game_type, number = site.filled.boards[name]

    async def run() -> None:
        async with UnitOfWork(site.db) as uow:
            game = (await uow.session.execute(select(Game).where(Game.game_type == game_type, Game.board_number == number))).scalar_one()
            stored = review_to_json(review) if review is not None else data
            uow.session.add(ReviewRecord(game_id=game.id, state="sent", data=stored, requested_at=utcnow(), done_at=utcnow()))
            await uow.commit()

    site.sql(run())


def page(site: Site, name: str, query: str = "") -> str:
    game_type, number = site.filled.boards[name]

    async def get(client):
        response = await client.get(f"/boards/{game_type}/{number}{query}")
        assert response.status_code == 200
        return response.text

    return site.run(get)


def test_a_finished_board_shows_its_graph_mistakes_and_table_once_reviewed(site: Site) -> None:
    plies = site.filled.plies["small"]
    assert len(plies) >= 5
    before = page(site, "small")
    assert 'id="review"' not in before  # not made yet: nothing to show
    store_review(site, "small", made_review(plies))
    text = page(site, "small", "?ply=2")
    section = text[text.index('<section class="review"') : text.index("</section>", text.index('<section class="review"'))]
    # the graph: inline SVG, no script, labelled for screen readers
    svg_text = section[section.index("<svg") : section.index("</svg>") + 6]
    svg = ET.fromstring(svg_text)
    assert svg.get("role") == "img" and svg.get("aria-labelledby") == "eval-title"
    assert "carol" in svg.find(f"{SVG}title").text
    points = svg.findall(f".//{SVG}a")
    assert len(points) == len(plies) + 1 - 0  # one link per evaluation (the start and each ply reviewed)
    assert points[4].get("href").endswith("?ply=4")
    assert "<script" not in section
    # the mistakes, numbered as in the graph, the turning point marked, each linking to the position before it
    items = re.findall(r"<li>(.*?)</li>", section, re.S)
    assert len(items) == 2
    assert f"ply 3</a>: carol played {plies[2]}; better was zz-better (1435 points given away): leaves its T to be taken" in html.unescape(items[0])
    assert "(the turning point)" in items[0] and "?ply=2" in items[0]
    assert f"dave played {plies[3]}" in html.unescape(items[1]) and "turning point" not in items[1]
    # the text alternative: every evaluation in a table
    rows = re.findall(r"<tr(?: class=\"current\" aria-current=\"step\")?><th scope=\"row\">", section)
    assert len(rows) == len(plies) + 1
    assert "<tr class=\"current\" aria-current=\"step\"><th scope=\"row\"><a href=\"/boards/terrace6x6/" in section  # the ply shown
    assert "+35" in section and "-1400" in section and "dave is winning" in section


def test_a_board_in_play_never_shows_a_review(site: Site) -> None:
    plies = site.filled.plies["live"]
    store_review(site, "live", made_review(plies))  # a row that should not be there: still nothing shown
    for query in ("", "?ply=1", f"?ply={len(plies)}"):
        text = page(site, "live", query)
        assert 'id="review"' not in text and "class=\"chart evaluation\"" not in text and "Mistakes" not in text


def test_a_review_that_cannot_be_read_shows_nothing_and_breaks_nothing(site: Site) -> None:
    store_review(site, "small", data={"format": 99})
    text = page(site, "small")
    assert 'id="review"' not in text and "Moves" in text


def test_the_review_the_service_made_after_a_game_by_mail_shows_on_its_page() -> None:
    """End to end on SQLite: a game played and resigned by mail, its review made by
    the service (the harness runs the pool's work inline), then the real app's page."""
    h = Harness()
    try:
        h.config.server.review_nodes = 2_000  # (the harness has reviews off for the other tests)
        h.signup("ann", "ben")
        h.challenge("ann", "ben", options="-short")

        async def get(path: str) -> str:
            app = create_app(h.db, server_name="S", public_url="", address="server@x.test")
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                return (await client.get(path)).text

        play(h, 3)
        assert 'id="review"' not in h.loop.run_until_complete(get("/boards/terrace/101"))  # in play: none
        replies = h.send("ben", "terrace resign 101 ben pw-ben")
        assert sum("review" in r.subject for r in replies) == 2
        text = h.loop.run_until_complete(get("/boards/terrace/101"))
        section = text[text.index('<section class="review"') :]
        assert section.count('<th scope="row">') == 4  # the start and the 3 plies before the resignation
    finally:
        h.close()
