"""The archive served by uvicorn (serve_web) on 127.0.0.1, driven by a real Chromium:
the → key steps the replay, the URL follows, the picture is drawn.  Chromium and
chromedriver are required: without them this test fails, it never skips."""

from __future__ import annotations

import asyncio
import io
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image, ImageStat

from pbmserv_terrace.store import Database
from pbmserv_terrace.testing.postgres import free_port
from pbmserv_terrace.web import create_app, serve_web

from .fill import Filled, fill


class Served:
    """serve_web in a thread of its own (its own event loop), stopped by an Event."""

    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.url = f"sqlite+aiosqlite:///{tmp / 'web.db'}"
        self.ready = threading.Event()
        self.filled: Filled | None = None
        self.loop = asyncio.new_event_loop()
        self.stop: asyncio.Event | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            db = Database(self.url)
            await db.migrate()
            self.filled = await fill(db)
            self.stop = asyncio.Event()
            serving = asyncio.create_task(
                serve_web(create_app(db, server_name="Browser Test"), "127.0.0.1", self.port, stop=self.stop)
            )
            await asyncio.sleep(0.2)
            self.ready.set()
            await serving
            await db.close()

        try:
            self.loop.run_until_complete(main())
        except BaseException as exc:  # reported by the test
            self.error = exc
            self.ready.set()

    def __enter__(self) -> Served:
        self.thread.start()
        assert self.ready.wait(60), "the web server did not start"
        assert self.error is None, self.error
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)
        assert not self.thread.is_alive(), "serve_web did not stop when asked"
        assert self.error is None, self.error


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with Served(tmp_path) as s:
        yield s


def test_serve_web_answers_on_tcp_and_stops(served: Served) -> None:
    response = httpx.get(f"http://127.0.0.1:{served.port}/healthz", timeout=10)
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert "content-security-policy" in response.headers and "server" not in response.headers


def test_port_in_use_raises_instead_of_exiting(served: Served) -> None:
    async def again() -> None:
        db = Database(served.url)
        try:
            await serve_web(create_app(db, server_name="x"), "127.0.0.1", served.port, stop=asyncio.Event())
        finally:
            await db.close()

    with pytest.raises(OSError):
        asyncio.run(again())


def chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.fail(
            "Chromium and chromedriver are required for the browser test (apt-get install chromium chromium-driver); "
            f"found chromium={browser!r}, chromedriver={driver!r}"
        )
    return browser, driver


