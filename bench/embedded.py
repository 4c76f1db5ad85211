"""The embedded default end to end: 100 games x 16 plies over 8 SMTP connections,
replies into Maildirs.

``python -m pbmserv_terrace serve`` with no config file: the aiosmtpd listener on
127.0.0.1, a SQLite database, every reply written as a file into
``./maildirs/<address>/`` (mail/delivery.py's MaildirDelivery).  The games (two
players each, at ply 10 as bench/store.py's ``seed`` leaves them; one argon2 hash
for everybody, as bench/service.py does) are seeded into the database before
``serve`` starts; each game's plies are legal quiet moves computed with the rules
from the game's stored position, each mailed by the player whose army is to move,
from that player's address.

Eight clients (aiosmtplib, one connection each, kept open) take the next ready
(game, ply) from a shared queue: a game's next ply is mailed only once its previous
one was answered ``250`` (which the listener says only after the transaction
committed), so a game's plies arrive in order and different games' plies go side
by side, at most 8 mails in flight.

Password cache: every user's first move costs one argon2 check.  Unless
``--cold``, an untimed warm-up round comes first (each game's two players play one
ply each: 200 checks, reported on a line of its own); the timed rounds then run
with the cache warm, as a long-running server's is.  With ``--cold`` the first
timed round pays the checks.

Figures (per round, then the best and the median over ``--repeat`` rounds):
- move mails/s from the first send to the last ``250`` (target >= 400);
- mails/s until every reply is written (2 files per move, counted in the Maildirs;
  the outbox loop writes them after the commit, so they may trail the last 250);
- latency p50/p99 of the 250s;
- CPU per mail, serve's own process and its sender process apart, and the mean
  batch (mails per transaction, from serve's /metrics);
- serve's peak resident memory (VmHWM in /proc/PID/status; target <= 150 MB);
- checks after serve stopped (SIGTERM): every game advanced by every ply (ply read
  from the SQLite database), no mail refused, no reply pending or failed in the
  outbox, no ERROR in serve's log.
The rate limit per sender is raised (PBMSERV_SERVER_RATE_LIMIT_PER_MINUTE), the
web archive is off (PBMSERV_WEB_LISTEN=off); everything else is the default (the
replies sent from the sender process; ``--no-outbox-process``: from serve's own).

Run: python bench/embedded.py [--games 100] [--plies 16] [--connections 8] [--repeat 1] [--cold] [--no-outbox-process] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import aiosmtplib
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import update

from pbmserv_terrace.games.terrace import format_move, parse_tpn
from pbmserv_terrace.service.passwords import hash_password
from pbmserv_terrace.store import Database, User
from pbmserv_terrace.testing.postgres import free_port

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store import seed

SERVER = "pbmserv@bench.test"
PASSWORD = "pw"
MAILDIRS = "maildirs"
TARGET_RATE = 400.0
"""move mails/s through the embedded default"""
TARGET_RSS_MB = 150.0
TICK = os.sysconf("SC_CLK_TCK")
RETRIES = 5
"""attempts per mail when the listener answers 4xx (it says 451 when a handler crashed)"""


@dataclass
class Ply:
    userid: str
    address: str
    move: str


@dataclass
class Board:
    number: int
    start_ply: int
    plies: list[Ply] = field(default_factory=list)


@dataclass
class Round:
    name: str
    mails: int = 0
    failed: int = 0
    retried: int = 0
    elapsed: float = 0.0
    """first send to last 250"""
    replies_after: float = float("nan")
    """first send to the last reply file written (nan: not all were)"""
    replies_missing: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds from the first send to the last 250: serve, this client, the whole box"""
    cpu_replies: dict[str, float] = field(default_factory=dict)
    """the same from the last 250 to the last reply written"""
    batches: int = 0
    """transactions serve handled the round's mails in (its /metrics)"""

    @property
    def rate(self) -> float:
        return self.mails / self.elapsed if self.elapsed else 0.0

    @property
    def rate_with_replies(self) -> float:
        return self.mails / self.replies_after if self.replies_after == self.replies_after else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


