"""What a solitaire's pages show (a one-player game from a numbered deal, a game
type of family ``solitaire``), computed from the archive's rows with the game's
:class:`~pbmserv_terrace.gametypes.SolitaireRules` only (no I/O).

A solitaire board is a ``games`` row with one seat: ``variant`` and
``options["deal"]`` say which cards, the move records what was played (a state is
the deal replayed), ``options`` also count the undos and hints and keep the
score, and ``position`` is a one-line summary, not a position to parse.  The mail
service keeps the same facts (``service/solitaire.py``); the web may not import
it, so what it needs is restated here.  Nothing here knows a game by name: the
rules come from :data:`~pbmserv_terrace.gametypes.GAME_TYPES`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..gametypes import GAME_TYPES, SolitaireRanking, SolitaireResult, SolitaireRules, rank_solitaire
from ..store.archive import EndedRow, GameRow, ListedGame, MoveRow

STANDINGS_DEALS = 8
"""shared deals listed under a solitaire's standings (as the mail's ``standings``)"""


def solitaire_rules(game_type: str) -> SolitaireRules[Any]:
    return GAME_TYPES[game_type].solitaire


def deal_of(game: GameRow | ListedGame | EndedRow) -> int:
    """The board's deal number: ``options["deal"]`` (as the service stores it), else the
    number in a start position ``deal N``, else 0."""
    deal = game.options.get("deal")
    if deal is not None:
        return int(deal)
    start = getattr(game, "start_position", "")
    digits = str(start).rpartition(" ")[2]
    return int(digits) if digits.isdigit() else 0


def variant_name(game: GameRow | ListedGame | EndedRow, game_type: str) -> str:
    return solitaire_rules(game_type).variants.get(game.variant, game.variant)


def counter(game: GameRow | ListedGame | EndedRow, name: str) -> int:
    """``undos``, ``hints`` or ``score`` from the board's options (0 when not kept)."""
    try:
        return int(game.options.get(name, 0))
    except (TypeError, ValueError):
        return 0


@dataclass
class TableFrame:
    """The table after some move, and the move that made it."""

    ply: int
    state: Any
    move_text: str = ""
    played_at: datetime | None = None


def _settled(game: GameRow, rules: SolitaireRules[Any], state: Any, ply: int) -> Any:
    """The state as the game left it: a game over whose last state the rules still call
    open was stopped by its player (resign, or an account closed) and is shown so."""
    if ply == game.ply and game.status != "active" and rules.ending(state) is None:
        return rules.resign(state)
    return state


UNPLAYABLE = " (cannot be replayed)"
"""marks a stored move the rules refuse now (and the moves after it, which keep the table)"""


def frames(game: GameRow, moves: list[MoveRow]) -> Iterator[TableFrame]:
    """The dealt table and the table after each move, in order (one replay).  A stored
    move the rules refuse (say, after a rules fix) stops the replay there: the page
    still answers, showing the last table it could reach."""
    rules = solitaire_rules(game.game_type)
    state = rules.start(game.variant, deal_of(game))
    yield TableFrame(0, _settled(game, rules, state, 0))
    stuck = False
    for record in moves:
        if not stuck:
            try:
                state, _ = rules.play(state, record.move)
            except ValueError:  # IllegalMoveError included
                stuck = True
        text = record.move + (UNPLAYABLE if stuck else "")
        yield TableFrame(record.ply, state if stuck else _settled(game, rules, state, record.ply), text, record.played_at)


def replay(game: GameRow, moves: list[MoveRow], upto: int) -> TableFrame:
    """The table after the first ``upto`` moves."""
    last: TableFrame | None = None
    for frame in frames(game, [m for m in moves if m.ply <= upto]):
        last = frame
    assert last is not None
    return last


def player_of(game: GameRow | ListedGame) -> str:
    return game.seats[0].userid if game.seats else "?"


