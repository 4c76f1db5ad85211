"""The patience table as a picture (PNG) for the HTML part of a board mail, and in words.

The picture says what the ASCII table says (:mod:`.render`), at a glance: the
stock (a card back with its count), the waste's last cards fanned (top last), the
base rank and how the piles build, the eight foundations (top card and count),
the reserve fanned with all its cards (its top card, the only playable one, ringed
in yellow), the tableau piles overlapping downwards (top card last, whole), and the
status line.  Cards are white rounded rectangles with the rank and suit in the
corner (readable where the next card covers the rest) and large in the middle;
hearts and diamonds are red, and the suit symbols differ in shape, so the picture
reads in greyscale too.

Everything is measured in picture units (the picture is :data:`WIDTH` x
:data:`HEIGHT` units, its fonts sized for 1 unit = 1 CSS pixel) and drawn at
``scale`` pixels per unit (2 by default: sharp on high-density screens).  For
speed each card face and each text is drawn once and pasted; the result is
mapped onto one fixed palette (small file, same colours every time).

Fonts: DejaVu (Debian's ``fonts-dejavu-core``) when it is installed, with the suit
symbols; else Pillow's own font, with the suit letters (``c d h s``) instead.

Pure: Pillow and this package only.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence
from functools import cache, lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from .cards import RANK_NAMES, RANK_TEXT, SUITS, card_text, is_red, rank_of, suit_of
from .render import WASTE_SHOWN, status_line
from .state import FOUNDATION_SIZE, State, new_game

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont
Box = tuple[float, float, float, float]

# ---------------------------------------------------------------------- layout
WIDTH = 480
"""picture width in units (the fonts are sized for 1 unit = 1 CSS pixel)"""
HEIGHT = 580
SCALE = 2
MARGIN = 9
CARD_W, CARD_H = 46, 64
GAP = 6
COLUMN = CARD_W + GAP
RADIUS = 5
LABEL_H = 13
"""the label line above a row of cards"""
ROW_1, ROW_2, ROW_3 = 46, 130, 214
"""top of the cards of the stock/waste row, the foundations and the reserve"""
TABLEAU_Y = 300
STATUS_Y = 550
"""top of the status lines (two at most)"""
TABLEAU_STEP = 20
"""how much of a covered tableau card shows (its rank and suit); less on a pile too long
for the room above the status line (the top card always shows whole)"""
WASTE_STEP = 16
RESERVE_STEP = 20
HALO = 3
"""the ring round a playable card"""

# ---------------------------------------------------------------------- colours
FELT = "#1F6B45"
SLOT = "#1A5A3A"
SLOT_EDGE = "#6FA88A"
LABEL = "#DCEBE2"
TITLE = "#FFFFFF"
CARD = "#FFFFFF"
CARD_EDGE = "#2B2B2B"
RED = "#C8102E"
BLACK = "#111111"
BACK = "#0072B2"
"""the stock's card back (Okabe-Ito blue)"""
HIGHLIGHT = "#F0E442"
"""Okabe-Ito yellow: the playable reserve card, the offered base cards, the lock"""

SUIT_SYMBOLS = "\u2663\u2666\u2665\u2660"
"""clubs, diamonds, hearts, spades (in :data:`.cards.SUITS` order)"""
FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/local/share/fonts/dejavu")
FONT_FILES = {"regular": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "condensed": "DejaVuSansCondensed-Bold.ttf"}


# ------------------------------------------------------------------------ fonts
@cache
def _font_dir() -> Path | None:
    """Where DejaVu is installed (None: use Pillow's own font)."""
    for d in FONT_DIRS:
        if all((Path(d) / f).is_file() for f in FONT_FILES.values()):
            return Path(d)
    return None


def has_symbols() -> bool:
    """True when the suits are drawn as symbols (DejaVu found), False for letters."""
    return _font_dir() is not None


@cache
def _font(pixels: int, style: str = "regular") -> Font:
    folder = _font_dir()
    if folder is not None:
        try:
            return ImageFont.truetype(str(folder / FONT_FILES[style]), pixels)
        except OSError:
            pass
    return ImageFont.load_default(size=pixels)


