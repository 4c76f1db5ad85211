"""Issue 39 part 4: a whole game through the real mail path and a real Chromium.

``serve`` runs as an operator runs it (IMAP from Dovecot, SMTP to the relay, the
web archive beside it on 127.0.0.1), on SQLite and on PostgreSQL.  ann plays only
on the play page: she opens the ``/play/KEY`` link of each of her board mails in
Chromium, taps the piece, taps its target and confirms.  ben plays only by the
move links of his board mails' HTML part: each move is the mail a client composes
from the ``mailto:`` link (its To, Subject and body), sent through the relay.
The game (Terrace6x6, five plies, found by search with the rules: no piece takes
one of its own army) ends with ann taking ben's T: a win, checked in both
players' last mails.  Chromium and chromedriver are required (it never skips)."""

from __future__ import annotations

import html
import re
import time
from email.message import Message
from email.utils import make_msgid
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from pbmserv_terrace.testing.postgres import free_port

from ..mailservers import Players, addr, body
from ..web.test_browser import chromium

GAME = ["e2-e3", "f5-f4", "e3-e4", "f6-f5", "e4-f5"]
"""ann (to move first), ben, ann, ben, ann: ann's e4-f5 takes ben's T"""
_PLAY_HREF = re.compile(r'href="(http://127\.0\.0\.1:\d+/play/[a-z2-7]{31})"')
_MAILTO = re.compile(r'href="(mailto:[^"]{1,2000})"')
NARROW = 390


def html_part(msg: Message) -> str:
    part = next((p for p in msg.walk() if p.get_content_type() == "text/html"), None)
    payload = part.get_payload(decode=True) if part is not None else None
    return payload.decode("utf-8") if isinstance(payload, bytes) else ""


def play_link(msg: Message) -> str:
    """The play page's link of a board mail (the HTML part's, which the text part repeats)."""
    found = _PLAY_HREF.findall(html_part(msg))
    assert len(found) == 1, html_part(msg)[-2000:]
    assert f"Play your move on the web: {found[0]}" in body(msg)
    return found[0]


def send_from_link(players: Players, name: str, msg: Message, move: str) -> None:
    """What a mail client sends when ``name`` taps the move link of ``move`` in ``msg``:
    a new mail to the link's address with its Subject and its body."""
    links = [html.unescape(h) for h in _MAILTO.findall(html_part(msg))]
    chosen = []
    for url in links:
        parts = urlsplit(url)
        query = parse_qs(parts.query, strict_parsing=True)
        if query["body"][0] == move:
            chosen.append((unquote(parts.path), query["subject"][0], query["body"][0]))
    assert len(chosen) == 1, (move, links[:5])
    to, subject, text = chosen[0]
    assert to.startswith("pbmserv+") and to.endswith("@terrace.test"), to
    data = (
        f"From: {name.capitalize()} <{addr(name)}>\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Message-ID: {make_msgid(domain='players.test')}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
    ).encode()
    players.relay.send(addr(name), to, data)


@pytest.mark.slow
def test_a_game_by_the_play_page_and_by_move_links(serve_factory, relay, players: Players, db_url: str, tmp_path: Path):
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.chrome.service import Service as DriverService
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    port = free_port()
    serve = serve_factory(relay, db_url.replace("sqlite+aiosqlite", "sqlite"), f'\n[web]\nlisten = "127.0.0.1:{port}"\n')
    serve.start()
    for name in ("ann", "ben"):
        players.signup(name)
    players.send("ann", "terrace6x6 challenge ann pw-ann ben")
    last = {name: players.wait(name)[0] for name in ("ann", "ben")}
    assert "/play/" not in html_part(last["ben"])  # only the player to move gets a play link

    browser, driver_path = chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=DriverService(executable_path=driver_path), options=options)
    figures: list[tuple[str, int, float]] = []
    try:
        # a phone's viewport (as tests/web/test_browser.py does): the page must read at 390 px
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride", {"width": NARROW, "height": 844, "deviceScaleFactor": 1, "mobile": True}
        )
        # (a page that is being replaced by the next one leaves stale elements: look again)
        wait = WebDriverWait(driver, 30, ignored_exceptions=(StaleElementReferenceException,))
        # after a form is sent the old page goes and the new one comes: a look in between
        # may meet either, or neither ("Node with given id does not belong to the document")
        arriving = WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,))
        for ply, move in enumerate(GAME, start=1):
            if ply % 2 == 1:  # ann, by the play page of her newest board mail
                url = play_link(last["ann"])
                started = time.perf_counter()
                driver.get(url)
                loaded = time.perf_counter() - started
                radio = driver.find_element(By.CSS_SELECTOR, f'input[type=radio][value="{move}"]')
                group = radio.find_element(By.XPATH, "ancestor::fieldset")
                target = radio.find_element(By.XPATH, "..")
                assert not target.is_displayed()  # tap a piece first
                group.find_element(By.CSS_SELECTOR, "legend.piece").click()
                wait.until(lambda d, g=group, t=target: "chosen" in (g.get_attribute("class") or "") and t.is_displayed())
                target.click()
                go = driver.find_element(By.ID, "go")
                wait.until(lambda d, b=go, m=move: b.is_enabled() and b.text == f"Confirm: play {m}")
                figures.append(("page", len(driver.page_source.encode()), loaded))
                assert driver.execute_script("return document.documentElement.clientWidth") == NARROW
                width = driver.execute_script("return document.documentElement.scrollWidth")
                assert width <= NARROW, f"the play page scrolls sideways at {NARROW} px ({width})"
                started = time.perf_counter()
                go.click()
                arriving.until(expected_conditions.staleness_of(go))
                arriving.until(lambda d: "is played on board" in d.find_element(By.ID, "says").text)
                figures.append(("move", len(driver.page_source.encode()), time.perf_counter() - started))
                assert "Board mails went to ann and ben." in driver.find_element(By.ID, "mailed").text
                errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
                assert errors == [], errors
            else:  # ben, by the move link of his newest board mail
                assert "/play/" in html_part(last["ben"])
                send_from_link(players, "ben", last["ben"], move)
            last = {name: players.wait(name, timeout=60)[0] for name in ("ann", "ben")}
            for name in ("ann", "ben"):
                headline = body(last[name]).split("\n", 1)[0]  # "Terrace6x6 Board 101: ann played A-e2-e3"
                assert re.search(rf" played \S*{re.escape(move)}\b", headline), (name, headline)
        # the end: ann took ben's T
        for name in ("ann", "ben"):
            text = body(last[name])
            assert "ann wins" in text, text[:800]
            assert "/play/" not in text
        # the last play page, opened again, plays nothing and says why
        driver.get(url)
        wait.until(lambda d: "was played already" in d.find_element(By.ID, "says").text)
        assert not driver.find_elements(By.CSS_SELECTOR, "input[type=radio]")
    finally:
        driver.quit()
        serve.stop()
    biggest = max(figures, key=lambda f: f[1])
    print(f"play page: largest {biggest[1]} bytes; slowest load {max(f[2] for f in figures if f[0] == 'page'):.3f} s; "
          f"slowest move {max(f[2] for f in figures if f[0] == 'move'):.3f} s ({db_url.split(':', 1)[0]})")  # fmt: skip
