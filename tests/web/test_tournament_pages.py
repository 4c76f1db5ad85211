"""The tournaments' pages (issue 41) against the real app over a database that a
round robin was played on by mail: the web's table and crosstable say what the
mails said; the Atom feed has an entry per result."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import httpx

from pbmserv_terrace.web import create_app

from ..service.harness import Harness
from ..service.test_tournaments import draw, games_of, lose, round_mails, table_of

ATOM = "{http://www.w3.org/2005/Atom}"
_WEB_ROW = re.compile(r"<tr><td>(\d+)</td><td><a href=\"/players/(\w+)\">\w+</a>(?: \(withdrew\))?</td>\s*<td>([\d.½]+)</td>\s*<td>([\d.½]+)</td>")


def number(text: str) -> float:
    return float(text.replace("½", ".5")) if text != "½" else 0.5


def test_the_web_table_and_crosstable_match_the_mails():
    h = Harness()
    try:
        people = ("ann", "ben", "cat", "dan")
        h.signup(*people)
        h.send("ann", "terrace tournament new ann pw-ann Spring <b>cup</b> -roundrobin")
        for name in people:
            h.send(name, f"terrace tournament join 1 {name} pw-{name}")
        replies = h.send("ann", "terrace tournament start 1 ann pw-ann")
        for round_no in (1, 2, 3):
            found = games_of(round_mails(replies, round_no))
            for (white, black), board in sorted(found.items()):
                if {white, black} == {"ben", "cat"}:
                    replies = draw(h, board, white, black)
                else:
                    replies = lose(h, board, max(white, black, key=people.index))
        final = next(r for r in replies if r.subject.endswith("ann wins"))
        mailed = table_of(final.body)

        async def scenario() -> dict[str, httpx.Response]:
            app = create_app(h.db, server_name="Terrace", public_url="", address="pbm@x.test")
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
                return {p: await client.get(p) for p in ("/tournaments", "/tournaments/1", "/tournaments/1/feed.atom",
                                                         "/tournaments/2", "/tournaments/0")}  # fmt: skip

        pages = h.loop.run_until_complete(scenario())
        assert pages["/tournaments"].status_code == 200 and "Spring &lt;b&gt;cup&lt;/b&gt;" in pages["/tournaments"].text
        page = pages["/tournaments/1"].text
        assert pages["/tournaments/1"].status_code == 200 and "Winner: <a href=\"/players/ann\">ann</a>" in page
        web = [(name, number(points), number(sb)) for _, name, points, sb in _WEB_ROW.findall(page)]
        assert web == mailed and len(web) == 4
        # the crosstable: ann beat everyone; ben and cat drew
        cross = html.unescape(page.split("<h2>Crosstable</h2>", 1)[1].split("</table>", 1)[0])
        assert "<td>1</td><td>ann</td><td>×</td><td>1</td><td>1</td><td>1</td><td>3</td>" in cross
        assert "<td>2</td><td>ben</td><td>0</td><td>×</td><td>½</td><td>1</td><td>1.5</td>" in cross
        for board in re.findall(r"board (\d+)", final.body + page):
            assert f'href="/boards/terrace/{board}"' in page
        feed = ET.fromstring(pages["/tournaments/1/feed.atom"].content)
        entries = feed.findall(f"{ATOM}entry")
        assert len(entries) == 6 and all("Round " in e.findtext(f"{ATOM}title", "") for e in entries)
        assert pages["/tournaments/2"].status_code == 404 and pages["/tournaments/0"].status_code == 404
    finally:
        h.close()