def suit_mark(suit: int) -> str:
    """The suit as drawn: a symbol with DejaVu, else its letter."""
    return SUIT_SYMBOLS[suit] if has_symbols() else SUITS[suit]


def _ink(card: int) -> str:
    return RED if is_red(card) else BLACK


# ---------------------------------------------------------------------- drawing
class _Painter:
    """Draws on ``im`` in units (multiplied by ``scale``)."""

    def __init__(self, im: Image.Image, scale: int) -> None:
        self.im, self.scale = im, scale
        self.draw = ImageDraw.Draw(im)

    def px(self, v: float) -> int:
        return round(v * self.scale)

    def box(self, x0: float, y0: float, x1: float, y1: float) -> tuple[int, int, int, int]:
        return self.px(x0), self.px(y0), self.px(x1) - 1, self.px(y1) - 1

    def rounded(self, box: Box, fill: str | None, outline: str | None = None, width: float = 1, radius: float = RADIUS) -> None:
        self.draw.rounded_rectangle(self.box(*box), self.px(radius), fill, outline, max(1, self.px(width)))

    def text(self, x: float, y: float, text: str, size: float, fill: str, style: str = "regular", anchor: str = "la") -> None:
        """``text`` with its ``anchor`` point at (x, y) (Pillow's anchors: ``la`` left/ascender,
        ``mm`` middle, ``ra`` right/ascender …), pasted from a cache of rendered texts."""
        tile, dx, dy = _text_tile(text, self.px(size), fill, style, anchor)
        self.paste_px(tile, self.px(x) + dx, self.px(y) + dy)

    def length(self, text: str, size: float, style: str = "regular") -> float:
        return self.draw.textlength(text, _font(self.px(size), style)) / self.scale

    def fitted(self, text: str, size: float, width: float, style: str = "regular") -> float:
        """The largest size up to ``size`` at which ``text`` fits in ``width`` units."""
        while size > 7 and self.length(text, size, style) > width:
            size -= 0.5
        return size

    def paste(self, tile: Image.Image, x: float, y: float) -> None:
        self.paste_px(tile, self.px(x), self.px(y))

    def paste_px(self, tile: Image.Image, x: int, y: int) -> None:
        """``tile`` (RGBA) over the picture at pixel (x, y); a tile drawn on another tile
        keeps that tile's own transparency (alpha compositing, not a masked paste)."""
        if self.im.mode == "RGBA":
            self.im.alpha_composite(tile, (x, y))
        else:
            self.im.paste(tile, (x, y), tile)


@lru_cache(maxsize=1024)
def _text_tile(text: str, pixels: int, fill: str, style: str, anchor: str) -> tuple[Image.Image, int, int]:
    """``text`` drawn once on a transparent tile, and where the tile goes relative to
    the anchor point: most texts of a table (labels, counts, the status) recur."""
    font = _font(pixels, style)
    if isinstance(font, ImageFont.FreeTypeFont):
        left, top, right, bottom = (round(v) for v in font.getbbox(text, anchor=anchor))
    else:  # Pillow without FreeType: a bitmap font, drawn from its top left
        left, top, right, bottom = (round(v) for v in font.getbbox(text))
        anchor = "la"
    size = (max(1, right - left), max(1, bottom - top))
    coverage = Image.new("L", size, 0)
    ImageDraw.Draw(coverage).text((-left, -top), text, 255, font, anchor=anchor if anchor != "la" else None)
    tile = Image.new("RGBA", size, fill)
    tile.putalpha(coverage)  # the colour everywhere, the glyphs' coverage as alpha
    return tile, left, top