def test_arrow_keys_step_the_replay_in_chromium(served: Served, tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser, driver_path = chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,1600"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=options)
    try:
        assert served.filled is not None
        game_type, number = served.filled.boards["four"]
        plies = len(served.filled.plies["four"])
        base = f"http://127.0.0.1:{served.port}/boards/{game_type}/{number}"
        driver.get(f"{base}?ply=0")
        wait = WebDriverWait(driver, 20)
        wait.until(lambda d: d.find_element(By.ID, "replay").get_attribute("data-ply") == "0")
        body = driver.find_element(By.TAG_NAME, "body")
        for _ in range(3):
            body.send_keys(Keys.ARROW_RIGHT)
            time.sleep(0.15)
        wait.until(lambda d: d.current_url.endswith("?ply=3") and d.find_element(By.ID, "ply").text == "3")
        assert driver.current_url == f"{base}?ply=3"
        assert driver.find_element(By.ID, "picture").get_attribute("data-ply") == "3"
        ascii_text = driver.execute_script("return document.querySelector('#ascii pre').textContent")
        from pbmserv_terrace.games.terrace import parse_tpn, render_board

        assert ascii_text == render_board(parse_tpn(served.filled.positions["four"][3], 8))
        assert f"After ply 3 of {plies}" in driver.find_element(By.ID, "plyinfo").text
        pieces = driver.find_elements(By.CSS_SELECTOR, "#picture svg g.piece")
        assert len(pieces) == sum(1 for c in served.filled.positions["four"][3].split()[0] if c.isalpha())
        # no script was blocked by the Content-Security-Policy, nothing failed
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
        png = driver.get_screenshot_as_png()
        (tmp_path / "board.png").write_bytes(png)
        image = Image.open(io.BytesIO(png)).convert("RGB")
        extrema = ImageStat.Stat(image).extrema
        assert any(high - low > 100 for low, high in extrema), "the screenshot is blank"
        colours = image.resize((200, 260)).getcolors(200 * 260) or []
        assert len(colours) > 20, "the screenshot shows almost nothing"
        # ← goes back one ply, End to the last
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
        wait.until(lambda d: d.current_url.endswith("?ply=2") and d.find_element(By.ID, "ply").text == "2")
    finally:
        driver.quit()


NARROW = 390
"""a phone's viewport width in CSS pixels (issue 38 item 5)"""
OVERFLOW = """
const width = document.documentElement.clientWidth;
const out = {page: document.documentElement.scrollWidth - width, tables: []};
for (const table of document.querySelectorAll("main table")) {
  let box = table.parentElement;
  while (box && box !== document.body && !["auto", "scroll"].includes(getComputedStyle(box).overflowX)) {
    box = box.parentElement;
  }
  const scrolls = box && box !== document.body;
  const heads = [];
  if (scrolls) { box.scrollLeft = box.scrollWidth; }
  const right = scrolls ? box.getBoundingClientRect().right : width;
  for (const th of table.querySelectorAll("thead th")) {
    const r = th.getBoundingClientRect();
    // clipped inside its cell, or (scrolled to the end) still past the visible right edge
    if (th.scrollWidth > th.clientWidth + 1 || (scrolls && r.right > right + 1)) { heads.push(th.textContent); }
  }
  out.tables.push({scrolls: scrolls, wide: table.getBoundingClientRect().width > width, cut: heads,
                   header: table.querySelector("thead") ? table.querySelector("thead").textContent : ""});
  if (scrolls) { box.scrollLeft = 0; }
}
return out;
"""


def test_tables_scroll_sideways_at_390_px_and_no_header_is_cut_off(served: Served) -> None:
    """Issue 38 item 5: on a phone (390 CSS px) the page itself never scrolls sideways;
    every table sits in a box that scrolls horizontally, and scrolled to its end each
    header (Finished (UTC) included) is whole and in view."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    browser, driver_path = chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=options)
    try:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride", {"width": NARROW, "height": 844, "deviceScaleFactor": 1, "mobile": True}
        )
        assert served.filled is not None
        game_type, number = served.filled.boards["four"]
        root = f"http://127.0.0.1:{served.port}"
        pages = ["/", "/standings", "/players/alice", f"/boards/{game_type}/{number}", "/help"]
        seen_wide = False
        for path in pages:
            driver.get(root + path)
            assert driver.execute_script("return document.documentElement.clientWidth") == NARROW
            found = driver.execute_script(OVERFLOW)
            assert found["page"] <= 0, (path, "the page scrolls sideways", found)
            for table in found["tables"]:
                assert table["scrolls"], (path, "a table outside a scrolling box", table["header"])
                assert table["cut"] == [], (path, "headers cut off", table)
                seen_wide = seen_wide or table["wide"]
        assert seen_wide, "no table was wider than the screen: the test shows nothing"
    finally:
        driver.quit()


MARKED = """
const marks = document.querySelector('#picture svg g.legal-marks');
if (!marks) { return null; }
const names = (sel) => Array.from(marks.querySelectorAll(sel)).map((g) => g.getAttribute('data-legal')).sort();
return {from: names('g.legal-from'), to: names('g.legal-to'), takes: names('g.legal-take'),
        text: document.getElementById('legal').textContent};
"""
SHOWN = "return document.getElementById('picture').getAttribute('data-ply')"
"""the ply the picture shows (read in one script: replay.js may swap the block between two calls)"""
HINTED = "const p = document.getElementById('legal'); return !!p && !p.hidden && p.textContent.length > 0"


def test_tapping_a_piece_marks_exactly_its_moves_in_chromium(served: Served) -> None:
    """Issue 39: on a board page, tapping a piece of the side to move frames exactly the
    squares the rules let it go to in the position shown, says them in words, and a
    second tap clears; after a replay step (→, the block swapped in place) the marks
    are those of the new position."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from pbmserv_terrace.gametypes import board_rules

    browser, driver_path = chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,1600"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=options)
    assert served.filled is not None
    game_type, number = served.filled.boards["live"]
    rules = board_rules(game_type)
    positions = [rules.load(t) for t in served.filled.positions["live"]]

    def expected(ply: int) -> dict[str, tuple[list[str], list[str]]]:
        """The rules' moves of the position after ``ply``, by the piece's square."""
        return {
            piece.rsplit(" ", 1)[1]: (sorted(t for t, _, c in targets if not c), sorted(t for t, _, c in targets if c))
            for piece, targets in rules.move_choices(positions[ply])
        }

    def tap_and_check(wait: WebDriverWait, ply: int) -> None:
        moves = expected(ply)
        assert moves, ply
        data = driver.execute_script("return JSON.parse(document.getElementById('legal-data').textContent)")
        assert {sq: (sorted(e["to"]), sorted(e["takes"])) for sq, e in data.items()} == moves
        # the piece with the most moves (a capture's frame too when one can capture)
        square = max(moves, key=lambda sq: (bool(moves[sq][1]), len(moves[sq][0]) + len(moves[sq][1]), sq))
        driver.find_element(By.CSS_SELECTOR, f'#picture svg g.piece[data-square="{square}"]').click()
        wait.until(lambda d: d.execute_script(MARKED) is not None)
        marked = driver.execute_script(MARKED)
        assert marked["from"] == [square]
        assert (marked["to"], marked["takes"]) == moves[square], (ply, square)
        label = data[square]["piece"]
        assert marked["text"].startswith(f"{label} → ")
        for target in moves[square][0]:
            assert target in marked["text"]
        for target in moves[square][1]:
            assert f"×{target}" in marked["text"]
        # a second tap clears
        driver.find_element(By.CSS_SELECTOR, f'#picture svg g.piece[data-square="{square}"]').click()
        wait.until(lambda d: d.execute_script(MARKED) is None)
        # a piece of an army not to move marks nothing and says so
        pieces = driver.execute_script(
            "return Array.from(document.querySelectorAll('#picture svg g.piece[data-square]')).map(g => g.dataset.square)"
        )
        other = next(sq for sq in pieces if sq not in moves)
        driver.find_element(By.CSS_SELECTOR, f'#picture svg g.piece[data-square="{other}"]').click()
        wait.until(lambda d: "cannot move" in d.execute_script("return document.getElementById('legal').textContent"))
        assert driver.execute_script(MARKED) is None

    try:
        base = f"http://127.0.0.1:{served.port}/boards/{game_type}/{number}"
        driver.get(f"{base}?ply=4")
        wait = WebDriverWait(driver, 20)
        wait.until(lambda d: d.execute_script(HINTED))
        tap_and_check(wait, 4)
        # a replay step: the block is swapped in place; the new position's moves are marked
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)
        wait.until(lambda d: d.current_url.endswith("?ply=5") and d.execute_script(SHOWN) == "5")
        wait.until(lambda d: d.execute_script(HINTED))
        tap_and_check(wait, 5)
        # a piece selected, then a step: the new picture starts without marks
        square = next(iter(expected(5)))
        driver.find_element(By.CSS_SELECTOR, f'#picture svg g.piece[data-square="{square}"]').click()
        wait.until(lambda d: d.execute_script(MARKED) is not None)
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
        wait.until(lambda d: d.execute_script(SHOWN) == "4")
        assert driver.execute_script(MARKED) is None
        # by keyboard: a piece that can move takes the focus; Enter shows its moves, Escape clears
        square = next(iter(expected(4)))
        driver.execute_script(f"document.querySelector('#picture svg g.piece[data-square=\"{square}\"]').focus()")
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        wait.until(lambda d: (d.execute_script(MARKED) or {}).get("from") == [square])
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: d.execute_script(MARKED) is None)
        # the Content-Security-Policy blocked nothing and no script failed
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
    finally:
        driver.quit()
