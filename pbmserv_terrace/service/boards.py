"""Game helpers shared by the handlers: loading boards, replaying, playing a ply
(with pending resignations and queued moves), ending games, and the mail views."""

from __future__ import annotations

import re
from datetime import timedelta

from ..commands import Command
from ..render import CommentView, GameView, PlayerView, move_table, render
from ..rules import NotationError, Position, format_move, format_tpn, parse_move, parse_tpn, render_board
from ..rules.pieces import piece_text
from ..store import FinishedGame, Game, MoveRecord, Seat, User
from .core import CommandError, Ctx, game_title
from .ratings import apply_ratings

RESIGN, FORFEIT = "Resign", "Forfeit"
ROUTINE_ROUNDS = 5
_BOARD_REF = re.compile(r"^(\d{1,9})(?:#(\d{1,6}))?$")


def board_size(game_type: str) -> int:
    return 6 if game_type == "terrace6x6" else 8


def parse_board_ref(word: str, cmd: Command) -> tuple[int, int | None]:
    m = _BOARD_REF.match(word)
    if not m:
        raise CommandError(f"'{word[:40]}' is not a board number", game_type=cmd.game_type)
    return int(m.group(1)), (int(m.group(2)) if m.group(2) else None)


async def load_game(ctx: Ctx, cmd: Command, word: str, *, lock: bool = True) -> tuple[Game, int | None]:
    number, at = parse_board_ref(word, cmd)
    game_type = cmd.game_type or "terrace"
    game = await ctx.uow.games.get(game_type, number, lock=lock)
    if game is None:
        raise CommandError(f"there is no {game_title(game_type)} board {number}", game_type=game_type)
    ctx.board = str(number)
    return game, at


def position(game: Game) -> Position:
    return parse_tpn(game.position, board_size(game.game_type))


def seat_of(game: Game, user: User) -> Seat | None:
    for seat in game.seats:
        if seat.user_id == user.id:
            return seat
    return None


def seat_by_army(game: Game, army: int) -> Seat:
    for seat in game.seats:
        if seat.seat == army:
            return seat
    raise LookupError(army)


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


def replay(game: Game, moves: list[MoveRecord], upto: int | None = None) -> Position:
    """The position after the first ``upto`` plies (all when None)."""
    pos = parse_tpn(game.start_position, board_size(game.game_type))
    for record in moves:
        if upto is not None and record.ply > upto:
            break
        pos = pos.without_army(record.seat) if record.move in (RESIGN, FORFEIT) else pos.play(parse_move(pos, record.move))
    return pos


async def record_ply(ctx: Ctx, game: Game, seat: Seat, text: str, *, auto: bool = False) -> None:
    game.ply += 1
    ctx.uow.moves.add(MoveRecord(game_id=game.id, ply=game.ply, seat=seat.seat, move=text, auto=auto, played_at=ctx.now))
    elapsed = (ctx.now - game.last_move_at).total_seconds()
    seat.clock_seconds += max(0.0, elapsed)
    game.last_move_at = ctx.now
    for s in game.seats:
        s.nagged_at = None


def schedule(ctx: Ctx, game: Game) -> None:
    """Set the next time the scheduler must look at this game (nag or forfeit)."""
    if game.status != "active":
        game.deadline_at = None
        return
    nag = float(game.options.get("nagtime", ctx.config.timers.nagtime))
    forfeit = float(game.options.get("forfeittime", ctx.config.timers.forfeittime))
    nagged = any(s.nagged_at for s in game.seats)
    due = game.last_move_at + timedelta(days=forfeit if nagged else nag)
    total = game.options.get("totaltime")
    if total:
        pos = position(game)
        seat = seat_by_army(game, pos.to_move)
        left = float(total) * 86400 - seat.clock_seconds
        due = min(due, game.last_move_at + timedelta(seconds=max(0.0, left)))
    game.deadline_at = due


def clear_votes(game: Game) -> list[str]:
    notes = []
    if game.draw_votes:
        notes.append("The pending draw offer is cancelled by the move.")
    if game.undo_votes:
        notes.append("The pending undo request is cancelled by the move.")
    game.draw_votes, game.undo_votes = [], []
    return notes


async def play_move(
    ctx: Ctx, game: Game, seat: Seat, pos: Position, move_text: str, *, auto: bool = False
) -> tuple[Position, str]:
    """Play ``move_text`` for ``seat`` (whose turn it is).  Raises CommandError when
    it is not legal; returns the new position and the canonical move."""
    try:
        move = parse_move(pos, move_text)
    except NotationError as exc:
        raise CommandError(str(exc), board=game.board_number, game_type=game.game_type) from None
    canonical = format_move(pos, move)
    after = pos.play(move)
    await record_ply(ctx, game, seat, canonical, auto=auto)
    game.position = format_tpn(after)
    return after, canonical


async def resign_seat(ctx: Ctx, game: Game, seat: Seat, pos: Position, how: str = RESIGN) -> tuple[Position, list[str]]:
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
    game.position = format_tpn(after)
    return after, notes


