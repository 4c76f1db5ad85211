"""Terrace patience by mail (issue 21), through the whole mail path in process:
raw mail in, the replies out.  The rules themselves are tested in tests/games."""

from __future__ import annotations

import html
import io
import re
from datetime import UTC, datetime, timedelta

import pytest
from PIL import Image

from pbmserv_terrace.app.compose import board_picture, to_email
from pbmserv_terrace.commands import parse_line
from pbmserv_terrace.commands.parse import redact
from pbmserv_terrace.games.patience import format_move, new_game, replay, solve
from pbmserv_terrace.games.terrace import format_tpn, start_position
from pbmserv_terrace.gametypes import GAME_TYPES
from pbmserv_terrace.store import OutboxMessage, UnitOfWork

from .harness import Harness, Reply, answer

WON_DEAL = ("terrace", 4)
"""a deal the solver wins in a few milliseconds (240 moves)"""


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann", "ben", "cat")
    yield harness
    harness.close()


def new(h: Harness, user: str = "ann", extra: str = "-terrace --deal=4") -> Reply:
    replies = h.send(user, f"patience new {user} pw-{user} {extra}")
    assert len(replies) == 1, [r.body for r in replies]
    return replies[0]


def board_state(h: Harness, board: int = 101) -> tuple[str, int, dict[str, object], list[str]]:
    async def run() -> tuple[str, int, dict[str, object], list[str]]:
        async with UnitOfWork(h.db) as uow:
            game = await uow.games.get("patience", board)
            assert game is not None
            moves = [m.move for m in await uow.moves.of_game(game.id)]
            return game.status, game.ply, dict(game.options), moves

    return h.loop.run_until_complete(run())


def test_new_deal_mails_the_table_with_a_reply_key(h: Harness) -> None:
    r = new(h)
    assert r.subject == "New Patience Board 101 ann"
    assert "+" in r.headers["reply-to"]
    assert "ann plays Terrace, deal 4" in r.body
    assert new_game("terrace", 4) == replay("terrace", 4, [])
    # the table in the mail is the pure game's table of that deal
    table = GAME_TYPES["patience"].solitaire.table_text(new_game("terrace", 4))
    assert table in r.body
    assert "Choose the base card from t1-t4" in r.body
    assert "Reply to this mail with your moves (e.g. base 1) on the first line" in r.body
    assert "patience new USERID PASSWORD -terrace --deal=4" in r.body
    assert all(len(line) <= 72 for line in table.splitlines())
    status, ply, options, moves = board_state(h)
    assert (status, ply, moves) == ("active", 0, [])
    assert options["deal"] == 4 and options["undos"] == 0


def test_the_same_deal_is_the_same_cards_for_everyone(h: Harness) -> None:
    a = new(h, "ann", "-wood --deal=77")
    b = new(h, "ben", "-wood --deal=77")
    table = lambda r: r.body[r.body.index("Terrace patience:") : r.body.index("Moves:")]  # noqa: E731
    assert table(a) == table(b)
    c = new(h, "cat", "-wood --deal=78")
    assert table(c) != table(a)


def deal_numbers_today() -> set[int]:
    """Today's deal number (UTC), and the next day's too when midnight is near (the
    server reads its clock between the test's two looks)."""
    now = datetime.now(UTC)
    days = {now.date(), (now + timedelta(minutes=2)).date()}
    return {day.year * 10000 + day.month * 100 + day.day for day in days}


def test_deal_of_the_day_and_today(h: Harness) -> None:
    numbers = deal_numbers_today()
    [r] = h.send("ben", "patience deal-of-the-day -signora")
    assert any(f"deal {number}" in r.body for number in numbers) and "Signora" in r.body and "Wood" not in r.body
    r = new(h, "ann", "-signora --deal=today")
    assert any(f"deal {number}" in r.body for number in numbers)


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ("-klondike", "there is no patience variant 'klondike'"),
        ("--deal=-3", "--deal needs a whole number"),
        ("--deal=abc", "--deal needs a whole number"),
        ("--seed=3", "unknown option --seed"),
        ("-wood -signora", "name at most one variant"),
    ],
)
def test_bad_new_is_refused_and_makes_no_board(h: Harness, extra: str, error: str) -> None:
    [r] = h.send("ann", f"patience new ann pw-ann {extra}")
    assert error in r.body, r.body
    assert "Usage: patience new USERID PASSWORD" in r.body
    [r] = h.send("ann", "patience show 101")
    assert "there is no Patience board 101" in r.body


