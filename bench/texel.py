"""Texel-style fit of robot3's evaluation weights (issue 42 item 4).

Two steps, both reproducible from their seeds:

``gen``: self-play games of robot3 against robot3 at a small node budget (a budget
drawn per side and game between --nodes-min and --nodes-max, and 2..8 uniformly
random opening plies, seeded by the game number, so the games differ), capped at
--cap plies (a draw).  It writes one line per *quiet* position — the side to move
has no capture of another army's piece and no T step home, and is not in danger
(its T attacked, or the other T one step from home) — with the game's result:
``TPN<TAB>score of army 1`` (1, 0.5, 0).

``fit``: reads such files, computes each position's features (the evaluation is a
sum of weight x feature over the terms of evaluate.py, so it is linear in its
weights), checks that the current weights give exactly evaluate()'s value on every
position, finds the scale K for which sigmoid(eval / K) best predicts the results
with the current weights, and then fits the weights with K fixed (logistic loss,
Newton steps, a small ridge pull towards the current weights).  It prints the
loss before and after on the training and a held-out part (every fifth game) and
the fitted weights, rounded to ints, in evaluate.py's form.

Measured (issue 42 item 4, 8x8 long, 150 games at 300-1200 nodes a move, 19,656
quiet positions, 60 % of the games drawn at the cap): the current weights predict
the results hardly at all (K about 2,200-2,800, held-out loss 0.688-0.695 against 0.693 for
no evaluation), and the fitted weights moved far and unstably between 110 and 150
games (C 230 -> -23 -> 90, B 160 -> 395 -> 187).  The fit from 14,558 positions
played 0-8-22 (-325 Elo [-497, -228]) against the hand-set weights at 1,000 nodes a
move over 30 games; so the games' results at these budgets are too noisy a label
for the terms, and robot3 keeps weights measured by play instead (evaluate.py).
On 6x6 short (200 games, 21,479 positions) the evaluation predicts better (K 270,
held-out loss 0.671 -> 0.667 fitted), but the fit (B 85, C -14, mobility 9,
control 8, the open road 62) lost too: 9-1-30 (-203 [-367, -95]) at 1,500 nodes,
40 games; evaluate.ROBOT3's docstring has the partial steps tried.
One finding that play contradicted too: the fit gives mobility no weight
(held-out loss as good without it), but robot3 without mobility scored 0-19-11
(-134 [-209, -68]) at 1,000 nodes, which its cheaper evaluation (-40 % time an
evaluation) cannot repay.

``match``: robot3 with changed weights against robot3 with BASE at --nodes a move
(how every figure here and in evaluate.ROBOT3's docstring was measured).

Run: python bench/texel.py gen --board 8long --games 200 --seed 1 --out /tmp/t8.tsv
     python bench/texel.py fit /tmp/t8.tsv [--extra] [--ridge 1.0] [--zero MOBILITY]
     python bench/texel.py match --boards 8long --nodes 1000 --games 30 --set8 mobility=5
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbmserv_terrace.games.terrace import Position, format_tpn, parse_tpn, start_position
from pbmserv_terrace.games.terrace.engine import evaluate as ev
from pbmserv_terrace.games.terrace.engine import robot
from pbmserv_terrace.games.terrace.engine.board import SearchBoard, to_move_obj
from pbmserv_terrace.games.terrace.engine.search import Limits, Searcher
from pbmserv_terrace.games.terrace.pieces import SIZE

sys.path.insert(0, str(Path(__file__).resolve().parent))
import robot as bench_robot

# ------------------------------------------------------------------ generation


def quiet(sb: SearchBoard) -> bool:
    """No capture or T step home for the side to move, and it is not in danger."""
    if sb.winner or sb.tactical_moves():
        return False
    return not Searcher(sb, sb.to_move, Limits(1, 1)).in_danger()


def play_one(n: int, variant: str, g: int, seed: int, lo: int, hi: int, cap: int) -> tuple[list[str], float]:
    rng = random.Random(f"texel-{seed}-{n}{variant}-{g}")
    pos = start_position(variant, n)
    for _ in range(rng.randint(2, 8)):
        nxt = [q for q in map(pos.play, pos.legal_moves()) if q.outcome() is None]
        if not nxt:
            break
        pos = rng.choice(nxt)
    budget = (rng.randint(lo, hi), rng.randint(lo, hi))
    history: list[Position] = []
    quiet_tpns: list[str] = []
    ply = 0
    while ply < cap and pos.outcome() is None:
        if quiet(SearchBoard(pos)):
            quiet_tpns.append(format_tpn(pos))
        res = robot.search(
            pos,
            pos.to_move,
            Limits(64, budget[pos.to_move - 1]),
            seen=robot.history_keys(history),
            contempt=robot.LEVEL_CONTEMPT[3],
        )
        history.append(pos)
        pos = pos.play(to_move_obj(res.move))
        ply += 1
    out = pos.outcome()
    result = 0.5 if out is None or out.winner is None else 1.0 if out.winner == 1 else 0.0
    return quiet_tpns, result


def gen(args: argparse.Namespace) -> None:
    n, variant = int(args.board[0]), args.board[1:]
    t0 = time.perf_counter()
    count = 0
    tally = {1.0: 0, 0.5: 0, 0.0: 0}
    with open(args.out, "a") as f:
        for g in range(args.first, args.first + args.games):
            tpns, result = play_one(n, variant, g, args.seed, args.nodes_min, args.nodes_max, args.cap)
            tally[result] += 1
            for t in tpns:
                f.write(f"{t}\t{result}\t{g}\n")
            f.flush()
            count += len(tpns)
            if (g + 1 - args.first) % 10 == 0:
                print(
                    f"{g + 1 - args.first} games, {count} positions, 1-0 {tally[1.0]} draw {tally[0.5]} 0-1 {tally[0.0]}, "
                    f"{time.perf_counter() - t0:.0f} s",
                    flush=True,
                )


# ------------------------------------------------------------------ features

BASE_NAMES = (
    ["A", "B", "C", "D"]
    + [f"P{d}" for d in range(1, 9)]
    + ["THREAT_OWN", "THREAT_OTHER", "MOBILITY", "CONTROL", "TEMPO", "T_FREE", "T_STUCK"]
)
EXTRA_NAMES = ["T_SAFE_STEPS", "HEIGHT", "T_GUARDS", "T_NEAR_ATTACK"]


def current_weights(n: int) -> list[float]:
    """robot3's weights on the N x N board (evaluate.ROBOT3) as a vector over BASE_NAMES."""
    r3 = ev.ROBOT3[n]
    w: list[int] = list(r3.piece[1:5])
    w += [r3.progress[d] if d < len(r3.progress) else 0 for d in range(1, 9)]
    w += [-r3.threat_owner, -r3.threat_others, r3.mobility, r3.control, r3.tempo, r3.t_free, -r3.t_stuck]
    return [float(x) for x in w]


