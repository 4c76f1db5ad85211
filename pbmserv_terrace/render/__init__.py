"""Reply text: Jinja templates (top-level ``templates/``, shipped in the wheel as
``pbmserv_terrace/templates``) filled from plain view objects.

Templates never see ORM objects, only the views below, so what a mail can show is
decided here.  Autoescaping is off (the mails are plain text); player text is data
to Jinja and is never evaluated, so template syntax in a comment prints as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

COMMENT_RULE = "*" * 60


def templates_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "error.txt").exists():
            return candidate
    raise FileNotFoundError("the reply templates are missing from the installation")


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        # the mail's HTML parts (*.html) escape every value, even one a template
        # forgets to mark with |e; the plain-text templates are written as they are
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default_for_string=False, default=False),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        # the templates ship with the package: asking the file system whether one
        # changed, at every mail, was 3 % of a move command
        auto_reload=False,
    )
    env.globals["COMMENT_RULE"] = COMMENT_RULE
    return env


def render(template: str, **values: Any) -> str:
    """Fill ``template`` and normalise: no trailing spaces, one final newline."""
    text = environment().get_template(template).render(**values)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


@dataclass
class PlayerView:
    name: str
    army: int
    letters: str
    """how the army is printed: ``t``, ``T``, ``t'``, ``T'``"""
    status: str = ""
    """'' while playing, else 'resigned', 'eliminated', 'winner' …"""


@dataclass
class MoveRow:
    number: int
    cells: list[str]


@dataclass
class GameView:
    title: str
    """Terrace / Terrace6x6"""
    board_number: int
    variant: str
    players: list[PlayerView]
    status_lines: list[str]
    move_header: list[str]
    move_rows: list[MoveRow]
    board: str
    subscribers: list[str] = field(default_factory=list)
    rating_lines: list[str] = field(default_factory=list)
    options_line: str = ""
    omitted_rounds: int = 0
    col_width: int = 12
    private_lines: list[str] = field(default_factory=list)
    """lines only the seat's owner sees (queued / submitted moves in showas)"""
    position: str = ""
    """the position shown (TPN), for the picture"""
    last_move: str = ""
    """the last ply in canonical notation (``C-d2-e3:B``), '' when none is shown"""
    game_type: str = ""
    """the game's name in the game table (whose rules draw the picture)"""
    web_url: str = ""
    """the board's page in the web archive ('' when the server links none)"""


@dataclass
class CommentView:
    author: str
    text: str


def move_table(
    names: list[str], plies: list[tuple[int, str]], *, last_rounds: int | None = None
) -> tuple[list[MoveRow], int, int]:
    """Lay out the move list: one column per seat, one row per round.

    ``plies`` are (seat, move text) in ply order; a new row starts whenever the seat
    does not follow the previous one (so eliminated seats leave gaps, not shifts).
    Returns the rows, the number of rounds left out, and the column width.
    """
    rows: list[list[str]] = []
    current: list[str] | None = None
    last_seat = 0
    for seat, text in plies:
        if current is None or seat <= last_seat:
            current = [""] * len(names)
            rows.append(current)
        current[seat - 1] = text
        last_seat = seat
    width = max([12, *(len(n) for n in names), *(len(c) for r in rows for c in r)]) + 2
    numbered = [MoveRow(i + 1, r) for i, r in enumerate(rows)]
    omitted = 0
    if last_rounds is not None and len(numbered) > last_rounds:
        omitted = len(numbered) - last_rounds
        numbered = numbered[omitted:]
    return numbered, omitted, width