def test_several_moves_in_one_mail_stop_at_the_first_illegal_one(h: Harness) -> None:
    new(h)
    [r] = h.send("ann", "patience move 101 ann pw-ann base 1, flip t9-f1 flip")
    assert r.subject == "Patience Board 101 ann"
    assert "ann played base 1 flip" in r.body
    assert "Stopped: move 3 (t9-f1) was not played:" in r.body
    example = re.search(r"your moves \(e\.g\. ([^)]+)\) on the first line", r.body)
    assert example is not None and example.group(1) != "base 1"
    replay("terrace", 4, ["base 1", "flip", example.group(1)])  # the example is a legal move now
    status, ply, _, moves = board_state(h)
    assert (status, ply, moves) == ("active", 2, ["base 1", "flip"])


def test_an_illegal_first_move_changes_nothing(h: Harness) -> None:
    new(h)
    [r] = h.send("ann", "patience move 101 ann pw-ann flip")
    assert r.subject == "Patience Board 101 Error"
    # an auto-responder's answer to it is not answered (issue 37: the guard knew only Terrace's subjects)
    assert h.send("ann", f"Re: {r.subject}", "I am away until Monday.") == []
    assert "'flip' was not played" in r.body and "base" in r.body
    assert "Terrace patience: Terrace, deal 4" in r.body  # the table as it is
    assert "patience move 101 ann ******** flip" in r.body
    assert board_state(h)[1] == 0
    [r] = h.send("ann", "patience move 101 ann pw-ann zz-9")
    assert "is not a move" in r.body
    assert board_state(h)[1] == 0


def test_only_the_player_moves_and_only_with_the_password(h: Harness) -> None:
    new(h)
    [r] = h.send("ben", "patience move 101 ben pw-ben base 1")
    assert "board 101 is ann's deal, not ben's" in r.body
    [r] = h.send("ann", "patience move 101 ann wrong base 1")
    assert "the userid or the password is not correct" in r.body
    assert "wrong" not in r.body
    assert board_state(h)[1] == 0


def test_move_words_base_and_flip(h: Harness) -> None:
    new(h)
    [r] = h.send("ann", "patience base 101 ann pw-ann")
    assert "Usage: patience base BOARD USERID PASSWORD CARD" in r.body
    [r] = h.send("ann", "patience base 101 ann pw-ann 2")
    assert "ann played base 2" in r.body
    [r] = h.send("ann", "patience flip 101 ann pw-ann")
    assert "ann played flip" in r.body
    assert board_state(h)[3] == ["base 2", "flip"]
    [r] = h.send("ann", "flip 101 ann pw-ann")
    assert "'flip' is a patience command: write 'patience flip …'" in r.body


def test_undo_takes_back_as_many_as_asked_and_counts_them(h: Harness) -> None:
    new(h)
    h.send("ann", "patience move 101 ann pw-ann base 1 flip flip")
    [r] = h.send("ann", "patience undo 101 ann pw-ann 2")
    assert "ann took back 2 moves (flip flip)" in r.body
    assert "Moves: 1   Undos: 2" in r.body
    [r] = h.send("ann", "patience undo 101 ann pw-ann 5")
    assert "ann took back move (base 1)" in r.body
    [r] = h.send("ann", "patience undo 101 ann pw-ann")
    assert "there is no move to undo" in r.body
    _, ply, options, moves = board_state(h)
    assert (ply, options["undos"], moves) == (0, 3, [])


def test_hint_is_a_move_the_rules_accept_and_is_counted(h: Harness) -> None:
    new(h)
    h.send("ann", "patience move 101 ann pw-ann base 1")
    [r] = h.send("ann", "patience hint 101 ann pw-ann")
    assert r.subject == "Patience Board 101 ann hint"
    hint = re.search(r"Hint: (\S+(?: \S+)?)\s{3}", r.body)
    assert hint is not None, r.body
    replay("terrace", 4, ["base 1", hint.group(1)])  # legal
    assert board_state(h)[2]["hints"] == 1


def test_resign_ends_the_game_with_its_score(h: Harness) -> None:
    new(h)
    h.send("ann", "patience move 101 ann pw-ann base 1")
    [r] = h.send("ann", "patience resign 101 ann pw-ann")
    assert "ann resigns" in r.body and "Game over: resigned, score 1/104 in 1 move" in r.body
    status, *_ = board_state(h)
    assert status == "ended"
    [r] = h.send("ann", "patience move 101 ann pw-ann flip")
    assert "board 101 is over" in r.body
    [r] = h.send("ann", "patience undo 101 ann pw-ann")
    assert "board 101 is over" in r.body


