"""A finished board's review on its page (issue 42 item 2): the engine's evaluation
after each ply as a graph, and each player's marked mistakes.

Drawn on the server as inline SVG (no script: a page without JavaScript shows it,
and it is kept with the page); every point of the graph links to the board at that
ply, and the same numbers are in a table under it (the graph's text alternative,
for screen readers and for anyone who would rather read).  It comes from the board's
``reviews`` row (:mod:`pbmserv_terrace.gametypes.review`'s JSON), which
:meth:`pbmserv_terrace.store.archive.Archive.game` reads only once the game is over:
a board in play never shows one, and a finished board shows it once it is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from ..gametypes.review import GameReview, review_from_json
from ..store.archive import GameRow, MoveRow

WIDTH, HEIGHT, PAD_X, PAD_Y = 600, 220, 44, 18
SOFT = 300
"""the graph's vertical scale: ``v / (|v| + SOFT)``, so a small advantage is visible
and a won game (the review's ``scale``) is near the edge, not off it"""
LINE, MARK, NOW, GRID = "#0072B2", "#D55E00", "#555555", "#e5e5e5"


@dataclass(frozen=True, slots=True)
class EvalRow:
    """One ply of the table: who moved, what, and the evaluation after it."""

    ply: int
    player: str
    move: str
    value: int
    """seat 1's evaluation after the ply"""
    words: str
    """who stands better, in words"""


@dataclass(frozen=True, slots=True)
class MistakeRow:
    ply: int
    player: str
    played: str
    better: str
    swing: int
    reason: str | None
    turning: bool
    """the game's turning point"""


@dataclass(frozen=True, slots=True)
class ReviewView:
    svg: str
    rows: tuple[EvalRow, ...]
    mistakes: tuple[MistakeRow, ...]
    first: str
    """the player whose advantage is up in the graph (seat 1)"""
    second: str
    turning_point: int | None
    nodes: int


def _y(value: int) -> float:
    """The graph's height of an evaluation (PAD_Y at the top: seat 1 winning)."""
    squashed = value / (abs(value) + SOFT)
    middle = HEIGHT / 2
    return round(middle - squashed * (middle - PAD_Y), 1)


def _words(value: int, first: str, second: str, scale: int) -> str:
    who = first if value > 0 else second
    size = abs(value)
    if size >= scale:
        return f"{who} wins"
    if size >= 400:
        return f"{who} is winning"
    if size >= 150:
        return f"{who} is clearly better"
    if size >= 40:
        return f"{who} is slightly better"
    return "level"


def chart(review: GameReview, url: str, ply: int, first: str, second: str) -> str:
    """The evaluation graph as inline SVG: seat 1's advantage up, each point a link
    to the board at that ply, the mistakes ringed and numbered as in the list, the
    turning point and the ply shown marked by lines."""
    evals = review.evaluations
    span = max(1, len(evals) - 1)

    def x(i: int) -> float:
        return round(PAD_X + (WIDTH - 2 * PAD_X) * i / span, 1)

    label = (f"Evaluation after each ply, from {first}'s side: up is {first} better, down is {second} better; "
             "the table below gives the same numbers")  # fmt: skip
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart evaluation" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-labelledby="eval-title">',
        f'<title id="eval-title">{escape(label)}</title>',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff" stroke="#cccccc"/>',
        f'<line x1="{PAD_X}" y1="{_y(0)}" x2="{WIDTH - PAD_X}" y2="{_y(0)}" stroke="{GRID}" stroke-width="2"/>',
        f'<text x="{PAD_X - 4}" y="{PAD_Y + 4}" font-size="10" text-anchor="end">{escape(first[:8])}</text>',
        f'<text x="{PAD_X - 4}" y="{_y(0) + 4}" font-size="10" text-anchor="end">level</text>',
        f'<text x="{PAD_X - 4}" y="{HEIGHT - PAD_Y + 4}" font-size="10" text-anchor="end">{escape(second[:8])}</text>',
    ]
    if review.turning_point is not None and review.turning_point < len(evals):
        tx = x(review.turning_point)
        parts.append(f'<line x1="{tx}" y1="{PAD_Y}" x2="{tx}" y2="{HEIGHT - PAD_Y}" stroke="{MARK}" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{tx + 3}" y="{PAD_Y + 10}" font-size="10" fill="{MARK}">turning point</text>')
    if 0 <= ply < len(evals):
        nx = x(ply)
        parts.append(f'<line x1="{nx}" y1="{PAD_Y}" x2="{nx}" y2="{HEIGHT - PAD_Y}" stroke="{NOW}" stroke-width="1"/>')
    points = " ".join(f"{x(i)},{_y(v)}" for i, v in enumerate(evals))
    parts.append(f'<polyline points="{points}" fill="none" stroke="{LINE}" stroke-width="2"/>')
    numbered = {m.ply: n for n, m in enumerate(sorted(review.mistakes, key=lambda m: m.ply), 1)}
    for i, v in enumerate(evals):
        tip = f"after ply {i}: {v:+d}" if i else f"the start: {v:+d}"
        parts.append(f'<a href="{escape(url)}?ply={i}"><circle cx="{x(i)}" cy="{_y(v)}" r="3" fill="{LINE}">'
                     f"<title>{escape(tip)}</title></circle></a>")  # fmt: skip
        if i in numbered:
            parts.append(f'<circle cx="{x(i)}" cy="{_y(v)}" r="7" fill="none" stroke="{MARK}" stroke-width="2"/>')
            above = _y(v) > HEIGHT / 2
            ty = _y(v) - 12 if above else _y(v) + 20
            parts.append(f'<text x="{x(i)}" y="{ty}" font-size="11" font-weight="bold" text-anchor="middle" '
                         f'fill="{MARK}">{numbered[i]}</text>')  # fmt: skip
    parts.append(f'<text x="{WIDTH - PAD_X}" y="{HEIGHT - 4}" font-size="10" text-anchor="end">ply {span}</text>')
    parts.append(f'<text x="{PAD_X}" y="{HEIGHT - 4}" font-size="10">start</text>')
    parts.append("</svg>")
    return "".join(parts)


def review_view(game: GameRow, moves: Sequence[MoveRow], url: str, ply: int) -> ReviewView | None:
    """What the page of ``game`` shows of its review: None while the game runs, when
    there is no review yet, or when the stored one cannot be read (never a broken page)."""
    if game.status == "active" or game.review is None or len(game.seats) != 2:
        return None
    try:
        review = review_from_json(game.review)
    except ValueError:
        return None
    names = {s.seat: s.userid for s in game.seats}
    first, second = names.get(1, "army 1"), names.get(2, "army 2")
    by_ply = {m.ply: m for m in moves}
    rows = []
    for i, value in enumerate(review.evaluations):
        record = by_ply.get(i)
        rows.append(EvalRow(i, names.get(record.seat, "") if record else "", record.move if record else "", value,
                            _words(value, first, second, review.scale)))  # fmt: skip
    mistakes = tuple(
        MistakeRow(m.ply, names.get(m.seat, f"army {m.seat}"), m.played, m.better, m.swing, m.reason, m.ply == review.turning_point)
        for m in sorted(review.mistakes, key=lambda m: m.ply)
    )
    return ReviewView(chart(review, url, ply, first, second), tuple(rows), mistakes, first, second, review.turning_point,
                      review.nodes)  # fmt: skip


__all__ = ["EvalRow", "MistakeRow", "ReviewView", "chart", "review_view"]
