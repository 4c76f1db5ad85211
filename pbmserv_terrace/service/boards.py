"""Boards as the handlers see them: loading a board and its seats, replaying its
moves, and what a board mail shows (the view, the subject, who receives it).
Playing and ending games is :mod:`.plies`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from markupsafe import escape

from ..clocks import clock_of
from ..commands import Command
from ..gametypes import DEFAULT_GAME_TYPE, board_games, board_rules, game_title
from ..gametypes.base import BoardPosition
from ..gametypes.view import NOT_MOVES, BoardFacts, SeatFacts, player_state, position_after
from ..gametypes.view import status_lines as view_status_lines
from ..render import CommentView, GameView, PlayerView, move_table, render
from ..render.html import board_html, move_links_html, play_link_html
from ..store import DigestEntry, Digests, Game, MoveRecord, Seat, User
from ..store.repos import Ply
from ..store.tournaments import Tournaments
from .args import shortened
from .bounces import silent_lines
from .context import CommandError, Ctx, Mail
from .deadlines import time_line
from .seating import position as position
from .seating import seat_by_army as seat_by_army
from .seating import seat_of as seat_of

RESIGN, FORFEIT = NOT_MOVES
HINT_MARK = "PBMSERVREPLYHINTMARK"
"""stands for the reply hint in a board mail's HTML drawn once for every player"""
MOVES_MARK = "PBMSERVMOVELINKSMARK"
"""stands for the move links (only in the copy to the player to move)"""
MOVE_LINKS_HEADING = "Your move: tap one to answer"
MOVE_LINKS_NOTE = "Each link opens a reply with the move in it; send it to play. \u00d7 marks a capture."
ROUTINE_ROUNDS = 5
PLAY_LINE = "Play your move on the web:"
"""introduces the play page's link (issue 39) in the board mail to the player to move"""
BOARD_GAME_TYPES = frozenset(board_games())
_BOARD_REF = re.compile(r"^(\d{1,9})(?:#(\d{1,6}))?$")


def board_error(game: Game, reason: str, usage: str = "") -> CommandError:
    """An error about ``game``: its reply is titled ``<Title> Board N Error``."""
    return CommandError(reason, usage, board=game.board_number, game_type=game.game_type)


def parse_board_ref(word: str, cmd: Command) -> tuple[int, int | None]:
    m = _BOARD_REF.match(word)
    if not m:
        raise CommandError(f"'{word[:40]}' is not a board number", game_type=cmd.game_type)
    return int(m.group(1)), (int(m.group(2)) if m.group(2) else None)


async def load_game(ctx: Ctx, cmd: Command, word: str, *, lock: bool = True) -> tuple[Game, int | None]:
    number, at = parse_board_ref(word, cmd)
    game_type = cmd.game_type or DEFAULT_GAME_TYPE
    game = await ctx.uow.games.get(game_type, number, lock=lock)
    if game is None:
        raise CommandError(f"there is no {game_title(game_type)} board {number}", game_type=game_type)
    ctx.board = str(number)
    return game, at


def require_player(game: Game, user: User, cmd: Command) -> Seat:
    seat = seat_of(game, user)
    if seat is None:
        raise CommandError(
            f"{user.userid} is not playing on board {game.board_number}", board=game.board_number, game_type=game.game_type
        )
    return seat


def require_active(game: Game) -> None:
    if game.status != "active":
        raise CommandError(
            f"board {game.board_number} is over ({game.result})", board=game.board_number, game_type=game.game_type
        )


def replay(game: Game, moves: list[MoveRecord], upto: int | None = None) -> BoardPosition:
    """The position after the first ``upto`` plies (all when None)."""
    plies = [(m.ply, m.seat, m.move) for m in moves if upto is None or m.ply <= upto]
    return position_after(game.game_type, game.start_position, plies)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------- views
def army_letters(game_type: str, army: int) -> str:
    return board_rules(game_type).army_letters(army)


