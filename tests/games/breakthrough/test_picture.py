"""The pictures: the SVG is well-formed, standalone XML naming every pawn; the PNG
opens with Pillow at its size; the last move is marked."""

from __future__ import annotations

import io
import random
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from pbmserv_terrace.games.breakthrough import board_png, board_svg, parse_move, picture_alt, square_name, start
from pbmserv_terrace.games.breakthrough.picture import LAST_DARK, LAST_LIGHT, SIZE, square_box

from .helpers import random_game

SVG = "{http://www.w3.org/2000/svg}"


def played(setup: str, *moves: str):
    pos = start(setup)
    for text in moves:
        pos = pos.play(parse_move(pos, text))
    return pos


@pytest.mark.parametrize("setup", ["8x8", "6x6"])
def test_the_svg_is_standalone_xml_naming_every_pawn(setup: str) -> None:
    pos = played(setup, "b2-c3", "e5-e4" if setup == "6x6" else "e7-e6")
    text = board_svg(pos, last="e5-e4" if setup == "6x6" else "e7-e6")
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg" and root.get("width") == root.get("height") == str(SIZE)
    pieces = [g for g in root.iter(f"{SVG}g") if g.get("class") == "piece"]
    assert len(pieces) == pos.material()
    titles = sorted(g.find(f"{SVG}title").text for g in pieces)
    assert "White pawn c3" in titles and "White pawn b2" not in titles
    assert ("Black pawn e4" if setup == "6x6" else "Black pawn e6") in titles and (
        "Black pawn e5" if setup == "6x6" else "Black pawn e7"
    ) not in titles
    assert sum(t.startswith("White pawn ") for t in titles) == bin(pos.white).count("1")
    marked = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "last"]
    assert len(marked) == 2
    lowered = text.lower()
    for outside in ("<script", "href", "url(", "@import", "<style", "<image", "<foreignobject"):
        assert outside not in lowered
    assert root.find(f"{SVG}title").text == picture_alt(pos)
    # each pawn and each square carries its square's name (the web page marks moves by it)
    assert all(g.find(f"{SVG}title").text.endswith(" " + g.get("data-square")) for g in pieces)
    n = pos.n
    named = {r.get("data-square"): r for r in root.iter(f"{SVG}rect") if r.get("data-square")}
    assert len(named) == n * n
    for sq in range(n * n):
        x0, y0, x1, _ = square_box(sq, n)
        rect = named[square_name(sq, n)]
        assert (float(rect.get("x")), float(rect.get("y")), float(rect.get("width"))) == pytest.approx((x0, y0, x1 - x0), abs=0.01)


def test_the_svg_without_a_last_move_marks_nothing() -> None:
    root = ET.fromstring(board_svg(start()))
    assert not [r for r in root.iter(f"{SVG}rect") if r.get("class") == "last"]


@pytest.mark.parametrize("setup", ["8x8", "6x6"])
def test_the_png_opens_and_has_its_size(setup: str) -> None:
    pos = random_game(start(setup), random.Random(5), 17)[-1]
    data = board_png(pos)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    im = Image.open(io.BytesIO(data))
    im.load()
    assert im.size == (SIZE, SIZE) == (480, 480)
    assert Image.open(io.BytesIO(board_png(pos, size=240))).size == (240, 240)
    assert board_png(pos) == data  # the same position, the same bytes


def test_the_png_marks_the_last_move() -> None:
    pos = played("8x8", "b2-c3")
    im = Image.open(io.BytesIO(board_png(pos, last="b2-c3"))).convert("RGB")
    plain = Image.open(io.BytesIO(board_png(pos))).convert("RGB")
    yellow = {tuple(bytes.fromhex(c[1:])) for c in (LAST_LIGHT, LAST_DARK)}

    def corner(image: Image.Image, sq: int) -> tuple[int, int, int]:
        left, top, _, _ = square_box(sq, 8)
        return image.getpixel((round(left) + 3, round(top) + 3))

    def near(a, b) -> bool:
        return max(abs(x - y) for x, y in zip(a, b, strict=True)) <= 12

    b2, c3 = 9, 18
    assert any(near(corner(im, b2), y) for y in yellow) and any(near(corner(im, c3), y) for y in yellow)
    assert not any(near(corner(plain, b2), y) for y in yellow)


def test_the_alt_text() -> None:
    alt = picture_alt(played("6x6", "a2-a3"))
    assert alt.startswith("Breakthrough 6x6, Black to move. White: a1 b1 c1 d1 e1 f1 b2")
    assert "a3" in alt and "Black: a5" in alt
