"""The rating-over-time chart, drawn on the server as SVG (no script, no library):
a page without JavaScript shows it, and it is cached with the page."""

from __future__ import annotations

from html import escape

from ..elo import START
from .ratings import Point

WIDTH, HEIGHT, PAD = 560, 200, 36


def rating_chart(points: list[Point], label: str) -> str:
    """A line through the rating after each rated game (x = game count, so a burst of
    games on one day stays readable), with the start value and the extremes labelled."""
    values = [START] + [p.rating for p in points]
    low, high = min(values), max(values)
    if high - low < 50:
        mid = (high + low) / 2
        low, high = mid - 25, mid + 25
    span_x = max(1, len(values) - 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = PAD + (WIDTH - 2 * PAD) * i / span_x
        y = HEIGHT - PAD + (v - low) / (high - low) * (2 * PAD - HEIGHT)
        return round(x, 1), round(y, 1)

    coords = [xy(i, v) for i, v in enumerate(values)]
    line = " ".join(f"{x},{y}" for x, y in coords)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}"'
        f' role="img" aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff" stroke="#cccccc"/>',
    ]
    for v in (low, (low + high) / 2, high):
        _, y = xy(0, v)
        parts.append(f'<line x1="{PAD}" y1="{y}" x2="{WIDTH - PAD}" y2="{y}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{PAD - 4}" y="{y + 4}" font-size="10" text-anchor="end">{round(v)}</text>')
    parts.append(f'<polyline points="{line}" fill="none" stroke="#0072B2" stroke-width="2"/>')
    for (x, y), point in zip(coords[1:], points, strict=True):
        parts.append(
            f'<circle cx="{x}" cy="{y}" r="2.5" fill="#0072B2"><title>board {point.board_number}, '
            f"{point.when:%Y-%m-%d}: {round(point.rating)}</title></circle>"
        )
    parts.append(f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" font-size="10" text-anchor="end">{len(points)} rated game{"" if len(points) == 1 else "s"}</text>')
    parts.append("</svg>")
    return "".join(parts)
