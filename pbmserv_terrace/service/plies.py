"""Playing and ending: a ply recorded, the timers rescheduled, pending
resignations and queued moves played, games finished and rated, players removed
in the first round, a deleted user's games forfeited (COMMANDS.md §3, §4)."""

from __future__ import annotations

from ..gametypes import board_rules, family_of
from ..gametypes.base import BoardPosition
from ..render import CommentView, render
from ..store import FinishedGame, Game, MoveRecord, Seat, User
from .boards import FORFEIT, RESIGN, game_view, mail_game, position, seat_by_army, send_board, subject_for
from .context import CommandError, Ctx
from .deadlines import after_move, next_deadline
from .ratings import apply_ratings
from .reviews import request as request_review
from .solitaire import abandon

ENDED_IN_TOURNAMENTS = "tournament_boards_ended"
"""``session.info`` key: the tournament boards this transaction ended (:func:`finish`);
``service.tournaments.settle`` records their results before the replies are queued"""


async def record_ply(ctx: Ctx, game: Game, seat: Seat, text: str, *, auto: bool = False) -> None:
    game.ply += 1
    ctx.uow.moves.add(MoveRecord(game_id=game.id, ply=game.ply, seat=seat.seat, move=text, auto=auto, played_at=ctx.now))
    after_move(ctx, game, seat)  # the mover's time booked (and bank credited), the next clock started
    game.last_move_at = ctx.now


def schedule(ctx: Ctx, game: Game) -> None:
    """Set the next time the scheduler must look at this game (reminder or
    forfeit: :func:`.deadlines.next_deadline`)."""
    game.deadline_at = next_deadline(ctx, game)


def clear_votes(game: Game) -> list[str]:
    notes = []
    if game.draw_votes:
        notes.append("The pending draw offer is cancelled by the move.")
    if game.undo_votes:
        notes.append("The pending undo request is cancelled by the move.")
    game.draw_votes, game.undo_votes = [], []
    return notes


async def play_move(
    ctx: Ctx, game: Game, seat: Seat, pos: BoardPosition, move_text: str, *, auto: bool = False
) -> tuple[BoardPosition, str]:
    """Play ``move_text`` for ``seat`` (whose turn it is).  Raises CommandError when
    it is not legal; returns the new position and the canonical move."""
    rules = board_rules(game.game_type)
    try:
        move = rules.parse_move(pos, move_text)
    except ValueError as exc:
        raise CommandError(str(exc), board=game.board_number, game_type=game.game_type) from None
    canonical = rules.format_move(pos, move)
    after = rules.play(pos, move)
    await record_ply(ctx, game, seat, canonical, auto=auto)
    game.position = rules.dump(after)
    return after, canonical


async def resign_seat(ctx: Ctx, game: Game, seat: Seat, pos: BoardPosition, how: str = RESIGN) -> tuple[BoardPosition, list[str]]:
    """A seat resigns (or forfeits) on its turn after the first round (COMMANDS.md §4)."""
    notes = [f"{seat.user.userid} {'resigns' if how == RESIGN else 'forfeits'}."]
    seat.active = False
    seat.resign_pending = False
    seat.queued_moves = []
    await record_ply(ctx, game, seat, how)
    others = [s for s in game.seats if s.active]
    if len(pos.armies()) == 2:
        winner = others[0] if others else None
        why = f"{seat.user.userid} {'resigned' if how == RESIGN else 'forfeited'}"
        await finish(ctx, game, winner.seat if winner else None, f"{winner.user.userid} wins ({why})" if winner else why)
        return pos.without_army(seat.seat), notes
    after = pos.without_army(seat.seat)
    game.position = board_rules(game.game_type).dump(after)
    return after, notes


async def after_ply(ctx: Ctx, game: Game, pos: BoardPosition) -> list[str]:
    """End-of-game checks, then pending resignations and queued moves of whoever
    is to move next.  Returns notes for the status block."""
    notes: list[str] = []
    rules = board_rules(game.game_type)
    while game.status == "active":
        # seats whose army left the board (a captured T) are out of the game
        for s in game.seats:
            if s.active and s.seat not in pos.armies():
                s.active = False
                s.queued_moves = []
                notes.append(f"{s.user.userid}{rules.army_out(s.seat)}")
        outcome = pos.outcome()
        if outcome is not None:
            if outcome.winner is None:
                await finish(ctx, game, None, f"draw: {seat_by_army(game, pos.to_move).user.userid} {rules.why_drawn(outcome)}")
            else:
                winner = seat_by_army(game, outcome.winner)
                await finish(ctx, game, winner.seat, f"{winner.user.userid} wins ({rules.why_won(outcome, len(game.seats))})")
            break
        seat = seat_by_army(game, pos.to_move)
        if seat.resign_pending:
            pos, more = await resign_seat(ctx, game, seat, pos)
            notes += more
            continue
        if seat.queued_moves:
            text = seat.queued_moves[0]
            try:
                pos, canonical = await play_move(ctx, game, seat, pos, text, auto=True)
            except CommandError as exc:
                seat.queued_moves = []
                notes.append(
                    f"{seat.user.userid}'s queued move was dropped: {exc.reason}. It is still {seat.user.userid}'s turn."
                )
                break
            seat.queued_moves = seat.queued_moves[1:]
            notes.append(f"{seat.user.userid} plays the queued move {canonical} (Auto).")
            continue
        break
    schedule(ctx, game)
    return notes