def facts(game: Game) -> BoardFacts:
    """The board as the shared view (:mod:`..gametypes.view`) reads it."""
    return BoardFacts(
        game.game_type,
        game.board_number,
        game.status,
        game.result or "",
        game.ply,
        tuple(SeatFacts(s.user.userid, s.seat, s.active, s.resign_pending) for s in game.seats),
        game.winner_seat,
        tuple(game.draw_votes or ()),
        tuple(game.undo_votes or ()),
    )


def status_lines(game: Game, pos: BoardPosition, ply: int | None = None) -> list[str]:
    """Whose turn, announcements, pending votes (:func:`..gametypes.view.status_lines`),
    and how to answer a vote by mail.  ``ply``: the plies played in the position
    shown (fewer: a position of the past; more: a preview)."""
    lines = view_status_lines(facts(game), pos, ply)
    if game.status != "active" or (ply is not None and ply < game.ply):
        return lines
    for votes in (game.draw_votes, game.undo_votes):
        # a robot answers by itself: the line is for the people still to answer
        humans = [s.user.userid for s in game.seats if s.active and s.seat not in (votes or ()) and not s.user.is_robot]
        if votes and humans:
            who = humans[0] if len(humans) == 1 else "USERID"
            lines.append(
                f"To answer: {game.game_type} move {game.board_number} {who} PASSWORD accept (or reject),"
                " or reply accept or reject to your board mail."
            )
    return lines


async def game_view(
    ctx: Ctx,
    game: Game,
    *,
    last_rounds: int | None = ROUTINE_ROUNDS,
    upto: int | None = None,
    viewer: Seat | None = None,
    notes: list[str] | None = None,
    pos: BoardPosition | None = None,
    tried: list[tuple[int, str]] | None = None,
) -> GameView:
    """The view of a board for a mail.  ``tried``: plies (seat, move) that ``pos``
    is ahead of the board by (a submitted move's preview); they end the move table
    and count in the status line."""
    moves: list[MoveRecord] | list[Ply]
    if upto is not None:
        moves = [m for m in await ctx.uow.moves.of_game(game.id) if m.ply <= upto]
        pos = pos or replay(game, moves, upto)
        status = status_lines(game, pos, upto)
    else:
        if last_rounds is None:
            moves = await ctx.uow.moves.of_game(game.id)
        else:  # a board mail's table: the rounds a batch read ahead
            moves = await ctx.uow.moves.last_plies(game.id, last_rounds * len(game.seats) + len(game.seats))
        pos = pos or position(game)
        status = status_lines(game, pos, game.ply + len(tried or []))
    if game.tournament_id is not None:
        status = [*status, await tournament_line(ctx, game)]
    clock = time_line(ctx, game) if upto is None and not tried else None
    if clock:
        status = [*status, clock]
    names = [s.user.userid for s in game.seats]
    plies = [(m.seat, m.move + (" (Auto)" if m.auto else "")) for m in moves] + list(tried or [])
    first_round = (moves[0].ply - 1) // max(1, len(game.seats)) if moves else 0
    rows, omitted, width = move_table(names, plies, last_rounds=last_rounds)
    for row in rows:
        row.number += first_round
    board = facts(game)
    players = [PlayerView(s.userid, s.seat, army_letters(game.game_type, s.seat), player_state(board, s)) for s in board.seats]
    private = []
    if viewer is not None:
        if viewer.queued_moves:
            private.append(f"Your queued moves: {', '.join(viewer.queued_moves)}")
        if viewer.submitted_move:
            private.append(f"Your submitted move (not yet confirmed): {viewer.submitted_move}")
    opts = ", ".join(option_text(k, v) for k, v in sorted(game.options.items()))
    return GameView(
        title=game_title(game.game_type),
        board_number=game.board_number,
        variant=game.variant + ("" if game.rated else ", unrated"),
        players=players,
        status_lines=(notes or []) + status,
        move_header=names,
        move_rows=rows,
        board=board_rules(game.game_type).board_text(pos),
        subscribers=[u.userid for u in await ctx.subscribers(game.id)],
        rating_lines=ctx.rating_lines,
        options_line=f"; {opts}" if opts else "",
        omitted_rounds=omitted + first_round,
        col_width=width,
        private_lines=private,
        position=board_rules(game.game_type).dump(pos),
        last_move=moves[-1].move if moves and moves[-1].move not in (RESIGN, FORFEIT) else "",
        game_type=game.game_type,
        web_url=board_url(ctx, game),
    )


