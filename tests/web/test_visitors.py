"""What a visitor of the archive reads (issue 38): how to join (the server's own
address, as a ``mailto:`` link), a player's page in the third person, results
without nested parentheses, and replay positions named by the ply they follow
("after ply 8 of 18": a ply number names one ply of the move list)."""

from __future__ import annotations

import html
import re

import httpx
import pytest

from pbmserv_terrace.web.site import result_words

from .conftest import SERVER_ADDRESS, Site
from .fill import USERS, address

MAILTO = f'href="mailto:{SERVER_ADDRESS}?subject=help"'


def test_help_and_front_page_say_where_to_mail_with_a_mailto_link(site: Site) -> None:
    async def scenario(client: httpx.AsyncClient) -> tuple[str, str]:
        return (await client.get("/help")).text, (await client.get("/")).text

    help_page, home = site.run(scenario)
    for page in (help_page, home):
        assert f"{MAILTO}>{SERVER_ADDRESS}</a>" in page
        # the one address shown is the server's: never a player's
        assert page.count("@") == page.count(SERVER_ADDRESS), re.findall(r"[\w.+-]*@[\w.-]*", page)
        for userid in USERS:
            assert address(userid) not in page
    # the help texts name the address where they say "mail ... to"
    assert SERVER_ADDRESS in help_page.split("<pre>", 1)[1]
    assert "the server&#39;s address" not in help_page and "the server's address" not in help_page
    assert "signup" in home.split(MAILTO)[0].rsplit("<p", 1)[1]


def test_without_an_address_the_pages_still_say_how_to_join(site: Site) -> None:
    async def scenario(client: httpx.AsyncClient) -> tuple[str, str]:
        return (await client.get("/help")).text, (await client.get("/")).text

    help_page, home = site.run(scenario, address="")
    for page in (help_page, home):
        assert "mailto:" not in page and "@" not in page
    assert "the server&#39;s address" in help_page.split("<pre>", 1)[1]


@pytest.mark.parametrize(
    ("result", "players", "words"),
    [
        ("ann wins (ben resigned)", ("ann", "ben"), "ann won: ben resigned"),
        ("ben wins (ann forfeited)", ("ann", "ben"), "ben won: ann forfeited"),
        ("ann wins (captured the T)", ("ann", "ben"), "ann won: ann captured the T"),
        ("erin wins (is the last army on the board)", ("erin", "carol", "alice"),
         "erin won: erin is the last army on the board"),
        ("draw agreed", ("ann", "ben"), "draw agreed"),
        ("draw: ann has no legal move", ("ann", "ben"), "draw: ann has no legal move"),
        ("resigned, score 4/104 in 25 moves", ("ann",), "resigned, score 4/104 in 25 moves"),
        ("a (b) wins (c (d))", ("a (b)", "c"), "a (b) won: c (d)"),
    ],
)  # fmt: skip
def test_results_read_without_nested_parentheses(result: str, players: tuple[str, ...], words: str) -> None:
    assert result_words(result, players) == words


def test_player_page_speaks_of_the_player_not_to_them(site: Site) -> None:
    live = site.filled.boards["live"]
    finished = [site.filled.boards[name] for name in ("four", "three")]

    async def scenario(client: httpx.AsyncClient) -> dict[str, str]:
        return {u: (await client.get(f"/players/{u}")).text for u in USERS} | {"/": (await client.get("/")).text}

    pages = site.run(scenario)
    for userid in USERS:
        page = pages[userid]
        assert "your turn" not in page.lower() and " you " not in page.lower()
        assert "((" not in page and "))" not in page
    # (the games list's row: the list of boards waiting for the player comes first)
    row = pages["alice"].split(f'<a href="/boards/{live[0]}/{live[1]}">')[-1].split("</tr>")[0]
    mover = re.search(r"<td>(\w+) to move</td>", row)
    assert mover is not None and mover.group(1) in ("alice", "bob"), row
    for game_type, number in finished:
        row = pages["alice"].split(f'<a href="/boards/{game_type}/{number}">')[1].split("</tr>")[0]
        found = re.search(r"<td>(\w+) won: (\w+) ([^<]*)</td>", row)
        assert found is not None and found.group(1) == found.group(2), row
        assert "wins" not in row and "(" not in row.split("</td><td>")[-2], row
    # the front page's results read the same way
    assert " wins (" not in pages["/"] and " won: " in pages["/"]


def test_a_replay_position_says_after_which_ply(site: Site) -> None:
    name = "four"
    game_type, number = site.filled.boards[name]
    plies = len(site.filled.plies[name])
    base = f"/boards/{game_type}/{number}"

    async def scenario(client: httpx.AsyncClient) -> list[str]:
        return [(await client.get(f"{base}?ply={k}")).text for k in (0, 1, 8, plies)]

    start, first, eighth, last = site.run(scenario)
    info = {k: re.search(r'<p class="plyinfo" id="plyinfo">(.*?)</p>', page, re.S) for k, page in
            ((0, start), (1, first), (8, eighth), (plies, last))}  # fmt: skip
    texts = {k: html.unescape(re.sub(r"<[^>]+>", "", m.group(1))) for k, m in info.items() if m is not None}
    assert texts[0] == f"The start, before ply 1 of {plies}"
    assert texts[1] == f"After ply 1 of {plies}: {site.filled.plies[name][0]}"
    assert texts[8] == f"After ply 8 of {plies}: {site.filled.plies[name][7]}"
    assert texts[plies] == f"After ply {plies} of {plies}: {site.filled.plies[name][-1]}"
    assert f"board {number}, after ply 8 · " in eighth.split("</title>")[0]
    for page in (start, first, eighth, last):
        assert not re.search(r"\bPly \d+ of \d+", re.sub(r"<[^>]+>", "", page)), page