def test_a_resigned_or_abandoned_deal_shows_as_ended(h: Harness) -> None:
    new(h)
    h.send("ann", "patience move 101 ann pw-ann base 1")
    h.send("ann", "patience resign 101 ann pw-ann")
    [r] = h.send("ben", "patience show 101")
    assert "Resigned with 1 card on the foundations." in r.body and "Your move" not in r.body
    new(h, "ben")
    h.send("ben", "delete ben pw-ben")
    [r] = h.send("ann", "patience show 102")
    assert "Game over: abandoned (account deleted)" in r.body and "Your move" not in r.body
    [r] = h.send("ann", "patience undo 101 ann pw-ann")
    assert "board 101 is over" in r.body


def test_show_to_someone_else_has_no_reply_key(h: Harness) -> None:
    new(h)
    [r] = h.send("ben", "patience show 101")
    assert r.to.startswith("ben@") and "reply-to" not in r.headers
    assert "ann plays Terrace, deal 4" in r.body
    [r] = h.send("ann", "patience show 101")
    assert "+" in r.headers["reply-to"]


def test_reply_with_moves_and_a_stale_reply_is_refused(h: Harness) -> None:
    first = new(h)
    [r] = answer(h, first, "base 1 flip")
    assert "ann played base 1 flip" in r.body
    [stale] = answer(h, first, "flip")
    assert "your reply was not applied: board 101 has moved on" in stale.body
    assert board_state(h)[3] == ["base 1", "flip"]
    [u] = answer(h, r, "undo")
    assert "ann took back move (flip)" in u.body
    [s] = answer(h, u, "show")
    assert "Moves: 1" in s.body
    [x] = answer(h, s, "hint")
    assert "Hint:" in x.body
    [bad] = answer(h, first, "base 1", sender="ben@players.test")
    assert "belongs to ann" in bad.body


def play_to_the_end(h: Harness, first: Reply, line: list[str], per_mail: int = 60) -> Reply:
    last = first
    for i in range(0, len(line), per_mail):
        [last] = answer(h, last, " ".join(line[i : i + per_mail]))
        assert "Stopped" not in last.body, last.body
    return last


def test_a_whole_won_game_by_reply_from_the_solvers_line(h: Harness) -> None:
    variant, deal = WON_DEAL
    result = solve(new_game(variant, deal), max_seconds=5)
    assert result.verdict == "won"
    line = [format_move(m) for m in result.line]
    first = new(h, "ann", f"-{variant} --deal={deal}")
    last = play_to_the_end(h, first, line)
    assert "score 104/104" in last.body
    assert f"Game over: won, score 104/104 in {len(line)} moves" in last.body
    status, ply, options, _ = board_state(h)
    assert (status, ply, options["score"]) == ("won", len(line), 104)
    [late] = answer(h, last, "flip")
    assert "board 101 is over" in late.body or "was not applied" in late.body
    # ben plays the same deal and resigns early; standings rank ann first
    b = new(h, "ben", f"-{variant} --deal={deal}")
    answer(h, b, "resign")
    [s] = h.send("cat", "standings patience")
    assert s.subject == "Patience standings"
    rows = [line for line in s.body.splitlines() if re.match(r"\s+\d+ \w", line)]
    assert rows[0].split()[1] == "ann" and rows[1].split()[1] == "ben", s.body
    assert f"Deal {deal} (Terrace):" in s.body
    assert "1. ann" in s.body and "104 cards" in s.body


def test_standings_rank_by_score_then_fewest_moves(h: Harness) -> None:
    line = [format_move(m) for m in solve(new_game("wood", 5), max_seconds=5).line]
    # on the solver's line: 6 cards home after 60 and after 80 moves, 7 after 95
    plays = {"ann": 60, "ben": 80, "cat": 95}
    for board, (user, count) in enumerate(plays.items(), 101):
        new(h, user, "-wood --deal=5")
        h.send(user, f"patience move {board} {user} pw-{user} " + " ".join(line[:count]))
        h.send(user, f"patience resign {board} {user} pw-{user}")
    new(h, "ann", "-wood --deal=5")  # a worse second try: a player's best game counts
    h.send("ann", "patience resign 104 ann pw-ann")
    scores = {u: replay("wood", 5, line[:n]).score for u, n in plays.items()}
    assert scores == {"ann": 6, "ben": 6, "cat": 7}
    assert [board_state(h, b)[1] for b in (101, 102, 103)] == [60, 80, 95]  # resigning is no move
    [s] = h.send("ben", "patience standings")
    rows = [line.split() for line in s.body.splitlines() if re.match(r"\s+\d+ \w", line)]
    # cat beats both (more cards); ann beats ben (as many cards in fewer moves)
    assert [(r[1], float(r[2])) for r in rows] == [("cat", 2.0), ("ann", 1.0), ("ben", 0.0)], s.body
    assert "1. cat                7 cards in 95 moves (board 103)" in s.body
    assert "2. ann                6 cards in 60 moves (board 101)" in s.body