# ------------------------------------------------------------------ the games
async def seed_games(url: str, games: int) -> None:
    """``games`` active two-player games (bench/store.py), one real password hash for everybody."""
    db = Database(url)
    await db.migrate()
    random.seed(1)  # store.seed draws each game's two players from its 2,000 users
    await seed(db, 0, games)
    async with db.engine.begin() as conn:
        await conn.execute(update(User).values(password_hash=hash_password(PASSWORD)))
    await db.close()


def plan(path: Path, plies: int) -> list[Board]:
    """Each game's next ``plies`` plies from its stored position: random quiet moves
    (no captures keep the games going), each by the seat whose army is to move."""
    con = sqlite3.connect(path)
    try:
        rows = con.execute(
            "SELECT g.board_number, g.position, g.ply, s.seat, u.userid, u.addresses FROM games g "
            "JOIN seats s ON s.game_id = g.id JOIN users u ON u.id = s.user_id "
            "WHERE g.game_type = 'terrace' AND g.status = 'active' ORDER BY g.board_number, s.seat"
        ).fetchall()
    finally:
        con.close()
    positions: dict[int, tuple[str, int]] = {}
    seats: dict[int, dict[int, tuple[str, str]]] = {}
    for number, tpn, ply, seat, userid, addresses in rows:
        positions[number] = (tpn, ply)
        seats.setdefault(number, {})[seat] = (userid, json.loads(addresses)[0])
    boards = []
    for number, (tpn, ply) in positions.items():
        rng, pos, board = random.Random(number), parse_tpn(tpn), Board(number, ply)
        for _ in range(plies):
            assert pos.outcome() is None, f"board {number} ended after {len(board.plies)} plies"
            legal = [m for m in pos.legal_moves() if pos.board[m.to] == 0]
            move = rng.choice(legal)
            userid, address = seats[number][pos.to_move]
            board.plies.append(Ply(userid, address, format_move(pos, move)))
            pos = pos.play(move)
        boards.append(board)
    return boards


# ------------------------------------------------------------------- serve
def start_serve(workdir: Path, url: str, port: int, health: int, outbox_process: bool = True) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update({
        "PBMSERV_DATABASE_URL": url,
        "PBMSERV_ADDRESS": SERVER,
        "PBMSERV_EMBEDDED_LISTEN_PORT": str(port),
        "PBMSERV_HEALTH_PORT": str(health),
        "PBMSERV_SERVER_RATE_LIMIT_PER_MINUTE": "1000000",  # the bench plays far faster than a person
        "PBMSERV_WEB_LISTEN": "off",
        "PBMSERV_SERVER_OUTBOX_PROCESS": "true" if outbox_process else "false",
    })  # fmt: skip
    log = (workdir / "serve.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=workdir, env=env,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip


def wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> float:
    """Seconds until the SMTP port accepts a connection (serve exiting first is an error)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return time.perf_counter() - start
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"serve did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def memory(pid: int) -> dict[str, float]:
    """VmHWM and VmRSS of a process, in MB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = int(value.split()[0]) / 1024
    return out


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def cpu_now(serve_pid: int) -> dict[str, float]:
    """CPU seconds so far of serve (``serve``: with its children, the sender process
    among them; ``main``: its own process), of this process (the clients), and of
    the whole box."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in Path("/proc/stat").read_text().split()[1:9])
    main = proc_cpu(serve_pid)
    return {
        "serve": main + sum(proc_cpu(c) for c in children(serve_pid)),
        "main": main,
        "client": proc_cpu(os.getpid()),
        "box": (user + nice + system + irq + softirq + steal) / TICK,
    }


def batches_so_far(health: int) -> int:
    """Transactions serve has handled mails in (pbmserv_batches_total on its /metrics)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{health}/metrics", timeout=10).read().decode()
    return int(sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == "pbmserv_batches_total"))


def reply_files(root: Path) -> int:
    """Mails written into the Maildirs under ``root`` (each address's new/: MaildirDelivery
    renames a finished file into it; nothing reads them, so none moves on to cur/)."""
    if not root.is_dir():
        return 0
    total = 0
    with os.scandir(root) as folders:
        for folder in folders:
            with contextlib.suppress(FileNotFoundError):
                total += len(os.listdir(os.path.join(folder.path, "new")))
    return total


