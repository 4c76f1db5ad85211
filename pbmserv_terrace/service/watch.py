"""Commands around the boards that do not move pieces (COMMANDS.md §3): chat,
subscribe/unsubscribe, notify, challenge preferences (accept/reject/limit/seek)
and vacation."""

from __future__ import annotations

from ..commands import Command
from ..gametypes import DEFAULT_GAME_TYPE, game_title
from ..render import render
from ..store import Notifier, Subscription
from .args import need, notice, shortened
from .boards import (
    board_error,
    game_view,
    load_game,
    send_board,
)
from .context import CommandError, Ctx
from .spec import command
from .vacations import end_vacation, start_vacation


# ------------------------------------------------------------------------ chat
@command("chat", game=True)
async def chat(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3, 3)
    game, _ = await load_game(ctx, cmd, words[0], lock=False)
    user = await ctx.auth(words[1], words[2], known=[s.user for s in game.seats])
    subscribers = await ctx.subscribers(game.id)
    players = [s.user for s in game.seats]
    if user.id not in {u.id for u in players + subscribers}:
        raise board_error(game, f"{user.userid} neither plays nor watches board {game.board_number}")
    if not cmd.comment.strip():
        raise board_error(game, "the chat message is empty: write it in the body of the mail")
    body = render("chat.txt", title=game_title(game.game_type), board_number=game.board_number, author=user.userid,
                  text=shortened(ctx, cmd.comment))  # fmt: skip
    unique = {u.id: u for u in players + subscribers}
    # each player's copy carries the board's key, as a board mail does: pressing
    # Reply on a chat mail chats back (or plays), found by playing (issue 38)
    subject = f"{game_title(game.game_type)} Board {game.board_number} chat from {user.userid}"
    await send_board(ctx, game, list(unique.values()), subject, body)


# ---------------------------------------------------------------- watching
async def _subscription(ctx: Ctx, cmd: Command, on: bool) -> None:
    words = need(cmd, 3, 3)
    game_type = cmd.game_type or DEFAULT_GAME_TYPE
    title = game_title(game_type)
    if words[2].lower() == "all" and not words[0].isdigit():
        user = await ctx.auth(words[0], words[1])
        row = await ctx.uow.watchers.subscription(game_type, None, user.id)
        if on and row is None:
            ctx.uow.watchers.add(Subscription(game_type=game_type, game_id=None, user_id=user.id))
        elif not on and row is not None:
            await ctx.uow.watchers.remove(row)
        notice(
            ctx,
            f"{title} subscriptions",
            f"{user.userid} {'now watches' if on else 'no longer watches'} every new {title} board.",
        )
        return
    game, _ = await load_game(ctx, cmd, words[0], lock=False)
    user = await ctx.auth(words[1], words[2])
    row = await ctx.uow.watchers.subscription(game_type, game.id, user.id)
    if on and row is None:
        ctx.uow.watchers.add(Subscription(game_type=game_type, game_id=game.id, user_id=user.id))
    elif not on and row is not None:
        await ctx.uow.watchers.remove(row)
    elif on:
        raise board_error(game, f"{user.userid} already watches board {game.board_number}")
    else:
        raise board_error(game, f"{user.userid} does not watch board {game.board_number}")
    await ctx.uow.flush()
    ctx.forget_subscribers(game.id)
    view = await game_view(ctx, game)
    what = "You now watch" if on else "You no longer watch"
    ctx.reply(f"{title} Board {game.board_number} {'subscribed' if on else 'unsubscribed'}", "update.txt", game=view,
              headline=f"{what} this board", comment=None)  # fmt: skip


@command("subscribe", game=True)
async def subscribe(ctx: Ctx, cmd: Command) -> None:
    await _subscription(ctx, cmd, True)


@command("unsubscribe", game=True)
async def unsubscribe(ctx: Ctx, cmd: Command) -> None:
    await _subscription(ctx, cmd, False)


@command("notify", game=True)
async def notify(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 22)
    user = await ctx.auth(words[0], words[1])
    title = game_title(cmd.game_type)
    if len(words) == 2:
        user.notify_all = not user.notify_all
        notice(ctx, f"{title} notify", f"Mail on every game end is now {'on' if user.notify_all else 'off'} for {user.userid}.")
        return
    lines = []
    for word in words[2:]:
        game, _ = await load_game(ctx, cmd, word, lock=False)
        row = await ctx.uow.watchers.notifier(game.id, user.id)
        if row is None:
            ctx.uow.watchers.add(Notifier(game_id=game.id, user_id=user.id))
            lines.append(f"Board {game.board_number}: you will be told when it ends.")
        else:
            await ctx.uow.watchers.remove(row)
            lines.append(f"Board {game.board_number}: no longer notified.")
    notice(ctx, f"{title} notify", *lines)


# ------------------------------------------------------- challenge preferences
@command("accept", game=True)
async def accept_challenges(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    user.accept_challenges = True
    notice(ctx, f"{ctx.server_name}: challenges", f"{user.userid} accepts challenges again.")


@command("reject", game=True)
async def reject_challenges(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    user.accept_challenges = False
    notice(ctx, f"{ctx.server_name}: challenges", f"{user.userid} no longer accepts challenges.")


@command("limit", game=True)
async def limit(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 2, 3)
    user = await ctx.auth(words[0], words[1])
    if len(words) == 3:
        value = words[2].lower()
        if value in ("inf", "none", "unlimited"):
            user.challenge_limit = None
        elif value.isdigit() and int(value) <= 10_000:
            user.challenge_limit = int(value)
        else:
            raise CommandError(f"'{value[:20]}' is not a limit: give a number of games, inf, or 0")
    shown = "no limit" if user.challenge_limit is None else f"{user.challenge_limit} active games"
    notice(ctx, f"{ctx.server_name}: limit", f"Challenge limit of {user.userid}: {shown}.")


@command("seek", game=True)
async def seek(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3, 3)
    user = await ctx.auth(words[0], words[1])
    if not words[2].isdigit() or int(words[2]) > 100:
        raise CommandError(f"'{words[2][:20]}' is not a number of games (0-100)")
    user.seek = int(words[2])
    if user.seek:
        notice(ctx, f"{ctx.server_name}: seek",
               f"{user.userid} seeks {user.seek} more {'game' if user.seek == 1 else 'games'}: the standings list you under",
               "'Seeking a game', and a challenge reaches you even while you reject challenges or are at your limit.",
               f"Each new board counts one; 'seek {user.userid} PASSWORD 0' stops it.")  # fmt: skip
    else:
        notice(ctx, f"{ctx.server_name}: seek", f"{user.userid} no longer seeks games.")


@command("vacation", game=True)
async def vacation(ctx: Ctx, cmd: Command) -> None:
    """``vacation U P on [DAYS]`` / ``off`` (issue 40 item 4: :mod:`.vacations`)."""
    words = need(cmd, 3, 4)
    user = await ctx.auth(words[0], words[1])
    value = words[2].lower()
    if value not in ("on", "off") or (value == "off" and len(words) == 4):
        raise CommandError("vacation is 'on' (optionally for a number of days) or 'off'")
    if value == "off":
        notice(ctx, f"{ctx.server_name}: vacation", await end_vacation(ctx, user))
        return
    days = None
    if len(words) == 4:
        try:
            days = float(words[3])
        except ValueError:
            days = -1.0
        if not 0 < days <= 366:
            raise CommandError(f"'{words[3][:20]}' is not a number of days (1 to the days you have left)")
    notice(ctx, f"{ctx.server_name}: vacation", await start_vacation(ctx, user, days))
