"""``status USERID PASSWORD`` (issue 38): one mail with a player's boards in play
in every game (those waiting for them first), their settings and their ratings.
It shows the player's addresses and vacation, which are nobody else's business,
so it needs the password (a board's players and turn are public: ``games``)."""

from __future__ import annotations

from ..commands import Command
from ..gametypes import GAME_TYPES, board_games
from ..store import Game, User
from .args import need, notice
from .boards import position, seat_by_army, seat_of
from .context import Ctx
from .digests import describe
from .spec import command
from .vacations import vacation_status

ORDER = {name: i for i, name in enumerate(GAME_TYPES)}


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def board_line(game: Game, user: User) -> tuple[bool, str]:
    """(whether the board waits for ``user``, its line in the list)."""
    kind = GAME_TYPES[game.game_type]
    name = f"{kind.name} {game.board_number}"
    if kind.family != "board":
        return True, f"  {name:<18} {'(solitaire)':<28} your turn (move {game.ply + 1})"
    mover = seat_by_army(game, position(game).to_move)
    seat = seat_of(game, user)
    others = ", ".join(s.user.userid for s in sorted(game.seats, key=lambda s: s.seat) if s.user_id != user.id)
    votes = game.draw_votes or game.undo_votes
    if seat is not None and votes and seat.seat not in votes and seat.active:
        kind_of = "draw offer" if game.draw_votes else "undo request"
        mine, said = True, f"your answer to a {kind_of} (accept or reject)"
    elif mover.user_id == user.id:
        mine, said = True, "your turn"
    else:
        mine, said = False, f"{mover.user.userid} to move"
    if seat is not None and not seat.active:
        mine, said = False, f"you are out; {mover.user.userid} to move"
    return mine, f"  {name:<18} vs {others:<25} {said} (ply {game.ply + 1})"


@command("status")
async def status(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    games = [g for g in await ctx.uow.games.for_users([user.id]) if g.status == "active"]
    lines = [f"Status of {user.userid} on {ctx.server_name}", ""]
    rows = sorted(((*board_line(g, user), g) for g in games), key=lambda r: (not r[0], ORDER.get(r[2].game_type, 0),
                                                                              r[2].board_number))  # fmt: skip
    waiting = sum(1 for mine, _, _ in rows if mine)
    if rows:
        lines.append(f"Your boards in play: {len(rows)}, {waiting} waiting for you (those first)")
        lines += [line for _, line, _ in rows]
    else:
        lines.append("You have no boards in play.  Mail 'help' to see how to start one.")
    notified = [g.board_number for g in games if await ctx.uow.watchers.notifier(g.id, user.id) is not None]
    limit = "no limit" if user.challenge_limit is None else f"at most {user.challenge_limit} active games"
    ends = _on(user.notify_all) + (f" (on for board{'s' * (len(notified) > 1)} {', '.join(map(str, notified))})"
                                    if notified and not user.notify_all else "")  # fmt: skip
    addresses = [*(f"{a} (confirmed)" for a in user.addresses),
                 *(f"{a} (waiting for its confirmation)" for a in user.pending_addresses)]  # fmt: skip
    lines += [
        "",
        "Your settings:",
        f"  Pictures in board mails:   {_on(user.pictures)}",
        f"  Vacation:                  {vacation_status(ctx, user)}",
        f"  Digest:                    {describe(user.digest)}",
        "  Reminders:                 " + ("the board's nag time" if user.remind_hours is None else "off"
                                           if user.remind_hours <= 0 else f"{user.remind_hours:g} hours before a forfeit"),
        f"  Mail when games end:       {ends}",
        f"  Challenges:                {'accepted' if user.accept_challenges else 'refused'}, {limit}"
        + (f"; seeking {user.seek} more" if user.seek else ""),
        f"  Comments on the web:       {'shown' if user.public_comments else 'hidden'}",
        f"  Addresses:                 {'; '.join(addresses) or 'none'}",
        "  (change pictures, vacation, notify, accept/reject, limit, seek, change public, change address,",
        "  change digest, change remind:",
        "  mail 'help commands' for how)",
        "",
        "Ratings:",
    ]
    rated = False
    for name in board_games():
        rating = await ctx.uow.ratings.get(user.id, name)
        if rating is None or not rating.games:
            continue
        rated = True
        note = "; provisional: fewer than 20 games" if rating.provisional else ""
        lines.append(f"  {name:<16} {round(rating.rating):>5}  ({rating.won} won, {rating.lost} lost, {rating.tied} drawn{note})")
    if not rated:
        lines.append("  none yet (a rating comes with your first rated game that ends)")
    notice(ctx, f"{ctx.server_name}: status of {user.userid}", *lines)