async def after_ply(ctx: Ctx, game: Game, pos: Position) -> list[str]:
    """End-of-game checks, then pending resignations and queued moves of whoever
    is to move next.  Returns notes for the status block."""
    notes: list[str] = []
    while game.status == "active":
        # seats whose army left the board (a captured T) are out of the game
        for s in game.seats:
            if s.active and s.seat not in pos.armies():
                s.active = False
                s.queued_moves = []
                notes.append(f"{s.user.userid}'s T was captured: army {s.seat} leaves the board.")
        outcome = pos.outcome()
        if outcome is not None:
            if outcome.winner is None:
                await finish(ctx, game, None, f"draw: {seat_by_army(game, pos.to_move).user.userid} has no legal move")
            else:
                winner = seat_by_army(game, outcome.winner)
                why = "reached the goal with the T" if "goal" in outcome.reason else "is the last army on the board"
                if "goal" not in outcome.reason and len(game.seats) == 2:
                    why = "captured the T"
                await finish(ctx, game, winner.seat, f"{winner.user.userid} wins ({why})")
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


# ---------------------------------------------------------------------- views
def army_letters(army: int) -> str:
    return piece_text(army << 3)


def _named(text: str, game: Game) -> str:
    for s in game.seats:
        text = text.replace(f"Army {s.seat}'s T", f"{s.user.userid}'s T (army {s.seat})")
    return text


def status_lines(game: Game, pos: Position) -> list[str]:
    if game.status == "removed":
        return [f"This board was removed: {game.result}."]
    if game.status != "active":
        return [f"Game over: {game.result}."]
    lines = []
    mover = seat_by_army(game, pos.to_move)
    lines.append(f"It is {mover.user.userid}'s turn (army {mover.seat}, {army_letters(mover.seat)}), ply {game.ply + 1}.")
    lines += [_named(a, game) for a in pos.announcements()]
    for kind, votes in (
        ("A draw has been proposed", game.draw_votes),
        ("Undoing the last ply has been requested", game.undo_votes),
    ):
        if votes:
            missing = [s.user.userid for s in game.seats if s.active and s.seat not in votes]
            lines.append(f"{kind}; still waiting for: {', '.join(missing)}.")
    for s in game.seats:
        if s.resign_pending:
            lines.append(f"{s.user.userid} will resign on their turn.")
    return lines


async def game_view(
    ctx: Ctx,
    game: Game,
    *,
    last_rounds: int | None = ROUTINE_ROUNDS,
    upto: int | None = None,
    viewer: Seat | None = None,
    notes: list[str] | None = None,
    pos: Position | None = None,
) -> GameView:
    moves = (
        await ctx.uow.moves.of_game(game.id)
        if (last_rounds is None or upto is not None)
        else await ctx.uow.moves.of_game(game.id, last=last_rounds * len(game.seats) + len(game.seats))
    )
    if upto is not None:
        moves = [m for m in moves if m.ply <= upto]
        pos = pos or replay(game, moves, upto)
        status = [f"Position after ply {upto} of {game.ply}."]
    else:
        pos = pos or position(game)
        status = status_lines(game, pos)
    names = [s.user.userid for s in game.seats]
    plies = [(m.seat, m.move + (" (Auto)" if m.auto else "")) for m in moves]
    first_round = (moves[0].ply - 1) // max(1, len(game.seats)) if moves else 0
    rows, omitted, width = move_table(names, plies, last_rounds=last_rounds)
    for row in rows:
        row.number += first_round
    players = []
    for s in game.seats:
        state = ""
        if game.status == "won" and game.winner_seat == s.seat:
            state = "winner"
        elif not s.active:
            state = "out"
        players.append(PlayerView(s.user.userid, s.seat, army_letters(s.seat), state))
    private = []
    if viewer is not None:
        if viewer.queued_moves:
            private.append(f"Your queued moves: {', '.join(viewer.queued_moves)}")
        if viewer.submitted_move:
            private.append(f"Your submitted move (not yet confirmed): {viewer.submitted_move}")
    opts = ", ".join(f"{k} {v}" for k, v in sorted(game.options.items()))
    return GameView(
        title=game_title(game.game_type),
        board_number=game.board_number,
        variant=game.variant + ("" if game.rated else ", unrated"),
        players=players,
        status_lines=(notes or []) + status,
        move_header=names,
        move_rows=rows,
        board=render_board(pos),
        subscribers=[u.userid for u in await ctx.subscribers(game.id)],
        rating_lines=ctx.rating_lines,
        options_line=f"; {opts}" if opts else "",
        omitted_rounds=omitted + first_round,
        col_width=width,
        private_lines=private,
    )


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
    body = render(template, game=view, headline=headline, comment=comment)
    users: list[User] = [s.user for s in game.seats]
    users += await ctx.subscribers(game.id)
    if game.status != "active":
        users += await ctx.uow.watchers.notifiers(game.id)
        users += await ctx.uow.users.notify_all_users()
    unique: dict[int, User] = {}
    for u in users:
        unique.setdefault(u.id, u)
    ctx.send(list(unique.values()), subject_for(game, new=new, comment=bool(comment and comment.text)), body)


def take_comment(ctx: Ctx, game: Game, cmd: Command, author: str) -> CommentView | None:
    text = cmd.comment.strip()
    if not text:
        return None
    text = text[:20_000]
    game.comment = f"{author} writes:\n{text}"
    return CommentView(author, text)
