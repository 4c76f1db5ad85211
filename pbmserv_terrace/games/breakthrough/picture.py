"""The board as a picture: SVG text (for the web) and a PNG (for a mail's HTML part).

Both draw the same thing from the same layout: the squares in two shades, the
files below the board and the ranks on its left, the last move's two squares
in yellow, and each pawn as a pawn's outline (White: white with a dark edge;
Black: near-black with a light edge, so the picture reads in greyscale too).
The picture is :data:`SIZE` x :data:`SIZE` units (1 unit = 1 CSS pixel).

The SVG is standalone: no script, no style sheet, no reference outside itself;
each pawn is a ``<g class="piece">`` whose ``<title>`` names it ("White pawn c3"),
the last move's squares are ``<rect class="last">``; each square's ``<rect>`` and
each pawn carry the square's name as ``data-square`` (the web page marks a pawn's
moves by it).  The PNG is drawn at twice
its size and scaled down (smooth edges), in DejaVu Sans when it is installed,
else in Pillow's own font.

Pure: Pillow and this package only.
"""

from __future__ import annotations

import io
from functools import cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from .notation import FILES, move_squares, square_name
from .position import ARMY_NAMES, BLACK, WHITE, Move, Position, bits

SIZE = 480
"""the picture's width and height in units"""
LEFT = 26
"""room for the rank numbers, left of the board"""
BOTTOM = 26
"""room for the file letters, below the board"""
EDGE = 8
"""the margin above and right of the board"""
BOARD = SIZE - LEFT - EDGE
"""the board's edge in units (SIZE - BOTTOM - EDGE too)"""
SUPERSAMPLE = 2

BACKGROUND = "#FFFFFF"
LIGHT = "#F0D9B5"
DARK = "#B58863"
LAST_LIGHT = "#F5E97A"
LAST_DARK = "#D9C441"
"""the last move's squares (Okabe-Ito yellow, lighter and darker)"""
LABEL = "#333333"
FILL = {WHITE: "#FFFFFF", BLACK: "#222222"}
STROKE = {WHITE: "#222222", BLACK: "#D8D8D8"}

FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/local/share/fonts/dejavu")

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont
Last = Move | str | None


# ---------------------------------------------------------------------- layout
def cell(n: int) -> float:
    return BOARD / n


def square_box(sq: int, n: int) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of square ``sq`` in units."""
    c = cell(n)
    x = LEFT + (sq % n) * c
    y = EDGE + (n - 1 - sq // n) * c
    return x, y, x + c, y + c


def pawn_shape(sq: int, n: int) -> tuple[tuple[float, float, float], list[tuple[float, float]]]:
    """The pawn on ``sq``: its head (centre x, centre y, radius) and its body (a polygon)."""
    left, top, _, _ = square_box(sq, n)
    c = cell(n)
    cx, cy = left + c / 2, top + c / 2
    head = (cx, cy - 0.19 * c, 0.145 * c)
    body = [
        (cx - 0.08 * c, cy - 0.09 * c),
        (cx + 0.08 * c, cy - 0.09 * c),
        (cx + 0.16 * c, cy + 0.22 * c),
        (cx + 0.30 * c, cy + 0.26 * c),
        (cx + 0.30 * c, cy + 0.36 * c),
        (cx - 0.30 * c, cy + 0.36 * c),
        (cx - 0.30 * c, cy + 0.26 * c),
        (cx - 0.16 * c, cy + 0.22 * c),
    ]
    return head, body


def last_squares(last: Last, n: int) -> tuple[int, ...]:
    """The squares of the last move (a :class:`Move` or its text), none when not given."""
    if last is None:
        return ()
    move = move_squares(last, n) if isinstance(last, str) else last
    return move.frm, move.to


def square_fill(sq: int, n: int, marked: tuple[int, ...]) -> str:
    dark = (sq % n + sq // n) % 2 == 0  # a1 is dark
    if sq in marked:
        return LAST_DARK if dark else LAST_LIGHT
    return DARK if dark else LIGHT


def pawns(pos: Position) -> list[tuple[int, int]]:
    """(army, square) of every pawn, White's first, each by square."""
    return [(army, sq) for army in (WHITE, BLACK) for sq in bits(pos.pawns(army))]


def picture_alt(pos: Position) -> str:
    """The board in words, short: the picture's alt text."""
    n = pos.n
    parts = [f"Breakthrough {n}x{n}, {ARMY_NAMES[pos.to_move]} to move."]
    for army in (WHITE, BLACK):
        squares = " ".join(square_name(sq, n) for sq in bits(pos.pawns(army)))
        parts.append(f"{ARMY_NAMES[army]}: {squares or 'no pawns'}.")
    return " ".join(parts)