def status_lines(game: GameRow, frame: TableFrame) -> list[str]:
    """Where the shown table stands in the game, and how the game stands."""
    rules = solitaire_rules(game.game_type)
    score = f"{rules.score(frame.state)}/{rules.max_score}"
    if frame.ply < game.ply:
        return [f"The table after move {frame.ply} of {game.ply} (score {score})."]
    if game.status == "removed":
        return [f"This board was removed: {game.result}."]
    if game.status != "active":
        return [f"Game over: {game.result}."]
    return [f"In play: {player_of(game)} has made {game.ply} move{'' if game.ply == 1 else 's'}; score {score}."]


def facts(game: GameRow) -> list[tuple[str, str]]:
    """The board's header as (label, value) pairs (the player is linked by the page)."""
    rules = solitaire_rules(game.game_type)
    state = "in play" if game.status == "active" else (game.result or game.status)
    return [
        ("Variant", f"{variant_name(game, game.game_type)} ({game.variant})"),
        ("Deal", str(deal_of(game))),
        ("Moves", str(game.ply)),
        ("Undos", str(counter(game, "undos"))),
        ("Hints", str(counter(game, "hints"))),
        ("Score", f"{counter(game, 'score')}/{rules.max_score}"),
        ("Status", state),
    ]


def listed_summary(game: ListedGame) -> dict[str, Any]:
    """What a list row of a solitaire board shows."""
    rules = solitaire_rules(game.game_type)
    return {
        "player": player_of(game),
        "variant": variant_name(game, game.game_type),
        "deal": deal_of(game),
        "score": f"{counter(game, 'score')}/{rules.max_score}",
        "state": "in play" if game.status == "active" else (game.result or game.status),
    }


def outcome(game: GameRow | ListedGame) -> str:
    """One word for a player's list: playing, won or ended."""
    if game.status == "active":
        return "playing"
    return game.status


def text_record(game: GameRow, moves: list[MoveRow], final: TableFrame) -> str:
    """The game as plain text: header lines, the moves in the game's notation, the
    table as it is."""
    rules = solitaire_rules(game.game_type)
    title = GAME_TYPES[game.game_type].title
    lines = [
        f"Game: {title} board {game.board_number}",
        f"Player: {player_of(game)}",
        f"Variant: {variant_name(game, game.game_type)} ({game.variant})",
        f"Deal: {deal_of(game)}",
        f"Result: {game.result or ('in progress' if game.status == 'active' else game.status)}",
        f"Date: {game.created_at:%Y-%m-%d %H:%M} UTC",
    ]
    if game.finished_at:
        lines.append(f"Finished: {game.finished_at:%Y-%m-%d %H:%M} UTC")
    lines += [
        f"Moves: {game.ply}",
        f"Undos: {counter(game, 'undos')}",
        f"Hints: {counter(game, 'hints')}",
        f"Score: {rules.score(final.state)}/{rules.max_score}",
        "",
    ]
    lines += [f"{m.ply}. {m.move}" for m in moves]
    lines += ["", "Table:", "", rules.table_text(final.state).rstrip("\n"), ""]
    return "\n".join(lines)


def feed_entry(game: GameRow, frame: TableFrame) -> tuple[str, str]:
    """(title, summary) of the feed entry of one move."""
    rules = solitaire_rules(game.game_type)
    title = f"Move {frame.ply}: {player_of(game)} played {frame.move_text}"
    summary = f"Score {rules.score(frame.state)}/{rules.max_score}."
    if frame.ply == game.ply and game.status != "active":
        summary += f" Game over: {game.result}."
    return title, summary


def ranking(rows: list[EndedRow]) -> SolitaireRanking:
    """The standings of a solitaire's ended boards (newest first), as the mail's
    ``standings`` ranks them (the game table's ``rank_solitaire``)."""
    return rank_solitaire(
        SolitaireResult(
            r.userid,
            r.variant,
            deal_of(r),
            counter(r, "score"),
            r.ply,
            r.status == "won",
            r.board_number,
            r.finished_at or r.created_at,
        )
        for r in rows
    )