def test_games_list_and_help(h: Harness) -> None:
    new(h)
    [r] = h.send("ann", "patience games")
    assert "board 101" in r.body and "deal 4" in r.body
    [r] = h.send("ben", "list patience")
    assert "board 101" in r.body and "ann" in r.body
    [r] = h.send("ben", "help patience")
    assert "patience new USERID PASSWORD" in r.body and "t1-t9" in r.body
    assert all(len(line) <= 79 for line in r.body.splitlines()), r.body
    [r] = h.send("ben", "patience help")
    assert "patience base BOARD USERID PASSWORD CARD\n" in r.body
    # a Terrace command in patience, and the board listing of a player with both
    [r] = h.send("ann", "patience challenge ann pw-ann ben")
    assert "'challenge' is not a patience command" in r.body
    h.send("ann", "terrace challenge ann pw-ann ben")
    [r] = h.send("ann", "all show ann")
    assert "Terrace Board 102" in r.body  # one series of numbers for every game


def test_deleting_the_account_ends_the_deal(h: Harness) -> None:
    new(h)
    [r] = h.send("ann", "delete ann pw-ann")
    assert "patience 101" in r.body
    assert board_state(h)[0] == "ended"


def test_parsing_and_masking() -> None:
    cmd = parse_line("standings patience")
    assert not isinstance(cmd, str) and (cmd.game_type, cmd.verb, cmd.words) == ("patience", "standings", [])
    cmd = parse_line("patience new ann secret -wood --deal=9")
    assert not isinstance(cmd, str) and cmd.params == ["wood"] and cmd.options == {"deal": "9"}
    assert redact("patience new ann secret -wood") == "patience new ann ******** -wood"
    assert redact("patience move 101 ann secret t1-f1") == "patience move 101 ann ******** t1-f1"
    assert redact("patience base 101 ann secret 7h") == "patience base 101 ann ******** 7h"
    assert isinstance(parse_line("patience queue 101 ann pw t1-f1"), str)


def test_the_service_names_no_game() -> None:
    """Adding a game touches gametypes/ and games/, never the service: no game's
    name appears in the service's code, and it imports no game's rules."""
    from pathlib import Path

    import pbmserv_terrace.service as service

    names = [g.name for g in GAME_TYPES.values()]
    for path in Path(service.__file__).parent.glob("*.py"):
        text = path.read_text()
        code = "\n".join(line for line in text.splitlines() if not line.strip().startswith((">>>", "#")))
        for name in names:
            assert f'"{name}"' not in code and f"'{name}'" not in code, (path.name, name)
        assert "from ..rules" not in text and "from ..engine" not in text and "from ..games" not in text, path.name


# ------------------------------------------------------------------ pictures
def mime_tree(reply: Reply) -> list[str]:
    assert reply.message is not None
    return [part.get_content_type() for part in reply.message.walk()]


def png_part(reply: Reply) -> tuple[str, bytes]:
    """The picture's Content-ID (without brackets) and its bytes."""
    assert reply.message is not None
    part = next(p for p in reply.message.walk() if p.get_content_type() == "image/png")
    data = part.get_payload(decode=True)
    assert isinstance(data, bytes)
    return part["Content-ID"].strip("<>"), data


def test_the_board_mail_shows_the_table_as_a_picture_beside_the_text(h: Harness) -> None:
    rules = GAME_TYPES["patience"].solitaire
    r = new(h)
    assert mime_tree(r) == ["multipart/alternative", "text/plain", "multipart/related", "text/html", "image/png"]
    cid, data = png_part(r)
    assert cid == "board-patience-101@pbmserv"
    start = new_game("terrace", 4)
    assert f'src="cid:{cid}"' in r.html
    assert f'alt="{html.escape(rules.picture_alt(start))}"' in r.html
    assert data == rules.picture(start)
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG" and image.width >= 560 and len(data) <= 40_000
    # the HTML says what the text says: heading, headline, the ASCII table, the reply line
    assert "Patience Board 101: ann plays Terrace, deal 4" in r.html and "ann starts deal 4." in r.html
    assert "<pre " in r.html and html.escape(rules.table_text(start).rstrip("\n")) in r.html
    assert "Reply to this mail with your moves" in r.html and "Moves: 0   Undos: 0   Hints: 0" in r.html
    assert r.message is not None and len(r.message.as_bytes()) < 60_000


