"""Board pictures in the mails the server really sends (issue 16): the MIME tree,
the text part unchanged, the PNG within its limits, the HTML escaped, the choice
to switch pictures off, and the mail shown by a real browser."""

from __future__ import annotations

import io
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from pbmserv_terrace.games.terrace import parse_tpn
from pbmserv_terrace.games.terrace.picture import ARMY_FILL, height_shades

from .harness import Harness, Reply, mine


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben", "cat")
    yield harness
    harness.close()


def tree(reply: Reply) -> list[str]:
    assert reply.message is not None
    return [part.get_content_type() for part in reply.message.walk()]


def png_of(reply: Reply) -> bytes:
    assert reply.message is not None
    part = next(p for p in reply.message.walk() if p.get_content_type() == "image/png")
    data = part.get_payload(decode=True)
    assert isinstance(data, bytes)
    return data


def test_board_mails_are_text_then_html_with_the_picture(h):
    replies = h.send("ann", "terrace challenge ann pw-ann ben", "Good luck <b>ben</b> <script>alert(1)</script>")
    ann = mine(replies, "ann")
    assert tree(ann) == ["multipart/alternative", "text/plain", "multipart/related", "text/html", "image/png"]
    assert ann.message is not None
    png_part = next(p for p in ann.message.walk() if p.get_content_type() == "image/png")
    cid = png_part["Content-ID"].strip("<>")
    assert f'src="cid:{cid}"' in ann.html and 'alt="Terrace 8x8, army 1 (t) to move.' in ann.html
    # the HTML says what the text says, players' words escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in ann.html and "<script>" not in ann.html
    assert "Reply to this mail with your move" in ann.html
    image = Image.open(io.BytesIO(png_of(ann)))
    assert image.format == "PNG" and image.width >= 560 and len(png_of(ann)) <= 25_000
    # errors, help and tables stay plain text
    for mail in (
        h.send("ben", "terrace move 101 ben pw-ben d7-d6")[0],
        h.send("ben", "help")[0],
        h.send("ben", "terrace games")[0],
    ):
        assert tree(mail) == ["text/plain"]


def test_the_text_part_is_exactly_the_plain_mail_and_pictures_can_be_switched_off(h):
    h.send("ben", "change pictures ben pw-ben off")
    replies = h.send("ann", "terrace challenge ann pw-ann ben")
    ann, ben = mine(replies, "ann"), mine(replies, "ben")
    assert tree(ben) == ["text/plain"] and tree(ann)[0] == "multipart/alternative"
    strip = lambda r: r.body.rsplit("\n\n", 2)[0]  # noqa: E731  (each player's own reply line differs)
    assert strip(ann) == strip(ben)
    on = h.send("ben", "change pictures ben pw-ben on")
    assert on[0].subject.endswith("pictures on") and "as a picture" in on[0].body
    assert tree(mine(h.move(101, "ann", "d2-e3"), "ben"))[0] == "multipart/alternative"
    bad = h.send("ben", "change pictures ben pw-ben maybe")
    assert "on or off" in bad[0].body


def test_a_full_move_table_mail_stays_under_60_kb_and_the_picture_follows_the_moves(h):
    h.send("ann", "terrace challenge ann pw-ann ben")
    rng = random.Random(3)
    last: list[Reply] = []
    for _ in range(60):
        from .test_reply_keys import board_tpn

        pos = parse_tpn(board_tpn(h))
        if pos.outcome() is not None:
            break
        mover = "ann" if pos.to_move == 1 else "ben"
        move = rng.choice(pos.legal_moves())
        last = h.move(101, mover, f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}")
        assert h.last is not None and h.last.status == "ok"
    mail = mine(last, "ann")
    assert mail.message is not None
    assert len(mail.message.as_bytes()) <= 60_000
    show = h.send("ann", "terrace show 101")[0]  # the whole move table
    assert tree(show)[0] == "multipart/alternative" and "Summary of Terrace Board 101" in show.html
    assert show.message is not None and len(show.message.as_bytes()) <= 60_000


def test_the_mail_as_a_browser_shows_it(h, tmp_path: Path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: `apt-get install chromium` (Debian) to run the browser test")
    h.send("ann", "terrace challenge ann pw-ann ben cat")
    ben = mine(h.move(101, "ann", "b1-b2", "<img src=x onerror=alert(1)> my move"), "ben")
    assert ben.message is not None
    png = tmp_path / "board.png"
    png.write_bytes(png_of(ben))
    cid = next(p for p in ben.message.walk() if p.get_content_type() == "image/png")["Content-ID"].strip("<>")
    page = tmp_path / "mail.html"
    page.write_text(ben.html.replace(f"cid:{cid}", png.as_uri()), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=900,1600", page.as_uri()],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert shot.exists(), "chromium made no screenshot"
    im = Image.open(shot).convert("RGB").resize((450, 800), Image.Resampling.NEAREST)
    seen_shades, seen_armies = set(), set()
    for y in range(im.height):
        for x in range(im.width):
            r, g, b = im.getpixel((x, y))  # type: ignore[misc]
            for shade in height_shades(8):
                if all(abs(a - c) <= 6 for a, c in zip((r, g, b), bytes.fromhex(shade[1:]), strict=True)):
                    seen_shades.add(shade)
            for army, colour in ARMY_FILL.items():
                if all(abs(a - c) <= 10 for a, c in zip((r, g, b), bytes.fromhex(colour[1:7]), strict=True)):
                    seen_armies.add(army)
    assert len(seen_shades) >= 7, f"the picture is not on the screen ({len(seen_shades)} height shades seen)"
    assert seen_armies >= {1, 2, 3}, f"army colours seen: {seen_armies}"


def test_board_mails_link_the_web_archive_when_it_has_a_public_address():
    h = Harness()
    try:
        h.signup("ann", "ben")
        h.config.web.listen = "off"  # no public address and no archive on loopback: no link
        h.service.config = h.config
        plain = h.send("ann", "terrace challenge ann pw-ann ben")
        assert "on the web" not in plain[0].body
        h.config.web.public_url = "https://terrace.club.test"
        h.service.config = h.config
        replies = h.move(101, "ann", "d2-e3")
        for r in replies:
            assert "This board on the web: https://terrace.club.test/boards/terrace/101" in r.body
        assert "https://terrace.club.test/boards/terrace/101" in h.send("ben", "terrace show 101")[0].body
    finally:
        h.close()
