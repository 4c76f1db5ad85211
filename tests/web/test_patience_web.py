"""The archive shows solitaire boards (Terrace patience, issue 21) beside the Terrace
boards: the games are played through the real mail commands (the service harness),
then the real app is served over the same database (SQLite and PostgreSQL).

Board page (the table as text, ?ply=k replay, the move list), text record, feed,
the front page, the standings on shared deals, player pages and feeds; privacy and
escaping as for every page; and the web names no game: it dispatches on the game
type's family."""

from __future__ import annotations

import asyncio
import html
import re
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from pbmserv_terrace.games.patience import format_move
from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.store import UnitOfWork
from pbmserv_terrace.web import create_app
from tests.service.harness import Harness, mine

from .fill import USERS, fill

ATOM = "{http://www.w3.org/2005/Atom}"
SOLITAIRE = next(name for name, kind in GAME_TYPES.items() if kind.family == "solitaire")
RULES = GAME_TYPES[SOLITAIRE].solitaire
PLAYERS = ("ann", "ben", "cy", "dan")
ROOT = Path(__file__).resolve().parents[2]


def line(variant: str, deal: int, n: int) -> list[str]:
    """``n`` legal moves from the deal: a card home when one can go, else a flip."""
    state = RULES.start(variant, deal)
    out: list[str] = []
    for _ in range(n):
        moves = state.legal_moves(canonical=True)
        if not moves:
            break
        best = next((m for m in moves if state.apply(m).score > state.score), None)
        if best is None:
            best = next((m for m in moves if format_move(m) == "flip"), moves[0])
        state, text = RULES.play(state, format_move(best))
        out.append(text)
    return out


@dataclass
class Board:
    number: int
    player: str
    variant: str
    deal: int
    moves: list[str]
    undos: int = 0
    hints: int = 0
    ended: bool = False


@dataclass
class Played:
    h: Harness
    boards: dict[str, Board] = field(default_factory=dict)
    app: Any = None
    """one app for all requests, so its kept pages (standings, players) must follow new games"""

    def run(self, scenario: Callable[[httpx.AsyncClient], Awaitable[Any]]) -> Any:
        if self.app is None:
            self.app = create_app(self.h.db, server_name="Terrace <PBM> Server")
            self.app.state.site.live_ttl = 0.0  # what is checked here: kept pages follow what they show at once

        async def go() -> Any:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                return await scenario(client)

        return self.h.loop.run_until_complete(go())

    def get(self, *paths: str) -> list[httpx.Response]:
        async def scenario(client: httpx.AsyncClient) -> list[httpx.Response]:
            return [await client.get(p) for p in paths]

        return self.run(scenario)

    def new(self, name: str, player: str, variant: str, deal: int) -> Board:
        reply = mine(self.h.send(player, f"{SOLITAIRE} new {player} pw-{player} -{variant} --deal={deal}"), player)
        found = re.search(r"Board (\d+)", reply.subject)
        assert found is not None, reply.subject
        board = self.boards[name] = Board(int(found.group(1)), player, variant, deal, [])
        return board

    def play(self, board: Board, moves: list[str]) -> None:
        p = board.player
        reply = mine(self.h.send(p, f"{SOLITAIRE} move {board.number} {p} pw-{p} {' '.join(moves)}"), p)
        assert "not played" not in reply.body, reply.body
        board.moves += moves

    def resign(self, board: Board) -> None:
        p = board.player
        reply = mine(self.h.send(p, f"{SOLITAIRE} resign {board.number} {p} pw-{p}"), p)
        assert "Game over" in reply.body, reply.body
        board.ended = True

    def url(self, name: str) -> str:
        return f"/boards/{SOLITAIRE}/{self.boards[name].number}"


