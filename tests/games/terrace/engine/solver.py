"""A brute-force forced-win prover over the rules alone (no engine code), so the
engine's claims of forced wins are checked by something that cannot share its bugs."""

from __future__ import annotations

from pbmserv_terrace.games.terrace import Move, Position


def _finished_for(pos: Position, army: int) -> bool | None:
    """True if the game is over and ``army`` won, False if over otherwise, None if on."""
    out = pos.outcome()
    if out is None:
        return None
    return out.winner == army


def winning_moves(pos: Position, moves: int) -> list[Move]:
    """The moves of the side to move (two-army games) that force a win within
    ``moves`` of its own moves, whatever the other side replies."""
    army = pos.to_move
    return [m for m in pos.legal_moves() if _wins_after(pos.play(m), army, moves)]


def forced_win(pos: Position, moves: int) -> bool:
    return any(_wins_after(pos.play(m), pos.to_move, moves) for m in pos.legal_moves())


def _wins_after(after: Position, army: int, moves: int) -> bool:
    done = _finished_for(after, army)
    if done is not None:
        return done
    if moves <= 1:
        return False
    for reply in after.legal_moves():
        nxt = after.play(reply)
        done = _finished_for(nxt, army)
        if done is None:
            done = any(_wins_after(nxt.play(m), army, moves - 1) for m in nxt.legal_moves())
        if not done:
            return False
    return True
