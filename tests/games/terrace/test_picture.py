"""Board pictures (issue 16): size, locality, goldens, colours, greyscale, SVG."""

from __future__ import annotations

import io
import itertools
import random
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from PIL import Image, ImageChops

from pbmserv_terrace.games.terrace import VARIANTS, NotationError, Position, format_tpn, parse_tpn, picture, start_position
from pbmserv_terrace.games.terrace.picture import (
    ARMY_FILL,
    board_png,
    board_rgb,
    board_svg,
    height_shades,
    picture_alt,
    square_box,
    to_png,
    write_png,
)
from pbmserv_terrace.games.terrace.pieces import KIND_T, make_piece

from .cases import SETUPS, SIZES, Case, golden_cases, play_out, random_game

PICTURES = Path(__file__).resolve().parents[2] / "data" / "pictures"
MAX_BYTES = 25_000
SVG = "{http://www.w3.org/2000/svg}"


def decode(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im.convert("RGB")


def rgb(colour: str) -> tuple[int, int, int]:
    return tuple(bytes.fromhex(colour[1:7]))  # type: ignore[return-value]


def box(n: int, sq: int, scale: int = 2) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = square_box(n, sq)
    return round(x0 * scale), round(y0 * scale), round(x1 * scale), round(y1 * scale)


def count_colour(im: Image.Image, colour: str, region: tuple[int, int, int, int] | None = None) -> int:
    part = im.crop(region) if region else im
    return dict((c, k) for k, c in part.getcolors(1 << 20) or []).get(rgb(colour), 0)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_start_pictures_decode_are_wide_and_small(variant: str, n: int) -> None:
    data = board_png(start_position(variant, n))
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    im = Image.open(io.BytesIO(data))
    assert im.mode == "P", "a palette PNG"
    assert im.width >= 560 and im.height == im.width
    assert len(data) <= MAX_BYTES, f"{variant} {n}x{n}: {len(data)} bytes"


@pytest.mark.parametrize("name", sorted(golden_cases()))
def test_marked_and_midgame_pictures_are_small(name: str) -> None:
    case = golden_cases()[name]
    data = board_png(case.pos, case.last_move, captured=case.captured, threatened=case.threatened)
    assert len(data) <= MAX_BYTES


def test_scale_sets_the_pixel_size() -> None:
    pos = start_position()
    assert decode(board_png(pos, scale=1)).width * 2 == decode(board_png(pos, scale=2)).width == 2 * picture.WIDTH


@pytest.mark.parametrize(("variant", "n", "seed"), [("long", 8, 1), ("4p", 8, 2), ("long", 6, 3), ("3p", 6, 4)])
def test_a_move_changes_only_its_squares(variant: str, n: int, seed: int) -> None:
    before = play_out(variant, n, 10, seed).pos
    checked = 0
    for move in before.legal_moves()[::3]:
        after = before.play(move)
        changed = [sq for sq in range(n * n) if before.board[sq] != after.board[sq]]
        assert move.frm in changed
        diff = ImageChops.difference(decode(board_png(before)), decode(board_png(after))).convert("L")
        mask = diff.point(lambda v: 255 if v else 0)
        for sq in changed:
            assert mask.crop(box(n, sq)).getbbox() is not None, f"square {sq} should change"
            mask.paste(0, box(n, sq))
        assert mask.getbbox() is None, f"{move}: pixels changed outside {changed}: {mask.getbbox()}"
        checked += 1
    assert checked >= 3


def similar(a: Image.Image, b: Image.Image, tolerance: int = 24, share: float = 0.002) -> tuple[bool, float]:
    """Equal up to ``tolerance`` per channel on all but ``share`` of the pixels."""
    if a.size != b.size:
        return False, 1.0
    diff = ImageChops.difference(a, b).convert("RGB")
    bands = [band.point(lambda v: 255 if v > tolerance else 0) for band in diff.split()]
    off = ImageChops.lighter(ImageChops.lighter(bands[0], bands[1]), bands[2])
    differing = off.histogram()[255] / (a.width * a.height)
    return differing <= share, differing


@pytest.mark.parametrize("name", sorted(golden_cases()))
def test_golden_pictures(name: str) -> None:
    case = golden_cases()[name]
    golden = PICTURES / f"{name}.png"
    assert golden.exists(), f"{golden} is missing: run .venv/bin/python -m tests.render.make_golden"
    got = decode(board_png(case.pos, case.last_move, captured=case.captured, threatened=case.threatened))
    ok, share = similar(got, Image.open(golden).convert("RGB"))
    assert ok, f"{name}: {share:.2%} of the pixels differ from the golden picture"


def test_golden_comparison_notices_a_moved_piece() -> None:
    pos = start_position()
    moved = pos.play(pos.legal_moves()[0])
    assert not similar(decode(board_png(pos)), decode(board_png(moved)))[0]


def differing_pixels(a: bytes, b: bytes) -> int:
    """Pixels whose colour differs between two PNGs of the same size."""
    diff = ImageChops.difference(decode(a), decode(b)).convert("L")
    return diff.point(lambda v: 255 if v else 0).histogram()[255]


def fast_and_reference(case: Case, scale: int = 2) -> tuple[bytes, bytes]:
    """board_png (drawn on the palette) and the RGB picture mapped onto the palette."""
    pos, move, captured, threatened = case.pos, case.last_move, case.captured, case.threatened
    fast = board_png(pos, move, captured=captured, threatened=threatened, scale=scale)
    reference = to_png(board_rgb(pos, move, captured=captured, threatened=threatened, scale=scale), pos.n)
    return fast, reference


def assert_same_picture(case: Case, scale: int, what: str) -> None:
    fast, reference = fast_and_reference(case, scale)
    assert differing_pixels(fast, reference) == 0, f"{what}: {differing_pixels(fast, reference)} pixels differ"
    assert fast == reference, f"{what}: same pixels, different PNG bytes"


@pytest.mark.parametrize("scale", [1, 2])
@pytest.mark.parametrize("name", sorted(golden_cases()))
def test_palette_drawing_equals_rgb_then_quantize_on_goldens(name: str, scale: int) -> None:
    assert_same_picture(golden_cases()[name], scale, name)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("variant", SETUPS)
def test_palette_drawing_equals_rgb_then_quantize_on_random_positions(variant: str, n: int) -> None:
    """Random mid-game positions with their own marks (at both scales), then with
    the capture flag and Terrace! rings on random squares, empty or not."""
    rng = random.Random(f"{variant}{n}")
    for seed in range(3):
        case = play_out(variant, n, rng.randrange(1, 40), seed)
        for scale in (1, 2):
            assert_same_picture(case, scale, f"{variant} {n}x{n} seed {seed} scale {scale}")
        squares = range(n * n)
        marked = Case(case.pos, case.last_move, rng.choice(squares), rng.sample(squares, rng.randrange(1, 5)))
        assert_same_picture(marked, 2, f"{variant} {n}x{n} seed {seed} random marks")


def test_pixel_comparison_notices_a_missing_mark() -> None:
    case = golden_cases()["example-4p"]
    fast, _ = fast_and_reference(case)
    _, unmarked = fast_and_reference(Case(case.pos, case.last_move, case.captured, []))
    assert differing_pixels(fast, unmarked) > 100


@pytest.mark.parametrize(("variant", "armies"), [("long", 2), ("3p", 3), ("4p", 4)])
@pytest.mark.parametrize("n", SIZES)
def test_army_colours_present(variant: str, armies: int, n: int) -> None:
    im = decode(board_png(start_position(variant, n)))
    for army, colour in ARMY_FILL.items():
        found = count_colour(im, colour)
        if army <= armies:
            assert found > 500, f"army {army} colour missing"
        else:
            assert found == 0, f"army {army} is not playing"


@pytest.mark.parametrize("n", SIZES)
def test_heights_shaded_distinctly_and_in_order(n: int) -> None:
    shades = height_shades(n)
    assert len(set(shades)) == n
    grey = [Image.new("RGB", (1, 1), s).convert("L").getpixel((0, 0)) for s in shades]
    steps = [a - b for a, b in itertools.pairwise(grey)]
    assert all(step >= 15 for step in steps), f"low = light, high = dark, clearly apart: {grey}"
    im = decode(board_png(start_position("medium", n)))
    geo = start_position("medium", n).geo
    for sq in range(n * n):
        _x0, _y0, x1, y1 = box(n, sq)
        assert im.getpixel((x1 - 8, y1 - 8)) == rgb(shades[geo.height[sq] - 1]), geo.name(sq)


def test_disc_grows_with_piece_size_and_t_is_ringed() -> None:
    pos = start_position()  # rank 1: t a b b c c d d
    im = decode(board_png(pos))
    area = {name: count_colour(im, ARMY_FILL[1], box(8, pos.geo.square(name))) for name in ("a1", "b1", "c1", "e1", "g1")}
    assert area["b1"] < area["c1"] < area["e1"] < area["g1"], area
    black = {name: count_colour(im, "#000000", box(8, pos.geo.square(name))) for name in ("a1", "b1")}
    assert black["a1"] > black["b1"] * 1.5, f"the T carries a ring: {black}"


def single(piece: int, n: int = 8, sq: int = 27) -> Position:
    board = [0] * (n * n)
    board[sq] = piece
    army = piece >> 3
    if piece & 7 != KIND_T:
        board[0 if sq else 1] = make_piece(army, KIND_T)
    return Position(n, board, army)


@pytest.mark.parametrize("kind", range(5))
def test_armies_differ_in_greyscale(kind: int) -> None:
    """The same piece of two armies must not look alike without colour: the letter
    (case, prime) and its colour differ even where the fills are equally light."""
    crops = {}
    for army in (1, 2, 3, 4):
        im = decode(board_png(single(make_piece(army, kind)))).convert("L")
        crop = im.crop(box(8, 27))
        lo, hi = crop.getextrema()
        assert hi - lo >= 100, "the letter stands out from its disc"
        crops[army] = crop
    for a in crops:
        for b in crops:
            if a < b:
                diff = ImageChops.difference(crops[a], crops[b]).point(lambda v: 255 if v > 40 else 0)
                assert diff.histogram()[255] >= 50, f"armies {a} and {b} look alike in grey ({kind})"


def test_marks_drawn_only_when_asked() -> None:
    case = golden_cases()["example-4p"]
    assert case.last_move and case.captured is not None and case.threatened
    plain = decode(board_png(case.pos))
    marked = decode(board_png(case.pos, case.last_move, captured=case.captured, threatened=case.threatened))
    for sq in (case.last_move.frm, case.last_move.to, *case.threatened):
        assert count_colour(marked, picture.MARK, box(8, sq)) > 50
        assert count_colour(plain, picture.MARK, box(8, sq)) == 0


def test_svg_parses_and_has_one_element_per_piece() -> None:
    for name, case in golden_cases().items():
        svg = board_svg(case.pos, case.last_move, captured=case.captured, threatened=case.threatened)
        root = ET.fromstring(svg)
        pieces = root.findall(f"{SVG}g[@class='piece']")
        assert len(pieces) == sum(1 for p in case.pos.board if p), name
        assert not list(root.iter(f"{SVG}script"))
        assert "href" not in svg and "url(" not in svg, "no external references"
        assert int(root.get("width", "0")) == picture.WIDTH
        # each piece and each square carries its square's name (the web page marks moves by it)
        geo = case.pos.geo
        assert sorted(g.get("data-square") for g in pieces) == sorted(geo.name(sq) for sq, p in enumerate(case.pos.board) if p)
        assert all(g.find(f"{SVG}title").text.endswith(" " + g.get("data-square")) for g in pieces)
        named = {r.get("data-square"): r for r in root.iter(f"{SVG}rect") if r.get("data-square")}
        assert sorted(named) == sorted(geo.name(sq) for sq in range(case.pos.n**2)), name
        for sq in range(case.pos.n**2):
            x0, y0, x1, _ = square_box(case.pos.n, sq)
            rect = named[geo.name(sq)]
            assert (float(rect.get("x")), float(rect.get("y")), float(rect.get("width"))) == pytest.approx((x0, y0, x1 - x0), abs=0.01)


def svg_from_describe(case: Case) -> str:
    """The SVG document written shape by shape from :func:`picture.describe` (no kept text)."""
    pos = case.pos
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{picture.WIDTH}" height="{picture.WIDTH}" '
        f'viewBox="0 0 {picture.WIDTH} {picture.WIDTH}" role="img" font-family="DejaVu Sans, Verdana, Arial, sans-serif">'
    )
    groups = picture.describe(pos, case.last_move, captured=case.captured, threatened=case.threatened)
    body = [picture.svg_group(g) for g in groups]
    return "\n".join([head, f"<title>{escape(picture_alt(pos))}</title>", *body, "</svg>"]) + "\n"


