"""A slow, obviously-correct Terrace move generator written straight from RULES.md.

It shares nothing with the package's generator but the position's piece list: it
works on (file, rank) coordinates, recomputes heights from the §1 formula and finds
terraces and level moves by breadth-first search, so a bug in the bitboard tables
cannot hide in both.
"""

from __future__ import annotations

from pbmserv_terrace.games.terrace import Position

SIZE = {"T": 1, "A": 1, "B": 2, "C": 3, "D": 4}


def height(n: int, x: int, y: int) -> int:
    h = n // 2
    if x < h and y < h:
        return 1 + max(x, y)
    if x >= h and y >= h:
        return 1 + max(n - 1 - x, n - 1 - y)
    if x < h:
        return n - max(x, n - 1 - y)
    return n - max(n - 1 - x, y)


def pieces(pos: Position) -> dict[tuple[int, int], tuple[int, str]]:
    """{(x, y): (army, kind letter)} read from the position's board."""
    n = pos.n
    out = {}
    for sq, p in enumerate(pos.board):
        if p:
            out[(sq % n, sq // n)] = (p >> 3, "TABCD"[p & 7])
    return out


def goal(n: int, army: int) -> tuple[int, int]:
    top_right = {8: (1, 4), 6: (1, 3)}[n]
    return (n - 1, n - 1) if army in top_right else (0, 0)


def game_over(n: int, board: dict[tuple[int, int], tuple[int, str]]) -> bool:
    armies = {a for a, _ in board.values()}
    if len(armies) <= 1:
        return True
    return any(board.get(goal(n, a)) == (a, "T") for a in armies)


def slow_moves(n: int, board: dict[tuple[int, int], tuple[int, str]], army: int) -> set[tuple[tuple[int, int], tuple[int, int]]]:
    if game_over(n, board):
        return set()
    moves = set()
    for (x, y), (a, kind) in board.items():
        if a != army:
            continue
        h = height(n, x, y)
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                if dx == dy == 0:
                    continue
                tx, ty = x + dx, y + dy
                if not (0 <= tx < n and 0 <= ty < n):
                    continue
                th = height(n, tx, ty)
                target = board.get((tx, ty))
                diagonal = dx != 0 and dy != 0
                if th == h + 1 and target is None:
                    moves.add(((x, y), (tx, ty)))
                if th == h - 1 and not diagonal and target is None:
                    moves.add(((x, y), (tx, ty)))
                if th == h - 1 and diagonal and target is not None and SIZE[target[1]] <= SIZE[kind]:
                    moves.add(((x, y), (tx, ty)))
        # level: breadth-first over equal-height orthogonal steps, never through
        # another army's piece; own pieces may be passed but not landed on.
        seen, frontier = {(x, y)}, [(x, y)]
        while frontier:
            cx, cy = frontier.pop()
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                tx, ty = cx + dx, cy + dy
                if not (0 <= tx < n and 0 <= ty < n) or (tx, ty) in seen or height(n, tx, ty) != h:
                    continue
                target = board.get((tx, ty))
                if target is not None and target[0] != army:
                    continue
                seen.add((tx, ty))
                frontier.append((tx, ty))
                if target is None:
                    moves.add(((x, y), (tx, ty)))
    return moves


def slow_play(n: int, board: dict, army: int, move: tuple) -> tuple[dict, int]:
    (fx, fy), to = move
    board = dict(board)
    captured = board.get(to)
    board[to] = board.pop((fx, fy))
    if captured and captured[1] == "T":
        board = {sq: p for sq, p in board.items() if p[0] != captured[0]}
    alive = {a for a, _ in board.values()}
    nxt = army
    for step in range(1, 5):
        cand = (army - 1 + step) % 4 + 1
        if cand in alive:
            nxt = cand
            break
    return board, nxt


def slow_perft(n: int, board: dict, army: int, depth: int) -> int:
    if depth == 0:
        return 1
    return sum(slow_perft(n, *slow_play(n, board, army, m), depth - 1) for m in slow_moves(n, board, army))


def slow_outcome(pos: Position) -> tuple[int | None, str] | None:
    """RULES.md §5 from the full legal-move list, as ``Position.outcome`` was first
    written: (winner, reason) or None while the game goes on."""
    n = pos.n
    alive = [a for a in (1, 2, 3, 4) if any(p >> 3 == a for p in pos.board)]
    for army in alive:
        x, y = goal(n, army)
        if pos.board[y * n + x] == army << 3:
            return army, "its T reached its goal"
    if len(alive) == 1:
        return alive[0], "it is the last army on the board"
    if not pos.legal_moves():
        return None, f"army {pos.to_move} has no legal move"
    return None


def slow_tpn(pos: Position) -> str:
    """RULES.md §8 written out square by square."""
    n = pos.n
    rows = []
    for y in range(n - 1, -1, -1):
        text, gap = "", 0
        for x in range(n):
            p = pos.board[y * n + x]
            if not p:
                gap += 1
                continue
            if gap:
                text, gap = text + str(gap), 0
            letter = "TABCD"[p & 7]
            text += (letter.lower() if p >> 3 in (1, 3) else letter) + ("'" if p >> 3 >= 3 else "")
        rows.append(text + (str(gap) if gap else ""))
    return "/".join(rows) + f" {pos.to_move}"