# ---------------------------------------------------------------- the clients
def mail_bytes(board: Board, k: int, tag: str) -> tuple[str, bytes]:
    ply = board.plies[k]
    data = (
        f"From: {ply.userid} <{ply.address}>\r\nTo: {SERVER}\r\n"
        f"Subject: terrace move {board.number} {ply.userid} {PASSWORD} {ply.move}\r\n"
        f"Message-ID: <{tag}.{board.number}.{k}@players.bench>\r\n"
        f"Date: {time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\r\n\r\n\r\n"
    )
    return ply.address, data.encode()


async def play(
    name: str,
    clients: list[aiosmtplib.SMTP],
    boards: list[Board],
    first: int,
    count: int,
    root: Path,
    tag: str,
    serve_pid: int,
    health: int,
) -> Round:
    """Plies ``first`` .. ``first + count - 1`` of every board over ``clients``, each
    board's in order; then wait until their replies are in the Maildirs."""
    result = Round(name)
    before = reply_files(root)
    queue: asyncio.Queue[tuple[Board, int] | None] = asyncio.Queue()
    for board in boards:
        queue.put_nowait((board, first))
    remaining = len(boards) * count
    end = first + count

    def finished(n: int) -> None:
        nonlocal remaining
        remaining -= n
        if remaining == 0:
            for _ in clients:
                queue.put_nowait(None)

    async def worker(client: aiosmtplib.SMTP) -> None:
        while (item := await queue.get()) is not None:
            board, k = item
            sender, data = mail_bytes(board, k, tag)
            sent = time.perf_counter()
            for attempt in range(RETRIES):
                try:
                    await client.sendmail(sender, [SERVER], data)
                    break
                except aiosmtplib.SMTPResponseException as exc:  # the same Message-ID again: no double move
                    result.errors.append(f"board {board.number} ply {k}: {exc.code} {exc.message}")
                    if exc.code >= 500 or attempt == RETRIES - 1:
                        raise
                    result.retried += 1
                    await asyncio.sleep(0.1)
            result.latencies.append(time.perf_counter() - sent)
            result.mails += 1
            if k + 1 < end:
                queue.put_nowait((board, k + 1))
            finished(1)

    async def guarded(client: aiosmtplib.SMTP) -> None:
        try:
            await worker(client)
        except (aiosmtplib.SMTPException, OSError) as exc:
            result.errors.append(f"connection lost: {type(exc).__name__}: {exc}")
            result.failed += 1
            finished(remaining)  # nothing more can be sent in order; end the round

    batches0 = await asyncio.to_thread(batches_so_far, health)
    cpu0 = cpu_now(serve_pid)
    start = time.perf_counter()
    await asyncio.gather(*(guarded(c) for c in clients))
    result.elapsed = time.perf_counter() - start
    cpu1 = cpu_now(serve_pid)
    want = before + 2 * result.mails  # one reply per player of the board
    deadline = time.perf_counter() + 60
    while (have := reply_files(root)) < want and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)  # a count costs a listdir per address: not too often, serve needs the CPU
    if have >= want:
        result.replies_after = time.perf_counter() - start
    result.replies_missing = max(0, want - have)
    cpu2 = cpu_now(serve_pid)
    result.cpu = {k: v - cpu0[k] for k, v in cpu1.items()}
    result.cpu_replies = {k: v - cpu1[k] for k, v in cpu2.items()}
    result.batches = await asyncio.to_thread(batches_so_far, health) - batches0
    return result


