"""The rules' share of one move mail, before and after the trims of issue 18 (item 3).

A move mail asks the rules layer, in order (service/play.py, plies.py, boards.py):

  read     parse_tpn of the stored position             (_play: position(game))
  move     parse_move of the player's text              (play_move)
  canon    format_move                                  (play_move)
  play     pos.play(move)                               (play_move)
  store    format_tpn of the new position               (play_move: game.position)
  over?    outcome() of the new position                (after_ply)
  view     parse_tpn of the stored string               (game_view: position(game))
  calls    announcements()                              (status_lines)
  board    render_board                                 (game_view)
  tpn      format_tpn                                   (game_view: position=)
  example  parse_tpn + legal_moves()                    (mail_game: example_move)
  subject  parse_tpn                                    (subject_for: to_move_name)

"old" runs the implementations this trim replaced, copied here (they exist nowhere
else): the legal-move list built for every legality check and every outcome, TPN
parsed and written afresh each time, a Move built per move, the board drawn square
by square.  "new" runs the package as the service calls it.  Both handle the same
stream of mails (GAMES boards of 8x8 long played in turns, quiet random moves typed
``d2-e3``), their answers are compared (every result equal, or the run stops), and
each step is timed with perf_counter_ns around it: best of --repeat passes, in
microseconds per mail.  "new, cold" clears the position cache before every mail (a
server with far more boards in play than the cache holds).

Run: python bench/rules_hot.py [--games 100] [--plies 30] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.games.terrace import (
    MOVE_FORMS,
    Move,
    NotationError,
    Position,
    format_move,
    format_tpn,
    goal_square,
    parse_move,
    parse_tpn,
    render_board,
    start_position,
    why_illegal,
)
from pbmserv_terrace.games.terrace.geometry import FILES, SIZES
from pbmserv_terrace.games.terrace.notation import clear_position_cache
from pbmserv_terrace.games.terrace.pieces import ARMIES, KIND_T, KINDS, SIZE, make_piece, piece_from_text, piece_text

STEPS = ("read", "move", "canon", "play", "store", "over?", "view", "calls", "board", "tpn", "example", "subject")
ISSUE_FIGURE_MS = 1.0


# ------------------------------------------------------------------ old rules
# The implementations before the trim, on the same Position fields.
def old_targets(pos: Position, sq: int) -> int:
    geo = pos.geo
    empty = ~pos.occ & geo.full
    blockers = (pos.occ & ~pos.army_mask[pos.to_move]) & geo.terrace_mask[sq]
    return (
        ((geo.up[sq] | geo.down[sq]) & empty)
        | (geo.capture[sq] & pos.size_mask[SIZE[pos.board[sq]]])
        | (geo.reach[sq][blockers] & empty)
    )


def old_winner(pos: Position) -> tuple[int, str] | None:
    n = pos.n
    for army in ARMIES:
        if pos.army_mask[army] and pos.board[goal_square(n, army)] == make_piece(army, KIND_T):
            return army, "its T reached its goal"
    alive = pos.armies()
    if len(alive) == 1:
        return alive[0], "it is the last army on the board"
    return None


def old_legal_moves(pos: Position) -> list[Move]:
    moves: list[Move] = []
    if old_winner(pos) is None:
        mask = pos.army_mask[pos.to_move]
        while mask:
            low = mask & -mask
            sq = low.bit_length() - 1
            mask ^= low
            targets = old_targets(pos, sq)
            while targets:
                t = targets & -targets
                moves.append(Move(sq, t.bit_length() - 1))
                targets ^= t
    return moves


def old_outcome(pos: Position, moves: list[Move] | None = None) -> tuple[int | None, str] | None:
    """Position.outcome as it was: the whole legal-move list for "has a move"."""
    won = old_winner(pos)
    if won:
        return won
    if not (old_legal_moves(pos) if moves is None else moves):
        return None, f"army {pos.to_move} has no legal move"
    return None


_TPN_TOKEN = re.compile(r"(\d+)|([tabcdTABCD])(')?")


def old_parse_tpn(text: str, n: int | None = None) -> Position:
    parts = text.split()
    if len(parts) != 2:
        raise NotationError("a position string is the ranks separated by '/', a space, and the army to move (e.g. '... 1')")
    ranks = parts[0].split("/")
    size = len(ranks)
    if size not in SIZES:
        raise NotationError(f"a position string has 8 or 6 ranks separated by '/', not {size}")
    if n is not None and n != size:
        raise NotationError(f"the position string has {size} ranks but the board is {n}x{n}")
    board = [0] * (size * size)
    for row, rank in enumerate(ranks):
        y = size - 1 - row
        x = 0
        pos = 0
        while pos < len(rank):
            m = _TPN_TOKEN.match(rank, pos)
            if not m:
                raise NotationError(
                    f"rank {y + 1} of the position string has {rank[pos]!r}, which is neither a piece nor a count"
                )
            pos = m.end()
            if m.group(1):
                x += int(m.group(1))
            else:
                if x < size:
                    board[y * size + x] = piece_from_text(m.group(2), bool(m.group(3)))
                x += 1
        if x != size:
            raise NotationError(f"rank {y + 1} of the position string covers {x} squares, not {size}")
    if not parts[1].isdigit() or int(parts[1]) not in (1, 2, 3, 4):
        raise NotationError(f"the army to move must be 1, 2, 3 or 4, not {parts[1]!r}")
    to_move = int(parts[1])
    present = sorted({p >> 3 for p in board if p})
    if not present:
        raise NotationError("the position string has no pieces")
    for army in present:
        ts = sum(1 for p in board if p == make_piece(army, KIND_T))
        if ts != 1:
            raise NotationError(f"army {army} must have exactly one T on the board, not {ts}")
    if to_move not in present:
        raise NotationError(f"army {to_move} is to move but has no pieces on the board")
    return Position(size, board, to_move)


def old_format_tpn(pos: Position) -> str:
    n = pos.n
    rows = []
    for y in range(n - 1, -1, -1):
        out, gap = [], 0
        for x in range(n):
            p = pos.board[y * n + x]
            if p:
                if gap:
                    out.append(str(gap))
                    gap = 0
                out.append(piece_text(p))
            else:
                gap += 1
        if gap:
            out.append(str(gap))
        rows.append("".join(out))
    return "/".join(rows) + f" {pos.to_move}"


_MOVE = re.compile(
    r"^(?:([tabcd])\s*[-\u2010\u2011\u2012\u2013\u2014\u2212]?\s*)?([a-z]\d+)\s*[-\u2010\u2011\u2012\u2013\u2014\u2212]?\s*([a-z]\d+)(?:\s*:\s*([tabcd]))?$",
    re.IGNORECASE,
)


def old_parse_move(pos: Position, text: str) -> Move:
    raw = text.strip()
    m = _MOVE.match(raw)
    if not m:
        raise NotationError(f"{raw[:40]!r} is not a move; write it as {MOVE_FORMS}")
    letter, src, dst, cap = m.groups()
    geo = pos.geo
    try:
        frm, to = geo.square(src), geo.square(dst)
    except ValueError as exc:
        raise NotationError(f"{raw}: {exc}") from None
    moves = old_legal_moves(pos)  # the old Position kept this list for is_legal below
    if old_outcome(pos, moves) is not None:
        raise NotationError(f"{raw}: the game is over")
    piece = pos.board[frm]
    army = pos.to_move
    if not piece:
        raise NotationError(f"{raw}: there is no piece on {src.lower()}")
    if piece >> 3 != army:
        raise NotationError(f"{raw}: the piece on {src.lower()} ({piece_text(piece)}) is not yours; you play army {army}")
    if letter and letter.upper() != KINDS[piece & 7]:
        raise NotationError(f"{raw}: the piece on {src.lower()} is {KINDS[piece & 7]}, not {letter.upper()}")
    target = pos.board[to]
    if cap:
        if not target:
            raise NotationError(f"{raw}: there is nothing to capture on {dst.lower()}")
        if cap.upper() != KINDS[target & 7]:
            raise NotationError(f"{raw}: the piece on {dst.lower()} is {KINDS[target & 7]}, not {cap.upper()}")
    move = Move(frm, to)
    if move not in moves:
        raise NotationError(f"{raw}: {why_illegal(pos, move)}")
    return move


def old_threatened(pos: Position) -> list[int]:
    geo = pos.geo
    out = []
    for army in pos.armies():
        tsq = pos.t_square(army)
        if tsq is None:
            continue
        attackers = pos.occ & ~pos.army_mask[army]
        while attackers:
            low = attackers & -attackers
            if geo.capture[low.bit_length() - 1] >> tsq & 1:
                out.append(army)
                break
            attackers ^= low
    return out


def old_is_mate(pos: Position) -> bool:
    army = pos.to_move
    for move in old_legal_moves(pos):
        after = pos.play(move)
        won = old_winner(after)
        if won is not None:
            if won[0] == army:
                return False
            continue
        if not old_legal_moves(after):
            return False
        if army in after.armies() and army not in old_threatened(after):
            return False
    return True


def old_announcements(pos: Position) -> list[str]:
    if old_winner(pos) is not None:
        return []
    lines = []
    two_player = len(pos.armies()) == 2
    for army in old_threatened(pos):
        if two_player and army == pos.to_move and old_is_mate(pos):
            lines.append(f"Terrace-mate! Army {army}'s T cannot escape capture.")
        else:
            lines.append(f"Terrace! Army {army}'s T can be captured.")
    return lines


def old_render_board(pos: Position) -> str:
    geo = pos.geo
    n, height = geo.n, geo.height
    files = "        " + "   ".join(FILES[:n])
    lines = [files]

    def rule(y_above: int | None, y_below: int | None) -> str:
        out = ["      "]
        edge_row = n - 1 if y_above is None else 0 if y_below is None else None
        for x in range(n):
            corner = "+"
            if x == 0 and edge_row is not None:
                corner = geo.corners[edge_row * n]
            out.append(corner)
            if y_above is None or y_below is None or height[y_above * n + x] != height[y_below * n + x]:
                out.append("---")
            else:
                out.append("   ")
        out.append("+" if edge_row is None else geo.corners[edge_row * n + n - 1])
        return "".join(out)

    lines.append(rule(None, n - 1))
    for y in range(n - 1, -1, -1):
        row = [f"    {y + 1} "]
        for x in range(n):
            sq = y * n + x
            wall = "|" if x == 0 or height[sq - 1] != height[sq] else " "
            p = pos.board[sq]
            row.append(wall + (f" {piece_text(p):<2}" if p else "   "))
        row.append(f"| {y + 1}")
        lines.append("".join(row))
        lines.append(rule(y, y - 1) if y > 0 else rule(0, None))
    lines.append(files)
    return "\n".join(lines)


# ------------------------------------------------------------------- one mail
Clock = Callable[[], int]


def mail_old(tpn: str, text: str, spent: list[int], clock: Clock) -> tuple[Any, ...]:
    t0 = clock()
    pos = old_parse_tpn(tpn, 8)
    t1 = clock()
    move = old_parse_move(pos, text)
    t2 = clock()
    canonical = format_move(pos, move)
    t3 = clock()
    after = pos.play(move)
    t4 = clock()
    stored = old_format_tpn(after)
    t5 = clock()
    over = old_outcome(after)
    t6 = clock()
    view = old_parse_tpn(stored, 8)
    t7 = clock()
    calls = old_announcements(view)
    t8 = clock()
    board = old_render_board(view)
    t9 = clock()
    shown = old_format_tpn(view)
    t10 = clock()
    example = old_legal_moves(old_parse_tpn(stored, 8))
    t11 = clock()
    subject = old_parse_tpn(stored, 8).to_move
    t12 = clock()
    stamps = (t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12)
    for i in range(len(STEPS)):
        spent[i] += stamps[i + 1] - stamps[i]
    return move, canonical, after, stored, over, calls, board, shown, example, subject


def mail_new(tpn: str, text: str, spent: list[int], clock: Clock) -> tuple[Any, ...]:
    t0 = clock()
    pos = parse_tpn(tpn, 8)
    t1 = clock()
    move = parse_move(pos, text)
    t2 = clock()
    canonical = format_move(pos, move)
    t3 = clock()
    after = pos.play(move)
    t4 = clock()
    stored = format_tpn(after)
    t5 = clock()
    outcome = after.outcome()
    t6 = clock()
    view = parse_tpn(stored, 8)
    t7 = clock()
    calls = view.announcements()
    t8 = clock()
    board = render_board(view)
    t9 = clock()
    shown = format_tpn(view)
    t10 = clock()
    example = parse_tpn(stored, 8).legal_moves()
    t11 = clock()
    subject = parse_tpn(stored, 8).to_move
    t12 = clock()
    stamps = (t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12)
    for i in range(len(STEPS)):
        spent[i] += stamps[i + 1] - stamps[i]
    over = None if outcome is None else (outcome.winner, outcome.reason)
    return move, canonical, after, stored, over, calls, board, shown, example, subject


# ----------------------------------------------------------------- the stream
def stream(games: int, plies: int) -> list[tuple[str, str]]:
    """(stored position string, move text) per mail, the boards taking turns."""
    per_game = []
    for g in range(games):
        rng, pos, mails = random.Random(g), start_position("long"), []
        for _ in range(plies):
            quiet = [m for m in pos.legal_moves() if not pos.board[m.to] and pos.play(m).outcome() is None]
            if not quiet:
                break
            move = rng.choice(quiet)
            mails.append((old_format_tpn(pos), f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}"))
            pos = pos.play(move)
        per_game.append(mails)
    return [g[i] for i in range(max(map(len, per_game))) for g in per_game if i < len(g)]


def run(
    mails: list[tuple[str, str]], handle: Callable[..., tuple[Any, ...]], cold: bool
) -> tuple[list[int], list[tuple[Any, ...]]]:
    spent = [0] * len(STEPS)
    clock = time.perf_counter_ns
    answers = []
    clear_position_cache()
    for tpn, text in mails:
        if cold:
            clear_position_cache()
        answers.append(handle(tpn, text, spent, clock))
    return spent, answers


def best(
    mails: list[tuple[str, str]], handle: Callable[..., tuple[Any, ...]], cold: bool, repeat: int
) -> tuple[list[float], list[tuple[Any, ...]]]:
    """Microseconds per mail per step, each the best of ``repeat`` passes."""
    runs = [run(mails, handle, cold) for _ in range(repeat)]
    per_step = [min(r[0][i] for r in runs) / len(mails) / 1000 for i in range(len(STEPS))]
    return per_step, runs[-1][1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--plies", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    mails = stream(args.games, args.plies)
    old, old_answers = best(mails, mail_old, False, args.repeat)
    new, new_answers = best(mails, mail_new, False, args.repeat)
    cold, cold_answers = best(mails, mail_new, True, args.repeat)
    for i, (a, b, c) in enumerate(zip(old_answers, new_answers, cold_answers, strict=True)):
        if not a == b == c:
            raise SystemExit(f"mail {i} ({mails[i]}): the old and new rules answer differently")
    print(
        f"{len(mails)} move mails ({args.games} boards of 8x8 long, up to {args.plies} plies each), best of {args.repeat}; every answer identical"
    )
    print(f"{'step':<10}{'old µs':>10}{'new µs':>10}{'new cold':>10}{'speed-up':>10}")
    for name, a, b, c in zip(STEPS, old, new, cold, strict=True):
        print(f"{name:<10}{a:>10.2f}{b:>10.2f}{c:>10.2f}{a / b:>9.1f}x")
    total_old, total_new, total_cold = sum(old), sum(new), sum(cold)
    print(f"{'per mail':<10}{total_old:>10.1f}{total_new:>10.1f}{total_cold:>10.1f}{total_old / total_new:>9.1f}x")
    print(
        f"rules work per move mail: {total_old / 1000:.3f} ms -> {total_new / 1000:.3f} ms warm, "
        f"{total_cold / 1000:.3f} ms with a cold position cache (issue 18 measured ~{ISSUE_FIGURE_MS:.1f} ms before)"
    )


if __name__ == "__main__":
    main()
