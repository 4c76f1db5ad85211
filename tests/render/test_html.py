"""The HTML part of a board mail: same facts as the text part, all player text escaped."""

from __future__ import annotations

import html
from html.parser import HTMLParser

from pbmserv_terrace.games.terrace.picture import ARMY_FILL, WIDTH, picture_alt
from pbmserv_terrace.render import CommentView
from pbmserv_terrace.render.html import board_html
from tests.games.terrace.cases import HOSTILE, game_view, golden_cases


class Collect(HTMLParser):
    """Tags with their attributes, and the text inside <pre>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.pre: list[str] = []
        self.text: list[str] = []
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_pre = self._in_pre or tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        (self.pre if self._in_pre else self.text).append(data)

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for t, attrs in self.tags if t == tag]


def render(comments: list[CommentView] | None = None, names: list[str] | None = None) -> tuple[str, Collect]:
    case = golden_cases()["example-4p"]
    view = game_view(case, names)
    out = board_html(
        view,
        headline="player1 moved <b>",
        comments=HOSTILE if comments is None else comments,
        cid="board42.png@terrace",
        alt=picture_alt(case.pos),
        reply_hint="Reply with: terrace move 42 USERID PASSWORD MOVE",
    )
    parsed = Collect()
    parsed.feed(out)
    return out, parsed


def test_hostile_comments_show_as_text() -> None:
    out, parsed = render()
    assert not parsed.named("script"), "a comment must never become a script element"
    imgs = parsed.named("img")
    assert len(imgs) == 1 and imgs[0]["src"] == "cid:board42.png@terrace", "only the board picture is an image"
    assert not any("onerror" in attrs for _, attrs in parsed.tags)
    text = "".join(parsed.text)
    assert "<script>alert('x')</script>" in text
    assert '<img src=x onerror="alert(1)"> & {{ 7*7 }}' in text
    assert "<b>eve</b> writes:" in text and "mallory writes:" in text
    assert "<b>" not in out.split("<body", 1)[1].replace("&lt;b&gt;", ""), "no markup from player text"


def test_hostile_player_names_are_escaped() -> None:
    _out, parsed = render(names=['a"><script>x</script>', "b", "c", "d"])
    assert not parsed.named("script")
    assert 'a"><script>x</script>' in "".join(parsed.text)


def test_picture_reference_alt_and_size() -> None:
    _, parsed = render()
    img = parsed.named("img")[0]
    assert img["width"] == str(WIDTH), "shown at half the PNG's width (scale 2)"
    alt = img["alt"] or ""
    assert alt == picture_alt(golden_cases()["example-4p"].pos), "quotes and primes survive the attribute"
    assert "t' on" in alt


def test_says_what_the_text_part_says() -> None:
    case = golden_cases()["example-4p"]
    view = game_view(case)
    _, parsed = render()
    text = html.unescape("".join(parsed.text))
    for line in view.status_lines:
        assert line in text
    for p in view.players:
        assert p.name in text and p.letters in text
    assert "Subscribers: watcher" in text
    assert "Reply with: terrace move 42" in text
    assert "Terrace Board 42: player1 moved <b>" in text
    assert "".join(parsed.pre) == view.board, "the ASCII board, whole, in <pre>"
    rows = parsed.named("tr")
    players_rows = len(view.players)
    assert len(rows) == players_rows + 1 + len(view.move_rows), "players, move header and one row per round"
    cells = [c for row in view.move_rows for c in row.cells if c]
    assert cells and all(c in text for c in cells)


def test_colour_swatches_and_inline_css_only() -> None:
    out, parsed = render()
    assert not parsed.named("style") and not parsed.named("link") and not parsed.named("script")
    for army in (1, 2, 3, 4):
        assert f"background:{ARMY_FILL[army]}" in out
    body = parsed.named("body")[0]["style"] or ""
    assert "background:" in body and "color:" in body, "explicit colours for dark-mode clients"


def test_no_comment_no_comment_block() -> None:
    out, _ = render(comments=[CommentView("x", "")])
    assert "writes:" not in out


def test_bidi_controls_in_player_text_stay_inside_their_element() -> None:
    """Issue 36: a U+202E (right-to-left override) in a comment or a name must not
    reverse the text after it: each is isolated (<bdi>, dir=auto)."""
    out, parsed = render(comments=[CommentView("eve\u202e", "evil \u202etxt.exe\nnext line")])
    assert parsed.named("bdi") and "eve\u202e</bdi> writes:" in out
    block = [attrs for attrs in parsed.named("div") if attrs.get("dir") == "auto"]
    assert block and "unicode-bidi:isolate" in (block[0].get("style") or "")
    assert 'dir="auto" style="unicode-bidi:isolate;white-space:pre-wrap;' in out.split("evil \u202e")[0][-400:]


def test_html_templates_are_autoescaped_and_text_templates_are_not() -> None:
    """A value a template forgets to mark with |e is still escaped in the HTML
    part; the plain-text mails are written as they are (issue 36)."""
    from pbmserv_terrace.render import environment

    env = environment()
    assert env.autoescape("digest.html") and env.autoescape("solitaire.html")  # type: ignore[operator]
    assert not env.autoescape("update.txt")  # type: ignore[operator]