def test_svg_from_kept_fragments_equals_the_drawing_of_describe() -> None:
    """board_svg keeps the background's and each piece's text; the document is the
    one written from describe(), byte for byte (goldens, random games with marks)."""
    cases = list(golden_cases().values())
    rng = random.Random("svg")
    for variant in SETUPS:
        for n in SIZES:
            for seed in range(3):
                case = play_out(variant, n, rng.randrange(1, 40), seed)
                squares = range(n * n)
                cases += [case, Case(case.pos, case.last_move, rng.choice(squares), rng.sample(squares, rng.randrange(1, 5)))]
    for case in cases + cases:  # (the second time from the kept fragments)
        svg = board_svg(case.pos, case.last_move, captured=case.captured, threatened=case.threatened)
        assert svg == svg_from_describe(case), format_tpn(case.pos)


def test_svg_and_png_draw_the_same_picture() -> None:
    case = golden_cases()["example-4p"]
    root = ET.fromstring(board_svg(case.pos))
    im = decode(board_png(case.pos))
    for g in root.findall(f"{SVG}g[@class='piece']"):
        disc = next(c for c in g.findall(f"{SVG}circle") if c.get("fill") in ARMY_FILL.values())
        cx, cy, r = (float(disc.get(k, "0")) for k in ("cx", "cy", "r"))
        assert im.getpixel((round(2 * cx), round(2 * (cy - 0.75 * r)))) == rgb(disc.get("fill", "")), g.findtext(f"{SVG}title")