async def finish(ctx: Ctx, game: Game, winner_seat: int | None, result: str) -> None:
    game.status = "won" if winner_seat is not None else "draw"
    game.winner_seat = winner_seat
    game.result = result
    game.finished_at = ctx.now
    game.deadline_at = None
    game.draw_votes, game.undo_votes = [], []
    for s in game.seats:
        s.queued_moves, s.submitted_move, s.resign_pending = [], None, False
    if game.rated:
        ctx.rating_lines = await apply_ratings(ctx.uow, game)
    if game.tournament_id is not None:
        ctx.uow.session.info.setdefault(ENDED_IN_TOURNAMENTS, set()).add(game.id)
    ctx.uow.history.add(
        FinishedGame(
            game_id=game.id,
            game_type=game.game_type,
            board_number=game.board_number,
            players=[s.user.userid for s in game.seats],
            result=result,
            plies=game.ply,
            finished_at=ctx.now,
        )
    )
    request_review(ctx, game)  # issue 42: owed in this transaction, made by the worker pool


async def first_round_removal(ctx: Ctx, game: Game, seat: Seat, how: str, comment: CommentView | None) -> None:
    """COMMANDS.md §4: in the first round a resigning player is removed and the game
    restarts without them (unrated); with fewer than two left the board is removed."""
    leaving = seat.user.userid
    remaining = [s for s in game.seats if s is not seat]
    if len(remaining) == 1 and game.tournament_id is not None:
        # a tournament game is not removed: the one who stays wins it (unrated, as a first round's end)
        stays = remaining[0]
        game.rated = False
        await finish(ctx, game, stays.seat, f"{stays.user.userid} wins ({leaving} {how} in the first round)")
        await mail_game(ctx, game, headline=f"{leaving} {how} in the first round; {stays.user.userid} wins", comment=comment)
        return
    if len(remaining) < 2:
        game.status = "removed"
        game.result = f"{leaving} {how} in the first round"
        game.finished_at = ctx.now
        game.deadline_at = None
        await mail_game(ctx, game, headline=f"{leaving} {how} in the first round; the board is removed", comment=comment)
        return
    audience = list(game.seats)
    await ctx.uow.moves.delete_from(game.id, 1)
    rules = board_rules(game.game_type)
    variant = rules.setup_for(
        len(remaining), game.variant if len(remaining) == 2 and game.variant in rules.two_player_setups else None
    )
    start = rules.dump(rules.start(variant))
    game.seats.remove(seat)
    await ctx.uow.flush()
    for i, s in enumerate(remaining):
        s.seat = i + 1
        s.active, s.resign_pending, s.queued_moves, s.submitted_move, s.clock_seconds = True, False, [], None, 0.0
        s.turn_seconds, s.bank_seconds, s.flagged_at, s.nagged_at = 0.0, None, None, None
    game.taken_back = (game.taken_back or 0) + game.ply
    game.variant, game.position, game.start_position, game.ply = variant, start, start, 0
    game.rated = False
    game.draw_votes, game.undo_votes = [], []
    game.last_move_at = game.clock_from = ctx.now
    schedule(ctx, game)
    await ctx.uow.flush()
    view = await game_view(ctx, game, notes=[f"{leaving} {how} in the first round; the game restarts without them (unrated)."])
    body = render("update.txt", game=view, headline=f"{leaving} {how}; the game restarts", comment=comment)
    await send_board(
        ctx, game, [s.user for s in audience] + await ctx.subscribers(game.id), subject_for(game, comment=bool(comment)), body
    )


async def forfeit_all(ctx: Ctx, user: User) -> list[str]:
    """Forfeit every active game of ``user`` (account deletion).  Returns the boards."""
    ended = []
    for game in await ctx.uow.games.for_users([user.id]):
        if game.status != "active":
            continue
        game = await ctx.uow.games.get(game.game_type, game.board_number, lock=True) or game
        if family_of(game.game_type) == "solitaire":
            abandon(ctx, game, "abandoned (account deleted)")
            ended.append(f"{game.game_type} {game.board_number}")
            continue
        seat = next(s for s in game.seats if s.user_id == user.id)
        if not seat.active:
            continue
        ended.append(f"{game.game_type} {game.board_number}")
        if game.ply < len(game.seats):
            await first_round_removal(ctx, game, seat, "left the server", None)
            continue
        pos, notes = await resign_seat(ctx, game, seat, position(game), FORFEIT)
        notes += await after_ply(ctx, game, pos)
        await mail_game(ctx, game, headline=f"{user.userid} forfeits (account deleted)", notes=notes)
    return ended
