"""Solitaire commands (issue 21): one player, a numbered deal, the game's rules
behind :class:`pbmserv_terrace.gametypes.SolitaireRules`.  Terrace patience is the
one solitaire today; nothing here knows it by name.

A solitaire board is a :class:`~pbmserv_terrace.store.Game` row with one seat:
``variant`` and ``options["deal"]`` say which cards, the move records say what
was played (the state is the deal replayed), ``options`` also count the undos
and hints taken and keep the score, and ``position`` holds a one-line summary.
A game ends when it is won, when no move is left (or the game's own loss rule),
or on ``resign``; ``status`` is then ``won`` or ``ended`` and ``result`` says how.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ..commands import Command
from ..commands.table import help_entries
from ..gametypes import GAME_TYPES, Family, GameType, IllegalMoveError, SolitaireResult, SolitaireRules, rank_solitaire
from ..render.html import move_links_html, solitaire_html
from ..store import FinishedGame, Game, MoveRecord, Seat, User
from .args import need, shortened
from .boards import board_error, load_game, web_line
from .context import CommandError, Ctx, Mail
from .hints import PENDING, desk_of, note_asked
from .spec import MOVE_VERB, command

MAX_MOVES_PER_MAIL = 200
STANDINGS_DEALS = 8
MOVE_LINKS_HEADING = "Moves that make progress, the best first: tap one to answer"
MOVE_LINKS_NOTE = "Each link opens a reply with the move in it; send it to play (one move a mail)."
"""shared deals listed in ``standings``"""
SOLITAIRE: Family = "solitaire"


def _kind(cmd: Command) -> GameType:
    return GAME_TYPES[cmd.game_type or ""]


def _rules(game: Game) -> SolitaireRules[Any]:
    return GAME_TYPES[game.game_type].solitaire


def _deal(game: Game) -> int:
    return int(game.options["deal"])


async def _state(ctx: Ctx, game: Game) -> tuple[Any, list[str]]:
    """The game's state and the move texts replayed to reach it (the picture of a
    board mail is drawn from them when the mail is sent)."""
    rules = _rules(game)
    moves = [m.move for m in await ctx.uow.moves.of_game(game.id)]
    state = rules.replay(game.variant, _deal(game), moves)
    if game.status != "active" and rules.ending(state) is None:
        state = rules.resign(state)  # resigned or abandoned: resigning is no move, so replay does not show it
    return state, moves


def _variant_name(game: Game) -> str:
    return _rules(game).variants.get(game.variant, game.variant)


def _summary(rules: SolitaireRules[Any], state: Any) -> str:
    return f"score {rules.score(state)}/{rules.max_score}"


# --------------------------------------------------------------- board mails
@dataclass
class Table:
    """What a solitaire board mail shows: the text part, and for players who want
    pictures the HTML part with the table drawn (:meth:`html`, :meth:`picture_spec`)."""

    game: Game
    state: Any
    moves: list[str]
    """the move texts that, replayed from the deal, give ``state``"""
    headline: str
    notes: list[str]
    hint: str | None = None

    def heading(self) -> str:
        game = self.game
        player = game.seats[0].user.userid
        return (f"{GAME_TYPES[game.game_type].title} Board {game.board_number}: {player} plays "
                f"{_variant_name(game)}, deal {_deal(game)}")  # fmt: skip

    def after_table(self) -> list[str]:
        """The lines after the table: moves, undos and hints, how the game ended, the notes."""
        game = self.game
        undos, hints = int(game.options.get("undos", 0)), int(game.options.get("hints", 0))
        lines = [f"Moves: {game.ply}   Undos: {undos}   Hints: {hints}"]
        if game.status != "active":
            lines.append(f"Game over: {game.result}.")
        return lines + self.notes

    def text(self) -> str:
        lines = [self.heading()]
        if self.headline:
            lines += ["", self.headline + "."]
        lines += ["", *_rules(self.game).table_text(self.state).rstrip("\n").split("\n")]
        lines += ["", *self.after_table()]
        return "\n".join(lines) + "\n"

    def cid(self) -> str:
        return f"board-{self.game.game_type}-{self.game.board_number}@pbmserv"

    def picture_spec(self) -> dict[str, object]:
        """What :mod:`pbmserv_terrace.app.compose` draws when the mail is sent: the deal
        replayed through the moves (then given up, when it was)."""
        game = self.game
        spec: dict[str, object] = {"game": game.game_type, "variant": game.variant, "deal": _deal(game),
                                   "moves": list(self.moves), "cid": self.cid()}  # fmt: skip
        if _rules(game).ending(self.state) == "resigned":
            spec["resigned"] = True
        return spec

    def html(self, reply_hint: str, web: str = "", links: str = "") -> str:
        """The HTML part: what :meth:`text` says (and ``web``, the board's web line), with
        the table drawn as the picture :meth:`picture_spec` describes, and the move
        ``links`` (:meth:`move_links`: HTML)."""
        rules = _rules(self.game)
        return solitaire_html(
            heading=self.heading(),
            headline=self.headline + "." if self.headline else "",
            cid=self.cid(),
            alt=rules.picture_alt(self.state),
            table=rules.table_text(self.state).rstrip("\n"),
            lines=[*self.after_table(), web.strip()],
            reply_hint=reply_hint,
            move_links=links,
        )

    def move_links(self, address: str, subject: str) -> str:
        """The useful moves (issue 39) as ``mailto:`` links to the player's reply-key
        ``address``, each with the move as its body ('' when the game is over or no
        move makes progress)."""
        if self.game.status != "active":
            return ""
        moves = _rules(self.game).useful_moves(self.state)
        groups = [("", [(move, move, False) for move in moves])]
        return move_links_html(groups, address=address, subject=subject, heading=MOVE_LINKS_HEADING, note=MOVE_LINKS_NOTE)


def _with_picture(mail: Mail, table: Table, user: User, reply_hint: str, web: str) -> Mail:
    """``mail`` with the HTML part and the picture, for a user who wants pictures
    (with the move links when ``mail`` carries the player's reply key)."""
    if user.pictures:
        links = table.move_links(mail.reply_to, mail.subject) if mail.reply_to else ""
        mail.html, mail.picture = table.html(reply_hint, web, links), table.picture_spec()
    return mail


def _plural(count: int, noun: str) -> str:
    """``1 move``, ``2 moves``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def new_deal_line(game_type: str) -> str:
    """How to start a new deal, by Reply and by Subject (issue 38: the footer said
    "start a new deal with new" and no more)."""
    return (f"Reply to this mail with new on the first line to start a new deal (or show), "
            f"or send {game_type} new USERID PASSWORD.")  # fmt: skip


def reply_line(table: Table) -> str:
    """The last line of a board mail: how to answer it by Reply (with a move the
    rules allow now and that makes progress as the example; none when no move does)."""
    if table.game.status != "active":
        return new_deal_line(table.game.game_type)
    example = _rules(table.game).example_move(table.state)
    moves = f"your moves (e.g. {example})" if example else "your moves"
    return f"Reply to this mail with {moves} on the first line; or undo, hint, show, resign."


def subject_of(game: Game, *, new: bool = False, what: str = "") -> str:
    title = GAME_TYPES[game.game_type].title
    text = f"{'New ' if new else ''}{title} Board {game.board_number} {game.seats[0].user.userid}"
    return text + (f" {what}" if what else "")


async def mail_table(ctx: Ctx, table: Table, *, new: bool = False, what: str = "") -> None:
    """The board mail to the player (with a reply key) and a copy to the sender when
    someone else sent the command (an operator, another address)."""
    game = table.game
    user = game.seats[0].user
    web = web_line(ctx, game)
    body = table.text() + web
    reply_to, key = await ctx.board_reply_address(game, user)
    text = body.rstrip("\n") + "\n\n" + reply_line(table) + "\n"
    if user.addresses and not user.signed_off:
        mail = Mail(list(dict.fromkeys(user.addresses)), subject_of(game, new=new, what=what), text,
                    reply_to=reply_to, reply_key=key)  # fmt: skip
        ctx.out.append(_with_picture(mail, table, user, reply_line(table), web))
    if ctx.mail is not None and ctx.sender.lower() not in {a.lower() for a in user.addresses}:
        ctx.out.append(Mail([ctx.sender], subject_of(game, new=new, what=what), body, for_sender=True))


async def reply_to_table(ctx: Ctx, game: Game, headline: str) -> None:
    """The table as it is, to the sender only (e.g. a reply to an older board mail);
    with the picture when the sender is the player and wants pictures."""
    state, moves = await _state(ctx, game)
    user = game.seats[0].user
    reply_to, key = await ctx.board_reply_address(game, user)
    table = Table(game, state, moves, headline, [])
    body = table.text().rstrip("\n") + "\n\n" + reply_line(table) + "\n"
    mail = Mail([ctx.sender], subject_of(game), body, for_sender=True, reply_to=reply_to, reply_key=key)
    if ctx.sender.lower() in {a.lower() for a in user.addresses}:
        mail = _with_picture(mail, table, user, reply_line(table), "")
    ctx.out.append(mail)


async def _owner(ctx: Ctx, cmd: Command, words: list[str]) -> tuple[Game, User, Seat]:
    """Board words[0] (locked) and its player, authenticated by words[1]/[2]."""
    game, _ = await load_game(ctx, cmd, words[0])
    user = await ctx.auth(words[1], words[2], known=[s.user for s in game.seats])
    seat = game.seats[0]
    if seat.user_id != user.id:
        raise board_error(game, f"board {game.board_number} is {seat.user.userid}'s deal, not {user.userid}'s")
    return game, user, seat


def _over(game: Game) -> str:
    """The error for a move on an ended board, with how to start a new deal."""
    return (f"board {game.board_number} is over ({game.result}); to start a new deal, reply new to a "
            f"mail of the board, or send {game.game_type} new USERID PASSWORD")  # fmt: skip


def _require_active(game: Game) -> None:
    if game.status != "active":
        raise board_error(game, _over(game))


async def _finish(ctx: Ctx, game: Game, rules: SolitaireRules[Any], state: Any, ending: str) -> None:
    score = rules.score(state)
    how = {"won": "won", "lost": "lost", "stuck": "no move left", "resigned": "resigned"}.get(ending, ending)
    game.status = "won" if ending == "won" else "ended"
    game.winner_seat = 1 if ending == "won" else None
    game.result = f"{how}, score {score}/{rules.max_score} in {_plural(game.ply, 'move')}"
    game.finished_at = ctx.now
    game.deadline_at = None
    ctx.uow.history.add(FinishedGame(game_id=game.id, game_type=game.game_type, board_number=game.board_number,
                                     players=[game.seats[0].user.userid], result=game.result, plies=game.ply,
                                     finished_at=ctx.now))  # fmt: skip


def _record(ctx: Ctx, game: Game, text: str, rules: SolitaireRules[Any], state: Any) -> None:
    game.ply += 1
    ctx.uow.moves.add(MoveRecord(game_id=game.id, ply=game.ply, seat=1, move=text, auto=False, played_at=ctx.now))
    game.last_move_at = ctx.now
    game.options = {**game.options, "score": rules.score(state)}
    game.position = _summary(rules, state)


# ----------------------------------------------------------------------- new
@command("new", game=SOLITAIRE)
async def new(ctx: Ctx, cmd: Command) -> None:
    kind = _kind(cmd)
    rules = kind.solitaire
    words = need(cmd, 2, 2)
    user = await ctx.auth(words[0], words[1])
    if len(cmd.params) > 1:
        raise CommandError("name at most one variant, e.g. -" + next(iter(rules.variants)))
    try:
        variant = rules.variant(cmd.params[0]) if cmd.params else next(iter(rules.variants))
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    unknown = [k for k in cmd.options if k != "deal"]
    if unknown:
        raise CommandError(f"unknown option --{unknown[0][:30]}; the option is --deal=N (or --deal=today)")
    text = cmd.options.get("deal", "").strip()
    try:
        if text.lower() == "today":
            deal = rules.deal_of_the_day(ctx.now.date(), variant)
        elif text:
            deal = rules.deal_number(text)
        else:
            deal = rules.random_deal(random.SystemRandom())
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    state = rules.start(variant, deal)
    number = await ctx.uow.games.next_board_number(kind.name)
    game = Game(
        game_type=kind.name, board_number=number, variant=variant,
        options={"deal": deal, "undos": 0, "hints": 0, "score": rules.score(state)},
        position=_summary(rules, state), start_position=f"deal {deal}", ply=0, status="active", rated=False,
        draw_votes=[], undo_votes=[], created_at=ctx.now, last_move_at=ctx.now,
        seats=[Seat(seat=1, user=user, user_id=user.id, active=True, resign_pending=False, queued_moves=[],
                    clock_seconds=0.0)],
    )  # fmt: skip
    ctx.uow.games.add(game)
    await ctx.uow.flush()
    ctx.board = str(number)
    notes = ["", f"Others can play the same cards: {kind.name} new USERID PASSWORD -{variant} --deal={deal}"]
    headline = f"{user.userid} starts deal {deal}"
    await mail_table(ctx, Table(game, state, [], headline, notes), new=True)


# ---------------------------------------------------------------------- moves
async def _play_moves(ctx: Ctx, cmd: Command, game: Game, user: User, texts: list[str]) -> None:
    rules = _rules(game)
    _require_active(game)
    if not texts:
        raise board_error(game, f"no move given; write moves as {rules.notation}")
    if len(texts) > MAX_MOVES_PER_MAIL:
        raise board_error(game, f"at most {MAX_MOVES_PER_MAIL} moves in one mail")
    state, moves = await _state(ctx, game)
    played: list[str] = []
    stopped: str | None = None
    for i, text in enumerate(texts, 1):
        try:
            state, canonical = rules.play(state, text)
        except IllegalMoveError as exc:
            where = f"move {i} ({text[:40]})" if len(texts) > 1 else f"'{text[:40]}'"
            stopped = f"{where} was not played: {exc}"
            break
        ending = rules.ending(state)
        if ending != "resigned":  # resigning ends the game; it is no move
            _record(ctx, game, canonical, rules, state)
            moves.append(canonical)
        played.append(canonical)
        if ending is not None:
            await _finish(ctx, game, rules, state, ending)
            if i < len(texts):
                rest = "the move after it was" if len(texts) - i == 1 else f"the {len(texts) - i} moves after it were"
                stopped = f"the game ended after move {i}; {rest} not played"
            break
    if not played:
        # nothing changed: an error reply (with the table as it is)
        assert stopped is not None
        raise board_error(game, stopped + "\n\n" + rules.table_text(state).rstrip("\n"))
    notes: list[str] = []
    if stopped:
        notes += ["", f"Stopped: {stopped}"]
    comment = cmd.comment.strip()
    if comment:
        notes += ["", f"Your note: {shortened(ctx, comment, 2000)}"]
    headline = f"{user.userid} played {' '.join(played)}"
    await mail_table(ctx, Table(game, state, moves, headline, notes))


@command("move", game=SOLITAIRE)
async def move(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 4)
    game, user, _ = await _owner(ctx, cmd, words)
    await _play_moves(ctx, cmd, game, user, _rules(game).split_moves(words[3:]))


@command(MOVE_VERB, game=SOLITAIRE)
async def move_verb(ctx: Ctx, cmd: Command) -> None:
    """A solitaire's extra move word: ``flip 5 U P`` plays ``flip``, ``base 5 U P 7h``
    plays ``base 7h``."""
    extra = len(_kind(cmd).solitaire.move_verbs[cmd.verb])
    words = need(cmd, 3 + extra, 3 + extra)
    game, user, _ = await _owner(ctx, cmd, words)
    await _play_moves(ctx, cmd, game, user, [" ".join([cmd.verb, *words[3:]])])


@command("undo", game=SOLITAIRE)
async def undo(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 3, 4)
    game, user, _ = await _owner(ctx, cmd, words)
    rules = _rules(game)
    count = 1
    if len(words) == 4:
        if not words[3].isdigit() or int(words[3]) < 1:
            raise board_error(game, f"'{words[3][:20]}' is not a number of moves to take back")
        count = int(words[3])
    if game.status != "active" and rules.ending((await _state(ctx, game))[0]) not in ("stuck", "lost"):
        # a game the rules ended (no move left, a loss) may be taken back; one that was
        # won, resigned or abandoned may not
        raise board_error(game, _over(game))
    if game.ply == 0:
        raise board_error(game, "there is no move to undo")
    count = min(count, game.ply)
    moves = await ctx.uow.moves.of_game(game.id)
    await ctx.uow.moves.delete_from(game.id, game.ply - count + 1)
    kept = moves[: len(moves) - count]
    state = rules.replay(game.variant, _deal(game), [m.move for m in kept])
    taken = [m.move for m in moves[len(kept) :]]
    game.taken_back = (game.taken_back or 0) + game.ply - len(kept)
    game.ply = len(kept)
    if game.status != "active":  # undoing the last move of a game that ended with no move left
        game.status, game.result, game.winner_seat, game.finished_at = "active", None, None, None
        await ctx.uow.history.delete_of_game(game.id)
    game.options = {**game.options, "undos": int(game.options.get("undos", 0)) + count, "score": rules.score(state)}
    game.position = _summary(rules, state)
    game.last_move_at = ctx.now
    noun = "move" if count == 1 else f"{count} moves"
    table = Table(game, state, [m.move for m in kept], f"{user.userid} took back {noun} ({' '.join(taken)})", [])
    await mail_table(ctx, table)


async def _in_play(ctx: Ctx, cmd: Command) -> tuple[Game, User, SolitaireRules[Any], Any, list[str]]:
    """``VERB BOARD USERID PASSWORD`` on a deal still in play: the board, its player,
    its rules, its state and the moves that reached it."""
    game, user, _ = await _owner(ctx, cmd, need(cmd, 3, 3))
    _require_active(game)
    state, moves = await _state(ctx, game)
    return game, user, _rules(game), state, moves


@command("resign", game=SOLITAIRE)
async def resign(ctx: Ctx, cmd: Command) -> None:
    game, user, rules, state, moves = await _in_play(ctx, cmd)
    state = rules.resign(state)
    await _finish(ctx, game, rules, state, "resigned")
    await mail_table(ctx, Table(game, state, moves, f"{user.userid} resigns", []))


@command("hint", game=SOLITAIRE)
async def hint(ctx: Ctx, cmd: Command) -> None:
    """Records the request only (:mod:`.hints`): the solver runs in the worker pool,
    and the player's one answer is the board mail with the hint
    (:func:`answer_hint`)."""
    game, user, _ = await _owner(ctx, cmd, need(cmd, 3, 3))
    _require_active(game)
    if PENDING in game.options:
        raise board_error(game, f"a hint for board {game.board_number} is on its way already; it comes in a moment")
    request = ctx.mail.message_id if ctx.mail is not None else f"{game.board_number}/{game.ply}"
    desk_of(ctx.service).admit(user.userid, (game.game_type, game.board_number), request)
    player = ctx.mail is None or ctx.sender.lower() in {a.lower() for a in user.addresses}
    game.options = {**game.options, PENDING: {} if player else {"by": ctx.sender}}
    note_asked(ctx.uow.session, game)


async def answer_hint(ctx: Ctx, game: Game, position: tuple[int, int], found: str | None) -> bool:
    """The board mail with the hint ``found`` (computed for ``position``: the ply
    and the undos), if ``game`` still waits for a hint there; whether it did."""
    pending = game.options.get(PENDING)
    if game.status != "active" or not isinstance(pending, dict) or (game.ply, game.taken_back or 0) != position:
        return False
    state, moves = await _state(ctx, game)
    options = {k: v for k, v in game.options.items() if k != PENDING}
    game.options = {**options, "hints": int(options.get("hints", 0)) + 1}
    if found is None:
        line = "The solver found no move that helps within its time; the game may be lost (resign ends it)."
    else:
        line = f"Hint: {found}   (reply with it, or: {game.game_type} move {game.board_number} USERID PASSWORD {found})"
    table = Table(game, state, moves, "", ["", line])
    await mail_table(ctx, table, what="hint")
    by = pending.get("by")
    if isinstance(by, str) and by:  # asked from another address (an operator): a copy, as for every command
        ctx.out.append(Mail([by], subject_of(game, what="hint"), table.text() + web_line(ctx, game), for_sender=True))
    return True


@command("show", game=SOLITAIRE)
async def show(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 1, 1)
    game, _ = await load_game(ctx, cmd, words[0], lock=False)
    state, moves = await _state(ctx, game)
    table = Table(game, state, moves, "", [])
    if ctx.sender.lower() in {a.lower() for a in game.seats[0].user.addresses}:
        await mail_table(ctx, table)  # the player's own board mail, with a reply key
        return
    ctx.out.append(Mail([ctx.sender], subject_of(game), table.text() + web_line(ctx, game), for_sender=True))


# --------------------------------------------------------------- deals, games
def results_of(games: list[Game]) -> list[SolitaireResult]:
    """Ended solitaire boards (newest first) as the ranking reads them."""
    return [
        SolitaireResult(g.seats[0].user.userid, g.variant, _deal(g), int(g.options.get("score", 0)), g.ply,
                        g.status == "won", g.board_number, g.finished_at or g.created_at)
        for g in games
    ]  # fmt: skip


def _counted(games: list[Game]) -> dict[str, tuple[int, int]]:
    """Per player, the hints and undos used in the games that count in the standings:
    their best game on each deal (more cards home, then fewer moves; of equals the
    newest, as :func:`pbmserv_terrace.gametypes.rank_solitaire` takes them)."""
    best: dict[tuple[str, str, int], Game] = {}
    for g in games:  # newest first
        key = (g.seats[0].user.userid, g.variant, _deal(g))
        kept = best.get(key)
        if kept is None or (int(g.options.get("score", 0)), -g.ply) > (int(kept.options.get("score", 0)), -kept.ply):
            best[key] = g
    used: dict[str, tuple[int, int]] = {}
    for (player, _, _), g in best.items():
        hints, undos = used.get(player, (0, 0))
        used[player] = (hints + int(g.options.get("hints", 0)), undos + int(g.options.get("undos", 0)))
    return used


HOW_HELP_COUNTS = (
    "Hints and undos change no points: a game counts by its cards home, then",
    "its moves (moves taken back by undo are not counted). The table shows the",
    "hints and undos each player used in the games that count; a shared",
    "deal's line, those of its game.",
)
"""what the standings say about hints and undos (issue 38)"""


def standings_lines(kind: GameType, games: list[Game], *, limit: int = STANDINGS_DEALS) -> list[str]:
    """The standings of a solitaire (:func:`pbmserv_terrace.gametypes.rank_solitaire`):
    per player, points from every deal they shared with others (one per player
    beaten: more cards home, or as many in fewer moves; half for a tie), then the
    latest shared deals one by one.  Hints and undos change no points; the table
    shows how many each player used in the games that count, each shared deal's
    lines those of its game (:data:`HOW_HELP_COUNTS`)."""
    ranking = rank_solitaire(results_of(games))
    out = [f"{kind.title} standings: {_plural(ranking.games, 'finished game')} on {_plural(ranking.deals, 'deal')}", ""]
    if not ranking.players:
        return [*out, "No game has ended yet."]
    used = _counted(games)
    by_board = {g.board_number: g for g in games}
    out.append(f"{'#':>3} {'player':<16} {'points':>6} {'shared':>6} {'games':>5} {'won':>4} {'avg cards':>9} "
               f"{'avg moves':>9} {'hints':>5} {'undos':>5}")  # fmt: skip
    for i, p in enumerate(ranking.players, 1):
        hints, undos = used.get(p.player, (0, 0))
        out.append(f"{i:>3} {p.player:<16} {p.points:>6g} {p.shared:>6} {p.played:>5} {p.won:>4} "
                   f"{p.average_cards:>9.1f} {p.average_moves:>9.1f} {hints:>5} {undos:>5}")  # fmt: skip
    out += ["", "Games: deals ended (each player's best game on a deal counts).", *HOW_HELP_COUNTS]
    if ranking.shared:
        out += ["Points: one for each player beaten on the same deal (more cards home, then fewer moves)."]
    for deal in ranking.shared[:limit]:
        out += ["", f"Deal {deal.deal} ({kind.solitaire.variants.get(deal.variant, deal.variant)}):"]
        for i, r in enumerate(deal.results, 1):
            g = by_board.get(r.board_number)
            hints, undos = (int(g.options.get("hints", 0)), int(g.options.get("undos", 0))) if g else (0, 0)
            helped = [_plural(n, noun) for n, noun in ((hints, "hint"), (undos, "undo")) if n]
            used_text = f" with {' and '.join(helped)}" if helped else ""
            out.append(f"  {i}. {r.player:<16} {_plural(r.score, 'card'):>9} in {_plural(r.moves, 'move')}{used_text} "
                       f"(board {r.board_number})")  # fmt: skip
    return out


@command("standings", game=SOLITAIRE)
async def standings(ctx: Ctx, cmd: Command) -> None:
    need(cmd, 0, 0)
    kind = _kind(cmd)
    games = await ctx.uow.games.ended_of_type(kind.name)
    ctx.reply(f"{kind.title} standings", "notice.txt", lines=standings_lines(kind, games), comment=None)


@command("deal-of-the-day", game=SOLITAIRE)
async def deal_of_the_day(ctx: Ctx, cmd: Command) -> None:
    need(cmd, 0, 0)
    kind = _kind(cmd)
    rules = kind.solitaire
    try:
        variants = [rules.variant(p) for p in cmd.params] or list(rules.variants)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    today = ctx.now.date()
    lines = [f"The deals of {today.isoformat()}: everyone who plays one plays the same cards.", ""]
    for v in variants:
        lines.append(f"  {rules.variants[v]:<24} deal {rules.deal_of_the_day(today, v)}")
    lines += ["", f"Play one: {kind.name} new USERID PASSWORD -{variants[0]} --deal=today",
              f"Compare: {kind.name} standings"]  # fmt: skip
    ctx.reply(f"{kind.title} deal of the day", "notice.txt", lines=lines, comment=None)


async def list_boards(ctx: Ctx, kind: GameType) -> None:
    """``list GAME`` for a solitaire: the boards in play."""
    rows = await ctx.uow.games.active_of_type(kind.name)
    lines = [f"{kind.title} boards in play: {len(rows)}", ""]
    for g in rows:
        variant = kind.solitaire.variants.get(g.variant, g.variant)
        lines.append(
            f"  board {g.board_number:<6} {g.seats[0].user.userid:<16} {variant:<22} {_plural(g.ply, 'move'):>9}, {g.position}"
        )
    ctx.reply(f"{kind.title} games", "notice.txt", lines=lines, comment=None)


@command("games", game=SOLITAIRE)
async def games(ctx: Ctx, cmd: Command) -> None:
    words = need(cmd, 0, 1)
    kind = _kind(cmd)
    if words:
        user = await ctx.uow.users.get(words[0])
        if user is None or user.is_deleted:
            raise CommandError(f"{words[0][:32]}: no such user")
    else:
        found = await ctx.uow.users.with_address(ctx.sender)
        if not found:
            raise CommandError(f"name a userid: {kind.name} games USERID")
        user = found[0]
    rows = await ctx.uow.games.for_users([user.id], kind.name)
    lines = [f"{kind.title} boards of {user.userid}: {len(rows)}", ""]
    for g in rows:
        state = "in play" if g.status == "active" else g.result
        lines.append(f"  board {g.board_number:<6} {kind.solitaire.variants.get(g.variant, g.variant):<22} "
                     f"deal {_deal(g):<12} {_plural(g.ply, 'move'):>9}, {g.position}; {state}")  # fmt: skip
    ctx.reply(f"{kind.title} games", "notice.txt", lines=lines, comment=None)


@command("help", game=SOLITAIRE)
async def help_(ctx: Ctx, cmd: Command) -> None:
    kind = _kind(cmd)
    ctx.reply(f"{kind.title} help", "notice.txt", lines=help_lines(kind), comment=None)


def help_lines(kind: GameType) -> list[str]:
    """``help GAME`` for a solitaire: its rules' text, then its commands (72 columns)."""
    rules = kind.solitaire
    name = kind.name
    lines = rules.help_text().rstrip("\n").split("\n")
    lines += ["", "Commands (USERID PASSWORD are yours; BOARD is the number in the board mail):"]
    for form, what in help_entries(name):  # the commands' declarations (commands/table.py)
        lines += [f"  {name} {form}", f"      {what}"]
    lines += ["", "Or reply to a board mail with your moves on its first line (e.g. w-t2 flip",
              "t4-f1), or undo, hint, show, resign: no password needed."]  # fmt: skip
    return lines


def abandon(ctx: Ctx, game: Game, why: str) -> None:
    """End an active solitaire board without a mail (its player's account is deleted)."""
    game.status = "ended"
    game.result = f"{why}, score {int(game.options.get('score', 0))} in {_plural(game.ply, 'move')}"
    game.finished_at = ctx.now
    game.deadline_at = None


__all__ = ["abandon", "answer_hint", "help_lines", "reply_line", "standings_lines"]