def as_weights(w: list[float]) -> str:
    """A fitted vector over BASE_NAMES in evaluate.py's form."""
    v = [round(x) for x in w]
    return (
        f"Weights(piece=(0, {v[0]}, {v[1]}, {v[2]}, {v[3]}), progress=(0, {', '.join(map(str, v[4:12]))}), "
        f"threat_owner={-v[12]}, threat_others={-v[13]}, mobility={v[14]}, control={v[15]}, tempo={v[16]}, "
        f"t_free={v[17]}, t_stuck={-v[18]})"
    )


def army_features(sb: SearchBoard, army: int, extra: bool) -> list[int]:
    """The terms of army_scores(sb, t_road=True) for ``army``, unweighted."""
    n = sb.n
    mine = sb.am[army]
    others = sb.occ & ~mine
    f = [0] * (len(BASE_NAMES) + (len(EXTRA_NAMES) if extra else 0))
    control = 0
    mobility = 0
    height = 0
    heights = ev.geometry(n).height if hasattr(ev.geometry(n), "height") else None
    for sq in range(n * n):
        if mine >> sq & 1:
            p = sb.board[sq]
            if p & 7:
                f[SIZE[p] - 1] += 1
                if heights is not None:
                    height += heights[sq]
            control |= sb.capture[sq]
            mobility += sb.targets(sq).bit_count()
    tsq = sb.tsq[army]
    hostile = 0
    for a in (1, 2, 3, 4):
        if a != army and sb.am[a]:
            m = sb.am[a]
            while m:
                low = m & -m
                hostile |= sb.capture[low.bit_length() - 1]
                m ^= low
    if tsq >= 0:
        dist = ev.t_distance(n, sb.goal[army])
        d = dist[tsq]
        if 1 <= d <= 8:
            f[3 + d] += 1
        attackers = (sb.attackers_of[tsq] & others).bit_count()
        f[12 if sb.to_move == army else 13] += attackers
        if d > 1:
            tg = sb.targets(tsq) & ~mine
            road = sum(1 for to in range(n * n) if tg >> to & 1 and dist[to] < d and not hostile >> to & 1)
            f[17 if road else 18] += 1
        if extra:
            k = len(BASE_NAMES)
            tg = sb.targets(tsq) & ~mine
            f[k] = sum(1 for to in range(n * n) if tg >> to & 1 and dist[to] < d and not hostile >> to & 1)
            f[k + 2] = (sb.attackers_of[tsq] & mine).bit_count()
            # other armies' pieces that could step onto a square attacking the T
            att_sq = sb.attackers_of[tsq] & ~sb.occ
            near = 0
            m = others
            while m:
                low = m & -m
                s = low.bit_length() - 1
                if sb.targets(s) & att_sq:
                    near += 1
                m ^= low
            f[k + 3] = near
    if extra:
        f[len(BASE_NAMES) + 1] = height
    f[14] = mobility
    f[15] = control.bit_count()
    f[16] = 1 if sb.to_move == army else 0
    return f