async def tournament_line(ctx: Ctx, game: Game) -> str:
    """The line of a tournament board's mail naming its tournament and round (issue 41)."""
    note = await Tournaments(ctx.uow.session).note_of(game.id)
    if note is None:
        return "A tournament game."
    number, name, round_no, rounds = note
    return f"A game of tournament T{number} \"{name}\", round {round_no} of {rounds} ('{game.game_type} tournament show {number}')."


def days(value: object) -> str:
    number = float(str(value))
    return f"{number:g} {'day' if number == 1 else 'days'}"


def option_text(name: str, value: object) -> str:
    """A board option as words: ``forfeittime 2.0`` → ``forfeit after 2 days``."""
    if name == "nagtime":
        return f"reminder after {days(value)}"
    if name == "forfeittime":
        return f"forfeit after {days(value)}"
    if name == "totaltime":
        return f"{days(value)} of thinking time each"
    if name == "clock" and isinstance(value, dict):
        clock = clock_of({"clock": value})
        return "clock: " + clock.text() if clock else "clock"
    if name == "weekends":
        return "no clock on weekends"
    return f"{name} {value}"


def to_move_name(game: Game) -> str:
    if game.status != "active":
        return "finished" if game.status != "removed" else "removed"
    return seat_by_army(game, position(game).to_move).user.userid


def subject_for(game: Game, *, new: bool = False, comment: bool = False) -> str:
    title = game_title(game.game_type)
    if new:
        text = f"New {title} Board {game.board_number} {game.seats[0].user.userid}"
    else:
        text = f"{title} Board {game.board_number} {to_move_name(game)}"
    return text + (" **" if comment else "")


async def mail_game(
    ctx: Ctx,
    game: Game,
    *,
    template: str = "update.txt",
    headline: str = "",
    comment: CommentView | None = None,
    notes: list[str] | None = None,
    new: bool = False,
) -> None:
    """The state-change mail to every player and subscriber (and notifiers when the
    game has ended), one body for all."""
    view = await game_view(ctx, game, notes=notes)
    body = render(template, game=view, headline=headline, comment=comment, example=example_move(game, position(game)))
    body += web_line(ctx, game)
    if new and not headline and view.status_lines:  # the HTML heading: "Terrace Board 102: new board, it is …"
        first = view.status_lines[0].rstrip(".")
        headline = "new board, " + first[:1].lower() + first[1:]
    picture = BoardPicture(view, headline, comment)
    users: list[User] = [s.user for s in game.seats]
    users += await ctx.subscribers(game.id)
    if game.status != "active":
        users += await ctx.uow.watchers.notifiers(game.id)
        users += await ctx.uow.users.notify_all_users()
    # a routine update (not a new board, not the end) waits for the digest of a
    # player who asked for one (issue 40): its headline becomes a line of it
    held = digest_line(game, headline, comment) if game.status == "active" and not new and headline else None
    await send_board(ctx, game, users, subject_for(game, new=new, comment=bool(comment and comment.text)), body, picture,
                     hold=held)  # fmt: skip


def digest_line(game: Game, headline: str, comment: CommentView | None) -> str:
    """A held board mail as a line of a digest: ``Terrace Board 101: ben played d7-d6``."""
    line = f"{game_title(game.game_type)} Board {game.board_number}: {headline}"
    if comment is not None and comment.text:
        said = comment.text.strip().split("\n", 1)[0]
        line += f" ({comment.author}: {said[:60]}{'...' if len(said) > 60 else ''})"
    return line[:300]


def board_url(ctx: Ctx, game: Game) -> str:
    """The board's page in the web archive ('' when the server links none:
    :attr:`..config.WebConfig.link_base`)."""
    url = ctx.config.web.link_base
    return f"{url}/boards/{game.game_type}/{game.board_number}" if url else ""


def web_line(ctx: Ctx, game: Game) -> str:
    """The board's page in the web archive, as the last line of a text part."""
    url = board_url(ctx, game)
    return f"\nThis board on the web: {url}\n" if url else ""