def test_the_picture_follows_the_moves_and_the_note_is_escaped(h: Harness) -> None:
    rules = GAME_TYPES["patience"].solitaire
    first = new(h)
    [r] = h.send("ann", "patience move 101 ann pw-ann base 1, flip w-t5", "<script>alert(1)</script>")
    moves = board_state(h)[3]
    assert moves[:2] == ["base 1", "flip"]
    after = replay("terrace", 4, moves)
    assert png_part(r)[1] == rules.picture(after) != png_part(first)[1]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.html and "<script>" not in r.html
    [u] = answer(h, r, "undo")
    assert png_part(u)[1] == rules.picture(replay("terrace", 4, board_state(h)[3]))
    [x] = answer(h, u, "hint")
    assert x.subject.endswith("hint") and "Hint:" in x.html and mime_tree(x)[0] == "multipart/alternative"
    [s] = answer(h, x, "show")
    assert png_part(s)[1] == png_part(u)[1]
    # a reply to a mail the board has moved on from: the table as it is, with its picture
    [stale] = answer(h, first, "flip")
    assert "has moved on" in stale.body and png_part(stale)[1] == png_part(u)[1]
    # resigning: the picture says so (the resignation is no move to replay)
    [end] = h.send("ann", "patience resign 101 ann pw-ann")
    resigned = rules.resign(replay("terrace", 4, board_state(h)[3]))
    assert png_part(end)[1] == rules.picture(resigned) != png_part(s)[1]
    assert "Resigned with" in end.html


def test_pictures_off_gives_the_same_text_only_and_others_get_text(h: Harness) -> None:
    new(h)
    [on] = h.send("ann", "patience show 101")
    h.send("ann", "change pictures ann pw-ann off")
    [off] = h.send("ann", "patience show 101")
    assert mime_tree(off) == ["text/plain"] and off.html == ""
    assert off.body == on.body and off.subject == on.subject
    [r] = h.send("ann", "patience move 101 ann pw-ann base 1")
    assert mime_tree(r) == ["text/plain"]
    [other] = h.send("ben", "patience show 101")  # not the player: the text only
    assert mime_tree(other) == ["text/plain"]
    [bad] = h.send("ann", "patience move 101 ann pw-ann zz-9")  # errors stay text
    assert mime_tree(bad) == ["text/plain"]


def test_compose_draws_solitaire_specs_by_replaying_and_terrace_specs_as_before(h: Harness) -> None:
    rules = GAME_TYPES["patience"].solitaire

    def row(spec: dict[str, object]) -> OutboxMessage:
        return OutboxMessage(message_id="<x@terrace.test>", recipient="ann@players.test", subject="s", body="text\n",
                             html='<img src="cid:pic@pbmserv">', picture=spec, created_at=datetime.now(UTC))  # fmt: skip

    def image_of(spec: dict[str, object]) -> bytes | None:
        msg = to_email(row({**spec, "cid": "pic@pbmserv"}), h.config)
        parts = [p for p in msg.walk() if p.get_content_type() == "image/png"]
        data = parts[0].get_payload(decode=True) if parts else None
        assert data is None or isinstance(data, bytes)
        return data

    moves = ["base 1", "flip"]
    got = image_of({"game": "patience", "variant": "terrace", "deal": 4, "moves": moves})
    assert got == rules.picture(replay("terrace", 4, moves))
    resigned = image_of({"game": "patience", "variant": "terrace", "deal": 4, "moves": moves, "resigned": True})
    assert resigned == rules.picture(rules.resign(replay("terrace", 4, moves))) != got
    # an old row (no "game") and a board game's spec are Terrace boards, drawn as before
    tpn = format_tpn(start_position("long", 8))
    old = image_of({"tpn": tpn, "last_move": ""})
    assert old == board_picture("terrace", tpn, "") and old is not None
    assert image_of({"game": "terrace", "tpn": tpn, "last_move": ""}) == old
    small = format_tpn(start_position("long", 6))
    assert image_of({"tpn": small, "last_move": ""}) == board_picture("terrace6x6", small, "") != old
    # a solitaire spec that no longer replays: the mail goes as text only
    for broken in ({"game": "patience", "variant": "terrace", "deal": 4, "moves": ["zz-9"]},
                   {"game": "patience", "variant": "nosuch", "deal": 4, "moves": []},
                   {"game": "patience", "variant": "terrace", "deal": "x", "moves": []},
                   {"game": "patience", "variant": "terrace", "deal": 4, "moves": "flip"}):  # fmt: skip
        msg = to_email(row({**broken, "cid": "pic@pbmserv"}), h.config)
        assert [p.get_content_type() for p in msg.walk()] == ["text/plain"], broken