def features(sb: SearchBoard, extra: bool = False) -> list[int]:
    """From the side to move's view: its features minus the other army's."""
    me = sb.to_move
    other = next(a for a in (1, 2, 3, 4) if a != me and sb.am[a])
    a, b = army_features(sb, me, extra), army_features(sb, other, extra)
    return [x - y for x, y in zip(a, b, strict=True)]


# ------------------------------------------------------------------ fit


def sigmoid(x: float) -> float:
    if x < -40:
        return 0.0
    if x > 40:
        return 1.0
    return 1 / (1 + math.exp(-x))


def loss(rows: list[tuple[list[int], float]], w: list[float], k: float) -> float:
    total = 0.0
    for x, r in rows:
        p = min(max(sigmoid(sum(a * b for a, b in zip(w, x, strict=True)) / k), 1e-9), 1 - 1e-9)
        total -= r * math.log(p) + (1 - r) * math.log(1 - p)
    return total / len(rows)


def solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting."""
    m = len(b)
    aug = [[*row, b[i]] for i, row in enumerate(a)]
    for c in range(m):
        piv = max(range(c, m), key=lambda r: abs(aug[r][c]))
        aug[c], aug[piv] = aug[piv], aug[c]
        for r in range(m):
            if r != c and aug[r][c]:
                fac = aug[r][c] / aug[c][c]
                for j in range(c, m + 1):
                    aug[r][j] -= fac * aug[c][j]
    return [aug[i][m] / aug[i][i] for i in range(m)]


def newton(
    rows: list[tuple[list[int], float]], w0: list[float], k: float, ridge: float, scale: list[float], free: list[bool]
) -> list[float]:
    """Minimise the mean logistic loss + ridge * sum(((w - w0) / scale)^2) / N."""
    w = w0[:]
    m = len(w)
    idx = [j for j in range(m) if free[j]]
    nrows = len(rows)
    for _ in range(12):
        g = [0.0] * m
        h = [[0.0] * m for _ in range(m)]
        for x, r in rows:
            p = sigmoid(sum(a * b for a, b in zip(w, x, strict=True)) / k)
            d = (p - r) / k
            s = p * (1 - p) / (k * k)
            nz = [j for j in idx if x[j]]
            for j in nz:
                xj = x[j]
                g[j] += d * xj
                hj = h[j]
                sx = s * xj
                for i in nz:
                    hj[i] += sx * x[i]
        for j in idx:
            g[j] = g[j] / nrows + 2 * ridge * (w[j] - w0[j]) / scale[j] ** 2 / nrows
            for i in idx:
                h[j][i] /= nrows
            h[j][j] += 2 * ridge / scale[j] ** 2 / nrows
        step = solve([[h[j][i] for i in idx] for j in idx], [g[j] for j in idx])
        for t, j in enumerate(idx):
            w[j] -= step[t]
        if max(abs(s) for s in step) < 0.05:
            break
    return w


def fit(args: argparse.Namespace) -> None:
    rows: list[tuple[list[int], float, int]] = []
    with open(args.files[0]) as f:
        n = parse_tpn(f.readline().split("\t")[0]).n
    w0 = current_weights(n)
    names = list(BASE_NAMES) + (EXTRA_NAMES if args.extra else [])
    w0 += [0.0] * (len(names) - len(w0))
    checked = 0
    lines = []
    for fileno, path in enumerate(args.files):
        with open(path) as f:
            lines += [(fileno, line) for line in f]
    for fileno, line in lines:
        tpn, result, g = line.rstrip("\n").split("\t")
        sb = SearchBoard(parse_tpn(tpn))
        x = features(sb, args.extra)
        if checked < 2000:  # the features reproduce the evaluation exactly
            want = ev.evaluate(sb, sb.to_move, True)
            got = sum(a * b for a, b in zip(w0, x, strict=True))
            assert got == want, (tpn, got, want)
            checked += 1
        r = float(result)
        rows.append((x, r if sb.to_move == 1 else 1 - r, int(g) + fileno * 100000))
    train = [(x, r) for x, r, g in rows if g % 5]
    test = [(x, r) for x, r, g in rows if not g % 5]
    print(f"{len(rows)} positions ({len(train)} train, {len(test)} held out); evaluation reproduced on {checked}")
    k = min(
        (loss(train, w0, kk), kk) for kk in [50, 75, 100, 150, 200, 300, 400, 500, 700, 1000, 1400, 2000, 2800, 4000, 5600, 8000]
    )[1]
    for kk in [k * 0.8, k * 0.9, k * 1.1, k * 1.25]:
        if loss(train, w0, kk) < loss(train, w0, k):
            k = kk
    print(f"K = {k:.0f}; current weights: loss train {loss(train, w0, k):.5f} held out {loss(test, w0, k):.5f}")
    scale = [max(abs(v), 20.0) for v in w0]
    for j, name in enumerate(names):
        if name in args.zero.split(","):
            w0[j] = 0.0
    free = [name not in args.fixed.split(",") and name not in args.zero.split(",") for name in names]
    w = newton(train, w0, k, args.ridge, scale, free)
    wi = [float(round(v)) for v in w]
    print(f"fitted: loss train {loss(train, wi, k):.5f} held out {loss(test, wi, k):.5f}")
    for name, a, b in zip(names, w0, wi, strict=True):
        print(f"  {name:<14} {a:>7.0f} -> {b:>7.0f}")
    print(as_weights(wi))


# ------------------------------------------------------------------ match


def parse_weights(text: str) -> ev.Weights:
    """``mobility=5,t_free=70,progress=0:420:260:...``: BASE with these changes."""
    w = ev.BASE
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        w = w._replace(**{key: tuple(int(v) for v in value.split(":")) if ":" in value else int(value)})
    return w


def match(args: argparse.Namespace) -> None:
    """robot3 with changed weights ("new") against robot3 with BASE ("ref"), both
    with robot3's search, at --nodes a move, through bench/robot.py's games (the
    same openings, colours alternated); --offset: the first game's number."""
    weights = {"new": {8: parse_weights(args.set8), 6: parse_weights(args.set6)}, "ref": {8: ev.BASE, 6: ev.BASE}}

    class Engine:
        history_keys = staticmethod(robot.history_keys)
        to_move_obj = staticmethod(to_move_obj)
        LEVEL_CONTEMPT = robot.LEVEL_CONTEMPT

        def __init__(self, which: str) -> None:
            self.which = which

        def search(self, *a: object, **kw: object) -> object:
            ev.set_robot3_weights(weights[self.which])
            return robot.search(*a, **kw)  # type: ignore[arg-type]

    bench_robot.ENGINES["new"], bench_robot.ENGINES["ref"] = Engine("new"), Engine("ref")
    for board in args.boards.split(","):
        n, variant = int(board[0]), board[1:]
        stats: dict[str, bench_robot.Stats] = {}
        scores = []
        for g in range(args.offset, args.offset + args.games):
            score, st = bench_robot.one_game(("new", "ref", n, variant, g, 200, None, -float(args.nodes)))
            scores.append(score)
            for who, s in st.items():
                t = stats.setdefault(who, bench_robot.Stats())
                t.moves, t.nodes, t.seconds = t.moves + s.moves, t.nodes + s.nodes, t.seconds + s.seconds
        w, d, lost = scores.count(1.0), scores.count(0.5), scores.count(0.0)
        rates = ", ".join(f"{who} {s.nodes / max(s.seconds, 1e-9):,.0f} nodes/s" for who, s in sorted(stats.items()))
        print(
            f"new v ref {board} {args.nodes} nodes games {args.offset}-{args.offset + args.games - 1}: "
            f"{w}-{d}-{lost} {sum(scores) / len(scores):.1%} {bench_robot.elo(scores)} ({rates})",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--board", default="8long")
    g.add_argument("--games", type=int, default=100)
    g.add_argument("--first", type=int, default=0, help="number of the first game (to extend a file)")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--nodes-min", type=int, default=300)
    g.add_argument("--nodes-max", type=int, default=1200)
    g.add_argument("--cap", type=int, default=200)
    g.add_argument("--out", required=True)
    f = sub.add_parser("fit")
    f.add_argument("files", nargs="+")
    f.add_argument("--extra", action="store_true", help="also fit the candidate terms EXTRA_NAMES")
    f.add_argument("--ridge", type=float, default=1.0)
    f.add_argument("--fixed", default="", help="comma-separated names kept at their current weight")
    f.add_argument("--zero", default="", help="comma-separated names whose weight is 0 (terms left out)")
    m = sub.add_parser("match")
    m.add_argument("--set8", default="", help="robot3's changed weights on 8x8, e.g. mobility=5,t_free=70")
    m.add_argument("--set6", default="", help="the same on 6x6 (progress=0:420:...: a tuple)")
    m.add_argument("--boards", default="8long")
    m.add_argument("--nodes", type=int, default=1000)
    m.add_argument("--games", type=int, default=30)
    m.add_argument("--offset", type=int, default=0)
    args = parser.parse_args()
    {"gen": gen, "fit": fit, "match": match}[args.cmd](args)


if __name__ == "__main__":
    main()
