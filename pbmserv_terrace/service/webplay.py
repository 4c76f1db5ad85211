"""The play page's side of the service (issue 39 part 2): what a ``/play/KEY`` page
shows, and the outcome of the move posted from it.

The web archive never writes: it hands (key, move) to ``serve``, whose
:meth:`.core.Service.web_play` runs the key's checks (:func:`.keyed.key_user`,
:func:`.keyed.key_board`: MAC, user, board, seat) and the board version the key
names, then the ``move`` handler as the key's user, exactly as a keyed Reply's
move (the same replies to every player and watcher, queued in the same
transaction).  What goes back is a :class:`WebPlay`, plain values only (it
crosses a pipe as JSON): never an address, never a key.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..gametypes import GAME_TYPES, board_rules, game_title
from ..store import Game, Seat, User
from .boards import may_move, position, seat_by_army, status_lines
from .context import CommandError, Ctx
from .replykeys import ReplyKey, board_version, current_mark
from .robots import RobotTurn

STATUSES = ("ready", "played", "used", "stale", "invalid", "wait", "over", "solitaire", "illegal")
"""ready: the key's user is to move (the page lists the moves); played: the move
was played now; used: the key's move was played already (a second post); stale:
the board has moved on since the key's mail; invalid: no key the server made, or
no longer valid; wait: not the user's move (another's turn, a vote to answer);
over: the game has ended; solitaire: a solitaire (played by Reply); illegal: the
move was refused (the page again, with the reason)"""


@dataclass
class WebPlay:
    """What the play page shows: a status of :data:`STATUSES`, one sentence for
    the player, and the board as it stands (after the move, when one was played)."""

    status: str
    message: str
    game_type: str = ""
    board: int = 0
    title: str = ""
    userid: str = ""
    position: str = ""
    """the board's position, as the game's rules dump it"""
    last_move: str = ""
    ply: int = 0
    lines: list[str] = field(default_factory=list)
    """the board's status lines (whose turn, how it ended)"""
    players: list[str] = field(default_factory=list)
    move: str = ""
    """the move played (its canonical text)"""
    mailed: list[str] = field(default_factory=list)
    """the players a board mail went to (userids)"""
    others: int = 0
    """other addresses mailed (watchers, notifiers): a count, never an address"""
    outbox_ids: list[str] = field(default_factory=list)
    robot_turns: list[RobotTurn] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """The page's values (no Message-IDs, no robot turns): what the web process gets."""
        values = asdict(self)
        del values["outbox_ids"], values["robot_turns"]
        return values


def refused(exc: CommandError) -> WebPlay:
    """A key that does not verify, or whose board or seat is gone."""
    return WebPlay("invalid", f"This play link is not valid: {exc.reason}.")


async def board_state(ctx: Ctx, key: ReplyKey, user: User, game: Game, seat: Seat) -> WebPlay:
    """The page for a verified key: ``ready`` when the key is current and its user
    is to move, else why not."""
    page = WebPlay("ready", "", game.game_type, game.board_number, game_title(game.game_type), user.userid)
    page.players = [s.user.userid for s in game.seats]
    page.ply = game.ply
    if GAME_TYPES[game.game_type].family != "board":
        page.status = "solitaire"
        page.message = (f"{page.title} is played by Reply: answer your newest board mail with your moves on its first "
                        "line, or tap a move in it.")  # fmt: skip
        return page
    pos = position(game)
    page.position = board_rules(game.game_type).dump(pos)
    page.lines = status_lines(game, pos)
    last = await ctx.uow.moves.last_plies(game.id, 1)
    page.last_move = last[0].move if last else ""
    board = f"board {game.board_number}"
    if key.ply != current_mark(key, game):
        if key.versioned and board_version(game) == key.ply + 1 and last and last[0].seat == seat.seat:
            page.status, page.move = "used", last[0].move
            page.message = f"Your move {last[0].move} on {board} was played already (ply {game.ply}); nothing more was done."
        else:
            page.status = "stale"
            page.message = (f"This play link is from an earlier position of {board}, which has moved on (it is at ply "
                            f"{game.ply} now): open the link in your newest board mail.")  # fmt: skip
        return page
    if game.status != "active":
        page.status, page.message = "over", f"The game on {board} is over ({game.result})."
        return page
    if not may_move(game, seat):
        page.status = "wait"
        if (game.draw_votes or game.undo_votes) and seat.active and pos.to_move == seat.seat:
            kind = "draw" if game.draw_votes else "undo"
            page.message = f"A {kind} request is waiting for your answer: reply accept or reject to your board mail."
        elif not seat.active:
            page.message = f"You are out of the game on {board}."
        else:
            page.message = f"It is {seat_by_army(game, pos.to_move).user.userid}'s turn on {board}, not yours."
        return page
    page.message = f"Your move on {board}, {user.userid}: tap a piece, then where it goes, then confirm."
    return page


def played(ctx: Ctx, page: WebPlay, game: Game, move: str) -> WebPlay:
    """``page`` after its move was played: the board as it is now and who was mailed."""
    names: dict[str, str] = {}
    for s in game.seats:
        for address in s.user.addresses:
            names.setdefault(address.lower(), s.user.userid)
    mailed: list[str] = []
    others: set[str] = set()
    for mail in ctx.out:
        for address in mail.to:
            who = names.get(address.lower())
            if who is None:
                others.add(address.lower())
            elif who not in mailed:
                mailed.append(who)
    pos = position(game)
    page.status, page.move, page.mailed, page.others = "played", move, mailed, len(others)
    page.position, page.last_move, page.ply = board_rules(game.game_type).dump(pos), move, game.ply
    page.lines = status_lines(game, pos)
    page.message = f"Your move {move} is played on board {game.board_number}."
    return page
