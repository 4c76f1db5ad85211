"""Board geometry of Terrace (RULES.md §1), precomputed once per board size.

Squares are small ints: ``sq = rank_index * N + file_index`` (a1 = 0, b1 = 1, …).
Everything the move generator asks about a square — its height, its terrace, the
neighbours one level up or down, the diagonal squares it may capture on, and which
squares of its terrace it can reach past a given set of blockers — is a table lookup,
so the generator never computes geometry while it searches.

>>> g = geometry(8)
>>> g.height[g.square("a8")], g.height[g.square("a1")]
(8, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

FILES = "abcdefgh"
SIZES = (6, 8)


@dataclass(frozen=True, slots=True)
class Geometry:
    """Precomputed tables for an N x N Terrace board."""

    n: int
    height: tuple[int, ...]
    terrace: tuple[int, ...]
    """Terrace id of each square (ids are arbitrary but stable)."""
    terrace_mask: tuple[int, ...]
    """Bitmask of the squares on each square's terrace."""
    path: tuple[tuple[int, ...], ...]
    """Each square's terrace as a walk from one end of the L to the other."""
    up: tuple[int, ...]
    """Bitmask: orthogonal or diagonal neighbours one level higher."""
    down: tuple[int, ...]
    """Bitmask: orthogonal neighbours one level lower (plain down moves)."""
    capture: tuple[int, ...]
    """Bitmask: diagonal neighbours one level lower (the only capture squares)."""
    reach: tuple[dict[int, int], ...]
    """reach[sq][blockers & terrace_mask[sq]] = terrace squares a piece on sq can
    walk to without passing a blocker (blocker squares themselves excluded)."""
    influence: tuple[int, ...]
    """influence[sq]: squares (sq itself included) whose piece's moves may change when
    sq changes occupant: its up/down/capture neighbours and its terrace.  Bulk perft
    recounts only those pieces after a move instead of the whole army."""
    full: int
    """Bitmask of every square."""
    corners: dict[int, str]
    """The four corner squares and their letter: H for high, L for low."""
    names: tuple[str, ...]
    """Each square's name (``a1`` …): :meth:`name` looks it up."""

    def square(self, name: str) -> int:
        """Square number of a name like ``"d2"``; ValueError when it is off the board."""
        name = name.strip().lower()
        if len(name) < 2 or name[0] not in FILES[: self.n] or not name[1:].isdigit():
            raise ValueError(f"{name!r} is not a square of the {self.n}x{self.n} board")
        rank = int(name[1:])
        if not 1 <= rank <= self.n:
            raise ValueError(f"{name!r} is not a square of the {self.n}x{self.n} board")
        return (rank - 1) * self.n + FILES.index(name[0])

    def name(self, sq: int) -> str:
        """Name of square ``sq``: ``geometry(8).name(0) == "a1"``."""
        return self.names[sq]

    def is_diagonal(self, a: int, b: int) -> bool:
        return abs(a % self.n - b % self.n) == 1 and abs(a // self.n - b // self.n) == 1

    def is_orthogonal(self, a: int, b: int) -> bool:
        return abs(a % self.n - b % self.n) + abs(a // self.n - b // self.n) == 1


def _height(n: int, x: int, y: int) -> int:
    h = n // 2
    if x < h and y < h:
        return 1 + max(x, y)
    if x >= h and y >= h:
        return 1 + max(n - 1 - x, n - 1 - y)
    if x < h:
        return n - max(x, n - 1 - y)
    return n - max(n - 1 - x, y)


@cache
def geometry(n: int) -> Geometry:
    """The (cached) geometry of the N x N board; N is 8 or 6."""
    if n not in SIZES:
        raise ValueError(f"board size must be one of {SIZES}, not {n}")
    count = n * n
    height = tuple(_height(n, sq % n, sq // n) for sq in range(count))

    def orth(sq: int) -> list[int]:
        x, y = sq % n, sq // n
        return [(y + dy) * n + x + dx for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)) if 0 <= x + dx < n and 0 <= y + dy < n]

    def diag(sq: int) -> list[int]:
        x, y = sq % n, sq // n
        return [(y + dy) * n + x + dx for dx, dy in ((1, 1), (-1, 1), (1, -1), (-1, -1)) if 0 <= x + dx < n and 0 <= y + dy < n]

    # Terraces: orthogonally connected squares of equal height (flood fill).
    terrace = [-1] * count
    members: list[list[int]] = []
    for start in range(count):
        if terrace[start] >= 0:
            continue
        tid = len(members)
        stack, group = [start], []
        terrace[start] = tid
        while stack:
            sq = stack.pop()
            group.append(sq)
            for nb in orth(sq):
                if terrace[nb] < 0 and height[nb] == height[sq]:
                    terrace[nb] = tid
                    stack.append(nb)
        members.append(group)

    # Each terrace is an L (or a single square): order it as a walk end to end.
    paths: list[tuple[int, ...]] = []
    for group in members:
        inside = set(group)
        ends = [sq for sq in group if sum(nb in inside for nb in orth(sq)) <= 1]
        walk, prev, cur = [], -1, min(ends)
        while cur >= 0:
            walk.append(cur)
            nxt = [nb for nb in orth(cur) if nb in inside and nb != prev]
            prev, cur = cur, (nxt[0] if nxt else -1)
        assert len(walk) == len(group), "a terrace must be a simple path"
        paths.append(tuple(walk))

    def bits(squares: list[int] | tuple[int, ...]) -> int:
        mask = 0
        for sq in squares:
            mask |= 1 << sq
        return mask

    up = tuple(bits([nb for nb in orth(sq) + diag(sq) if height[nb] == height[sq] + 1]) for sq in range(count))
    down = tuple(bits([nb for nb in orth(sq) if height[nb] == height[sq] - 1]) for sq in range(count))
    capture = tuple(bits([nb for nb in diag(sq) if height[nb] == height[sq] - 1]) for sq in range(count))

    reach: list[dict[int, int]] = []
    for sq in range(count):
        route = paths[terrace[sq]]
        i = route.index(sq)
        others = [s for s in route if s != sq]
        table: dict[int, int] = {}
        for subset in range(1 << len(others)):
            blockers = {others[k] for k in range(len(others)) if subset >> k & 1}
            dest = 0
            for step in (-1, 1):
                j = i + step
                while 0 <= j < len(route) and route[j] not in blockers:
                    dest |= 1 << route[j]
                    j += step
            table[bits(sorted(blockers))] = dest
        reach.append(table)

    terrace_mask = tuple(bits(paths[terrace[sq]]) for sq in range(count))
    influence = tuple(
        bits([s for s in range(count) if s == sq or ((up[s] | down[s] | capture[s] | terrace_mask[s]) >> sq) & 1])
        for sq in range(count)
    )
    last = n - 1
    corners = {0: "L", last: "H", last * n: "H", count - 1: "L"}
    return Geometry(
        n=n,
        height=height,
        terrace=tuple(terrace),
        terrace_mask=terrace_mask,
        path=tuple(paths[terrace[sq]] for sq in range(count)),
        up=up,
        down=down,
        capture=capture,
        reach=tuple(reach),
        influence=influence,
        full=(1 << count) - 1,
        corners=corners,
        names=tuple(f"{FILES[sq % n]}{sq // n + 1}" for sq in range(count)),
    )