async def run_rounds(
    port: int, boards: list[Board], args: argparse.Namespace, root: Path, serve_pid: int, health: int
) -> list[Round]:
    clients = [aiosmtplib.SMTP(hostname="127.0.0.1", port=port, timeout=60) for _ in range(args.connections)]
    for client in clients:
        await client.connect()
    rounds = []
    try:
        k = 0
        if not args.cold:
            rounds.append(await play("warm-up", clients, boards, 0, 2, root, "warm", serve_pid, health))
            report(rounds[-1], "untimed warm-up (each player's first move: one argon2 check each)")
            k = 2
        for r in range(args.repeat):
            label = "cold cache" if args.cold and r == 0 else "warm cache"
            rounds.append(await play(f"round {r + 1}", clients, boards, k, args.plies, root, f"r{r}", serve_pid, health))
            report(rounds[-1], label)
            k += args.plies
    finally:
        for client in clients:
            try:
                await client.quit()
            except (aiosmtplib.SMTPException, OSError):
                client.close()
    return rounds


def report(r: Round, label: str) -> None:
    replies = (
        f"all replies written after {r.replies_after:.2f} s = {r.rate_with_replies:.0f} mails/s"
        if r.replies_missing == 0
        else f"{r.replies_missing} REPLIES MISSING after 60 s"
    )
    print(f"[{r.name}, {label}] {r.mails} move mails in {r.elapsed:.2f} s = {r.rate:.0f}/s; {replies}; "
          f"250 latency p50 {r.percentile(0.5) * 1000:.1f} ms, p99 {r.percentile(0.99) * 1000:.1f} ms; "
          f"retried {r.retried}, failed {r.failed}; mean batch {r.mails / max(1, r.batches):.1f} mails "
          f"({r.batches} transactions)", flush=True)  # fmt: skip
    cores = os.cpu_count() or 1
    spans = [("to the last 250", r.elapsed, r.cpu)]
    if r.replies_missing == 0:
        spans.append(("then to the last reply", r.replies_after - r.elapsed, r.cpu_replies))
    for what, took, cpu in spans:
        print(f"    CPU {what} ({took:.1f} s, box {100 * cpu['box'] / max(took, 1e-9) / cores:.0f} % of {cores} cores busy): "
              f"serve {cpu['serve']:.1f} s ({1000 * cpu['serve'] / max(1, r.mails):.1f} ms/mail: its own process "
              f"{1000 * cpu['main'] / max(1, r.mails):.1f}, the sender {1000 * (cpu['serve'] - cpu['main']) / max(1, r.mails):.1f}), "
              f"bench clients {cpu['client']:.1f} s, rest of the box {cpu['box'] - cpu['serve'] - cpu['client']:.1f} s "
              f"(other work on the machine)", flush=True)  # fmt: skip
    for line in r.errors[:5]:
        print(f"    {line}")


# ---------------------------------------------------------------- the checks
def final_state(path: Path, boards: list[Board]) -> tuple[dict[int, int], dict[str, int]]:
    """(ply of each board, outbox rows by state) as serve left the database."""
    con = sqlite3.connect(path)
    try:
        plies = dict(con.execute("SELECT board_number, ply FROM games WHERE game_type = 'terrace'").fetchall())
        states = dict(con.execute("SELECT state, count(*) FROM outbox GROUP BY state").fetchall())
    finally:
        con.close()
    return {b.number: plies.get(b.number, -1) for b in boards}, states


