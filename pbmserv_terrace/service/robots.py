"""Robot players (issue 17): which boards wait for a robot, and the robot's thinking.

A robot's move is made in two steps so that no transaction waits for the engine:

1. :func:`think` — a pure function of (position, level, ply, history), run wherever the
   caller likes (a worker process for ``serve``, in-process for ``handle``); it
   sees no database.
2. :meth:`pbmserv_terrace.service.Service.robot_move` — the move applied through
   the ordinary ``move`` handler in its own transaction, only if the board is still
   at that ply with that robot to move.  So a move computed twice (a restart, two
   workers) is played once: the second finds the ply moved on.

:func:`robot_turns` is the work list: boards where a robot is to move, each with
the game's earlier positions (:func:`game_history`, replayed from the move list) so
that the robot does not shuffle back and forth into positions already seen.

The same pool computes solver hints (:mod:`.hints`): a :class:`HintTurn` is the
work of a solitaire board whose player asked for one, found the same ways (the
mail's result, :func:`robot_turns` at start, :func:`robot_turn_on`).  And game
reviews (:mod:`.reviews`, issue 42): a :class:`ReviewTurn` is a finished board
whose review is still owed (its ``reviews`` row ``pending``).

A player may have at most ROBOT_GAMES_PER_PLAYER games with a robot in play at
once (:func:`check_robot_games`): each costs the pool a search per move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import event, inspect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from ..gametypes import GAME_TYPES, board_rules
from ..store import Game, MoveRecord, Seat, User
from ..store.models import ROBOTS
from ..store.repos import Games, Moves, Users
from ..store.reviews import PENDING, Reviews
from . import hints, reviews
from .boards import FORFEIT, RESIGN, mail_game, position, seat_by_army
from .context import CommandError, Ctx
from .plies import finish

ROBOT_GAMES_PER_PLAYER = 5
"""games with a robot at the board one player may have in play at once"""
ROBOTS_ALONE_PLIES = 300
"""Terrace has no draw rule: once every person at a board is out, the robots play
on until this ply, then the game is drawn (two robots could shuffle forever)."""


@dataclass(frozen=True, slots=True)
class RobotTurn:
    """A board waiting for a robot's move, with what the engine needs to choose it."""

    game_type: str
    board: int
    ply: int
    """plies played so far: the move to make is number ``ply + 1``"""
    tpn: str
    level: int
    userid: str
    history: tuple[str, ...] = ()
    """the game's earlier positions (TPN, oldest first) that the current one could
    repeat: the engine scores a return to one of them as a draw"""
    said: str = ""
    """the robot's comment on its last move, while it is still the board's last
    comment (:func:`said_last`): the same words again are not said (:func:`to_say`)"""

    @property
    def key(self) -> tuple[str, int]:
        return (self.game_type, self.board)


@dataclass(frozen=True, slots=True)
class HintTurn(RobotTurn):
    """A solitaire board whose player waits for a hint (:mod:`.hints`), with what
    the solver needs: ``ply`` and ``taken_back`` name the position the hint is for
    (:meth:`pbmserv_terrace.service.Service.hint_answer` sends it only there)."""

    variant: str = ""
    deal: int = 0
    moves: tuple[str, ...] = ()
    taken_back: int = 0

    @property
    def position(self) -> tuple[int, int]:
        return (self.ply, self.taken_back)


@dataclass(frozen=True, slots=True)
class ReviewTurn(RobotTurn):
    """A finished board whose players are owed a review (:mod:`.reviews`), with what
    the engine needs: the start position and the moves (as recorded, up to a
    resignation).  :meth:`pbmserv_terrace.service.Service.review_answer` sends it
    once, while the board's ``reviews`` row is still pending."""

    game_id: int = 0
    start: str = ""
    moves: tuple[str, ...] = ()


def think(game_type: str, tpn: str, level: int, ply: int, history: Sequence[str] = ()) -> tuple[str, str]:
    """The robot's move in the position ``tpn`` and its one-line comment.  Plain
    strings in and out, so it runs in a worker process; deterministic for
    (position, level, ply, history), so computing it again after a crash gives the
    same move.  ``history``: the game's earlier positions (:func:`game_history`)."""
    return board_rules(game_type).robot_move(tpn, level, ply, history)