def test_alt_text_says_the_position() -> None:
    pos = start_position("4p")
    alt = picture_alt(pos)
    assert alt.startswith("Terrace 8x8, army 1 (t) to move")
    assert format_tpn(pos) in alt
    for word in ("t on b1", "T on h7", "t' on g8", "T' on a2"):
        assert word in alt


def test_write_png(tmp_path: Path) -> None:
    out = tmp_path / "board.png"
    write_png(out, format_tpn(start_position()), "d2-e3")
    im = decode(out.read_bytes())
    assert count_colour(im, picture.MARK) > 100, "the last move is marked"
    with pytest.raises(NotationError):
        write_png(out, "not a position", None)
    with pytest.raises(NotationError):
        write_png(out, format_tpn(start_position()), "d2-d5")
    assert parse_tpn(format_tpn(start_position()))


def painted_rows(shape: picture.Shape, n: int, scale: int) -> tuple[int, int] | None:
    """The rows a mark paints when drawn alone (top, bottom + 1), if any."""
    im = Image.new("P", (picture.WIDTH * scale, picture.WIDTH * scale), 0)
    picture.draw_shapes(im, [shape], scale, {colour: 1 for colour in picture._ink(n)})
    box = im.getbbox()
    return (box[1], box[3]) if box else None


@pytest.mark.parametrize("scale", [1, 2])
def test_bands_keyed_by_what_is_drawn_give_the_bytes_of_the_whole_drawing(scale: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """board_png keys each band by the marks and pieces that reach it and draws
    only new bands.  On streams of games (every position with its last move, its
    capture and its Terrace! rings, and now and then marks on random squares),
    with one encoder kept warm throughout, each picture is byte for byte the
    whole picture drawn and encoded from scratch, most bands come from the cache,
    and every mark drawn alone stays within the rows it is said to reach."""
    warm = picture.BandedPng(entries=4096, level=picture.COMPRESS_LEVEL)
    monkeypatch.setattr(picture, "PNG", warm)
    rng = random.Random(scale)
    marks = 0
    pictures = 0
    for variant, n in itertools.product(("long", "4p", "3p"), SIZES):
        for ply, (pos, move, captured) in enumerate(random_game(variant, n, 40, rng)):
            threatened = picture.threatened_squares(pos)
            if rng.random() < 0.2:
                threatened = rng.sample(range(n * n), rng.randrange(1, 4))
                captured = rng.choice([None, rng.randrange(n * n)])
            got = board_png(pos, move, captured=captured, threatened=threatened, scale=scale)
            whole = picture._draw(pos, move, captured=captured, threatened=threatened, scale=scale)
            cell, top = picture.cell_size(n) * scale, picture.MARGIN * scale
            want = picture.BandedPng().encode(whole, [round(top + k * cell) for k in range(n + 1)])
            assert got == want, f"{variant} {n}x{n} ply {ply} scale {scale}"
            pictures += 1
            if ply % 5 == 0:
                for shape in (*picture.marks_under(pos, move).shapes, *picture.marks_over(pos, captured, threatened).shapes):
                    rows, (top, bottom) = painted_rows(shape, n, scale), picture._reach(shape, scale)
                    assert rows is None or (top <= rows[0] and rows[1] <= bottom), (shape, rows, (top, bottom))
                    marks += 1
    assert pictures > 150 and marks > 100
    print(f"{pictures} pictures: bands {warm.hits} from the cache, {warm.misses} drawn")
    assert warm.hits > warm.misses  # (a move changes two or three rows of squares)
