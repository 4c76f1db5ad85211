"""The HTML part of a board mail (issue 16): what the text part says, with the picture.

The mail is multipart/alternative: the text part stays the record (it is what
pbmserv users and filters read), the HTML part adds the board picture as an inline
image (``cid:``).  The template is filled with the same :class:`GameView` as the
text templates, so both parts cannot drift apart in what they show.  The Jinja
environment autoescapes ``*.html`` templates (and ``templates/board.html`` marks
every value with ``|e`` as well: escaping twice is a no-op on Jinja's markup).
"""

from __future__ import annotations

from ..gametypes import DEFAULT_GAME_TYPE, board_rules
from . import CommentView, GameView, environment

PAGE_BG = "#FFFFFF"
INK = "#1A1A1A"
MUTED = "#555555"
RULE = "#BBBBBB"
QUOTE_BG = "#F4F4F4"


def board_html(
    view: GameView,
    *,
    headline: str,
    comments: list[CommentView],
    cid: str,
    alt: str,
    reply_hint: str = "",
) -> str:
    """The HTML document of a board mail.

    ``cid`` is the Content-ID of the PNG part (without angle brackets), ``alt`` the
    picture's alt text (the game's ``picture_alt``).  The image is declared at the
    game's ``picture_width`` CSS pixels, half the PNG's width, so it is sharp on
    high-density screens.
    """
    rules = board_rules(view.game_type or DEFAULT_GAME_TYPE)
    colours = {p.army: rules.army_colour(p.army) for p in view.players}
    text = (
        environment()
        .get_template("board.html")
        .render(
            game=view,
            headline=headline,
            comments=comments,
            cid=cid,
            alt=alt,
            reply_hint=reply_hint,
            width=rules.picture_width,
            army_fill={army: fill for army, (_, fill) in colours.items()},
            army_colour_name={army: name for army, (name, _) in colours.items()},
            page_bg=PAGE_BG,
            ink=INK,
            muted=MUTED,
            rule=RULE,
            quote_bg=QUOTE_BG,
        )
    )
    return text.rstrip("\n") + "\n"


SOLITAIRE_PICTURE_WIDTH = 560
"""CSS pixels a solitaire's table picture is shown at, at most (the whole width on a
phone); the game draws it at about twice that many pixels, so it stays sharp."""


def solitaire_html(
    *,
    heading: str,
    headline: str,
    cid: str,
    alt: str,
    table: str,
    lines: list[str],
    reply_hint: str = "",
) -> str:
    """The HTML document of a solitaire's board mail: the heading and headline, the
    table as a picture (``cid`` without angle brackets, ``alt`` the table in words),
    the ASCII table, the lines after it (moves, notes), the reply hint."""
    text = (
        environment()
        .get_template("solitaire.html")
        .render(
            heading=heading,
            headline=headline,
            cid=cid,
            alt=alt,
            table=table,
            lines=[line for line in lines if line.strip()],
            reply_hint=reply_hint,
            width=SOLITAIRE_PICTURE_WIDTH,
            page_bg=PAGE_BG,
            ink=INK,
            muted=MUTED,
        )
    )
    return text.rstrip("\n") + "\n"