def play_all(url: str) -> Iterator[Played]:
    h = Harness(url)
    try:
        h.loop.run_until_complete(fill(h.db))  # the Terrace boards of the other web tests
        h.signup(*PLAYERS)
        p = Played(h)
        # deal 4 of Terrace, shared by four players: ann 4 cards in 25 moves, ben 3 in 12,
        # cy and dan 2 in 3 (a tie); ann's later, worse game on the same deal does not count
        for name, player, n in (("ann4", "ann", 25), ("ben4", "ben", 12), ("cy4", "cy", 3), ("dan4", "dan", 3),
                                ("ann4again", "ann", 3)):  # fmt: skip
            board = p.new(name, player, "terrace", 4)
            p.play(board, line("terrace", 4, n))
            p.resign(board)
        # ann's game in play: moves, an undo, a hint
        live = p.new("live", "ann", "terrace", 7)
        p.play(live, line("terrace", 7, 8))
        assert "took back" in mine(h.send("ann", f"{SOLITAIRE} undo {live.number} ann pw-ann"), "ann").body
        live.moves.pop()
        live.undos = 1
        assert "Hint" in mine(h.send("ann", f"{SOLITAIRE} hint {live.number} ann pw-ann"), "ann").body
        live.hints = 1
        # another variant, just dealt
        p.new("fresh", "ben", "redheads", 5)
        yield p
    finally:
        h.close()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def played(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    """The games above, played once for the module's tests that only read."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('patience')}/test.db"
    else:
        url = request.getfixturevalue("pg_cluster").create_database()
    yield from play_all(url)


@pytest.fixture
def played_anew(db_url: str) -> Iterator[Played]:
    """The games above on a database of this test's own (for a test that plays more)."""
    yield from play_all(db_url)


def pre_of(page: str) -> str:
    found = re.search(r'<figure class="table" id="table" data-ply="\d+">\s*<pre>(.*?)</pre>', page, re.S)
    assert found is not None, page[:2000]
    return html.unescape(found.group(1))


def table_after(board: Board, k: int, *, resigned: bool = False) -> str:
    state = RULES.replay(board.variant, board.deal, board.moves[:k])
    return RULES.table_text(RULES.resign(state) if resigned else state)


def test_board_page_shows_the_table_and_its_facts(played: Played) -> None:
    live = played.boards["live"]
    (response,) = played.get(played.url("live"))
    page = response.text
    assert response.status_code == 200 and response.headers["etag"].startswith(f'W/"{SOLITAIRE}-{live.number}-')
    assert pre_of(page) == table_after(live, len(live.moves))
    assert f"{GAME_TYPES[SOLITAIRE].title} board {live.number}</h1>" in page
    facts = dict(re.findall(r"<tr><th>(\w+)</th><td>(.*?)</td></tr>", page))
    assert facts["Player"] == '<a href="/players/ann">ann</a>'
    assert facts["Variant"] == f"{RULES.variants['terrace']} (terrace)"
    assert facts["Deal"] == "7" and facts["Moves"] == str(len(live.moves))
    assert facts["Undos"] == "1" and facts["Hints"] == "1"
    score = RULES.score(RULES.replay("terrace", 7, live.moves))
    assert facts["Score"] == f"{score}/{RULES.max_score}" and facts["Status"] == "in play"
    assert f"In play: ann has made {len(live.moves)} moves; score {score}/{RULES.max_score}." in page
    # the move list links every move; no picture (the board picture is Terrace's)
    for k, move in enumerate(live.moves, 1):
        assert f'<li><a href="{played.url("live")}?ply={k}"' in page and f">{html.escape(move)}</a></li>" in page
    assert "<svg" not in page
    assert '<script src="/static/replay.js" defer></script>' in page and "<script>" not in page
    assert f'data-plies="{len(live.moves)}"' in page and f'<a href="/standings/{SOLITAIRE}">' in page


def test_ply_parameter_replays_the_moves(played: Played) -> None:
    board = played.boards["ann4"]
    n = len(board.moves)
    wanted = [0, 1, 2, n // 2, n - 1, n]
    pages = [r.text for r in played.get(*(f"{played.url('ann4')}?ply={k}" for k in wanted))]
    for k, page in zip(wanted, pages, strict=True):
        assert pre_of(page) == table_after(board, k, resigned=k == n), k
        assert f'data-ply="{k}"' in page
        assert f'After move <span id="ply">{k}</span> of {n}' in page if k else f"The deal, before move 1 of {n}" in page
        if 0 < k < n:
            assert f"The table after move {k} of {n}" in page
            assert f'?ply={k}" class="current"' in page
            assert f'id="prev" href="{played.url("ann4")}?ply={k - 1}"' in page
            assert f'id="next" href="{played.url("ann4")}?ply={k + 1}"' in page
            assert f"of {n}: {html.escape(board.moves[k - 1])}</p>" in page
    final = pages[-1]
    assert "Resigned with 4 cards on the foundations." in final
    assert f"Game over: resigned, score 4/{RULES.max_score} in {n} moves." in final
    beyond, word, negative = played.get(*(f"{played.url('ann4')}?ply={p}" for p in (n + 1, "x", "-1")))
    assert beyond.status_code == word.status_code == negative.status_code == 404
    assert f"(it has plies 0 to {n})" in beyond.text


def test_board_page_shows_the_tables_picture_served_with_caching_headers(played: Played) -> None:
    """Issue 38 item 5: the picture the mail shows (the rules' PNG) is on the page, one per
    replayed move, served like the pages (ETag, Cache-Control, 304); a board game's too."""
    board = played.boards["ann4"]
    n = len(board.moves)
    url = played.url("ann4")
    pages = [r.text for r in played.get(f"{url}?ply=2", url)]
    for k, page in zip((2, n), pages, strict=True):
        found = re.search(r'<img class="table" src="([^"]+)" alt="([^"]*)"', page)
        assert found is not None, page[:3000]
        assert html.unescape(found.group(1)) == f"{url}/picture.png?ply={k}"
        state = RULES.replay(board.variant, board.deal, board.moves[:k])
        state = RULES.resign(state) if k == n else state
        assert html.unescape(found.group(2)) == RULES.picture_alt(state)
        assert pre_of(page) == RULES.table_text(state)  # the text table is still there
    picture, again, beyond, word = played.get(f"{url}/picture.png?ply=2", f"{url}/picture.png?ply=2",
                                              f"{url}/picture.png?ply={n + 1}", f"{url}/picture.png?ply=x")  # fmt: skip
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
    assert picture.content == RULES.picture(RULES.replay(board.variant, board.deal, board.moves[:2]))
    assert picture.headers["etag"].startswith(f'W/"{SOLITAIRE}-{board.number}-2-png') and again.content == picture.content
    assert picture.headers["cache-control"] == "public, max-age=300"  # an ended board's picture, as its page
    assert picture.headers["x-content-type-options"] == "nosniff"
    assert beyond.status_code == word.status_code == 404

    async def revalidate(client: httpx.AsyncClient) -> httpx.Response:
        return await client.get(f"{url}/picture.png?ply=2", headers={"If-None-Match": picture.headers["etag"]})

    assert played.run(revalidate).status_code == 304
    (live,) = played.get(f"{played.url('live')}/picture.png")
    assert live.status_code == 200 and live.headers["cache-control"] == "public, max-age=15"
    (terrace,) = played.get("/boards/terrace/101/picture.png?ply=1")
    assert terrace.status_code == 200 and terrace.content.startswith(b"\x89PNG\r\n\x1a\n")


def test_text_record(played: Played) -> None:
    board = played.boards["ben4"]
    (response,) = played.get(played.url("ben4") + ".txt")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    lines = response.text.splitlines()
    assert lines[0] == f"Game: {GAME_TYPES[SOLITAIRE].title} board {board.number}"
    assert lines[1:4] == ["Player: ben", f"Variant: {RULES.variants['terrace']} (terrace)", "Deal: 4"]
    assert lines[4] == f"Result: resigned, score 3/{RULES.max_score} in {len(board.moves)} moves"
    assert f"Moves: {len(board.moves)}" in lines and "Undos: 0" in lines and f"Score: 3/{RULES.max_score}" in lines
    assert [m.split(". ", 1)[1] for m in lines if re.match(r"^\d+\. ", m)] == board.moves
    assert response.text.endswith(table_after(board, len(board.moves), resigned=True).rstrip("\n") + "\n")


def test_board_feed_is_valid_atom(played: Played) -> None:
    board = played.boards["live"]
    (response,) = played.get(played.url("live") + "/feed.atom")
    assert response.headers["content-type"].startswith("application/atom+xml")
    root = ET.fromstring(response.content)
    assert root.tag == f"{ATOM}feed" and "ann" in root.findtext(f"{ATOM}title", "")
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == len(board.moves)
    first = entries[-1]
    assert first.findtext(f"{ATOM}id") == f"http://testserver{played.url('live')}?ply=1"
    assert first.findtext(f"{ATOM}title") == f"Move 1: ann played {board.moves[0]}"
    assert (first.findtext(f"{ATOM}summary") or "").startswith("Score ")


def test_front_page_lists_solitaire_boards(played: Played) -> None:
    (response,) = played.get("/")
    page = response.text
    assert response.status_code == 200
    section = page.split(f'<h2 id="{SOLITAIRE}">')[1].split("<h2 ")[0]  # (up to the next game's section)
    active, finished = section.split("<h3>Recently finished</h3>")
    live, fresh = played.boards["live"], played.boards["fresh"]
    assert f"({SOLITAIRE}, 2 active boards)" in section
    assert f'<a href="{played.url("live")}">{live.number}</a>' in active
    assert f"<td>{RULES.variants['terrace']}</td><td>7</td><td>{len(live.moves)}</td>" in active
    assert f'<a href="{played.url("fresh")}">{fresh.number}</a>' in active and f"<td>{RULES.variants['redheads']}</td>" in active
    assert "<th>Moves</th>" in finished
    for name in ("ann4", "ben4", "cy4", "dan4", "ann4again"):
        assert f'<a href="{played.url(name)}">{played.boards[name].number}</a>' in finished
    assert "resigned, score 4/104 in 25 moves" in finished
    # the Terrace boards are still listed, with whose turn it is
    assert '<h2 id="terrace">' in page and "<th>To move</th>" in page


def test_standings_rank_players_on_shared_deals(played: Played) -> None:
    whole, one, terrace, unknown = played.get("/standings", f"/standings/{SOLITAIRE}", "/standings/terrace", "/standings/chess")
    assert unknown.status_code == 404 and "chess" in unknown.text
    assert terrace.status_code == 200 and "Elo ratings" in terrace.text and f'id="{SOLITAIRE}"' not in terrace.text
    order = ["ann", "ben", "cy", "dan"]
    points = {"ann": "3", "ben": "2", "cy": "0.5", "dan": "0.5"}
    for page in (whole.text, one.text):
        section = page.split(f'<h2 id="{SOLITAIRE}">')[1].split("</section>")[0]
        rows = re.findall(r'<tr><td>(\d+)</td><td><a href="/players/(\w+)">\w+</a></td><td>([\d.]+)</td>', section)
        assert [(u, p) for _, u, p in rows] == [(u, points[u]) for u in order], rows
        assert "5 ended games on 1 deal." in section  # ann4, ben4, cy4, dan4, ann4again; not the boards in play
    # the whole page shows the Elo tables too; the solitaire's own page its shared deals
    assert '<h2 id="terrace">' in whole.text and "Latest shared deals" not in whole.text
    deals = one.text.split("Latest shared deals")[1]
    assert f"<h4>Deal 4 ({RULES.variants['terrace']})</h4>" in deals
    rows = re.findall(r'<a href="/players/(\w+)">\w+</a></td><td>(\d+)/104</td>\s*<td>(\d+)</td><td><a href="([^"]+)">', deals)
    assert rows == [
        ("ann", "4", "25", played.url("ann4")),
        ("ben", "3", "12", played.url("ben4")),
        ("cy", "2", "3", played.url("cy4")),
        ("dan", "2", "3", played.url("dan4")),
    ]


def test_standings_follow_a_newly_ended_game(played_anew: Played) -> None:
    played = played_anew
    before, before_all = (r.text for r in played.get(f"/standings/{SOLITAIRE}", "/standings"))
    board = played.new("dan4better", "dan", "terrace", 4)
    played.play(board, line("terrace", 4, 25)[:24])  # as many cards as ann in one move fewer
    played.resign(board)
    after, after_all = (r.text for r in played.get(f"/standings/{SOLITAIRE}", "/standings"))
    assert before != after and before_all != after_all
    first = after.split("<tbody>")[1].split("</tr>")[0]
    assert 'href="/players/dan"' in first and "<td>3</td>" in first


def test_player_pages_and_feeds_list_solitaire_boards(played: Played) -> None:
    ann, feed, cy = played.get("/players/ann", "/players/ann/feed.atom", "/players/cy")
    assert ann.status_code == 200 and cy.status_code == 200
    section = ann.text.split(f'<h2 id="{SOLITAIRE}">')[1]
    for name in ("ann4", "ann4again", "live"):
        assert f'<a href="{played.url(name)}">{played.boards[name].number}</a>' in section
    assert "resigned, score 4/104 in 25 moves" in section and "in play" in section
    assert f'<a href="/standings/{SOLITAIRE}">' in section
    # cy has played nothing but the solitaire: no empty board-game table
    assert "<h2>Games</h2>" not in cy.text and "No games." not in cy.text
    root = ET.fromstring(feed.content)
    titles = [e.findtext(f"{ATOM}title", "") for e in root.findall(f"{ATOM}entry")]
    assert len(titles) == 3 and all(f"board {played.boards[n].number}: ann" in " ".join(titles) for n in ("ann4", "live"))
    assert any("deal 7 (playing)" in t for t in titles)


def test_help_has_the_solitaire_rules(played: Played) -> None:
    (page,) = played.get("/help")
    assert f'<h2 id="{GAME_TYPES[SOLITAIRE].title.lower()}">' in page.text
    assert html.escape(RULES.help_text().splitlines()[0]) in page.text


def test_every_page_keeps_addresses_private_and_has_security_headers(played: Played) -> None:
    paths = ["/", "/standings", f"/standings/{SOLITAIRE}", "/help"]
    for name, board in played.boards.items():
        url = played.url(name)
        paths += [url, f"{url}?ply=0", f"{url}?ply={len(board.moves)}", f"{url}.txt", f"{url}/feed.atom"]
    for userid in (*PLAYERS, *USERS):
        paths += [f"/players/{userid}", f"/players/{userid}/feed.atom"]
    for path, response in zip(paths, played.get(*paths), strict=True):
        assert response.status_code == 200, (path, response.text[:500])
        assert response.headers["x-content-type-options"] == "nosniff"
        assert "unsafe-inline" not in response.headers["content-security-policy"]
        body = response.text
        assert "@" not in body, (path, body[max(0, body.find("@") - 80) : body.find("@") + 80])
        assert "argon2" not in body and "scrypt$" not in body and "pw-" not in body, path


def test_the_web_names_no_game() -> None:
    """The pages dispatch on a game type's family; a third game is added in gametypes/
    and games/ only."""
    names = [n for n in GAME_TYPES if n not in ("terrace",)]  # the default type's redirect names terrace
    sources = [*(ROOT / "pbmserv_terrace" / "web").glob("*.py"), *(ROOT / "templates" / "web").glob("*")]
    for path in sources:
        text = path.read_text().lower()
        for name in names:
            assert re.search(rf"\b{name}\b", text) is None, (path.name, name)


def test_default_game_stays_terrace_for_bare_numbers(played: Played) -> None:
    """``/boards/N`` is the default game type's board, never a solitaire's."""
    (response,) = played.get(f"/boards/{played.boards['live'].number}")
    assert response.status_code == 308 and response.headers["location"].startswith("/boards/terrace/")


def test_arrow_keys_step_a_solitaire_in_chromium(played: Played) -> None:
    """The replay script works on a solitaire's page as on a board's: → steps the moves,
    the URL and the table follow, nothing is blocked by the Content-Security-Policy."""
    import shutil
    import time

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from pbmserv_terrace.testing.postgres import free_port
    from pbmserv_terrace.web import serve_web

    browser, driver_path = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    assert browser and driver_path, "Chromium and chromedriver are required (apt-get install chromium chromium-driver)"
    board = played.boards["ann4"]
    port = free_port()
    base = f"http://127.0.0.1:{port}{played.url('ann4')}"

    def drive() -> tuple[str, str, str, list[Any]]:
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,1400"):
            options.add_argument(arg)
        driver = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=options)
        try:
            driver.get(f"{base}?ply=0")
            wait = WebDriverWait(driver, 20)
            wait.until(lambda d: d.find_element(By.ID, "replay").get_attribute("data-ply") == "0")
            for _ in range(3):
                driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)
                time.sleep(0.15)
            wait.until(lambda d: d.current_url.endswith("?ply=3") and d.find_element(By.ID, "ply").text == "3")
            table = driver.execute_script("return document.querySelector('#table pre').textContent")
            return driver.current_url, table, driver.find_element(By.ID, "plyinfo").text, driver.get_log("browser")
        finally:
            driver.quit()

    async def serve_and_drive() -> tuple[str, str, str, list[Any]]:
        stop = asyncio.Event()
        app = create_app(played.h.db, server_name="Browser Test")
        serving = asyncio.create_task(serve_web(app, "127.0.0.1", port, stop=stop))
        try:
            await asyncio.sleep(0.2)
            return await asyncio.get_running_loop().run_in_executor(None, drive)
        finally:
            stop.set()
            await serving

    url, table, info, log = played.h.loop.run_until_complete(serve_and_drive())
    assert url == f"{base}?ply=3"
    assert table == table_after(board, 3)
    assert info == f"After move 3 of {len(board.moves)}: {board.moves[2]}"
    assert [e for e in log if e["level"] == "SEVERE"] == []


def test_a_move_the_rules_refuse_does_not_break_the_page(played_anew: Played) -> None:
    """A stored move the rules no longer accept (a rules fix, a hand-edited row): the
    pages answer, the replay stops at the last table it can reach."""
    played = played_anew
    board = played.boards["live"]

    async def corrupt() -> None:
        async with UnitOfWork(played.h.db) as uow:
            game = await uow.games.get(SOLITAIRE, board.number)
            assert game is not None
            (await uow.moves.of_game(game.id))[2].move = "t9-f8"
            await uow.commit()

    played.h.loop.run_until_complete(corrupt())
    url = played.url("live")
    page, record, feed, early = played.get(url, url + ".txt", url + "/feed.atom", url + "?ply=2")
    assert page.status_code == record.status_code == feed.status_code == early.status_code == 200
    assert pre_of(page.text) == table_after(board, 2) and ">t9-f8</a></li>" in page.text
    assert f"{board.moves[-1]} (cannot be replayed)</p>" in page.text
    assert pre_of(early.text) == table_after(board, 2)
