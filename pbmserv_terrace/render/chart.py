"""The evaluation chart of a game review (issue 42) as a PNG, drawn by Pillow when
the review mail is composed (:mod:`pbmserv_terrace.app.compose`, from the row's
picture spec: :func:`pbmserv_terrace.service.reviews.chart_spec`).

One point per ply (the start first), from the reader's side: up is better for the
reader.  The vertical scale is the square root of the evaluation's share of
``scale`` (a won game is the top edge), so the small swings of a level game stay
visible beside a won one.  Mistakes are dots in their player's colour, the turning
point a vertical line.  Drawn at twice the CSS size, sharp on dense screens.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence

from PIL import Image, ImageDraw

BACKGROUND = "#FFFFFF"
AXIS = "#BBBBBB"
LINE = "#1A1A1A"
ABOVE = "#E3F1E3"
BELOW = "#F6E3E3"
TURN = "#555555"
MAX_POINTS = 2_000
"""plies drawn at most (a longer game is cut: the chart is for a mail)"""


def _hex(colour: str) -> str:
    text = colour.strip()
    if len(text) == 7 and text.startswith("#") and all(c in "0123456789abcdefABCDEF" for c in text[1:]):
        return text
    return "#888888"


def evaluation_chart(
    values: Sequence[int],
    scale: int,
    marks: Sequence[tuple[int, str]] = (),
    turning: int | None = None,
    width: int = 560,
    height: int = 160,
) -> bytes:
    """The PNG (``2 * width`` by ``2 * height`` pixels) of ``values`` (the reader's
    evaluation after each ply; index 0 the start), ``marks`` (ply, #RRGGBB) and
    the ``turning`` ply."""
    values = list(values)[: MAX_POINTS + 1] or [0]
    scale = max(1, scale)
    w, h = max(40, min(width, 2_000)) * 2, max(40, min(height, 1_000)) * 2
    pad = 16
    image = Image.new("RGB", (w, h), BACKGROUND)
    draw = ImageDraw.Draw(image)
    mid = h // 2
    span = (h - 2 * pad) / 2
    last = max(1, len(values) - 1)

    def x(ply: int) -> float:
        return pad + (w - 2 * pad) * ply / last

    def y(value: int) -> float:
        share = max(-1.0, min(1.0, value / scale))
        return mid - math.copysign(math.sqrt(abs(share)), share) * span

    points = [(x(i), y(v)) for i, v in enumerate(values)]
    if len(points) > 1:
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            if (y0 - mid) * (y1 - mid) < 0:  # crosses the level line: a triangle each side
                xc = x0 + (x1 - x0) * (y0 - mid) / (y0 - y1)
                draw.polygon([(x0, mid), (x0, y0), (xc, mid)], fill=ABOVE if y0 < mid else BELOW)
                draw.polygon([(xc, mid), (x1, y1), (x1, mid)], fill=ABOVE if y1 < mid else BELOW)
            elif y0 != mid or y1 != mid:
                draw.polygon([(x0, mid), (x0, y0), (x1, y1), (x1, mid)], fill=ABOVE if min(y0, y1) < mid else BELOW)
    draw.line([(pad, mid), (w - pad, mid)], fill=AXIS, width=2)
    for edge in (pad, h - pad):
        draw.line([(pad, edge), (w - pad, edge)], fill=AXIS, width=1)
    if turning is not None and 0 < turning < len(values):
        tx = x(turning)
        for top in range(pad, h - pad, 12):
            draw.line([(tx, top), (tx, min(top + 6, h - pad))], fill=TURN, width=2)
    if len(points) > 1:
        draw.line(points, fill=LINE, width=3, joint="curve")
    for ply, colour in marks:
        if 0 < ply < len(values):
            px, py = points[ply]
            draw.ellipse([px - 7, py - 7, px + 7, py + 7], fill=_hex(colour), outline=LINE, width=2)
    out = io.BytesIO()
    image.save(out, "PNG", optimize=True)
    return out.getvalue()


__all__ = ["evaluation_chart"]