@cache
def _card_tile(card: int, scale: int) -> Image.Image:
    """One card face (RGBA, transparent outside its rounded corners), drawn once."""
    tile = Image.new("RGBA", (CARD_W * scale, CARD_H * scale), (0, 0, 0, 0))
    p = _Painter(tile, scale)
    p.rounded((0, 0, CARD_W, CARD_H), CARD, CARD_EDGE, 1)
    ink, rank, mark = _ink(card), RANK_TEXT[rank_of(card)], suit_mark(suit_of(card))
    symbol = has_symbols()
    # the corner: rank, the suit beside it (seen on a covered tableau card) and
    # below it (seen on a covered reserve or waste card)
    p.text(3, 2.5, rank, 13, ink, "condensed")
    p.text(4 + p.length(rank, 13, "condensed"), 3 if symbol else 1.5, mark, 12 if symbol else 13, ink, "bold")
    p.text(3 + p.length(rank, 13, "condensed") / 2, 19, mark, 11 if symbol else 12, ink, "bold", anchor="ma")
    # the middle: large, for the cards seen whole
    p.text(CARD_W / 2 + 8, 31, rank, 19, ink, "bold", anchor="mm")
    p.text(CARD_W / 2 + 8, 50, mark, 24 if symbol else 20, ink, "bold", anchor="mm")
    return tile


@cache
def _background(variant_piles: int, scale: int) -> Image.Image:
    """The felt with the empty places of every pile (a pile's cards cover its place)."""
    im = Image.new("RGB", (WIDTH * scale, HEIGHT * scale), FELT)
    p = _Painter(im, scale)
    for y, count in ((ROW_2, 8), (ROW_3, 1), (TABLEAU_Y, variant_piles)):
        for i in range(count):
            x = MARGIN + i * COLUMN
            p.rounded((x, y, x + CARD_W, y + CARD_H), SLOT, SLOT_EDGE, 1)
    p.rounded((MARGIN, ROW_1, MARGIN + CARD_W, ROW_1 + CARD_H), SLOT, SLOT_EDGE, 1)
    p.rounded((MARGIN + COLUMN, ROW_1, MARGIN + COLUMN + CARD_W, ROW_1 + CARD_H), SLOT, SLOT_EDGE, 1)
    return im


def _slot_text(p: _Painter, x: float, y: float, text: str) -> None:
    p.text(x + CARD_W / 2, y + CARD_H / 2, text, 11, SLOT_EDGE, "bold", anchor="mm")


def _halo(p: _Painter, x: float, y: float) -> None:
    p.rounded((x - HALO, y - HALO, x + CARD_W + HALO, y + CARD_H + HALO), HIGHLIGHT, radius=RADIUS + HALO)


def _fan(p: _Painter, cards: Sequence[int], x: float, y: float, step: float) -> None:
    for i, card in enumerate(cards):
        p.paste(_card_tile(card, p.scale), x + i * step, y)


def _plural(name: str) -> str:
    return name + ("es" if name.endswith("x") else "s")


