"""A deterministic player for scripted games: win at once if possible, else capture
a T, else capture anything, else a seeded random move."""

from __future__ import annotations

import random

from pbmserv_terrace.games.terrace import Move, Position, format_move


def choose(pos: Position, rng: random.Random) -> Move:
    moves = pos.legal_moves()
    for m in moves:
        after = pos.play(m)
        out = after.outcome()
        if out is not None and out.winner == pos.to_move:
            return m
    t_caps = [m for m in moves if pos.board[m.to] and pos.board[m.to] & 7 == 0 and pos.board[m.to] >> 3 != pos.to_move]
    if t_caps:
        return t_caps[0]
    caps = [m for m in moves if pos.board[m.to] and pos.board[m.to] >> 3 != pos.to_move]
    if caps and rng.random() < 0.7:
        return rng.choice(caps)
    return rng.choice(moves)


def text(pos: Position, move: Move) -> str:
    return format_move(pos, move)
