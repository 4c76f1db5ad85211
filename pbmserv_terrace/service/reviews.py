"""A review after every finished game (issue 42 item 1), off the mail's path.

A review is made in three steps, the way a hint is (:mod:`.hints`):

1. :func:`request`, called by :func:`.plies.finish` in the transaction that ends
   the game (a last move, a resignation, a forfeit, a draw), writes a ``pending``
   :class:`~pbmserv_terrace.store.reviews.ReviewRecord` when the game's rules can
   review it (:meth:`BoardRules.can_review`: the game table decides, never a name
   here) and one of its people wants reviews (``change review``, on by default;
   robots never get mail).  The game-end mail is queued in that transaction.
2. The robots' worker pool computes it (:func:`compute`: the game's rules'
   :meth:`BoardRules.review`, plain values in and out) within the operator's
   budget (:func:`budget`: ``[server] review_nodes`` per position, at most
   ``review_game_nodes`` for the game), outside any transaction.  ``serve`` makes
   it in short steps (:func:`step`: one position's search each), behind any
   robot's move that waits (a person waits for that one; nobody waits to the
   second for a review); pipe mode in one go.  Both give the same review.
3. :meth:`pbmserv_terrace.service.Service.review_answer` locks the row and, only
   while it is still ``pending``, stores the review and queues the mails
   (:func:`send`) in one transaction.  So a review computed twice is mailed once,
   and one a crash interrupted is found again by the next start's rescan
   (:func:`~.robots.robot_turns`), its game-end mail long queued before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ..config import Config
from ..gametypes import GAME_TYPES, board_rules, game_title
from ..gametypes.review import GameReview, ReviewMistake, ReviewStep, review_from_json, review_to_json
from ..render import render
from ..render.html import INK, MUTED, PAGE_BG, RULE
from ..store import Game, MoveRecord, User
from ..store.reviews import Reviews
from .boards import FORFEIT, RESIGN
from .context import Ctx, Mail

NOTED = "reviews_noted"
"""session.info key: the games whose review a transaction requested (:func:`noted`)"""
MIN_NODES = 200
"""the least search a position gets, however long the game (below it a review says little)"""
CHART_WIDTH, CHART_HEIGHT = 560, 160
"""CSS pixels of the evaluation chart in the HTML part (the PNG has twice as many)"""
LEVEL = 60
"""evaluations within ±LEVEL count as level in the text line (the review's MIN_SWING)"""
CLEAR = 300
"""evaluations beyond ±CLEAR count as winning / losing in the text line"""


def wants_review(user: User) -> bool:
    """Whether ``user`` gets review mails: a person (robots get no mail) who has not
    turned them off, left or been deleted."""
    return not user.is_robot and user.review and not user.signed_off and not user.is_deleted


def owed(game: Game) -> bool:
    """Whether ``game``, just ended, owes its players a review (not a game that
    ended before each side had moved: there is nothing to review)."""
    if game.ply < 2:
        return False
    kind = GAME_TYPES.get(game.game_type)
    if kind is None or kind.family != "board" or not kind.board.can_review(len(game.seats)):
        return False
    return any(wants_review(s.user) for s in game.seats)


def request(ctx: Ctx, game: Game) -> None:
    """Owe ``game``'s players a review (in the transaction that ends it), when the
    operator allows reviews, its rules can make one and a player wants it."""
    if ctx.config.server.review_nodes <= 0 or not owed(game):
        return
    Reviews(ctx.uow.session).request(game, ctx.now)
    noted_ids: set[int] = ctx.uow.session.info.setdefault(NOTED, set())
    noted_ids.add(game.id)


def noted(session: AsyncSession) -> list[int]:
    """The games :func:`request` owed a review in ``session``'s transaction."""
    return sorted(session.info.get(NOTED, ()))


def review_moves(records: Sequence[MoveRecord]) -> list[str]:
    """The game's moves as recorded, up to its first resignation or forfeit (a
    two-player game ends there; nothing after it is a move on the board)."""
    moves = []
    for record in records:
        if record.move in (RESIGN, FORFEIT):
            break
        moves.append(record.move)
    return moves


def budget(config: Config, plies: int) -> int:
    """Search nodes per position for a game of ``plies`` plies: ``review_nodes``,
    lowered so that the game's positions take at most ``review_game_nodes`` in all
    (0: no cap), never below MIN_NODES."""
    nodes = config.server.review_nodes
    cap = config.server.review_game_nodes
    if cap > 0:
        nodes = min(nodes, cap // (plies + 1))
    return max(MIN_NODES, nodes)


def compute(game_type: str, start: str, moves: Sequence[str], nodes: int) -> dict[str, Any] | None:
    """The review of the game (its JSON, :mod:`..gametypes.review`), or None when its
    rules cannot review it.  Plain values in and out: it runs in a worker process."""
    review = board_rules(game_type).review(start, list(moves), nodes)
    return None if review is None else review_to_json(review)


def step(game_type: str, start: str, moves: Sequence[str], nodes: int, found: tuple[Any, ...]) -> ReviewStep:
    """One step of the same review as :func:`compute` (:meth:`BoardRules.review_step`:
    one position's search, or one mistake's proof), given what the steps before
    found.  Plain values in and out: each step runs in whichever worker is free, and
    the pool puts a robot's move between two steps (:mod:`pbmserv_terrace.app.robots`)."""
    return board_rules(game_type).review_step(start, list(moves), nodes, found)


def data_of(done: ReviewStep) -> dict[str, Any] | None:
    """The review's JSON from the last :func:`step` (None: the rules cannot review it),
    what :func:`compute` gives."""
    return None if done.review is None else review_to_json(done.review)


# ---------------------------------------------------------------- the mail


@dataclass(frozen=True, slots=True)
class MistakeLine:
    ply: int
    who: str
    played: str
    better: str
    swing: str
    reason: str


@dataclass(frozen=True, slots=True)
class SideView:
    name: str
    yours: bool
    mistakes: list[MistakeLine]


def ply_signs(review: GameReview, seat: int) -> str:
    """The evaluation after each ply from ``seat``'s side, one sign a ply in groups
    of ten: ``W``/``L`` won or lost (a forced result), ``+``/``-`` clearly better or
    worse, ``'``/``,`` a little, ``=`` level."""
    signs = []
    for ply in range(1, review.plies + 1):
        value = review.evaluation_for(seat, ply)
        if value >= review.scale:
            signs.append("W")
        elif value <= -review.scale:
            signs.append("L")
        elif value > CLEAR:
            signs.append("+")
        elif value < -CLEAR:
            signs.append("-")
        elif value > LEVEL:
            signs.append("'")
        elif value < -LEVEL:
            signs.append(",")
        else:
            signs.append("=")
    return " ".join("".join(signs[i : i + 10]) for i in range(0, len(signs), 10))


def swing_words(review: GameReview, mistake: ReviewMistake) -> str:
    """A swing for a person: pieces' worth (100 points: an A), or "the game" when
    the move turned a game that was not lost into a lost one (or gave away that much)."""
    lost_after = review.evaluation_for(mistake.seat, mistake.ply) <= -review.scale
    lost_before = review.evaluation_for(mistake.seat, mistake.ply - 1) <= -review.scale
    if mistake.swing >= review.scale or (lost_after and not lost_before):
        return "the game"
    return f"{mistake.swing / 100:.1f}"


def _mistake_lines(review: GameReview, seat: int, names: dict[int, str]) -> list[MistakeLine]:
    return [
        MistakeLine(m.ply, names.get(m.seat, f"seat {m.seat}"), m.played, m.better, swing_words(review, m), m.reason or "")
        for m in review.of_seat(seat)
    ]


def _positions(game: Game, moves: Sequence[str]) -> list[Any]:
    rules = board_rules(game.game_type)
    pos = rules.load(game.start_position)
    out = [pos]
    for text in moves:
        pos = rules.play(pos, rules.parse_move(pos, text))
        out.append(pos)
    return out


def chart_spec(review: GameReview, seat: int, colour: str, other: str, cid: str) -> dict[str, object]:
    """What :mod:`pbmserv_terrace.app.compose` draws as the evaluation chart (from
    ``seat``'s side: up is better for the reader; ``marks``: (ply, colour) of each
    mistake, the turning point's too)."""
    values = [review.evaluation_for(seat, ply) for ply in range(len(review.evaluations))]
    marks = [[m.ply, colour if m.seat == seat else other] for m in review.mistakes]
    return {"chart": "evaluation", "cid": cid, "values": values, "scale": review.scale, "marks": marks,
            "turning": review.turning_point, "width": CHART_WIDTH, "height": CHART_HEIGHT}  # fmt: skip


async def send(ctx: Ctx, game: Game, records: Sequence[MoveRecord], data: dict[str, Any]) -> int:
    """Queue the review mail to each person of ``game`` who wants one; how many."""
    review = review_from_json(data)
    rules = board_rules(game.game_type)
    moves = review_moves(records)[: review.plies]
    positions = _positions(game, moves)
    names = {s.seat: s.user.userid for s in game.seats}
    title = game_title(game.game_type)
    turning = review.turning_point
    turning_move = moves[turning - 1] if turning else ""
    turning_by = ""
    if turning:
        turning_by = next((names.get(m.seat, "") for m in review.mistakes if m.ply == turning), "")
    board_text = rules.board_text(positions[turning]) if turning else ""
    better = next((m.better for m in review.mistakes if m.ply == turning), "")
    sent = 0
    for seat in game.seats:
        user = seat.user
        addresses = ctx.addresses_of(user)
        if not wants_review(user) or not addresses:
            continue
        others = [s for s in game.seats if s.seat != seat.seat]
        sides = [SideView("You", True, _mistake_lines(review, seat.seat, names))]
        sides += [SideView(o.user.userid, False, _mistake_lines(review, o.seat, names)) for o in others]
        opponents = ", ".join(o.user.userid for o in others)
        values = {
            "title": title, "board": game.board_number, "opponents": opponents, "result": game.result or "",
            "plies": review.plies, "nodes": f"{review.nodes:,}", "signs": ply_signs(review, seat.seat),
            "turning": turning, "turning_move": turning_move, "turning_by": "you" if turning_by == user.userid else turning_by,
            "better": better, "board_text": board_text, "sides": sides, "userid": user.userid,
        }  # fmt: skip
        subject = f"{title} Board {game.board_number}: the review of your game against {opponents}"
        mail = Mail(list(dict.fromkeys(addresses)), subject, render("review.txt", **values))
        if user.pictures:
            mine, theirs = rules.army_colour(seat.seat)[1], rules.army_colour(others[0].seat)[1] if others else "#888888"
            chart_cid = f"review-chart-{game.game_type}-{game.board_number}@pbmserv"
            board_cid = f"review-board-{game.game_type}-{game.board_number}@pbmserv"
            pictures: list[dict[str, object]] = [chart_spec(review, seat.seat, mine, theirs, chart_cid)]
            if turning:
                pictures.append({"game": game.game_type, "tpn": rules.dump(positions[turning]), "last_move": turning_move,
                                 "cid": board_cid})  # fmt: skip
            mail.html = render(
                "review.html", **values, chart_cid=chart_cid, board_cid=board_cid, chart_width=CHART_WIDTH,
                chart_height=CHART_HEIGHT, board_width=rules.picture_width, mine=mine, theirs=theirs,
                board_alt=rules.picture_alt(positions[turning]) if turning else "", page_bg=PAGE_BG, ink=INK,
                muted=MUTED, rule=RULE,
            )  # fmt: skip
            mail.picture = {"pictures": pictures}
        ctx.out.append(mail)
        sent += 1
    return sent


__all__ = [
    "MIN_NODES",
    "NOTED",
    "budget",
    "chart_spec",
    "compute",
    "data_of",
    "noted",
    "owed",
    "ply_signs",
    "request",
    "review_moves",
    "send",
    "step",
    "swing_words",
    "wants_review",
]