def example_move(game: Game, pos: BoardPosition) -> str:
    """A legal move of the side to move, for hints (``d2-e3`` at the long start)."""
    return board_rules(game.game_type).example_move(pos)


def reply_hint(game: Game, seat: Seat) -> str:
    """The last line of a board mail to a player: how to answer it by Reply."""
    if game.status != "active":
        rematch = "rematch for a new game, " if game.status != "removed" else ""
        return f"Reply to this mail with {rematch}show, or chat and your message, on the first line."
    pos = position(game)
    if game.draw_votes or game.undo_votes:
        kind = "draw" if game.draw_votes else "undo"
        votes = game.draw_votes or game.undo_votes
        if seat.active and seat.seat not in votes:
            return f"Reply to this mail with accept or reject on the first line to answer the {kind} request; or show, chat."
    if seat.active and pos.to_move == seat.seat:
        return f"Reply to this mail with your move (e.g. {example_move(game, pos)}) on the first line; or resign, draw, undo, show, chat."
    if not seat.active:
        return "Reply to this mail with show, or chat and your message, on the first line."
    mover = seat_by_army(game, pos.to_move).user.userid
    example = queue_example(game, pos, seat.seat)
    queue = f"queue and your next move (e.g. queue {example})" if example else "queue and your next move"
    return f"It is {mover}'s turn: reply to this mail with {queue}, or resign, draw, undo, show, chat."


def move_links(game: Game, seat: Seat, address: str, subject: str) -> str:
    """The move links of a board mail titled ``subject`` (issue 39) for ``seat``'s
    player, whose reply-key address is ``address``: every legal move, grouped by
    piece, each a ``mailto:`` link whose body is the move; '' unless it is that
    player's turn to move (and not to answer a draw or undo request first)."""
    if not may_move(game, seat):
        return ""
    choices = board_rules(game.game_type).move_choices(position(game))
    return move_links_html(choices, address=address, subject=subject, heading=MOVE_LINKS_HEADING, note=MOVE_LINKS_NOTE)


def may_move(game: Game, seat: Seat) -> bool:
    """It is ``seat``'s turn to move on ``game`` (and not to answer a draw or undo
    request first): its board mail offers the move links and the play page."""
    if game.status != "active" or not seat.active:
        return False
    votes = game.draw_votes or game.undo_votes
    return position(game).to_move == seat.seat and not (votes and seat.seat not in votes)


def play_url(ctx: Ctx, key: str) -> str:
    """The play page of a board mail's reply ``key`` (issue 39: the same key, scope
    and expiry as a Reply), or '' when the server links no web archive."""
    url = ctx.config.web.link_base
    return f"{url}/play/{key}" if url else ""


def queue_example(game: Game, pos: BoardPosition, army: int) -> str:
    """A move ``army`` could queue: its example move once the others have played
    their example moves ('' when the game would end first)."""
    rules = board_rules(game.game_type)
    for _ in range(len(game.seats)):
        if pos.is_over():
            return ""
        if pos.to_move == army:
            return rules.example_move(pos)
        pos = rules.play(pos, rules.parse_move(pos, rules.example_move(pos)))
    return ""


