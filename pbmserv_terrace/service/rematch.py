"""``rematch BOARD USERID PASSWORD`` (issue 38): a new board for the players of
a board that has ended, with the same setup and options, the seats turned by
one (the second player moves first: in a game of two, the colours swapped).

The new board is opened by the ``challenge`` handler of :mod:`.play`, so a
rematch is checked and mailed as any challenge is (players who refuse
challenges, limits, robots, the new-board mail to everyone).  The rematch's
player is proven here (by password, or by the reply key of a board mail: the
Reply ``rematch``); the challenge then runs as that player.
"""

from __future__ import annotations

from ..commands import Command
from ..gametypes import board_rules
from ..store import Game, User
from .args import TIMER_OPTIONS, need
from .boards import board_error, load_game, require_player
from .context import Ctx
from .play import challenge
from .spec import command

MOST_NAMED = 3
"""a challenge with a password names at most three players after it; in a
rematch of four where the asker does not sit first, the first one challenges"""


def rotated(game: Game) -> list[User]:
    """The players of ``game`` in the rematch's order: the seats turned by one,
    the second player first (two players: swapped)."""
    seats = sorted(game.seats, key=lambda s: s.seat)
    return [s.user for s in [*seats[1:], *seats[:1]]]


def challenge_of(game: Game, asker: User, comment: str) -> tuple[User, Command]:
    """The challenge that opens the rematch of ``game`` and the player it runs as
    (``asker`` unless the order cannot be written so: then the first of the new
    order, and ``comment`` is left out, since it would be signed by them)."""
    order = rotated(game)
    names = [u.userid for u in order]
    by = asker if asker is order[0] or len(order) <= MOST_NAMED else order[0]
    # the challenger sits first unless named again among the players (play.challenge)
    words = [by.userid, "-", *(names[1:] if by is order[0] else names)]
    rules = board_rules(game.game_type)
    setup = game.variant if game.variant in rules.two_player_setups else None
    options = {key: str(game.options[key]) for key in TIMER_OPTIONS if key in (game.options or {})}
    cmd = Command(
        "challenge", game.game_type, words, [setup] if setup else [], options,
        comment if by is asker else "", text=f"rematch {game.board_number}",
    )  # fmt: skip
    return by, cmd


@command("rematch", game=True)
async def rematch(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3, 3)
    game, at = await load_game(ctx, cmd, words[0], lock=False)
    user = await ctx.auth(words[1], words[2], known=[s.user for s in game.seats])
    require_player(game, user, cmd)
    number = game.board_number
    if at is not None:
        raise board_error(game, f"a rematch names the board alone: rematch {number} {user.userid} PASSWORD")
    if game.status == "active":
        raise board_error(game, f"board {number} is still in play: a rematch follows a game that has ended")
    if game.status == "removed":
        raise board_error(game, f"board {number} was removed in its first round, so there is nothing to play again: "
                                "challenge the players instead")  # fmt: skip
    await _not_twice(ctx, game, user)
    by, opening = challenge_of(game, user, cmd.comment)
    proven = ctx.keyed_user
    ctx.keyed_user = by  # proven above (password or reply key): the challenge needs none
    try:
        await challenge(ctx, opening)
    finally:
        ctx.keyed_user = proven


async def _not_twice(ctx: Ctx, game: Game, user: User) -> None:
    """Refuse a second rematch of ``game`` (both players asked for one): a board of
    the same game and players opened since it ended is still in play."""
    players = {s.user_id for s in game.seats}
    for other in await ctx.uow.games.active_for_users([user.id]):
        if (
            other.game_type == game.game_type
            and {s.user_id for s in other.seats} == players
            and game.finished_at is not None
            and other.created_at >= game.finished_at
        ):
            raise board_error(game, f"the rematch of board {game.board_number} is on already: board {other.board_number}")