def _draw(state: State, scale: int) -> Image.Image:
    v = state.variant
    im = _background(v.piles, scale).copy()
    p = _Painter(im, scale)
    right = WIDTH - MARGIN
    # title: the variant and deal, the score
    score = f"score {state.score}/104"
    p.text(right, 8, score, 14, TITLE, "bold", anchor="ra")
    title = f"{v.name} \u00b7 deal {state.deal}"
    room = right - MARGIN - p.length(score, 14, "bold") - 12
    p.text(MARGIN, 8, title, p.fitted(title, 14, room, "bold"), TITLE, "bold")

    # row 1: stock, waste; the base and how the piles build
    x = MARGIN
    p.text(x, ROW_1 - LABEL_H, f"Stock {len(state.stock)}", 10, LABEL)
    if state.stock:
        p.rounded((x, ROW_1, x + CARD_W, ROW_1 + CARD_H), BACK, CARD_EDGE, 1)
        p.rounded((x + 3, ROW_1 + 3, x + CARD_W - 3, ROW_1 + CARD_H - 3), None, CARD, 1, RADIUS - 2)
        p.text(x + CARD_W / 2, ROW_1 + 26, str(len(state.stock)), 17, CARD, "bold", anchor="mm")
    note = "locked" if state.stock_locked() else "2nd pass" if state.stock_pass == 2 else ""
    if note:
        size = p.fitted(note, 10, CARD_W - 6, "bold")
        if state.stock:
            p.text(x + CARD_W / 2, ROW_1 + 47, note, size, HIGHLIGHT, "bold", anchor="mm")
        else:
            _slot_text(p, x, ROW_1, note)
    x = MARGIN + COLUMN
    shown = state.waste[-WASTE_SHOWN:]
    p.text(x, ROW_1 - LABEL_H, f"Waste {len(state.waste)}" + (" (top right)" if len(shown) > 1 else ""), 10, LABEL)
    _fan(p, shown, x, ROW_1, WASTE_STEP)
    info_x = MARGIN + COLUMN + (WASTE_SHOWN - 1) * WASTE_STEP + CARD_W + 14
    if state.choosing_base:
        p.text(info_x, ROW_1 - 4, "Base: choose from t1-t4", 13, TITLE, "bold")
    else:
        p.text(info_x, ROW_1 - 4, f"Base: {_plural(RANK_NAMES[state.base_rank])}", 13, TITLE, "bold")
    build = "in suit" if v.by_suit else "by alternating colour"
    rules = (f"Foundations: up, {build}", "Tableau: down, by alternating colour", "Both round the corner: K, A, 2")
    for i, line in enumerate(rules):
        p.text(info_x, ROW_1 + 16 + i * 14, line, 10, LABEL)

    # row 2: the foundations, top card and count
    for i, f in enumerate(state.foundations):
        x = MARGIN + i * COLUMN
        p.text(x, ROW_2 - LABEL_H, f"f{i + 1}", 10, LABEL)
        if f:
            count = f"{len(f)}" if len(f) < FOUNDATION_SIZE else "done"
            p.text(x + CARD_W, ROW_2 - LABEL_H, count, 10, TITLE, "bold", anchor="ra")
            p.paste(_card_tile(f[-1], scale), x, ROW_2)
        elif state.base_rank:
            _slot_text(p, x, ROW_2, RANK_TEXT[state.base_rank])

    # row 3: the reserve, every card, the top one (playable) ringed
    n = len(state.reserve)
    label = f"Reserve {n}" + (": the top card (ringed) goes only to a foundation" if n else "")
    p.text(MARGIN, ROW_3 - LABEL_H, label, 10, LABEL)
    if n:
        step = min(RESERVE_STEP, (right - MARGIN - CARD_W - HALO) / max(1, n - 1))
        _fan(p, state.reserve[:-1], MARGIN, ROW_3, step)
        top_x = MARGIN + (n - 1) * step
        _halo(p, top_x, ROW_3)
        p.paste(_card_tile(state.reserve[-1], scale), top_x, ROW_3)
    else:
        _slot_text(p, MARGIN, ROW_3, "empty")

    # the tableau: piles overlapping downwards, top card last and whole
    room = STATUS_Y - 6 - TABLEAU_Y - CARD_H
    for i, pile in enumerate(state.tableau):
        x = MARGIN + i * COLUMN
        offered = state.choosing_base and i < 4
        p.text(x, TABLEAU_Y - LABEL_H, f"base {i + 1}" if offered else f"t{i + 1}", 10, HIGHLIGHT if offered else LABEL,
               "bold" if offered else "regular")  # fmt: skip
        if not pile:
            _slot_text(p, x, TABLEAU_Y, "space")
            continue
        step = min(TABLEAU_STEP, room / max(1, len(pile) - 1))
        if offered:
            _halo(p, x, TABLEAU_Y)
        _fan_down(p, pile, x, TABLEAU_Y, step)

    # the status line (what to do now, or how the game ended)
    for i, line in enumerate(_wrap(p, status_line(state), right - MARGIN, 11)[:2]):
        p.text(MARGIN, STATUS_Y + i * 14, line, 11, TITLE if i == 0 else LABEL)
    return im


def _fan_down(p: _Painter, cards: Sequence[int], x: float, y: float, step: float) -> None:
    for i, card in enumerate(cards):
        p.paste(_card_tile(card, p.scale), x, y + i * step)


def _wrap(p: _Painter, text: str, width: float, size: float) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if line and p.length(candidate, size) > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    return [*lines, line] if line else lines