def game_history(game: Game, moves: Sequence[MoveRecord]) -> tuple[str, ...]:
    """The positions before the current one (TPN, oldest first), replayed from the
    start position and the move list, that the current position could repeat:
    those since the last capture or resignation (pieces never come back).  Empty
    when the replay does not arrive at the board's position (a board set up by
    hand), so the robot then simply has no history."""
    rules = board_rules(game.game_type)
    pos = rules.load(game.start_position)
    seen = []
    try:
        for record in moves:
            seen.append(pos)
            if record.move in (RESIGN, FORFEIT):
                pos = pos.without_army(record.seat)
            else:
                pos = rules.play(pos, rules.parse_move(pos, record.move))
    except ValueError:  # an illegal move in the record
        return ()
    if pos != rules.load(game.position):
        return ()
    pieces = rules.material(pos)
    kept: list[str] = []
    for earlier in reversed(seen):
        if rules.material(earlier) != pieces:
            break
        kept.append(rules.dump(earlier))
    return tuple(reversed(kept))


async def with_moves(session: AsyncSession, game: Game, turn: HintTurn) -> HintTurn:
    """``turn`` with the solitaire's move texts filled in (the solver replays them)."""
    return replace(turn, moves=tuple(m.move for m in await Moves(session).of_game(game.id)))


async def with_history(session: AsyncSession, game: Game, turn: RobotTurn) -> RobotTurn:
    """``turn`` with the game's history (:func:`game_history`) filled in."""
    return replace(turn, history=game_history(game, await Moves(session).of_game(game.id)))


def robot_to_move(game: Game) -> Seat | None:
    """The robot's seat when ``game`` is in play and a robot is to move."""
    if game.status != "active":
        return None
    pos = position(game)
    if pos.is_over() or pos.to_move not in pos.armies():
        return None
    seat = seat_by_army(game, pos.to_move)
    return seat if seat.active and seat.user.is_robot else None


def turn_of(game: Game) -> RobotTurn | None:
    seat = robot_to_move(game)
    if seat is None or seat.user.robot_level is None:
        return None
    userid = seat.user.userid
    return RobotTurn(game.game_type, game.board_number, game.ply, game.position, seat.user.robot_level, userid,
                     said=said_last(game, userid))  # fmt: skip


def said_last(game: Game, userid: str) -> str:
    """What ``userid`` wrote on ``game`` last, if it is the board's last comment
    (a move without a comment leaves the board's comment as it was)."""
    head, _, text = (game.comment or "").partition("\n")
    return text if head == f"{userid} writes:" else ""


def to_say(turn: RobotTurn, comment: str) -> str:
    """The robot's comment on its move: ``comment`` (its view of the game, from
    :func:`think`), or nothing when that is what it said on its last move and
    nobody has written since (issue 38: 'robot1 thinks the game is level' eight
    times in one game).  Its view is said again when it changes."""
    return "" if turn.said and comment.strip() == turn.said.strip() else comment


GAMES_CHANGED = "robot_games_changed"


def watch_games(session: AsyncSession) -> None:
    """Note, at each flush of ``session``, the games it writes that may have a robot
    at the board (read by :func:`changed_games`): a robot can only come to move
    when a game changes.  An event, because the handlers keep no list of the
    games they touch and the identity map forgets unmodified objects."""
    changed: set[int] = session.info.setdefault(GAMES_CHANGED, set())

    def after_flush(sync_session: Session, _context: object) -> None:
        for obj in (*sync_session.new, *sync_session.dirty):
            if isinstance(obj, Game) and obj.id is not None and _may_seat_robot(obj):
                changed.add(obj.id)

    event.listen(session.sync_session, "after_flush", after_flush)


def _may_seat_robot(game: Game) -> bool:
    """Whether a robot may sit at ``game``, looking only at what is loaded (no I/O
    inside a flush): unknown counts as maybe."""
    seats = inspect(game).dict.get("seats")
    if seats is None:
        return True
    for seat in seats:
        user = inspect(seat).dict.get("user")
        if user is None or inspect(user).dict.get("robot_level", 0) is not None:
            return True
    return False


def changed_games(session: AsyncSession) -> list[int]:
    """The games :func:`watch_games` saw written (that may seat a robot)."""
    return sorted(session.info.get(GAMES_CHANGED, ()))


async def robot_turns(session: AsyncSession, game_ids: Sequence[int] | None = None) -> list[RobotTurn]:
    """Boards (among ``game_ids``, or all) where a robot is to move, oldest move
    first; and the boards whose player waits for a hint: those this session's
    transaction asked for (with ``game_ids``), or all (without)."""
    waiting = await hint_turns(session, all_boards=game_ids is None)
    return waiting + await _robot_turns(session, game_ids) + await review_turns(session, all_boards=game_ids is None)


async def review_turns(session: AsyncSession, *, all_boards: bool = False) -> list[RobotTurn]:
    """The finished boards whose review is owed: those this session's transaction
    ended (:func:`.reviews.noted`), or with ``all_boards`` every one (a restart's rescan)."""
    if all_boards:
        games = await Reviews(session).pending()
    else:
        games = [g for i in reviews.noted(session) if (g := await session.get(Game, i)) is not None]
    return [turn for game in games if (turn := await review_turn_of(session, game)) is not None]


