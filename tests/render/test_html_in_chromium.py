"""A real browser shows the board mail's HTML part with its picture (issue 16).

The HTML is written with the ``cid:`` reference replaced by the PNG's file URL
(what a mail client does with the inline part), Debian's headless chromium takes
a screenshot, and the screenshot must show the board: the height shades and the
army colours, in a block the picture's declared size.  Without chromium the test
fails (install the ``chromium`` package); it is never skipped.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from pbmserv_terrace.games.terrace.picture import ARMY_FILL, WIDTH, board_png, height_shades, picture_alt
from pbmserv_terrace.render.html import board_html
from tests.games.terrace.cases import HOSTILE, game_view, golden_cases


def near(pixel: tuple[int, ...], colour: str, tolerance: int = 6) -> bool:
    target = bytes.fromhex(colour[1:7])
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], target, strict=True))


def test_board_mail_html_shows_the_picture_in_chromium(tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed: `apt-get install chromium` (Debian) to run the browser test")
    case = golden_cases()["example-4p"]
    png = tmp_path / "board.png"
    png.write_bytes(board_png(case.pos, case.last_move, captured=case.captured, threatened=case.threatened))
    page = board_html(game_view(case), headline="moved", comments=HOSTILE, cid="board@x", alt=picture_alt(case.pos))
    assert 'src="cid:board@x"' in page
    html_file = tmp_path / "mail.html"
    html_file.write_text(page.replace('src="cid:board@x"', f'src="{png.as_uri()}"'), encoding="utf-8")
    shot = tmp_path / "shot.png"
    result = subprocess.run(
        [
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=900,1400",
            html_file.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists(), f"chromium made no screenshot (exit {result.returncode}): {result.stderr[-2000:]}"
    im = Image.open(shot).convert("RGB")

    # Where the board is: every pixel showing one of the eight height shades.
    shades = height_shades(8)
    hits: dict[str, list[tuple[int, int]]] = {s: [] for s in shades}
    armies: dict[int, int] = dict.fromkeys(ARMY_FILL, 0)
    small = im.resize((im.width // 2, im.height // 2), Image.Resampling.NEAREST)
    for y in range(small.height):
        for x in range(small.width):
            pixel = small.getpixel((x, y))
            assert isinstance(pixel, tuple)
            for shade in shades:
                if near(pixel, shade):
                    hits[shade].append((x * 2, y * 2))
                    break
            else:
                for army, colour in ARMY_FILL.items():
                    if near(pixel, colour, 10):
                        armies[army] += 1
    shown = [s for s, points in hits.items() if len(points) >= 40]
    assert len(shown) >= 7, f"the board's height shades are not on the screen ({len(shown)} of 8 seen): was the image loaded?"
    assert all(count >= 30 for count in armies.values()), f"army colours on screen: {armies}"
    # Grey anti-aliased text elsewhere can match a shade here and there: measure the
    # block between the 1st and 99th percentile of the matching pixels.
    xs = sorted(x for points in hits.values() for x, _ in points)
    ys = sorted(y for points in hits.values() for _, y in points)
    lo, hi = len(xs) // 100, len(xs) - 1 - len(xs) // 100
    width, height = xs[hi] - xs[lo], ys[hi] - ys[lo]
    assert 0.8 * WIDTH <= width <= WIDTH and 0.8 * WIDTH <= height <= WIDTH, (
        f"board drawn {width}x{height}, expected about {WIDTH}"
    )