# ------------------------------------------------------------------------ PNG
PALETTE_SIZE = 24
COMPRESS_LEVEL = 6
"""zlib level 6 with the Z_FILTERED strategy: twice as fast as the default strategy
on these pictures for 1 % more bytes; level 9 takes 50 ms for 10 % fewer."""


@cache
def _palette(scale: int) -> Image.Image:
    """One fixed palette: the flat colours, plus the blends that anti-aliased text
    makes, learnt once from a sheet of every card face and a sample table."""
    exact = [FELT, SLOT, SLOT_EDGE, LABEL, TITLE, CARD, CARD_EDGE, RED, BLACK, BACK, HIGHLIGHT]
    colours = [tuple(bytes.fromhex(c[1:7])) for c in exact]
    tiles = [_card_tile(card, scale) for card in range(52)]
    sheet = Image.new("RGB", (13 * CARD_W * scale, 4 * CARD_H * scale + HEIGHT * scale), FELT)
    for card, tile in enumerate(tiles):
        sheet.paste(tile, ((card % 13) * CARD_W * scale, (card // 13) * CARD_H * scale), tile)
    sheet.paste(_draw(_sample_state(), scale), (0, 4 * CARD_H * scale))
    learnt = sheet.quantize(PALETTE_SIZE - len(colours), Image.Quantize.MEDIANCUT).getpalette() or []
    for i in range(0, len(learnt), 3):
        blend = tuple(learnt[i : i + 3])
        # Pillow maps colours through a 6-bit cache: a learnt colour near an exact one
        # could capture that flat colour, so such blends are left out
        if all(sum(abs(a - b) for a, b in zip(blend, c, strict=True)) > 24 for c in colours):
            colours.append(blend)
    pal = Image.new("P", (1, 1))
    pal.putpalette([v for c in colours[:PALETTE_SIZE] for v in c])
    return pal


def _sample_state() -> State:
    """A table with every kind of pile in use (for learning the palette)."""
    state = new_game("terrace", 1)
    for _ in range(12):
        moves = state.legal_moves()
        if not moves:
            break
        state = state.play(moves[0])
    return state


def table_png(state: State, scale: int = SCALE) -> bytes:
    """The table as a palette PNG, ``WIDTH * scale`` x ``HEIGHT * scale`` pixels
    (960 x 1160 at scale 2: sharp when shown at 480 to 560 CSS pixels wide)."""
    mapped = _draw(state, scale).quantize(palette=_palette(scale), dither=Image.Dither.NONE)
    buf = io.BytesIO()
    mapped.save(buf, "PNG", compress_level=COMPRESS_LEVEL, compress_type=zlib.Z_FILTERED)
    return buf.getvalue()


# ------------------------------------------------------------------------ words
def picture_alt(state: State) -> str:
    """The table in words, short: for the image's alt text and screen readers."""
    v = state.variant

    def cards(pile: Sequence[int]) -> str:
        return " ".join(card_text(c) for c in pile) if pile else "empty"

    base = "base to choose from t1-t4" if state.choosing_base else f"base {_plural(RANK_NAMES[state.base_rank])}"
    parts = [f"Terrace patience, {v.name}, deal {state.deal}: score {state.score}/104, {base}."]
    waste = f"waste top {card_text(state.waste[-1])} ({len(state.waste)})" if state.waste else "waste empty"
    parts.append(f"Stock {len(state.stock)}, {waste}.")
    parts.append(f"Reserve {len(state.reserve)}" + (f", top {card_text(state.reserve[-1])}." if state.reserve else "."))
    found = [f"f{i} {card_text(f[-1])} ({len(f)})" for i, f in enumerate(state.foundations, 1) if f]
    parts.append(f"Foundations: {', '.join(found) if found else 'none yet'}.")
    parts.append("Tableau: " + "; ".join(f"t{i} {cards(p)}" for i, p in enumerate(state.tableau, 1)) + ".")
    parts.append(status_line(state))
    return " ".join(parts)


__all__ = ["HEIGHT", "SCALE", "WIDTH", "has_symbols", "picture_alt", "suit_mark", "table_png"]