@dataclass
class BoardPicture:
    """What the HTML part of a board mail shows (issue 16): the view the text was
    made from, so both parts say the same."""

    view: GameView
    headline: str
    comment: CommentView | None = None
    notices: list[str] = field(default_factory=list)
    """lines after the comments, as the text part has them (players whose mail bounces)"""
    _drawn: str | None = field(default=None, init=False, repr=False)

    def html(self, hint: str, links: str = "") -> str:
        """The HTML part of a copy with the reply ``hint`` and the move ``links``
        (:func:`move_links`: HTML, '' in every copy but the mover's)."""
        if hint:
            # drawn once per mail; each player's copy differs only in its hint and links
            if self._drawn is None:
                self._drawn = self._render(HINT_MARK, MOVES_MARK)
            return self._drawn.replace(MOVES_MARK + "\n", links).replace(HINT_MARK, str(escape(hint)))
        return self._render("", links)

    def _render(self, hint: str, links: str) -> str:
        cid = f"board-{self.view.title.lower()}-{self.view.board_number}@pbmserv"
        rules = board_rules(self.view.game_type)
        alt = rules.picture_alt(rules.load(self.view.position)) if self.view.position else "the board"
        comments = [self.comment] if self.comment and self.comment.text else []
        return board_html(
            self.view, headline=self.headline, comments=comments, cid=cid, alt=alt, reply_hint=hint, move_links=links,
            notices=self.notices,
        )  # fmt: skip

    def spec(self) -> dict[str, object]:
        """What :mod:`pbmserv_terrace.app.compose` draws when the mail is sent."""
        return {
            "game": self.view.game_type,
            "tpn": self.view.position,
            "last_move": self.view.last_move,
            "cid": f"board-{self.view.title.lower()}-{self.view.board_number}@pbmserv",
        }


async def send_board(
    ctx: Ctx,
    game: Game,
    users: list[User],
    subject: str,
    body: str,
    picture: BoardPicture | None = None,
    *,
    hold: str | None = None,
) -> None:
    """A board mail to ``users``: each player of the board gets their own copy with
    a reply key (``Reply-To``) and the line saying how to answer it by Reply; the
    others (subscribers, notifiers) one copy without.  With ``picture``, users who
    want pictures (the default) get the HTML part with the board drawn.  ``hold``:
    the mail's line in a digest; a player with a digest (``change digest``) who did
    not write the mail being answered gets that line held for their next digest
    instead of the mail, in this transaction (:mod:`pbmserv_terrace.store.digests`)."""
    seats = {s.user_id: s for s in game.seats}
    others: dict[bool, list[User]] = {True: [], False: []}
    done: set[int] = set()
    silent = silent_lines([s.user for s in game.seats])
    if silent:  # players the server cannot reach (their mail bounces: issue 43)
        body = body.rstrip("\n") + "\n\n" + "\n".join(silent) + "\n"
        if picture is not None:  # the HTML part says it too
            picture = replace(picture, notices=silent)
    for user in users:
        if user.id in done:
            continue
        done.add(user.id)
        seat = seats.get(user.id)
        if seat is not None and user.id in ctx.quiet_users:
            continue  # a Reply to a digest: its one summary answers its sender
        if seat is not None and hold is not None and user.digest and not user.signed_off and not ctx.acted(user):
            Digests(ctx.uow.session).hold(DigestEntry(user_id=user.id, game_id=game.id, line=hold, created_at=ctx.now))
            continue
        addresses = ctx.addresses_of(user)  # confirmed ones only (issue 36)
        if seat is None or user.signed_off or not addresses:
            others[picture is not None and user.pictures].append(user)
            continue
        reply_to, key = await ctx.board_reply_address(game, user)
        hint = reply_hint(game, seat)
        # the play page (issue 39): the same key, for the player to move (the hint stays the last line)
        play = play_url(ctx, key) if game.game_type in BOARD_GAME_TYPES and may_move(game, seat) else ""
        text = body.rstrip("\n") + "\n\n" + (f"{PLAY_LINE} {play}\n" if play else "") + hint + "\n"
        mail = Mail(list(dict.fromkeys(addresses)), subject, text, reply_to=reply_to, reply_key=key)
        if picture is not None and user.pictures:
            links = move_links(game, seat, reply_to, subject)
            if play:
                links += play_link_html(play, PLAY_LINE)
            mail.html, mail.picture = picture.html(hint, links), picture.spec()
        ctx.out.append(mail)
    ctx.send(others[False], subject, body)
    if others[True] and picture is not None:
        mark = len(ctx.out)
        ctx.send(others[True], subject, body)
        for mail in ctx.out[mark:]:
            mail.html, mail.picture = picture.html(""), picture.spec()


def take_comment(ctx: Ctx, game: Game, cmd: Command, author: str) -> CommentView | None:
    text = cmd.comment.strip()
    if not text:
        return None
    text = shortened(ctx, text)
    game.comment = f"{author} writes:\n{text}"
    return CommentView(author, text)
