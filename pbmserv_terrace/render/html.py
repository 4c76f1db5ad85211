"""The HTML part of a board mail (issue 16): what the text part says, with the picture.

The mail is multipart/alternative: the text part stays the record (it is what
pbmserv users and filters read), the HTML part adds the board picture as an inline
image (``cid:``).  It is made from the same :class:`GameView` as the text
templates, so both parts cannot drift apart in what they show.  A board mail's
HTML (:func:`board_html`, :func:`move_links_html`, :func:`play_link_html`) is
built as strings, every value escaped by :func:`_e`: it is in every move's
replies, and templates cost several times as much (issue 43).  The other HTML
parts (solitaire, digest, review) are Jinja templates, which the environment
autoescapes (``*.html``).
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
    """The HTML document of a board mail: the same facts as the text part
    (``_game.txt``), plus the board picture.  ``move_links``: the block of
    :func:`move_links_html` (HTML), after the picture.  ``notices``: lines of
    plain text after the comments, as the text part has them (a player whose
    mail bounces: issue 43).

    ``cid`` is the Content-ID of the PNG part (without angle brackets), ``alt`` the
    picture's alt text (the game's ``picture_alt``).  The image is declared at the
    game's ``picture_width`` CSS pixels, half the PNG's width, so it is sharp on
    high-density screens.

    Built as strings, as :func:`move_links_html` is: every board mail has one, and
    a template's per-value escaping and loops were 6 % of a move command (issue
    43).  Every value from the view or the caller goes through :func:`_e` (escaped,
    player text included); what does not is this module's constants or markup.
    Inline styles only: mail clients drop <style> blocks.  Colours are set
    explicitly so dark-mode clients keep them.
    """
    rules = board_rules(view.game_type or DEFAULT_GAME_TYPE)
    width = int(rules.picture_width)
    title = f"{_e(view.title)} Board {_e(view.board_number)}" + (f": {_e(headline)}" if headline else "")
    line = f'<p style="margin:0 0 2px 0;color:{INK};">'
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="color-scheme" content="light">',
        '<meta name="supported-color-schemes" content="light">',
        f"<title>{title}</title>",
        "</head>",
        f'<body style="margin:0;padding:0;background:{PAGE_BG};color:{INK};">',
        f'<div style="max-width:680px;margin:0 auto;padding:16px;background:{PAGE_BG};color:{INK};'
        "font-family:Verdana,'DejaVu Sans',Arial,sans-serif;font-size:14px;line-height:1.4;\">",
        f'<h1 style="font-size:18px;margin:0 0 8px 0;color:{INK};">{title}</h1>',
    ]
    out += [f"{line}{_e(text)}</p>" for text in view.status_lines]
    if view.rating_lines:
        out.append(f'<p style="margin:10px 0 2px 0;color:{INK};">Rating changes:</p>')
        out += [f'<p style="margin:0 0 2px 16px;color:{INK};">{_e(text)}</p>' for text in view.rating_lines]
    if view.private_lines:
        out.append('<div style="margin:10px 0 0 0;">')
        out += [f"{line}{_e(text)}</p>" for text in view.private_lines]
        out.append("</div>")
    out.append(f'<p style="margin:12px 0 4px 0;color:{INK};">Players ({_e(view.variant)}{_e(view.options_line)}):</p>')
    out.append(f'<table role="presentation" style="border-collapse:collapse;margin:0 0 12px 8px;color:{INK};">')
    for p in view.players:
        name, fill = rules.army_colour(p.army)
        status = f" ({_e(p.status)})" if p.status else ""
        out += [
            "<tr>",
            '<td style="padding:2px 6px 2px 0;"><span style="display:inline-block;width:14px;height:14px;'
            f'border:1px solid #000000;border-radius:7px;background:{_e(fill)};vertical-align:middle;"></span></td>',
            f'<td style="padding:2px 8px 2px 0;{_MONO}">{_e(p.letters)}</td>',
            f'<td style="padding:2px 8px 2px 0;">{_e(p.name)}{status}</td>',
            f'<td style="padding:2px 0;color:{MUTED};font-size:12px;">{_e(name)}</td>',
            "</tr>",
        ]
    out.append("</table>")
    if view.move_rows:
        if view.omitted_rounds:
            out.append(
                f'<p style="margin:0 0 4px 0;color:{INK};">Moves (last {len(view.move_rows)} rounds; '
                f"'show {_e(view.board_number)}' lists all):</p>"
            )
        else:
            out.append(f'<p style="margin:0 0 4px 0;color:{INK};">Moves:</p>')
        out.append(f'<table style="border-collapse:collapse;margin:0 0 12px 8px;{_MONO}font-size:13px;color:{INK};">')
        head = f'<th style="padding:2px 14px 2px 0;text-align:left;border-bottom:1px solid {RULE};">'
        out.append(
            f'<tr><th style="padding:2px 10px 2px 0;text-align:right;border-bottom:1px solid {RULE};"></th>'
            + "".join(f"{head}{_e(name)}</th>" for name in view.move_header)
            + "</tr>"
        )
        number = f'<tr><td style="padding:1px 10px 1px 0;text-align:right;color:{MUTED};">'
        for row in view.move_rows:
            cells = "".join(f'<td style="padding:1px 14px 1px 0;">{_e(cell)}</td>' for cell in row.cells)
            out.append(f"{number}{_e(row.number)}.</td>{cells}</tr>")
        out.append("</table>")
    else:
        out.append(f'<p style="margin:0 0 12px 0;color:{INK};">No moves yet.</p>')
    out += [
        f'<p style="margin:0 0 8px 0;"><img src="cid:{_e(cid)}" alt="{_e(alt)}" width="{width}" height="{width}"'
        f' style="display:block;width:{width}px;height:{width}px;border:0;"></p>',
        f'<details style="margin:0 0 12px 0;color:{MUTED};font-size:12px;"><summary>The board as text</summary>',
        f'<pre style="margin:4px 0 0 0;{_MONO}font-size:10px;line-height:1.15;color:{INK};background:{PAGE_BG};">'
        f"{_e(view.board)}</pre>",
        "</details>",
    ]
    if move_links:
        out.append(move_links)  # our own HTML (move_links_html), its blank line after it kept
    if view.subscribers:
        out.append(f'<p style="margin:0 0 12px 0;color:{INK};">Subscribers: {", ".join(map(_e, view.subscribers))}</p>')
    for comment in comments:
        if comment.text:
            out += [
                f'<div style="margin:0 0 12px 0;padding:8px 10px;border-left:4px solid {RULE};background:{QUOTE_BG};color:{INK};">',
                f'<p style="margin:0 0 4px 0;font-weight:bold;color:{INK};"><bdi>{_e(comment.author)}</bdi> writes:</p>',
                f'<div dir="auto" style="unicode-bidi:isolate;white-space:pre-wrap;{_MONO}font-size:13px;color:{INK};">'
                f"{_e(comment.text)}</div>",
                "</div>",
            ]
    out += [f'<p style="margin:0 0 12px 0;color:{INK};font-weight:bold;">{_e(notice)}</p>' for notice in notices]
    if view.web_url:
        url = _e(view.web_url)
        out.append(
            f'<p style="margin:12px 0 0 0;color:{INK};">This board on the web: <a href="{url}" style="color:{LINK};">{url}</a></p>'
        )
    if reply_hint:
        out.append(f'<p style="margin:12px 0 0 0;color:{MUTED};font-size:12px;">{_e(reply_hint)}</p>')
    out += ["</div>", "</body>", "</html>\n"]
    return "\n".join(out)


_MONO = "font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;"


def _e(value: object) -> str:
    """``value`` as HTML text: escaped (``& < > " '``)."""
    return str(escape(value))


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
    titled ``subject`` and the move text as the body.  '' when there is no move.

    Built as strings, not by a template (a board mail to the player to move has up
    to ~90 links, and a template's loop and escaping cost several times as much:
    bench/move_links.py); every value is escaped here, what is not is a
    percent-encoded URL or one of this module's constants."""
    if not any(targets for _, targets in groups):
        return ""
    # mailto(address, reply_subject(subject), move) for each move, its fixed part
    # encoded and escaped once: a percent-encoded move has nothing left to escape
    head = str(escape(mailto(address, reply_subject(subject), "")))
    style = str(escape(LINK_STYLE))
    lines = [
        f'<div style="margin:0 0 12px 0;padding:8px 10px;border:1px solid {RULE};color:{INK};">',
        f'<p style="margin:0 0 2px 0;font-weight:bold;color:{INK};">{escape(heading)}</p>',
        f'<p style="margin:0 0 4px 0;color:{MUTED};font-size:12px;">{escape(note)}</p>',
    ]
    for piece, targets in groups:
        if not targets:
            continue
        said = str(escape(piece))
        row = _links(said, [(label, head + _quoted(move), capture) for label, move, capture in targets], style)
        shown = f"{_PIECE_OPEN}{said}</b> &#8594; " if piece else ""
        lines.append(f'<p style="margin:0;line-height:2.4;color:{INK};">{shown}{row}</p>')
    lines.append("</div>\n")
    # ASCII (any other character as a reference) in lines well under 998 characters: the
    # HTML part around it can then go as it is (7bit), with no quoted-printable to encode
    text = "\n".join(lines)
    return text if text.isascii() else text.encode("ascii", "xmlcharrefreplace").decode("ascii")


_PIECE_OPEN = "<b style=\"font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;white-space:nowrap;\">"


def _links(said: str, targets: Sequence[tuple[str, str, bool]], style: str) -> str:
    """One piece's row of move links (``said``: the piece's name, escaped; each
    ``href`` already escaped), one link a line."""
    links = []
    for label, href, capture in targets:
        shown = label if label.isalnum() else str(escape(label))  # a square's name needs none
        aria = f' aria-label="{said} {"takes" if capture else "to"} {shown}"' if said else ""
        links.append(f'<a href="{href}" style="{style}"{aria}>{"&#215;" if capture else ""}{shown}</a>')
    # a line each (a line break is a space in HTML)
    return "\n&#183; ".join(links)


_URL_SAFE = re.compile(r"[A-Za-z0-9_.~-]*")
"""what ``quote(text, safe="")`` leaves as it is"""


def _quoted(move: str) -> str:
    """``quote(move, safe="")``; a move of letters, digits and dashes (nearly all) as it is."""
    return move if _URL_SAFE.fullmatch(move) else quote(move, safe="")


def play_link_html(url: str, label: str) -> str:
    """The play page's link (issue 39) under the move links of the board mail to
    the player to move: ``label`` and the ``url`` (``/play/KEY`` on the archive)."""
    return f'<p style="margin:0 0 12px 0;color:{INK};">{_e(label)} <a href="{_e(url)}" style="{_e(LINK_STYLE)}">open your play page</a></p>\n'