async def review_turn_of(session: AsyncSession, game: Game) -> ReviewTurn | None:
    """The review work of a finished board whose review is still owed."""
    row = await Reviews(session).get(game.id)
    if row is None or row.state != PENDING:
        return None
    moves = reviews.review_moves(await Moves(session).of_game(game.id))
    return ReviewTurn(game.game_type, game.board_number, game.ply, "", 0, "", game_id=game.id, start=game.start_position,
                      moves=tuple(moves))  # fmt: skip


async def _robot_turns(session: AsyncSession, game_ids: Sequence[int] | None) -> list[RobotTurn]:
    if game_ids is not None and not game_ids:
        return []
    robots = await Users(session).get_many(list(ROBOTS))
    ids = [u.id for u in robots.values() if u.is_robot]
    if not ids:
        return []
    games = await Games(session).active_for_users(ids, game_ids)
    return [await with_history(session, game, turn) for game in games if (turn := turn_of(game)) is not None]


async def draw_if_robots_alone(ctx: Ctx, game: Game) -> bool:
    """End ``game`` in a draw when only robots are left in it and it has reached
    :data:`ROBOTS_ALONE_PLIES` (the players, out of the game, still get the mail)."""
    if any(s.active and not s.user.is_robot for s in game.seats) or game.ply < ROBOTS_ALONE_PLIES:
        return False
    await finish(ctx, game, None, f"draw: only robots were left after {game.ply} plies")
    await mail_game(ctx, game, headline=f"only robots are left after {game.ply} plies: the game is drawn")
    return True


async def hint_turns(session: AsyncSession, *, all_boards: bool = False) -> list[RobotTurn]:
    """The boards whose player waits for a hint: those asked for in this session
    (:func:`.hints.note_asked`), or with ``all_boards`` every solitaire board in play."""
    games: list[Game] = []
    if all_boards:
        for kind in GAME_TYPES.values():
            if kind.family == "solitaire":
                games += await Games(session).active_of_type(kind.name, limit=1_000_000)
    else:
        for game_type, board in hints.asked_boards(session):
            game = await Games(session).get(game_type, board)
            if game is not None:
                games.append(game)
    return [turn for game in games if (turn := hint_turn_of(game)) is not None]


def hint_turn_of(game: Game) -> HintTurn | None:
    """The hint work of a solitaire board whose player waits for one."""
    if game.status != "active" or hints.PENDING not in game.options:
        return None
    return HintTurn(game.game_type, game.board_number, game.ply, "", 0, game.seats[0].user.userid,
                    variant=game.variant, deal=int(game.options["deal"]), taken_back=game.taken_back or 0)  # fmt: skip


async def check_robot_games(session: AsyncSession, users: Sequence[User]) -> None:
    """Refuse a new game with a robot for a person who already has
    ROBOT_GAMES_PER_PLAYER games with a robot in play."""
    if not any(u.is_robot for u in users):
        return
    for user in users:
        if user.is_robot:
            continue
        games = await Games(session).active_for_users([user.id])
        with_robot = [g for g in games if any(s.user.is_robot for s in g.seats)]
        if len(with_robot) >= ROBOT_GAMES_PER_PLAYER:
            boards = ", ".join(f"{g.game_type} {g.board_number}" for g in with_robot[:ROBOT_GAMES_PER_PLAYER])
            raise CommandError(
                f"the challenge cannot be made: {user.userid} already plays {len(with_robot)} games against robots "
                f"(boards {boards}), the most at once; finish or resign one first"
            )


async def robot_turn_on(session: AsyncSession, game_type: str, board: int) -> RobotTurn | None:
    """The robot's turn on one board, if a robot is to move there (or the hint
    work of a solitaire board whose player waits for one)."""
    game = await Games(session).get(game_type, board)
    if game is not None and game.status in ("won", "draw"):
        return await review_turn_of(session, game)
    if game is not None and GAME_TYPES[game.game_type].family == "solitaire":
        hint = hint_turn_of(game)
        return await with_moves(session, game, hint) if hint is not None else None
    turn = turn_of(game) if game is not None else None
    return await with_history(session, game, turn) if game is not None and turn is not None else None


__all__ = [
    "ROBOTS_ALONE_PLIES",
    "ROBOT_GAMES_PER_PLAYER",
    "HintTurn",
    "ReviewTurn",
    "RobotTurn",
    "changed_games",
    "check_robot_games",
    "draw_if_robots_alone",
    "game_history",
    "hint_turn_of",
    "hint_turns",
    "review_turn_of",
    "review_turns",
    "robot_to_move",
    "robot_turn_on",
    "robot_turns",
    "said_last",
    "think",
    "to_say",
    "turn_of",
    "watch_games",
]