# ------------------------------------------------------------------------- SVG
def num(v: float) -> str:
    """A coordinate for the SVG text: at most two decimals, no trailing zeros."""
    return f"{v:.2f}".rstrip("0").rstrip(".")


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def board_svg(pos: Position, last: Last = None) -> str:
    """The board as a standalone SVG document (text), the last move marked if given."""
    n = pos.n
    c = cell(n)
    marked = last_squares(last, n)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE}" height="{SIZE}" viewBox="0 0 {SIZE} {SIZE}" '
        f'role="img" aria-label="{escape(picture_alt(pos))}">',
        f"<title>{escape(picture_alt(pos))}</title>",
        f'<rect width="{SIZE}" height="{SIZE}" fill="{BACKGROUND}"/>',
    ]
    for sq in range(n * n):
        x, y, _, _ = square_box(sq, n)
        cls = ' class="last"' if sq in marked else ""
        out.append(
            f'<rect{cls} x="{num(x)}" y="{num(y)}" width="{num(c)}" height="{num(c)}" fill="{square_fill(sq, n, marked)}" '
            f'data-square="{square_name(sq, n)}"/>'
        )
    out.append(
        f'<g font-family="DejaVu Sans, Verdana, sans-serif" font-size="15" font-weight="bold" fill="{LABEL}" text-anchor="middle">'
    )
    for i in range(n):
        out.append(f'<text x="{num(LEFT + (i + 0.5) * c)}" y="{num(SIZE - BOTTOM / 2 + 5)}">{FILES[i]}</text>')
        out.append(f'<text x="{num(LEFT / 2)}" y="{num(EDGE + (n - 1 - i + 0.5) * c + 5)}">{i + 1}</text>')
    out.append("</g>")
    width = num(max(1.0, 0.035 * c))
    for army, sq in pawns(pos):
        (hx, hy, r), body = pawn_shape(sq, n)
        points = " ".join(f"{num(x)},{num(y)}" for x, y in body)
        out.append(
            f'<g class="piece" data-square="{square_name(sq, n)}" fill="{FILL[army]}" stroke="{STROKE[army]}" '
            f'stroke-width="{width}" stroke-linejoin="round">'
            f"<title>{ARMY_NAMES[army]} pawn {square_name(sq, n)}</title>"
            f'<polygon points="{points}"/><circle cx="{num(hx)}" cy="{num(hy)}" r="{num(r)}"/></g>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------- PNG
@cache
def font_dir() -> Path | None:
    """Where DejaVu is installed (None: use Pillow's own font)."""
    for folder in FONT_DIRS:
        if (Path(folder) / "DejaVuSans-Bold.ttf").is_file():
            return Path(folder)
    return None


@cache
def label_font(pixels: int) -> Font:
    folder = font_dir()
    if folder is not None:
        try:
            return ImageFont.truetype(str(folder / "DejaVuSans-Bold.ttf"), pixels)
        except OSError:
            pass
    return ImageFont.load_default(size=pixels)


def centred_text(draw: ImageDraw.ImageDraw, at: tuple[float, float], text: str, font: Font) -> None:
    """``text`` centred on ``at`` (a bitmap font knows no anchors: centred by its box)."""
    if isinstance(font, ImageFont.FreeTypeFont):
        draw.text(at, text, fill=LABEL, font=font, anchor="mm")
        return
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    draw.text((at[0] - (left + right) / 2, at[1] - (top + bottom) / 2), text, fill=LABEL, font=font)


def board_png(pos: Position, last: Last = None, size: int = SIZE) -> bytes:
    """The board as PNG bytes, ``size`` x ``size`` pixels, the last move marked if given."""
    n = pos.n
    k = size * SUPERSAMPLE / SIZE
    big = round(size * SUPERSAMPLE)
    im = Image.new("RGB", (big, big), BACKGROUND)
    draw = ImageDraw.Draw(im)
    marked = last_squares(last, n)

    def box(b: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
        return round(b[0] * k), round(b[1] * k), round(b[2] * k) - 1, round(b[3] * k) - 1

    for sq in range(n * n):
        draw.rectangle(box(square_box(sq, n)), fill=square_fill(sq, n, marked))
    font = label_font(max(8, round(15 * k)))
    c = cell(n)
    for i in range(n):
        centred_text(draw, ((LEFT + (i + 0.5) * c) * k, (SIZE - BOTTOM / 2) * k), FILES[i], font)
        centred_text(draw, (LEFT / 2 * k, (EDGE + (n - 1 - i + 0.5) * c) * k), str(i + 1), font)
    width = max(1, round(0.035 * c * k))
    for army, sq in pawns(pos):
        (hx, hy, r), body = pawn_shape(sq, n)
        draw.polygon([(x * k, y * k) for x, y in body], fill=FILL[army], outline=STROKE[army], width=width)
        draw.ellipse(((hx - r) * k, (hy - r) * k, (hx + r) * k, (hy + r) * k), fill=FILL[army], outline=STROKE[army], width=width)
    im = im.resize((size, size), Image.Resampling.LANCZOS).convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    buf = io.BytesIO()
    im.save(buf, "PNG", optimize=True)
    return buf.getvalue()
