"""The HTML part of a board mail (issue 16): what the text part says, with the picture.

The mail is multipart/alternative: the text part stays the record (it is what
pbmserv users and filters read), the HTML part adds the board picture as an inline
image (``cid:``).  The template is filled with the same :class:`GameView` as the
text templates, so both parts cannot drift apart in what they show.  The Jinja
environment autoescapes ``*.html`` templates (and ``templates/board.html`` marks
every value with ``|e`` as well: escaping twice is a no-op on Jinja's markup).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote

from markupsafe import Markup, escape

from ..gametypes import DEFAULT_GAME_TYPE, board_rules
from . import CommentView, GameView, environment

PAGE_BG = "#FFFFFF"
INK = "#1A1A1A"
MUTED = "#555555"
RULE = "#BBBBBB"
QUOTE_BG = "#F4F4F4"
LINK = "#0645AD"
LINK_STYLE = f"display:inline-block;padding:0 6px;font-size:15px;color:{LINK};text-decoration:underline;white-space:nowrap;"
"""a move link: underlined (a link by its look, not its colour only), room for a finger"""


def board_html(
    view: GameView,
    *,
    headline: str,
    comments: list[CommentView],
    cid: str,
    alt: str,
    reply_hint: str = "",
    move_links: str = "",
    notices: Sequence[str] = (),
) -> str:
    """The HTML document of a board mail.  ``move_links``: the block of
    :func:`move_links_html` (HTML), after the picture.  ``notices``: lines of
    plain text after the comments, as the text part has them (a player whose
    mail bounces: issue 43).

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
            move_links=Markup(move_links),  # noqa: S704 (our own HTML: move_links_html)
            notices=list(notices),
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
    move_links: str = "",
) -> str:
    """The HTML document of a solitaire's board mail: the heading and headline, the
    table as a picture (``cid`` without angle brackets, ``alt`` the table in words),
    the ASCII table, the lines after it (moves, notes), the move links
    (:func:`move_links_html`), the reply hint."""
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
            move_links=Markup(move_links),  # noqa: S704 (our own HTML: move_links_html)
            width=SOLITAIRE_PICTURE_WIDTH,
            page_bg=PAGE_BG,
            ink=INK,
            muted=MUTED,
        )
    )
    return text.rstrip("\n") + "\n"


HTML_CLIP_BYTES = 102_000
"""Gmail shows only the first 102 kB of a mail's HTML ("[Message clipped]"): a board
mail's HTML part, move links and all, stays under it (tests/service/test_move_links.py;
figures: bench/move_links.py)"""

MoveGroups = Sequence[tuple[str, Sequence[tuple[str, str, bool]]]]
"""(piece, [(target, move text, is capture), …]) as :meth:`BoardRules.move_choices` gives them"""


def mailto(address: str, subject: str, body: str) -> str:
    """A ``mailto:`` URL (RFC 6068) to ``address`` with ``subject`` and ``body``, each
    percent-encoded (UTF-8)."""
    return f"mailto:{quote(address, safe='@+')}?subject={quote(subject, safe='')}&body={quote(body, safe='')}"


def reply_subject(subject: str) -> str:
    """The Subject a reply to a mail titled ``subject`` has (one ``Re:``)."""
    return subject if subject[:3].lower() == "re:" else f"Re: {subject}"


def move_links_html(groups: MoveGroups, *, address: str, subject: str, heading: str, note: str) -> str:
    """The move links (issue 39): each target of ``groups`` a ``mailto:`` link to
    ``address`` (the player's reply-key address) with the reply's Subject to a mail
    titled ``subject`` and the move text as the body.  '' when there is no move."""
    if not any(targets for _, targets in groups):
        return ""
    # mailto(address, reply_subject(subject), move) for each move, its fixed part
    # encoded and escaped once: a percent-encoded move has nothing left to escape
    head = str(escape(mailto(address, reply_subject(subject), "")))
    style = str(escape(LINK_STYLE))
    linked = [(piece, _links(piece, [(label, head + _quoted(move), capture) for label, move, capture in targets], style))
              for piece, targets in groups if targets]  # fmt: skip
    text = (
        environment()
        .get_template("move_links.html")
        .render(groups=linked, heading=heading, note=note, ink=INK, muted=MUTED, rule=RULE)
    )
    # ASCII (any other character as a reference) in lines well under 998 characters: the
    # HTML part around it can then go as it is (7bit), with no quoted-printable to encode
    return text.rstrip("\n").encode("ascii", "xmlcharrefreplace").decode("ascii") + "\n"


def _links(piece: str, targets: Sequence[tuple[str, str, bool]], style: str) -> Markup:
    """One piece's row of move links (``href`` already escaped), built as a string (a
    template loop cost five times as much per link; a board mail to the player to move
    has up to ~90 of them), one link a line."""
    said = str(escape(piece))
    links = []
    for label, href, capture in targets:
        shown = str(escape(label))
        aria = f' aria-label="{said} {"takes" if capture else "to"} {shown}"' if piece else ""
        links.append(f'<a href="{href}" style="{style}"{aria}>{"&#215;" if capture else ""}{shown}</a>')
    # a line each (a line break is a space in HTML); every value in it was escaped above
    # or is a percent-encoded URL
    return Markup("\n&#183; ".join(links))  # noqa: S704


_URL_SAFE = re.compile(r"[A-Za-z0-9_.~-]*")
"""what ``quote(text, safe="")`` leaves as it is"""


def _quoted(move: str) -> str:
    """``quote(move, safe="")``; a move of letters, digits and dashes (nearly all) as it is."""
    return move if _URL_SAFE.fullmatch(move) else quote(move, safe="")


def play_link_html(url: str, label: str) -> str:
    """The play page's link (issue 39) under the move links of the board mail to
    the player to move: ``label`` and the ``url`` (``/play/KEY`` on the archive)."""
    return environment().get_template("play_link.html").render(url=url, label=label, link_style=LINK_STYLE, ink=INK).rstrip("\n") + "\n"