def log_problems(path: Path) -> list[str]:
    lines = path.read_text(errors="replace").splitlines()
    return [line for line in lines if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--plies", type=int, default=16, help="plies per game in each timed round")
    parser.add_argument("--connections", type=int, default=8, help="SMTP client connections (kept open)")
    parser.add_argument("--repeat", type=int, default=1, help="timed rounds, each --plies more plies per game")
    parser.add_argument("--cold", action="store_true", help="no warm-up round: the first timed round pays the password checks")
    parser.add_argument(
        "--no-outbox-process",
        action="store_true",
        help="serve sends replies from its own process ([server] outbox_process = false)",
    )
    parser.add_argument("--keep", help="work in this directory (kept: serve.log, bench.db, maildirs) instead of a temporary one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.keep or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        db_path = workdir / "bench.db"
        if db_path.exists():
            parser.error(f"{db_path} exists: --keep needs a fresh directory")
        url = f"sqlite:///{db_path}"
        t = time.perf_counter()
        asyncio.run(seed_games(url, args.games))
        total_plies = (0 if args.cold else 2) + args.plies * args.repeat
        boards = plan(db_path, total_plies)
        print(f"seeded {len(boards)} games at ply {boards[0].start_ply} and planned {total_plies} plies each "
              f"in {time.perf_counter() - t:.1f} s", flush=True)  # fmt: skip
        port, health = free_port(), free_port()
        proc = start_serve(workdir, url, port, health, not args.no_outbox_process)
        try:
            print(f"serve (pid {proc.pid}) listening after {wait_listening(proc, port):.1f} s "
                  f"on 127.0.0.1:{port}", flush=True)  # fmt: skip
            rounds = asyncio.run(run_rounds(port, boards, args, workdir / MAILDIRS, proc.pid, health))
            mem = memory(proc.pid)
            kids = {c: memory(c) for c in children(proc.pid)}
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        plies, states = final_state(db_path, boards)
        problems = log_problems(workdir / "serve.log")
        timed = [r for r in rounds if r.name != "warm-up"]
        best = max(timed, key=lambda r: r.rate)
        print()
        print(f"embedded e2e: {best.rate:.0f} move mails/s (target >= {TARGET_RATE:.0f})"
              + (f"; median of {len(timed)} rounds {statistics.median(r.rate for r in timed):.0f}/s" if len(timed) > 1 else "")
              + f"; {args.games} games x {args.plies} plies over {args.connections} connections, "
              + ("cold password cache in round 1" if args.cold else "password cache warmed by an untimed round"))  # fmt: skip
        if all(r.replies_missing == 0 for r in timed):
            best_w = max(timed, key=lambda r: r.rate_with_replies)
            print(f"all replies written: {best_w.rate_with_replies:.0f} mails/s "
                  f"(last reply {best_w.replies_after - best_w.elapsed:.2f} s after the last 250; target >= {TARGET_RATE:.0f})")  # fmt: skip
        else:
            print(f"all replies written: NO, {sum(r.replies_missing for r in rounds)} replies missing")
        print(f"250 latency: p50 {best.percentile(0.5) * 1000:.1f} ms, p99 {best.percentile(0.99) * 1000:.1f} ms")
        print(f"serve peak RSS: {mem.get('VmHWM', float('nan')):.0f} MB (target <= {TARGET_RSS_MB:.0f} MB); "
              f"VmRSS at the end {mem.get('VmRSS', float('nan')):.0f} MB"
              + "".join(f"; child process {c}: VmHWM {m.get('VmHWM', 0):.0f} MB" for c, m in kids.items())
              + (f"; serve and its children together: {mem.get('VmHWM', 0) + sum(m.get('VmHWM', 0) for m in kids.values()):.0f} MB"
                 if kids else ""))  # fmt: skip
        want = {b.number: b.start_ply + total_plies for b in boards}
        behind = {n: (plies[n], want[n]) for n in want if plies[n] != want[n]}
        sent = sum(r.mails for r in rounds)
        failed = sum(r.failed for r in rounds)
        print(f"moves applied: {len(want) - len(behind)}/{len(want)} games at ply {boards[0].start_ply} + {total_plies}"
              + (f"; WRONG: {dict(list(behind.items())[:5])} (board: (ply, expected))" if behind else " (all)"))  # fmt: skip
        print(f"mails: {sent} answered 250 of {len(boards) * total_plies}, {failed} failed, "
              f"{sum(r.retried for r in rounds)} retried after 4xx")  # fmt: skip
        print(f"outbox after stop: {', '.join(f'{n} {s}' for s, n in sorted(states.items())) or 'empty'} "
              f"(expected {2 * sent} sent); serve exited with {code}; serve.log: {len(problems)} ERROR lines")  # fmt: skip
        for line in problems[:5]:
            print(f"    {line}")
        ok = (
            not behind
            and not failed
            and sent == len(boards) * total_plies
            and states.get("sent", 0) == 2 * sent
            and set(states) <= {"sent"}
            and all(r.replies_missing == 0 for r in rounds)
        )
        print("check: " + ("every move applied, every reply written, no mail failed" if ok else "FAILED (see above)"))
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()
