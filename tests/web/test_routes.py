"""The archive's routes against the real app and a real migrated database (SQLite and
PostgreSQL): every page and feed, privacy, escaping, caching, replay by ?ply=k."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from datetime import datetime

import httpx
import pytest
from sqlalchemy import select, text, update

from pbmserv_terrace.games.terrace import parse_tpn, render_board
from pbmserv_terrace.store import Game, MoveRecord, Rating, UnitOfWork, User, utcnow

from .conftest import PUBLIC_URL, SERVER_ADDRESS, Site
from .fill import HOSTILE, USERS, address, password_hash

ATOM = "{http://www.w3.org/2005/Atom}"


def every_path(site: Site) -> list[str]:
    paths = ["/", "/help", "/standings", "/healthz", "/static/replay.js", "/static/style.css"]
    for name, (game_type, number) in site.filled.boards.items():
        base = f"/boards/{game_type}/{number}"
        paths += [base, f"{base}?ply=0", f"{base}?ply=1", f"{base}.txt", f"{base}/feed.atom"]
        paths.append(f"{base}?ply={len(site.filled.plies[name])}")
    for userid in USERS:
        paths += [f"/players/{userid}", f"/players/{userid}/feed.atom"]
    paths += ["/nowhere", "/boards/terrace/999", "/boards/chess/101", "/players/nobody", "/boards/terrace/101?ply=9999"]
    return paths


def check_headers(response: httpx.Response) -> None:
    csp = response.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'", csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"]
    assert response.headers["x-frame-options"] == "DENY"


def test_every_page_and_feed_keeps_addresses_and_hashes_private(site: Site) -> None:
    async def scenario(client: httpx.AsyncClient) -> dict[str, httpx.Response]:
        return {path: await client.get(path) for path in every_path(site)}

    for public_url in ("", PUBLIC_URL):
        responses = site.run(scenario, public_url=public_url)
        for path, response in responses.items():
            expected = 404 if path in every_path(site)[-5:] else 200
            assert response.status_code == expected, (path, response.text[:500])
            check_headers(response)
            body = response.text.replace(SERVER_ADDRESS, "the server")  # (its own address, on / and /help)
            for userid in USERS:
                assert address(userid) not in body, path
                assert password_hash(userid) not in body and f"HASHVALUE{userid}" not in body, path
            assert "scrypt$" not in body, path
            assert "@" not in body, (path, body[max(0, body.find("@") - 80) : body.find("@") + 80])


def test_not_found_pages_say_what_and_link_home(site: Site) -> None:
    async def scenario(client: httpx.AsyncClient) -> list[httpx.Response]:
        return [await client.get(p) for p in ("/boards/terrace/999", "/players/nobody", "/boards/chess/3", "/x/y")]

    board, player, game_type, other = site.run(scenario)
    assert "Terrace board 999: there is no such board" in board.text
    assert "a player called &#39;nobody&#39;" in player.text
    assert "chess" in game_type.text and "terrace6x6" in game_type.text
    for response in (board, player, game_type, other):
        assert response.status_code == 404
        assert 'href="/"' in response.text and 'href="/standings"' in response.text


def test_hostile_comment_is_escaped_and_hidden_comments_stay_hidden(site: Site) -> None:
    live, small = site.filled.boards["live"], site.filled.boards["small"]

    async def scenario(client: httpx.AsyncClient) -> tuple[str, str]:
        a = await client.get(f"/boards/{live[0]}/{live[1]}")
        b = await client.get(f"/boards/{small[0]}/{small[1]}")
        return a.text, b.text

    shown, hidden = site.run(scenario)
    assert html.escape(HOSTILE, quote=False) in shown.replace("&#34;", '"').replace("&#39;", "'")
    assert "<script>alert" not in shown and "<img src=x" not in shown
    assert "{{ 7*7 }}" in shown and "49" not in re.sub(r"<svg.*?</svg>", "", shown, flags=re.S)
    assert "Terrace &lt;PBM&gt; Server" in shown
    # dave's comments are not public: the page says so and shows none of it
    assert "<bdi>dave</bdi> writes: <em>(hidden)</em>" in hidden
    assert "alert" not in hidden and "7*7" not in hidden
    # a comment and its author are bidi-isolated (a U+202E stays inside them; issue 36)
    assert '</bdi> writes:</p><pre dir="auto">' in shown


def test_ply_parameter_shows_that_position(site: Site) -> None:
    name = "four"
    game_type, number = site.filled.boards[name]
    plies = len(site.filled.plies[name])
    wanted = [0, 1, 3, plies // 2, plies]

    async def scenario(client: httpx.AsyncClient) -> list[str]:
        return [(await client.get(f"/boards/{game_type}/{number}?ply={k}")).text for k in wanted]

    for k, page in zip(wanted, site.run(scenario), strict=True):
        ascii_board = re.search(r'<details id="ascii">.*?<pre>(.*?)</pre>', page, re.S)
        assert ascii_board is not None
        expected = render_board(parse_tpn(site.filled.positions[name][k], 8))
        assert html.unescape(ascii_board.group(1)) == expected, k
        assert f'data-ply="{k}"' in page
        assert f'After ply <span id="ply">{k}</span> of {plies}' in page if k else f"The start, before ply 1 of {plies}" in page
        if 0 < k < plies:
            assert f"Position after ply {k} of {plies}" in page
            assert f'?ply={k}" class="current"' in page
            assert f'id="prev" href="/boards/{game_type}/{number}?ply={k - 1}"' in page
            assert f'id="next" href="/boards/{game_type}/{number}?ply={k + 1}"' in page
        if k > 0:
            assert html.escape(site.filled.plies[name][k - 1]) in page
    assert "Game over:" in page and "winner" in page


def test_board_page_players_status_and_move_table(site: Site) -> None:
    game_type, number = site.filled.boards["live"]

    async def scenario(client: httpx.AsyncClient) -> str:
        return (await client.get(f"/boards/{game_type}/{number}")).text

    page = site.run(scenario)
    assert 'href="/players/alice"' in page and 'href="/players/bob"' in page
    assert "(orange)" in page and "(blue)" in page
    assert "It is " in page and "turn" in page
    assert '<script src="/static/replay.js" defer></script>' in page and "<script>" not in page
    assert "<svg" in page
    for move in site.filled.plies["live"]:
        assert html.escape(move) in page


def test_redirect_from_bare_board_number(site: Site) -> None:
    async def scenario(client: httpx.AsyncClient) -> list[httpx.Response]:
        return [await client.get(p) for p in ("/boards/101", "/boards/101?ply=2", "/boards/101.txt", "/boards/101/feed.atom")]

    bare, ply, text, feed = site.run(scenario)
    assert bare.status_code == 308 and bare.headers["location"] == "/boards/terrace/101"
    assert ply.headers["location"] == "/boards/terrace/101?ply=2"
    assert text.headers["location"] == "/boards/terrace/101.txt"
    assert feed.headers["location"] == "/boards/terrace/101/feed.atom"


def test_etag_and_if_none_match(site: Site) -> None:
    game_type, number = site.filled.boards["live"]
    path = f"/boards/{game_type}/{number}"

    async def first(client: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        a = await client.get(path)
        b = await client.get(path, headers={"If-None-Match": a.headers["etag"]})
        c = await client.get(path + "?ply=1", headers={"If-None-Match": a.headers["etag"]})
        return a, b, c

    a, b, other_ply = site.run(first)
    assert a.status_code == 200 and a.headers["etag"].startswith(f'W/"{game_type}-{number}-')
    assert "max-age" in a.headers["cache-control"]
    assert b.status_code == 304 and b.content == b"" and b.headers["etag"] == a.headers["etag"]
    assert other_ply.status_code == 200 and other_ply.headers["etag"] != a.headers["etag"]

    async def move_played() -> None:
        async with UnitOfWork(site.db) as uow:
            game = await uow.games.get(game_type, number, lock=True)
            assert game is not None
            game.comment = "alice writes:\nanother word"
            await uow.commit()

    site.sql(move_played())

    async def again(client: httpx.AsyncClient) -> httpx.Response:
        return await client.get(path, headers={"If-None-Match": a.headers["etag"]})

    changed = site.run(again)
    assert changed.status_code == 200 and changed.headers["etag"] != a.headers["etag"] and "another word" in changed.text


def parse_time(text: str) -> datetime:
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text[:-1])


@pytest.mark.parametrize("public_url", ["", PUBLIC_URL])
def test_feeds_are_valid_atom(site: Site, public_url: str) -> None:
    name = "four"
    game_type, number = site.filled.boards[name]

    async def scenario(client: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
        return await client.get(f"/boards/{game_type}/{number}/feed.atom"), await client.get("/players/alice/feed.atom")

    board_feed, player_feed = site.run(scenario, public_url=public_url)
    base = public_url or "http://testserver"
    for response, entries in ((board_feed, len(site.filled.plies[name])), (player_feed, 3)):
        assert response.headers["content-type"].startswith("application/atom+xml")
        root = ET.fromstring(response.content)
        assert root.tag == f"{ATOM}feed"
        assert root.findtext(f"{ATOM}id", "").startswith(base + "/")
        feed_updated = parse_time(root.findtext(f"{ATOM}updated", ""))
        assert root.find(f"{ATOM}title") is not None and root.find(f"{ATOM}author/{ATOM}name") is not None
        found = root.findall(f"{ATOM}entry")
        assert len(found) == entries
        ids = [e.findtext(f"{ATOM}id", "") for e in found]
        assert len(set(ids)) == len(ids) and all(i.startswith(base + "/boards/") for i in ids)
        for entry in found:
            assert entry.findtext(f"{ATOM}title")
            assert parse_time(entry.findtext(f"{ATOM}updated", "")) <= feed_updated
            link = entry.find(f"{ATOM}link")
            assert link is not None and link.get("href", "").startswith(base + "/boards/")
    first = ET.fromstring(board_feed.content).findall(f"{ATOM}entry")[-1]
    assert first.findtext(f"{ATOM}id") == f"{base}/boards/{game_type}/{number}?ply=1"
    assert site.filled.plies[name][0] in first.findtext(f"{ATOM}title", "")


def test_text_record(site: Site) -> None:
    name = "three"
    game_type, number = site.filled.boards[name]

    async def scenario(client: httpx.AsyncClient) -> httpx.Response:
        return await client.get(f"/boards/{game_type}/{number}.txt")

    response = site.run(scenario)
    assert response.headers["content-type"].startswith("text/plain")
    lines = response.text.splitlines()
    assert lines[0] == f"Game: Terrace board {number}"
    assert lines[1].startswith("Players: erin (army 1, t), carol (army 2, T), alice (army 3, t')")
    assert lines[2] == "Setup: 3p" and lines[4].startswith("Result: ") and "wins" in lines[4]
    assert lines[5].startswith("Date: ")
    moves = [line.split(": ", 1)[1] for line in lines if re.match(r"^\d+\. ", line)]
    assert moves == site.filled.plies[name]
    assert f"Final position: {site.filled.positions[name][-1]}" in lines


def test_standings_and_player_pages_show_ratings(site: Site) -> None:
    async def ratings() -> dict[tuple[str, str], float]:
        async with site.db.reading() as s:
            rows = await s.execute(select(User.userid, Rating.game_type, Rating.rating).join(User, User.id == Rating.user_id))
            return {(u, t): r for u, t, r in rows}

    stored = site.sql(ratings())

    async def scenario(client: httpx.AsyncClient) -> dict[str, str]:
        out = {"standings": (await client.get("/standings")).text}
        for userid in USERS:
            out[userid] = (await client.get(f"/players/{userid}")).text
        return out

    pages = site.run(scenario)
    terrace = pages["standings"].split('id="terrace6x6"')[0]
    order = sorted((u for u, t in stored if t == "terrace"), key=lambda u: (-stored[(u, "terrace")], u))
    positions = [terrace.index(f'href="/players/{u}"') for u in order]
    assert positions == sorted(positions)
    for (userid, game_type), rating in stored.items():
        page = pages[userid]
        assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart"' in page
        assert f": {round(rating)}" in page
        # the chart's last point is the stored rating (the Elo replay agrees with the service's)
        label = {"terrace": "Terrace", "terrace6x6": "Terrace6x6"}[game_type]
        chart = page.split(f"{userid}&#x27;s {label} rating", 1)[1].split("</svg>")[0]
        points = re.findall(r"<title>board \d+, [\d-]+: (\d+)</title>", chart)
        assert points and int(points[-1]) == round(rating), (userid, game_type)


def test_healthz_and_help(site: Site) -> None:
    async def scenario(client: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
        return await client.get("/healthz"), await client.get("/help")

    health, help_page = site.run(scenario)
    assert health.json() == {"status": "ok"} and health.headers["cache-control"] == "no-store"
    assert "challenge U1 U2" in help_page.text and "<pre>" in help_page.text


def test_migration_0002_keeps_existing_users_public(db_url: str) -> None:
    import asyncio

    from pbmserv_terrace.store import Database

    async def scenario() -> list[tuple[str, bool]]:
        db = Database(db_url)
        await db.migrate("0001")
        async with db.engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO users (userid, password_hash, addresses, signed_off, accept_challenges, seek, vacation,"
                    " notify_all, created_at) VALUES ('old', 'x', '[]', false, true, 0, false, false, :now)"
                ),
                {"now": utcnow()},
            )
        await db.migrate("0002")
        async with db.engine.begin() as conn:
            await conn.execute(update(User.__table__).where(User.userid == "nobody").values(public_comments=False))
            rows = (await conn.execute(select(User.userid, User.public_comments))).all()
        await db.close()
        return [tuple(r) for r in rows]

    assert asyncio.run(scenario()) == [("old", True)]


def test_moves_written_later_appear(site: Site) -> None:
    game_type, number = site.filled.boards["live"]
    positions = site.filled.positions["live"]

    async def add_ply() -> str:
        from pbmserv_terrace.games.terrace import format_move, format_tpn

        pos = parse_tpn(positions[-1], 8)
        move = pos.legal_moves()[0]
        text = format_move(pos, move)
        async with UnitOfWork(site.db) as uow:
            game = await uow.games.get(game_type, number, lock=True)
            assert game is not None
            game.ply += 1
            game.position = format_tpn(pos.play(move))
            uow.moves.add(MoveRecord(game_id=game.id, ply=game.ply, seat=pos.to_move, move=text, auto=True, played_at=utcnow()))
            await uow.commit()
        return text

    text = site.sql(add_ply())

    async def scenario(client: httpx.AsyncClient) -> str:
        return (await client.get(f"/boards/{game_type}/{number}")).text

    page = site.run(scenario)
    assert f"{html.escape(text)} (Auto)" in page
    assert f"of {len(positions)}" in page
    assert Game.__tablename__ == "games"


def test_standings_page_follows_rating_changes(site: Site) -> None:
    async def scenario(client: httpx.AsyncClient) -> tuple[str, str]:
        client._transport.app.state.site.live_ttl = 0.0  # type: ignore[attr-defined]  # (else kept for LIVE_TTL)
        before = (await client.get("/standings")).text
        async with UnitOfWork(site.db) as uow:
            erin = await uow.users.get("erin")
            assert erin is not None
            (row,) = await uow.ratings.for_update([erin.id], "terrace")
            row.rating, row.games, row.won = 2345.0, row.games + 1, row.won + 1
            await uow.commit()
        return before, (await client.get("/standings")).text

    before, after = site.run(scenario)
    assert "2345" not in before
    first_row = after.split("<tbody>")[1].split("</tr>")[0]
    assert 'href="/players/erin"' in first_row and "2345" in first_row


def test_player_page_follows_moves_and_ratings(site: Site) -> None:
    """The player page is kept between requests (pages.player): a ply on one of the
    player's boards and a rating change must each show on the next request."""
    game_type, number = site.filled.boards["live"]
    positions = site.filled.positions["live"]

    def board_row(page: str) -> str:  # (the games list's row: the list of boards waiting for the player comes first)
        return page.split(f'<a href="/boards/{game_type}/{number}">')[-1].split("</tr>")[0]

    async def scenario(client: httpx.AsyncClient) -> tuple[str, str, str, int, str]:
        from pbmserv_terrace.games.terrace import format_move, format_tpn

        client._transport.app.state.site.live_ttl = 0.0  # type: ignore[attr-defined]  # (else kept for LIVE_TTL)
        async with UnitOfWork(site.db) as uow:
            game = await uow.games.get(game_type, number)
            assert game is not None
            pos = parse_tpn(positions[-1], 8)
            userid = next(s.user.userid for s in game.seats if s.seat == pos.to_move)
        before = (await client.get(f"/players/{userid}")).text
        assert (await client.get(f"/players/{userid}")).text == before
        move = pos.legal_moves()[0]
        async with UnitOfWork(site.db) as uow:
            game = await uow.games.get(game_type, number, lock=True)
            assert game is not None
            game.ply += 1
            game.position = format_tpn(pos.play(move))
            game.last_move_at = utcnow()
            uow.moves.add(
                MoveRecord(game_id=game.id, ply=game.ply, seat=pos.to_move, move=format_move(pos, move), auto=False,
                           played_at=utcnow())
            )  # fmt: skip
            await uow.commit()
        moved = (await client.get(f"/players/{userid}")).text
        async with UnitOfWork(site.db) as uow:
            user = await uow.users.get(userid)
            assert user is not None
            (row,) = await uow.ratings.for_update([user.id], game_type)
            row.rating = 2468.0
            await uow.commit()
        rated = (await client.get(f"/players/{userid}")).text
        return before, moved, rated, game.ply, userid

    before, moved, rated, ply, userid = site.run(scenario)
    assert f"<td>{ply - 1}</td><td>{userid} to move</td>" in board_row(before)
    assert f"<td>{ply}</td><td>{userid} to move</td>" not in board_row(moved) and " to move</td>" in board_row(moved)
    assert "2468" not in moved and ": 2468" in rated
