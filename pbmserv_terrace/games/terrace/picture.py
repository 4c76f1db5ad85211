"""Board pictures (issue 16): one drawing description, two back-ends (PNG and SVG).

The picture says what the ASCII board says, at a glance: squares shaded by height
(low = light, high = dark, the height printed small in each square's corner), the
terrace walls drawn thick where the ASCII board draws ``|`` and ``---``, files and
ranks on all four sides, pieces as discs whose size grows A/T < B < C < D with the
letter printed as on the ASCII board (``t``, ``T``, ``t'``, ``T'``), so the picture
reads in greyscale and for colour-blind players (army colours are Okabe–Ito).

:func:`describe` turns a position into :class:`Group` s of plain shapes in picture
units (1 unit = 1 CSS pixel, the board picture is 320 units wide).  :func:`board_svg`
writes those shapes as SVG; :func:`board_png` draws the very same shapes with Pillow.
For speed the PNG back-end draws the static background once per board size and
each piece once, maps both onto one fixed palette once (so that a changed piece
changes only its own pixels and the file stays small), and per picture only pastes
the mapped pieces and draws the marks with palette indices.  :func:`board_rgb` is
the same picture in RGB: mapped onto the palette it gives the very same pixels.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple
from xml.sax.saxutils import escape

from PIL import Image, ImageDraw, ImageFont

from pbmserv_terrace.games.terrace import Move, Position, format_tpn, geometry, parse_move, parse_tpn, start_position
from pbmserv_terrace.games.terrace.geometry import FILES
from pbmserv_terrace.games.terrace.pieces import KIND_T, SIZE, piece_text

from ..png import BandedPng, bands_of

Point = tuple[float, float]


# ---------------------------------------------------------------------- shapes
# Shapes are in picture units.  An outline lies inside a Rect's or Circle's edge
# (as Pillow draws it); the SVG writer insets the path by half the stroke to match.
@dataclass(frozen=True, slots=True)
class Rect:
    x0: float
    y0: float
    x1: float
    y1: float
    fill: str | None
    outline: str | None = None
    width: float = 0
    square: str = ""
    """the board square this rectangle is (``e3``; the SVG's ``data-square``), '' for none"""


@dataclass(frozen=True, slots=True)
class Circle:
    cx: float
    cy: float
    r: float
    fill: str | None
    outline: str | None = None
    width: float = 0


@dataclass(frozen=True, slots=True)
class Line:
    points: tuple[Point, ...]
    colour: str
    width: float


@dataclass(frozen=True, slots=True)
class Polygon:
    points: tuple[Point, ...]
    fill: str
    outline: str | None = None
    width: float = 0


@dataclass(frozen=True, slots=True)
class Text:
    """Text centred on (x, y)."""

    x: float
    y: float
    text: str
    size: float
    fill: str
    bold: bool = False


Shape = Rect | Circle | Line | Polygon | Text


@dataclass(frozen=True, slots=True)
class Group:
    kind: str
    """background, marks, piece or threat (the SVG class)"""
    shapes: tuple[Shape, ...]
    label: str = ""
    square: str = ""
    """the square a piece stands on (``d2``; the SVG's ``data-square``), '' for other groups"""


MARGIN = 16
"""Width of the label band around the board (units)."""
BOARD = 288
"""Side of the board itself (units): 36 per square on 8x8, 48 on 6x6."""
WIDTH = BOARD + 2 * MARGIN

ARMY_FILL = {1: "#E69F00", 2: "#0072B2", 3: "#009E73", 4: "#CC79A7"}
"""Okabe–Ito orange, blue, bluish green and reddish purple."""
ARMY_TEXT = {1: "#000000", 2: "#FFFFFF", 3: "#000000", 4: "#000000"}
"""Letter colour on each army's disc (the better contrast of black and white)."""
ARMY_COLOUR_NAME = {1: "orange", 2: "blue", 3: "green", 4: "purple"}
MARK = "#F0E442"
"""Okabe–Ito yellow edged in black (like hazard tape): last move, capture and
Terrace! marks, a colour no army uses, visible on light and dark squares."""
MARK_EDGE = "#000000"
WALL = "#1E1B18"
LABEL = "#3A3632"
FRAME_BG = "#FFFFFF"
HALO = "#FFFFFF"
OUTLINE = "#000000"

PIECE_DIAMETER = {1: 0.42, 2: 0.54, 3: 0.66, 4: 0.78}
"""Disc diameter as a share of the square, by piece size (T and A are size 1)."""


def _mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> str:
    return "#" + "".join(f"{round(x + (y - x) * t):02X}" for x, y in zip(a, b, strict=True))


@cache
def height_shades(n: int) -> tuple[str, ...]:
    """Square colours by height (index 0 = height 1): an even ramp from light sand to
    dark umber, so adjacent heights differ by the same step and all N are distinct."""
    low, high = (250, 246, 236), (70, 60, 50)
    return tuple(_mix(low, high, i / (n - 1)) for i in range(n))


def _grid(n: int, height: int) -> str:
    """The thin line between two squares of the same terrace: half a height step darker."""
    shade = height_shades(n)[height - 1]
    return _mix(tuple(bytes.fromhex(shade[1:])), (0, 0, 0), 0.07)  # type: ignore[arg-type]


def _digit_colour(n: int, height: int) -> str:
    return "#5A5148" if height <= n // 2 else "#E8E0D2"


def cell_size(n: int) -> float:
    return BOARD / n


def square_box(n: int, sq: int) -> tuple[float, float, float, float]:
    """The square's box (x0, y0, x1, y1) in picture units; rank 1 at the bottom."""
    c = cell_size(n)
    x, y = sq % n, sq // n
    left, top = MARGIN + x * c, MARGIN + (n - 1 - y) * c
    return left, top, left + c, top + c


def _centre(n: int, sq: int) -> tuple[float, float]:
    x0, y0, x1, y1 = square_box(n, sq)
    return (x0 + x1) / 2, (y0 + y1) / 2


# ------------------------------------------------------------------ description
@cache
def background(n: int) -> Group:
    """Squares, height digits, grid, terrace walls, border and labels: everything that
    does not depend on the position."""
    geo = geometry(n)
    c = cell_size(n)
    shades = height_shades(n)
    shapes: list[Shape] = [Rect(0, 0, WIDTH, WIDTH, FRAME_BG)]
    for sq in range(n * n):
        h = geo.height[sq]
        x0, y0, x1, y1 = square_box(n, sq)
        shapes.append(Rect(x0, y0, x1, y1, shades[h - 1], square=geo.name(sq)))
        shapes.append(Text(x0 + 4.5, y0 + 5.5, str(h), 7, _digit_colour(n, h)))
    walls: list[Shape] = []
    joints: dict[tuple[float, float], int] = {}
    for sq in range(n * n):
        x, y = sq % n, sq // n
        x0, y0, x1, y1 = square_box(n, sq)
        h = geo.height[sq]
        sides = []
        if x + 1 < n:  # the boundary on the right
            sides.append((geo.height[sq + 1] != h, (x1, y0), (x1, y1)))
        if y > 0:  # the boundary below
            sides.append((geo.height[sq - n] != h, (x0, y1), (x1, y1)))
        for is_wall, a, b in sides:
            if is_wall:
                walls.append(Line((a, b), WALL, 3))
                for end in (a, b):
                    joints[end] = joints.get(end, 0) + 1
            else:
                shapes.append(Line((a, b), _grid(n, h), 1))
    # Where walls meet, fill the corner so that they join without a notch.
    walls.extend(Rect(x - 1.5, y - 1.5, x + 1.5, y + 1.5, WALL) for (x, y), k in joints.items() if k >= 2)
    shapes.extend(walls)
    shapes.append(Rect(MARGIN, MARGIN, MARGIN + BOARD, MARGIN + BOARD, None, WALL, 3))
    for i in range(n):
        mid = MARGIN + (i + 0.5) * c
        for ypos in (MARGIN / 2, WIDTH - MARGIN / 2):
            shapes.append(Text(mid, ypos, FILES[i], 11, LABEL))
        for xpos in (MARGIN / 2, WIDTH - MARGIN / 2):
            shapes.append(Text(xpos, MARGIN + (n - 0.5 - i) * c, str(i + 1), 11, LABEL))
    return Group("background", tuple(shapes))


def piece_shapes(piece: int, n: int, cx: float = 0.0, cy: float = 0.0) -> tuple[Shape, ...]:
    """A piece as a disc centred on (cx, cy): white halo, black outline, army colour,
    its letter; a T also gets an outer ring so it stands out from the A."""
    army = piece >> 3
    c = cell_size(n)
    r = PIECE_DIAMETER[SIZE[piece]] * c / 2
    text = piece_text(piece)
    out: list[Shape] = [Circle(cx, cy, r + 1.5, HALO), Circle(cx, cy, r, ARMY_FILL[army], OUTLINE, 1.25)]
    if piece & 7 == KIND_T:
        out.append(Circle(cx, cy, r + 4.5, None, OUTLINE, 2))
        out.insert(0, Circle(cx, cy, r + 6, HALO))
    size = r * (1.15 if len(text) == 1 else 0.95)
    out.append(Text(cx + (r * 0.06 if len(text) > 1 else 0), cy, text, size, ARMY_TEXT[army], bold=True))
    return tuple(out)


def _arrow(n: int, move: Move, piece: int) -> tuple[Shape, ...]:
    (ax, ay), (bx, by) = _centre(n, move.frm), _centre(n, move.to)
    dx, dy = bx - ax, by - ay
    length = (dx * dx + dy * dy) ** 0.5
    ux, uy = dx / length, dy / length
    stop = (PIECE_DIAMETER.get(SIZE[piece], 0.46) * cell_size(n) / 2 + 2) if piece else 6
    tip = (bx - ux * stop, by - uy * stop)
    head, half = 11.0, 6.0
    base = (tip[0] - ux * head, tip[1] - uy * head)
    left = (base[0] - uy * half, base[1] + ux * half)
    right = (base[0] + uy * half, base[1] - ux * half)
    start = (ax + ux * 5, ay + uy * 5)
    return (
        Line((start, base), MARK_EDGE, 6),
        Line((start, base), MARK, 3),
        Polygon((tip, left, right), MARK, MARK_EDGE, 1.5),
    )


def marks_under(pos: Position, last_move: Move | None) -> Group:
    """Marks drawn below the pieces: last-move frames, a dot on the square left and an arrow."""
    n = pos.n
    shapes: list[Shape] = []
    if last_move is not None:
        for sq in (last_move.frm, last_move.to):
            x0, y0, x1, y1 = square_box(n, sq)
            shapes.append(Rect(x0 + 3, y0 + 3, x1 - 3, y1 - 3, None, MARK_EDGE, 4))
            shapes.append(Rect(x0 + 4, y0 + 4, x1 - 4, y1 - 4, None, MARK, 2))
        x, y = _centre(n, last_move.frm)
        shapes.append(Circle(x, y, 4, MARK, MARK_EDGE, 1.5))
        if last_move.frm != last_move.to:
            shapes.extend(_arrow(n, last_move, pos.board[last_move.to]))
    return Group("marks", tuple(shapes))


def marks_over(pos: Position, captured: int | None, threatened: Sequence[int]) -> Group:
    """Marks drawn above the pieces: a thick ring round each threatened T, and on
    the capture square a corner flag with a cross (a piece stands on that square)."""
    n = pos.n
    c = cell_size(n)
    shapes: list[Shape] = []
    r = min(c / 2 - 2.5, PIECE_DIAMETER[1] * c / 2 + 8)
    for sq in threatened:
        x, y = _centre(n, sq)
        shapes.append(Circle(x, y, r, None, MARK_EDGE, 5))
        shapes.append(Circle(x, y, r - 1, None, MARK, 3))
    if captured is not None:
        _, y0, x1, _ = square_box(n, captured)
        leg = round(0.4 * c)
        x, y = x1 - 2, y0 + 2
        shapes.append(Polygon(((x, y), (x - leg, y), (x, y + leg)), MARK, MARK_EDGE, 1.5))
        k, mx, my = leg * 0.13, x - leg * 0.3, y + leg * 0.3
        shapes.append(Line(((mx - k, my - k), (mx + k, my + k)), MARK_EDGE, 1.5))
        shapes.append(Line(((mx - k, my + k), (mx + k, my - k)), MARK_EDGE, 1.5))
    return Group("threat", tuple(shapes))


def describe(
    pos: Position, last_move: Move | None = None, *, captured: int | None = None, threatened: Sequence[int] = ()
) -> list[Group]:
    """The whole picture as groups of shapes, bottom to top; both back-ends draw this."""
    n = pos.n
    groups = [background(n), marks_under(pos, last_move)]
    for sq, p in enumerate(pos.board):
        if p:
            name = pos.geo.name(sq)
            groups.append(Group("piece", piece_shapes(p, n, *_centre(n, sq)), f"{piece_text(p)} {name}", name))
    groups.append(marks_over(pos, captured, threatened))
    return groups


def threatened_squares(pos: Position) -> list[int]:
    """Squares of the T's that RULES.md §6 announces as Terrace! (for ``threatened``)."""
    out = []
    for army in pos.threatened_armies():
        sq = pos.t_square(army)
        if sq is not None:
            out.append(sq)
    return out


# ------------------------------------------------------------------------- SVG
def board_svg(
    pos: Position, last_move: Move | None = None, *, captured: int | None = None, threatened: Sequence[int] = ()
) -> str:
    """The picture as a standalone SVG document (no scripts, no external references).

    Each piece is one ``<g class="piece" data-square="d2">`` element whose ``<title>``
    names it, and each square's rectangle carries its ``data-square`` too (what the
    web's board page finds squares by, to mark where a piece can go).  The
    text of what never changes is written once and kept: the background of each board
    size, and each piece on each square (:func:`svg_group` of what :func:`describe`
    gives, so the document is the one written from :func:`describe` shape by shape)."""
    n = pos.n
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{WIDTH}" viewBox="0 0 {WIDTH} {WIDTH}" '
        f'role="img" font-family="DejaVu Sans, Verdana, Arial, sans-serif">',
        f"<title>{escape(picture_alt(pos))}</title>",
        _background_svg(n),
        svg_group(marks_under(pos, last_move)),
    ]
    out.extend(_piece_svg(p, n, sq) for sq, p in enumerate(pos.board) if p)
    out.append(svg_group(marks_over(pos, captured, threatened)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def svg_group(group: Group) -> str:
    """One group as SVG: its ``<g>`` line, a line per shape, ``</g>``."""
    where = f' data-square="{group.square}"' if group.square else ""
    head = f'<g class="{group.kind}"{where}>' + (f"<title>{escape(group.label)}</title>" if group.label else "")
    return "\n".join([head, *map(_svg_shape, group.shapes), "</g>"])


@cache
def _background_svg(n: int) -> str:
    return svg_group(background(n))


@cache
def _piece_svg(piece: int, n: int, sq: int) -> str:
    """A piece on a square as SVG (at most 16 pieces x 64 squares of each board size)."""
    name = geometry(n).name(sq)
    return svg_group(Group("piece", piece_shapes(piece, n, *_centre(n, sq)), f"{piece_text(piece)} {name}", name))


def _n(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _paint(fill: str | None, outline: str | None, width: float) -> str:
    text = f' fill="{fill}"' if fill else ' fill="none"'
    if outline and width:
        text += f' stroke="{outline}" stroke-width="{_n(width)}"'
    return text


def _svg_shape(shape: Shape) -> str:
    if isinstance(shape, Rect):
        inset = shape.width / 2 if shape.outline else 0
        return (
            f'<rect x="{_n(shape.x0 + inset)}" y="{_n(shape.y0 + inset)}" width="{_n(shape.x1 - shape.x0 - 2 * inset)}" '
            f'height="{_n(shape.y1 - shape.y0 - 2 * inset)}"{_paint(shape.fill, shape.outline, shape.width)}'
            + (f' data-square="{shape.square}"/>' if shape.square else "/>")
        )
    if isinstance(shape, Circle):
        r = shape.r - (shape.width / 2 if shape.outline else 0)
        return f'<circle cx="{_n(shape.cx)}" cy="{_n(shape.cy)}" r="{_n(r)}"{_paint(shape.fill, shape.outline, shape.width)}/>'
    if isinstance(shape, Line):
        pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in shape.points)
        return f'<polyline points="{pts}" fill="none" stroke="{shape.colour}" stroke-width="{_n(shape.width)}"/>'
    if isinstance(shape, Polygon):
        pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in shape.points)
        return f'<polygon points="{pts}"{_paint(shape.fill, shape.outline, shape.width)}/>'
    weight = ' font-weight="bold"' if shape.bold else ""
    return (
        f'<text x="{_n(shape.x)}" y="{_n(shape.y)}" font-size="{_n(shape.size)}" fill="{shape.fill}"{weight} '
        f'text-anchor="middle" dominant-baseline="central">{escape(shape.text)}</text>'
    )


# ------------------------------------------------------------------------- PNG
@cache
def _font(pixels: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's own scalable font (it ships inside Pillow, so it can never be missing)."""
    return ImageFont.load_default(size=pixels)


def draw_shapes(
    im: Image.Image, shapes: Sequence[Shape], scale: float, ink: Mapping[str, int] | None = None, *, up: int = 0
) -> None:
    """Draw ``shapes`` on ``im`` with every coordinate multiplied by ``scale``,
    and ``up`` whole pixels higher (``im`` is then the picture's rows from ``up``).

    On a palette image ``ink`` gives each colour's palette index.  Text is not
    drawn there: Pillow would draw it without anti-aliasing."""
    draw = ImageDraw.Draw(im)

    def paint(colour: str | None) -> str | int | None:
        return colour if ink is None or colour is None else ink[colour]

    for shape in shapes:
        if isinstance(shape, Rect):
            box = (shape.x0 * scale, shape.y0 * scale - up, shape.x1 * scale - 1, shape.y1 * scale - 1 - up)
            draw.rectangle(box, paint(shape.fill), paint(shape.outline), round(shape.width * scale))
        elif isinstance(shape, Circle):
            r = shape.r * scale
            box = (shape.cx * scale - r, shape.cy * scale - r - up, shape.cx * scale + r, shape.cy * scale + r - up)
            draw.ellipse(box, paint(shape.fill), paint(shape.outline), round(shape.width * scale))
        elif isinstance(shape, Line):
            draw.line([(x * scale, y * scale - up) for x, y in shape.points], paint(shape.colour), round(shape.width * scale))
        elif isinstance(shape, Polygon):
            pts = [(x * scale, y * scale - up) for x, y in shape.points]
            draw.polygon(pts, paint(shape.fill), paint(shape.outline), round(shape.width * scale))
        elif ink is not None:
            raise ValueError(f"text {shape.text!r} on a palette image: draw it in RGB")
        else:
            stroke = max(1, round(shape.size * scale / 22)) if shape.bold else 0
            draw.text(
                (shape.x * scale, shape.y * scale - up),
                shape.text,
                shape.fill,
                _font(round(shape.size * scale)),
                anchor="mm",
                stroke_width=stroke,
                stroke_fill=shape.fill,
            )


def _exact_colours(n: int) -> set[str]:
    """Every flat colour the picture uses."""
    exact = {*height_shades(n), *ARMY_FILL.values(), *ARMY_TEXT.values(), MARK, MARK_EDGE, WALL, LABEL, FRAME_BG, HALO}
    return exact | {_grid(n, h) for h in range(1, n + 1)} | {_digit_colour(n, h) for h in range(1, n + 1)}


@cache
def _palette(n: int) -> Image.Image:
    """One fixed palette per board size: the exact flat colours plus the blends that
    text and discs make, learnt once from sample pictures.  Mapping every picture onto
    it pixel by pixel keeps a change local and the PNG small."""
    exact = _exact_colours(n)
    sheet = Image.new("RGB", (2 * WIDTH * 2, WIDTH * 2))
    for i, variant in enumerate(("4p", "long")):
        pos = start_position(variant, n)
        move = pos.legal_moves()[0]
        after = pos.play(move)
        marks = [sq for sq in range(n * n) if after.board[sq]][:2]
        sheet.paste(board_rgb(after, move, captured=move.to, threatened=marks, scale=2), (i * WIDTH * 2, 0))
    colours = [tuple(bytes.fromhex(c[1:7])) for c in sorted(exact)]
    learnt = sheet.quantize(PALETTE_SIZE - len(exact), Image.Quantize.MEDIANCUT).getpalette() or []
    for i in range(0, len(learnt), 3):
        blend = tuple(learnt[i : i + 3])
        # Pillow maps colours through a 6-bit cache: a learnt colour near an exact
        # one could capture that flat colour, so such blends are left out.
        if all(sum(abs(a - b) for a, b in zip(blend, c, strict=True)) > 24 for c in colours):
            colours.append(blend)
    pal = Image.new("P", (1, 1))
    pal.putpalette([v for c in colours[:PALETTE_SIZE] for v in c])
    return pal


PALETTE_SIZE = 96
COMPRESS_LEVEL = 3
"""zlib level 3: 20–24 kB, 1.2–1.4 ms to deflate a whole 640 px picture (0.7 ms
a picture in a stream of moves, where most bands come from the cache); level 6
made them 15–17 kB at 3–5 ms (issue 18); level 9 (Pillow's optimize=True) takes
~30 ms on a 640 px board."""


PNG = BandedPng(entries=4096, level=COMPRESS_LEVEL)
"""the board pictures' encoder: a band (a row of squares, a margin) is deflated
once however many pictures show it; 4,096 bands are ~10 MB"""


def to_png(im: Image.Image, n: int) -> bytes:
    """The picture as PNG bytes; an RGB picture (:func:`board_rgb`) is first mapped
    onto the palette, a palette picture is encoded as it is, in bands of one row of
    squares each (:mod:`.png`)."""
    if im.mode != "P":
        im = _quantize(im, n)
    scale = im.width / WIDTH
    top, cell = MARGIN * scale, cell_size(n) * scale
    return PNG.encode(im, [round(top + k * cell) for k in range(n + 1)])


def _quantize(im: Image.Image, n: int) -> Image.Image:
    """Each pixel to the palette entry Pillow picks for its colour (no dither, so
    pixel by pixel: mapping parts separately gives the same pixels)."""
    return im.quantize(palette=_palette(n), dither=Image.Dither.NONE)


@cache
def _ink(n: int) -> dict[str, int]:
    """The palette index of each flat colour: the entry its RGB pixels are mapped to
    (found by mapping them, not by looking the colour up in the palette)."""
    colours = sorted(_exact_colours(n))
    strip = Image.frombytes("RGB", (len(colours), 1), b"".join(bytes.fromhex(c[1:7]) for c in colours))
    return dict(zip(colours, _quantize(strip, n).tobytes(), strict=True))


@cache
def _background_image(n: int, scale: int) -> Image.Image:
    im = Image.new("RGB", (WIDTH * scale, WIDTH * scale), FRAME_BG)
    draw_shapes(im, background(n).shapes, scale)
    return im


@cache
def _sprite(piece: int, n: int, scale: int) -> tuple[Image.Image, int]:
    """The piece drawn once on a transparent tile; returns (tile, half its side).

    Discs are not anti-aliased: the mail shows the picture at half its pixel size,
    which smooths the edges, and hard edges keep the PNG about a third smaller."""
    half = int(cell_size(n) / 2 * scale)
    tile = Image.new("RGBA", (2 * half, 2 * half), (0, 0, 0, 0))
    draw_shapes(tile, piece_shapes(piece, n, half / scale, half / scale), scale)
    return tile, half


@cache
def _background_mapped(n: int, scale: int) -> Image.Image:
    return _quantize(_background_image(n, scale), n)


@cache
def _sprite_mapped(piece: int, n: int, scale: int) -> tuple[Image.Image, Image.Image, int]:
    """The tile mapped onto the palette, its mask and half its side.  The tile's alpha
    is only 0 or 255 (nothing is anti-aliased at its edge), so pasting the mapped
    tile gives the pixels that mapping the pasted RGB tile would."""
    tile, half = _sprite(piece, n, scale)
    alpha = tile.getchannel("A")
    if any(alpha.histogram()[1:255]):
        raise ValueError("a piece tile with partial alpha cannot be pasted after mapping")
    return _quantize(tile.convert("RGB"), n), alpha.convert("1"), half


def board_png(
    pos: Position,
    last_move: Move | None = None,
    *,
    captured: int | None = None,
    threatened: Sequence[int] = (),
    scale: int = 2,
) -> bytes:
    """The picture as a palette PNG, ``WIDTH * scale`` pixels square (640 at scale 2,
    shown at 320 CSS pixels so it is sharp on high-density screens).

    Encoded band by band (a row of squares, a margin), each band keyed by what is
    drawn in it: its place, and in drawing order every mark and piece that reaches
    its rows.  A band met before is neither drawn nor hashed; if any is new, only
    what reaches the new bands is drawn.  The bytes are those of
    ``to_png(_draw(...), n)`` (tests/render/test_picture.py checks it on streams
    of games)."""
    n, side = pos.n, WIDTH * scale
    ops = _drawing(pos, last_move, captured, threatened, scale)
    rows = _band_rows(n, scale)
    starts = [first for first, _ in rows]
    # each step's bands: from the one its top row is in to the last that begins above its bottom
    spans = [(max(0, bisect_right(starts, lo) - 1), bisect_left(starts, hi)) for (lo, hi), _ in ops]
    reaching: list[list[Op]] = [[] for _ in rows]
    for (a, b), (_, op) in zip(spans, ops, strict=True):
        for i in range(a, b):
            reaching[i].append(op)
    bands = [(first, last, (n, scale, first, last, tuple(steps))) for (first, last), steps in zip(rows, reaching, strict=True)]

    def draw(missing: list[int]) -> tuple[Image.Image, int]:
        # what reaches the new bands, on the rows from the first to the last and
        # the whole of every mark among it (Pillow draws a mark cut by the edge
        # of the picture a pixel off here and there)
        top, bottom = rows[missing[0]][0], rows[missing[-1]][1]
        steps = []
        for (a, b), ((lo, hi), op) in zip(spans, ops, strict=True):
            if any(a <= i < b for i in missing):
                steps.append(op)
                if not isinstance(op, Tile):
                    top, bottom = min(top, lo), max(bottom, hi)
        top, bottom = max(top, 0), min(bottom, side)
        return _draw_steps(n, scale, steps, rows=(top, bottom)), top

    return PNG.encode_keyed((side, side), _palette_bytes(n, scale), bands, draw)


class Tile(NamedTuple):
    """A piece's tile pasted with its top left corner at (x, y) pixels."""

    piece: int
    x: int
    y: int


Op = Shape | Tile
"""one drawing step of a palette picture: a mark, or a piece's tile"""


def _drawing(
    pos: Position, last_move: Move | None, captured: int | None, threatened: Sequence[int], scale: int
) -> list[tuple[tuple[int, int], Op]]:
    """What is drawn on the background, in order, each step with the rows it can
    reach (top, bottom + 1; a shape's reach padded beyond its stroke)."""
    n = pos.n
    ops: list[tuple[tuple[int, int], Op]] = [(_reach(s, scale), s) for s in marks_under(pos, last_move).shapes]
    centres, halves = _centres(n, scale), _halves(n, scale)
    for sq, p in enumerate(pos.board):
        if p:
            (cx, cy), half = centres[sq], halves[p]
            ops.append(((cy - half, cy + half), Tile(p, cx - half, cy - half)))
    ops += [(_reach(s, scale), s) for s in marks_over(pos, captured, threatened).shapes]
    return ops


@cache
def _centres(n: int, scale: int) -> tuple[tuple[int, int], ...]:
    """Each square's centre in pixels, as a piece's tile is placed round it."""
    return tuple((round(cx * scale), round(cy * scale)) for cx, cy in (_centre(n, sq) for sq in range(n * n)))


class _Halves(dict[int, int]):
    """Half the side of each piece's tile (drawn when first asked for)."""

    def __init__(self, n: int, scale: int) -> None:
        super().__init__()
        self.n, self.scale = n, scale

    def __missing__(self, piece: int) -> int:
        self[piece] = half = _sprite(piece, self.n, self.scale)[1]  # (the mapped tile's too)
        return half


@cache
def _halves(n: int, scale: int) -> _Halves:
    return _Halves(n, scale)


@cache
def _band_rows(n: int, scale: int) -> list[tuple[int, int]]:
    """The picture's bands: the top margin, each row of squares, the bottom margin."""
    top, cell = MARGIN * scale, cell_size(n) * scale
    return bands_of([round(top + k * cell) for k in range(n + 1)], WIDTH * scale)


def _reach(shape: Shape, scale: int) -> tuple[int, int]:
    """The rows (top, bottom + 1) a shape can paint, with a pixel to spare for
    rounding: a Rect's or Circle's outline lies inside its box, a Line's stroke
    reaches half its width beyond its points, a Polygon's outline is given its
    whole width (tests/render/test_picture.py draws each mark alone to check)."""
    if isinstance(shape, Rect):
        lo, hi, pad = shape.y0, shape.y1, 0.0
    elif isinstance(shape, Circle):
        lo, hi, pad = shape.cy - shape.r, shape.cy + shape.r, 0.0
    elif isinstance(shape, Line):
        lo, hi, pad = min(y for _, y in shape.points), max(y for _, y in shape.points), shape.width / 2
    elif isinstance(shape, Polygon):
        lo, hi, pad = min(y for _, y in shape.points), max(y for _, y in shape.points), shape.width
    else:  # (text is never drawn on a palette picture)
        raise ValueError(f"text {shape.text!r} on a palette image: draw it in RGB")
    return math.floor((lo - pad) * scale) - 1, math.ceil((hi + pad) * scale) + 2


def _draw_steps(
    n: int, scale: int, ops: Sequence[Op], *, mapped: bool = True, rows: tuple[int, int] | None = None
) -> Image.Image:
    """The background with these steps drawn on it, in order: on the palette, or
    with ``mapped=False`` in RGB.  With ``rows`` (top, bottom + 1) only those rows
    of it (each step moved up by ``top`` whole pixels, which draws the same pixels
    there: the differential test in tests/render/test_picture.py)."""
    background = (_background_mapped if mapped else _background_image)(n, scale)
    top, bottom = rows if rows is not None else (0, background.height)
    im = background.crop((0, top, background.width, bottom))  # (a new picture, the whole one a copy)
    ink = _ink(n) if mapped else None
    for op in ops:
        if isinstance(op, Tile):
            if mapped:
                tile, mask, _ = _sprite_mapped(op.piece, n, scale)
            else:
                tile = mask = _sprite(op.piece, n, scale)[0]
            im.paste(tile, (op.x, op.y - top), mask)
        else:
            draw_shapes(im, [op], scale, ink, up=top)
    return im


@cache
def _palette_bytes(n: int, scale: int) -> bytes:
    return bytes(_background_mapped(n, scale).getpalette("RGB") or ())


def board_rgb(
    pos: Position,
    last_move: Move | None = None,
    *,
    captured: int | None = None,
    threatened: Sequence[int] = (),
    scale: int = 2,
) -> Image.Image:
    """The picture in RGB, before the palette: the palette is learnt from these, and
    ``to_png(board_rgb(...), n)`` is the reference :func:`board_png` must equal."""
    return _draw(pos, last_move, captured=captured, threatened=threatened, scale=scale, mapped=False)


def _draw(
    pos: Position, last_move: Move | None, *, captured: int | None, threatened: Sequence[int], scale: int, mapped: bool = True
) -> Image.Image:
    """The cached background, the marks under the pieces, the cached piece tiles, the
    marks over them: on the palette (the mapped background and tiles, the marks
    drawn with their palette indices) or, with ``mapped=False``, in RGB."""
    steps = [op for _, op in _drawing(pos, last_move, captured, threatened, scale)]
    return _draw_steps(pos.n, scale, steps, mapped=mapped)


# ------------------------------------------------------------------------ words
def picture_alt(pos: Position | str) -> str:
    """The position (or its TPN string) in words, for the image's alt text and screen readers."""
    tpn = pos if isinstance(pos, str) else format_tpn(pos)
    if isinstance(pos, str):
        pos = parse_tpn(pos)
    n, name = pos.n, pos.geo.name
    parts = [f"Terrace {n}x{n}, army {pos.to_move} ({piece_text(pos.to_move << 3 | KIND_T)}) to move."]
    pieces: dict[int, list[str]] = {army: [] for army in pos.armies()}
    for sq, p in enumerate(pos.board):
        if p and p >> 3 in pieces:
            pieces[p >> 3].append(f"{piece_text(p)} on {name(sq)}")
    for army, listed in pieces.items():
        parts.append(f"Army {army} ({ARMY_COLOUR_NAME[army]}): {', '.join(listed)}.")
    parts.append(f"Position {tpn}.")
    return " ".join(parts)


# ----------------------------------------------------- a board mail's and a page's
def last_move_marks(pos: Position, last_move: str) -> tuple[Move | None, int | None]:
    """The last move and the square it captured on, read from its canonical text
    (``C-d2-e3`` or ``C-d2-e3:B``) as recorded, with ``pos`` the position after it;
    (None, None) when there is none or it cannot be read."""
    if not last_move:
        return None, None
    try:
        squares = last_move.split("-")[1:3]
        frm, to = pos.geo.square(squares[0]), pos.geo.square(squares[1].split(":")[0])
    except (IndexError, ValueError):
        return None, None
    return Move(frm, to), (to if ":" in last_move else None)


def mail_png(pos: Position, last_move: str = "") -> bytes:
    """The PNG of a board mail: the position, its last move marked (and a capture),
    and the T's that Terrace! announces ringed."""
    move, captured = last_move_marks(pos, last_move)
    return board_png(pos, move, captured=captured, threatened=threatened_squares(pos))


def page_svg(pos: Position, last_move: str = "") -> str:
    """The same drawing as :func:`mail_png`, as SVG (the web's board pages)."""
    move, captured = last_move_marks(pos, last_move)
    return board_svg(pos, move, captured=captured, threatened=threatened_squares(pos))


def write_png(path: str | Path, tpn: str, last_move_text: str | None = None) -> None:
    """Operator tool (``pbmserv-terrace board --png FILE TPN``): draw a position string.

    With ``last_move_text`` the move is played from the position and shown as the last
    move.  Raises :class:`~pbmserv_terrace.games.terrace.NotationError` on bad input."""
    pos = parse_tpn(tpn)
    move: Move | None = None
    captured: int | None = None
    if last_move_text:
        move = parse_move(pos, last_move_text)
        if pos.board[move.to]:
            captured = move.to
        pos = pos.play(move)
    Path(path).write_bytes(board_png(pos, move, captured=captured, threatened=threatened_squares(pos)))


__all__ = [
    "ARMY_COLOUR_NAME",
    "ARMY_FILL",
    "board_png",
    "board_svg",
    "describe",
    "height_shades",
    "last_move_marks",
    "mail_png",
    "page_svg",
    "picture_alt",
    "square_box",
    "threatened_squares",
    "write_png",
]
