"""Hostile mail against the embedded default (issue 36): the CPU one hostile mail
costs, and other players' answers while hostile mail, solver hints and web
clients all load the server at once.

Targets (issue 36; figures printed, nothing asserted):
- any single mail up to the listener's size limit (12 MB, ``MAX_MESSAGE``) is
  handled in <= 1 s of CPU; the ~100 kB hostile HTML in <= 50 ms;
- while one client sends hostile mails, another 30 solver hints and 200 web
  clients load pages, other players' move mails are answered with p99 <= 1 s
  and the event loop's lag stays <= 100 ms p99.

The hostile shapes (``shapes``): an HTML-only mail of ``<html>help`` and
``<script>`` x 12,500 (~100 kB, folded at 900 columns) and the same at 195 kB;
HTML bodies ``"<" * 100000`` and ``"<p" * 50000``; a ~900 kB Subject of RFC 2047
encoded words; a 427 kB To header; 3,000 nested multiparts; 200,000 MIME parts;
12 MB of plain text, of empty lines and of ``<p`` (HTML); a 300-word command line
with a password (``patience move 101 robx robxpw1 flip flip ...``).  Every line
is at most 900 columns (the listener refuses a longer one, as RFC 5321 allows).

Part 1, one mail at a time:
- in this process: ``parse_message`` of each shape (``time.process_time``), and
  the whole handling (``parse_message`` + ``Service.handle_mail`` on a fresh
  SQLite database with robx and his patience board 101), the median of
  ``--reps`` runs, with what the parser made of it;
- through the real mail path: SMTP to the embedded listener of a ``serve``
  (started here in a temporary directory, as bench/embedded.py does, the web
  archive on) while nothing else runs: the wall time to the ``250`` and the CPU
  of serve's own process (aiosmtpd's reading included) and of its children (the
  sender writing the reply) from the send until the reply is written, less what
  the idle server spends in that time.

Part 2, the mixed load on the same ``serve`` (SQLite, seeded as bench/embedded.py
seeds: ``--games`` games of 2,000 users, one argon2 hash for all):
- ``--boards`` honest games (players who play no other game) each mail their
  next move every ``--interval`` seconds (or as soon as the last one is
  answered, when that takes longer), over one kept-open SMTP connection each;
  latency: from the send to the ``250`` (after the commit), and to the mover's
  reply file in its Maildir (``<dir>/maildirs/<address>/new``, polled every
  10 ms);
- one client (a process of its own) sends the hostile shapes one after another,
  over and over, each from a new address with a new Message-ID (the rate limit
  per sender is raised for everybody, so none is throttled away);
- one client asks ``--hints`` solver hints (``patience hint``), spread over the
  window, each for another player's patience board; latency to the hint mail;
- ``--web-clients`` keep-alive HTTP clients (a process of their own:
  bench/web.py's raw-socket clients and its "mix" of pages) load the archive's
  pages (``/``, standings, players, boards) from serve's web process;
- the event loop's lag: ``pbmserv_event_loop_lag_seconds`` (a histogram on
  serve's /metrics, a beat every 50 ms) over the window: p50/p99 as the bucket
  bound they fall in, the share of beats over 100 ms, the stalls counted
  (``pbmserv_event_loop_stalls_total``) and the places serve.log names for them.
An untimed warm-up (two plies per game: every player's first password check)
comes first.  The CPU of every process in the window and of the whole box is
printed too: the box is shared, and what the neighbours take shows in every time.

``--quick`` (about a minute): a 15 s window, 10 games, 10 hints, one run of each
shape in this process, and over SMTP in part 1 every shape but the 12 MB of empty
lines (it still comes in part 2's loop).  ``--no-hostile`` runs part 2 without the
hostile client (the baseline the box allows); ``--exclude TEXT`` leaves out the
shapes whose name contains TEXT (to tell which shape costs what).

Run: python bench/hostile.py [--quick] [--window 60] [--boards 20] [--interval 2] [--hints 30]
     [--web-clients 200] [--games 200] [--reps 3] [--only 1|2] [--no-hostile] [--exclude TEXT] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import re
import signal
import smtplib
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import aiosmtplib
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import insert, update

from pbmserv_terrace.config import load_config
from pbmserv_terrace.inbound import InboundMail
from pbmserv_terrace.mail.delivery import MaildirDelivery
from pbmserv_terrace.mail.embedded import MAX_MESSAGE
from pbmserv_terrace.mail.message import parse_message, with_envelope_recipients
from pbmserv_terrace.service import Service
from pbmserv_terrace.service.passwords import hash_password
from pbmserv_terrace.store import Database, OutboxMessage, User, utcnow
from pbmserv_terrace.testing.postgres import free_port

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import box_cpu
from embedded import PASSWORD, SERVER, Board, children, mail_bytes, memory, plan, proc_cpu, seed_games, wait_listening
from web import Tally, drive_measured

MAILDIRS = "maildirs"
FOLD = 900
"""columns: every line of a hostile mail is folded at this (the listener refuses lines over 1,000)"""
ROBX, ROBX_PW, ROBX_ADDR = "robx", "robxpw1", "robx@outside.test"
TARGET_MAIL_CPU, TARGET_HTML_CPU = 1.0, 0.05
"""seconds of CPU: any mail up to the size limit; the ~100 kB hostile HTML"""
TARGET_P99, TARGET_LAG = 1.0, 0.1
"""seconds: other players' answers p99, the event loop's lag p99"""
QUICK_SKIPS = "12 MB empty"
"""--quick sends the shapes whose name has this only in part 2 (alone, over SMTP, it took 25-34 s)"""
POLL = 0.01
"""seconds between looks into the Maildirs of the players waiting for a reply"""


# ------------------------------------------------------------------ the shapes
def fold_lines(text: bytes, width: int = FOLD) -> bytes:
    """``text`` cut into lines of ``width`` bytes (CRLF between them)."""
    return b"\r\n".join(text[i : i + width] for i in range(0, len(text), width))


def fold_header(name: str, words: list[str], sep: str = " ", width: int = FOLD) -> bytes:
    """A header field of ``words`` joined by ``sep``, folded before a word at ``width`` columns."""
    lines, line = [], f"{name}:"
    for i, word in enumerate(words):
        piece = (" " if i == 0 else sep) + word
        if len(line) + len(piece) > width:
            lines.append(line)
            line = " " + (piece.lstrip() if sep == " " else piece.lstrip(" "))
        else:
            line += piece
    lines.append(line)
    return "\r\n".join(lines).encode() + b"\r\n"


def _head(sender: str, subject: str = "help", extra: bytes = b"", ctype: bytes = b"text/plain; charset=utf-8") -> bytes:
    """The header block after the Message-ID (the caller puts that first, so a cut
    header block still has it)."""
    return (f"From: {sender}\r\nTo: {SERVER}\r\nSubject: {subject}\r\n".encode() + extra
            + b"MIME-Version: 1.0\r\nContent-Type: " + ctype + b"\r\n\r\n")  # fmt: skip


def big_lines(line: bytes, size: int) -> bytes:
    """Lines ``line`` (CRLF after each) up to ``size`` bytes."""
    one = line + b"\r\n"
    return one * (size // len(one))


BIG = MAX_MESSAGE - 64 * 1024
"""bytes of a body at the size limit (the header block and the listener's X-Original-To fit beside it)"""


def shapes() -> list[tuple[str, Callable[[str, str], bytes]]]:
    """(name, make(sender, message_id) -> raw bytes) of each hostile shape."""
    html = b"text/html; charset=utf-8"
    script = fold_lines(b"<html>help" + b"<script>" * 12_500)
    script195 = fold_lines(b"<html>help" + b"<script>" * 24_375)
    lt = fold_lines(b"<" * 100_000)
    lp = fold_lines(b"<p" * 50_000)
    subject = fold_header("Subject", ["=?utf-8?q?=41=42?="] * 50_000)  # 18 + 1 bytes a word: ~950 kB
    to = fold_header("To", [f"r{i}@victim{i % 97}.test" for i in range(25_000)], sep=", ")  # ~427 kB
    nested = b"".join(b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i) for i in range(3_000))
    parts = b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n" * 200_000 + b"--b--\r\n"
    plain = big_lines(b"help me with my move please, " * 2 + b"I am lost here ok", BIG)
    empty = b"\r\n" * (BIG // 2)
    html12 = big_lines(b"<p" * (FOLD // 2), BIG)
    words = f"patience move 101 {ROBX} {ROBX_PW} " + " ".join(["flip"] * 295)
    command = fold_header("Subject", words.split())

    def simple(body: bytes, ctype: bytes = b"text/plain; charset=utf-8", subject: str = "") -> Callable[[str, str], bytes]:
        return lambda sender, mid: f"Message-ID: {mid}\r\n".encode() + _head(sender, subject, ctype=ctype) + body + b"\r\n"

    def subject_head(sender: str, mid: str) -> bytes:
        return (f"Message-ID: {mid}\r\nFrom: {sender}\r\nTo: {SERVER}\r\n".encode() + subject
                + b"MIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nhelp\r\n")  # fmt: skip

    def to_head(sender: str, mid: str) -> bytes:
        return (f"Message-ID: {mid}\r\nFrom: {sender}\r\nSubject: help\r\n".encode() + to
                + b"MIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nhelp\r\n")  # fmt: skip

    def nested_mail(sender: str, mid: str) -> bytes:
        return f"Message-ID: {mid}\r\nFrom: {sender}\r\nTo: {SERVER}\r\nSubject: help\r\n".encode() + nested

    def robx(sender: str, mid: str) -> bytes:
        return (f"Message-ID: {mid}\r\nFrom: {ROBX} <{ROBX_ADDR}>\r\nTo: {SERVER}\r\n".encode() + command
                + b"Content-Type: text/plain\r\n\r\n\r\n")  # fmt: skip

    out: list[tuple[str, Callable[[str, str], bytes]]] = [
        ("html <script> x12,500 (100 kB)", simple(script, html)),
        ("html <script> x24,375 (195 kB)", simple(script195, html)),
        ('html "<" * 100000', simple(lt, html)),
        ('html "<p" * 50000', simple(lp, html)),
        ("Subject of encoded words (950 kB)", subject_head),
        ("To of 25,000 addresses (427 kB)", to_head),
        ("3,000 nested multiparts", nested_mail),
        ("200,000 MIME parts (7 MB)", simple(parts, b"multipart/mixed; boundary=b", "help")),
        ("12 MB plain text", simple(plain, subject="help")),
        ("12 MB empty lines", simple(empty, subject="help")),
        ('12 MB html "<p" lines', simple(html12, html)),
        ("300-word command with a password", robx),
    ]
    return out


# ------------------------------------------------------------------ seeding
async def add_robx(url: str) -> None:
    """robx (password robxpw1) and his patience board 101 (the 300-word command's board)."""
    db = Database(url)
    async with db.engine.begin() as conn:
        await conn.execute(insert(User.__table__), [{"userid": ROBX, "password_hash": hash_password(ROBX_PW),
                                                     "addresses": [ROBX_ADDR], "created_at": utcnow()}])  # fmt: skip
    await db.close()


def config_for(url: str) -> object:
    return load_config(None, {"PBMSERV_DATABASE_URL": url, "PBMSERV_ADDRESS": SERVER,
                              "PBMSERV_SERVER_RATE_LIMIT_PER_MINUTE": "1000000"})  # fmt: skip


async def patience_boards(url: str, users: list[tuple[str, str]]) -> None:
    """A patience board for each (userid, password), in this order (boards 101, 102, …),
    made through the service as a mail would; their replies marked sent (not part of the run)."""
    db = Database(url)
    service = Service(db, config_for(url))  # type: ignore[arg-type]
    for i, (userid, password) in enumerate(users):
        address = ROBX_ADDR if userid == ROBX else f"{userid}@example.org"
        result = await service.handle_mail(InboundMail(sender=address, subject=f"patience new {userid} {password} --deal={7 + i}",
                                                       body="", message_id=f"<seed.patience.{i}@bench>"))  # fmt: skip
        if result.status != "ok":
            raise SystemExit(f"patience new {userid}: {result.status} {result.detail}")
    async with db.engine.begin() as conn:
        await conn.execute(update(OutboxMessage).values(state="sent"))
    await db.close()


# ------------------------------------------------------------------ part 1
def median_cpu(fn: Callable[[], object], reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return statistics.median(times), out


async def part1_inprocess(tmp: Path, reps: int, exclude: list[str]) -> dict[str, tuple[float, float, str, str]]:
    """name -> (parse_message CPU s, parse + handle_mail CPU s, what the parser made of it, the handling's status)."""
    url = f"sqlite+aiosqlite:///{tmp / 'part1.db'}"
    db = Database(url)
    await db.migrate()
    await db.close()
    await add_robx(url)
    await patience_boards(url, [(ROBX, ROBX_PW)])
    db = Database(url)
    service = Service(db, config_for(url))  # type: ignore[arg-type]
    await service.handle_mail(InboundMail(sender="warm@outside.test", subject="help", body="", message_id="<warm@bench>"))
    out: dict[str, tuple[float, float, str, str]] = {}
    serial = 0
    for name, make in shapes():
        if any(x in name for x in exclude):
            continue
        serial += 1
        raw = with_envelope_recipients(make(f"eve{serial}@outside.test", f"<p1.{serial}@outside.test>"), [SERVER])
        parse_s, mail = median_cpu(lambda raw=raw: parse_message(raw), reps)
        assert isinstance(mail, InboundMail)
        what = (f"refused: {mail.problem.split(': ', 1)[1].split(';')[0]}" if mail.problem else
                f"subject {len(mail.subject):,} ch, body {len(mail.body):,} ch, {len(mail.recipients)} rcpts")  # fmt: skip
        handle_times, status = [], ""
        for r in range(reps):
            serial += 1
            sender = ROBX_ADDR if "password" in name else f"eve{serial}@outside.test"
            raw = with_envelope_recipients(make(sender, f"<p1.{serial}.{r}@outside.test>"), [SERVER])
            t = time.process_time()
            result = await service.handle_mail(parse_message(raw))
            handle_times.append(time.process_time() - t)
            status = f"{result.status}, {result.replies} repl{'y' if result.replies == 1 else 'ies'}"
        out[name] = (parse_s, statistics.median(handle_times), what, status)
        print(f"  {name}: parse {parse_s * 1000:.1f} ms, handled {out[name][1] * 1000:.1f} ms", flush=True)
    await db.close()
    return out


def cpu_of_tree(pid: int) -> tuple[float, float]:
    """(CPU s of serve's own process, of its sender process) so far."""
    return proc_cpu(pid), sum(proc_cpu(c) for c in children(pid) if label(c) == "sender")


def part1_smtp(
    port: int, serve_pid: int, root: Path, exclude: list[str], quick: bool
) -> dict[str, tuple[float, float, float, str]]:
    """name -> (wall s to the 250, serve main CPU s, its sender process's CPU s, the SMTP answer), one mail at
    a time to an idle serve, each sent and then left until its reply is written (or 3 s)."""
    for _ in range(15):  # until the start-up's work is done (the sender and the web process warm up)
        main0, kids0 = cpu_of_tree(serve_pid)
        t0 = time.perf_counter()
        time.sleep(1.0)
        main1, kids1 = cpu_of_tree(serve_pid)
        took = time.perf_counter() - t0
        idle_main, idle_kids = (main1 - main0) / took, (kids1 - kids0) / took
        if idle_main < 0.05 and idle_kids < 0.05:
            break
    print(f"  idle serve: {idle_main * 1000:.0f} ms CPU/s in its own process, {idle_kids * 1000:.0f} ms/s in its sender",
          flush=True)  # fmt: skip
    delivery = MaildirDelivery(str(root))
    out: dict[str, tuple[float, float, float, str]] = {}
    for i, (name, make) in enumerate(shapes()):
        if any(x in name for x in exclude) or (quick and QUICK_SKIPS in name):
            continue
        sender = ROBX_ADDR if "password" in name else f"mallory{i}@outside.test"
        raw = make(sender, f"<p1smtp.{i}.{time.time_ns()}@outside.test>")
        folder = delivery.folder(sender) / "new"
        had = len(os.listdir(folder)) if folder.is_dir() else 0
        main0, kids0 = cpu_of_tree(serve_pid)
        t = sent = time.perf_counter()
        try:
            with smtplib.SMTP("127.0.0.1", port, timeout=120) as smtp:
                sent = time.perf_counter()
                smtp.sendmail(sender, [SERVER], raw)
                answer = "250"
        except smtplib.SMTPResponseException as exc:
            answer = f"{exc.smtp_code} {exc.smtp_error.decode(errors='replace')[:40]}"
        except smtplib.SMTPException as exc:
            answer = f"{type(exc).__name__}"
        wall = time.perf_counter() - sent
        deadline = time.perf_counter() + 3.0
        while time.perf_counter() < deadline and not (folder.is_dir() and len(os.listdir(folder)) > had):
            time.sleep(0.02)
        time.sleep(0.1)
        took = time.perf_counter() - t
        main1, kids1 = cpu_of_tree(serve_pid)
        replied = folder.is_dir() and len(os.listdir(folder)) > had
        out[name] = (wall, max(0.0, main1 - main0 - idle_main * took), max(0.0, kids1 - kids0 - idle_kids * took),
                     answer + ("" if replied else ", no reply"))  # fmt: skip
        print(f"  {name}: {answer} after {wall * 1000:.0f} ms, serve {out[name][1] * 1000:.0f} ms CPU", flush=True)
    return out


def print_part1(inproc: dict[str, tuple[float, float, str, str]], smtp: dict[str, tuple[float, float, float, str]],
                raw_sizes: dict[str, int]) -> None:  # fmt: skip
    print()
    print("Part 1: CPU for one hostile mail (targets: <= 1000 ms any mail, <= 50 ms the 100 kB HTML)")
    head = (f"{'shape':<36}{'bytes':>11}{'parse ms':>10}{'handle ms':>11}{'smtp 250 ms':>13}{'serve ms':>10}"
            f"{'sender ms':>11}  outcome")  # fmt: skip
    print(head)
    print("-" * len(head))
    worst = 0.0
    for name, size in raw_sizes.items():
        p, h, what, status = inproc.get(name, (float("nan"), float("nan"), "", ""))
        w, m, k, answer = smtp.get(name, (float("nan"), float("nan"), float("nan"), "not sent (--quick)" if smtp else ""))
        worst = max(worst, *(x for x in (h, m) if x == x))
        print(f"{name:<36}{size:>11,}{p * 1000:>10.1f}{h * 1000:>11.1f}{w * 1000:>13.0f}{m * 1000:>10.0f}{k * 1000:>11.0f}"
              f"  {what}; {status}" + (f"; SMTP {answer}" if answer else ""))  # fmt: skip
    html = "html <script> x12,500 (100 kB)"
    if html in inproc:
        h = inproc[html][1]
        print(f"the 100 kB hostile HTML: {h * 1000:.1f} ms of CPU handled in-process (target <= {TARGET_HTML_CPU * 1000:.0f} ms: "
              f"{'met' if h <= TARGET_HTML_CPU else 'MISSED'})")  # fmt: skip
    print(
        f"the costliest mail: {worst * 1000:.0f} ms of CPU (target <= {TARGET_MAIL_CPU * 1000:.0f} ms: "
        f"{'met' if worst <= TARGET_MAIL_CPU else 'MISSED'})"
    )
    print(
        "(parse: parse_message alone; handle: parse_message + Service.handle_mail in this process, reply queued not "
        "written; smtp/serve/sender: one mail over SMTP to the idle serve, its CPU until the reply file is written, "
        "clock ticks of 10 ms, less the idle rate)"
    )


# ------------------------------------------------------------------ serve
def start_serve(workdir: Path, url: str, port: int, health: int, web: int) -> subprocess.Popen[bytes]:
    """``serve`` as bench/embedded.py starts it, but with the web archive on (its own process)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update({
        "PBMSERV_DATABASE_URL": url,
        "PBMSERV_ADDRESS": SERVER,
        "PBMSERV_EMBEDDED_LISTEN_PORT": str(port),
        "PBMSERV_HEALTH_PORT": str(health),
        "PBMSERV_SERVER_RATE_LIMIT_PER_MINUTE": "1000000",  # hostile senders not throttled away; honest ones play fast
        "PBMSERV_WEB_LISTEN": f"127.0.0.1:{web}",
    })  # fmt: skip
    log = (workdir / "serve.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=workdir, env=env,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip


SENDERS: set[int] = set()
"""pids of serve's sender process (the spawn child there at start-up; later ones are the robot pool)"""


def label(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "web.process" in cmd:
        return "web"
    if "resource_tracker" in cmd:
        return "tracker"
    if "multiprocessing" in cmd or "spawn_main" in cmd or "forkserver" in cmd:
        return "sender" if pid in SENDERS else "robot pool"
    return cmd.split()[-1][:20] if cmd else "?"


def metrics(health: int) -> dict[str, float] | None:
    """The loop-lag histogram's samples (``le`` → count, ``count``, ``sum``, ``stalls``) from /metrics,
    None when the server exports no lag metric."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{health}/metrics", timeout=10).read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if "loop" in family.name and "lag" in family.name and family.type == "histogram":
            for s in family.samples:
                if s.name.endswith("_bucket"):
                    out[s.labels["le"]] = s.value
                elif s.name.endswith("_count"):
                    out["count"] = s.value
                elif s.name.endswith("_sum"):
                    out["sum"] = s.value
        elif "loop" in family.name and "stall" in family.name and family.type == "counter":
            out["stalls"] = sum(s.value for s in family.samples if s.name.endswith("_total"))
        elif family.name == "pbmserv_batches":
            out["batches"] = sum(s.value for s in family.samples if s.name.endswith("_total"))
    return out if "count" in out else None


def lag_summary(before: dict[str, float] | None, after: dict[str, float] | None) -> str:
    if before is None or after is None:
        return "lag metric not available"
    n = after["count"] - before["count"]
    if n <= 0:
        return "lag: no beats in the window"
    bounds = sorted((float(k), after[k] - before.get(k, 0.0)) for k in after if re.fullmatch(r"[0-9.e+-]+|\+Inf", k))

    def quantile(q: float) -> str:
        for le, cum in bounds:
            if cum >= q * n:
                return f"<= {le * 1000:g} ms" if le != float("inf") else "> 10 s"
        return "?"

    within = next((cum for le, cum in bounds if abs(le - TARGET_LAG) < 1e-9), float("nan"))
    p99_ok = within >= 0.99 * n
    return (f"event loop lag over {n:.0f} beats: mean {1000 * (after['sum'] - before['sum']) / n:.1f} ms, "
            f"p50 {quantile(0.5)}, p99 {quantile(0.99)}, max {quantile(1.0)} (histogram buckets); "
            f"{n - within:.0f} beats ({100 * (n - within) / n:.1f} %) over {TARGET_LAG * 1000:.0f} ms; "
            f"{after.get('stalls', 0) - before.get('stalls', 0):.0f} stalls counted - target p99 <= {TARGET_LAG * 1000:.0f} ms: "
            f"{'met' if p99_ok else 'MISSED'}")  # fmt: skip


# ------------------------------------------------------------------ the other clients (processes of their own)
def hostile_client(port: int, out: str, exclude: list[str]) -> None:
    """Send the hostile shapes one after another until terminated; a JSON line into ``out`` as each
    mail starts (``[name, null, null]``) and as it is answered (``[name, wall s, answer]``)."""
    made = [(name, make) for name, make in shapes() if not any(x in name for x in exclude)]
    n = 0
    with open(out, "a", buffering=1) as log:
        while True:
            name, make = made[n % len(made)]
            n += 1
            sender = ROBX_ADDR if "password" in name else f"eve{n}@outside.test"
            raw = make(sender, f"<hostile.{n}.{os.getpid()}@outside.test>")
            log.write(json.dumps([name, None, None]) + "\n")
            t = time.perf_counter()
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=300) as smtp:
                    smtp.sendmail(sender, [SERVER], raw)
                answer = "250"
            except smtplib.SMTPResponseException as exc:
                answer = str(exc.smtp_code)
            except (smtplib.SMTPException, OSError) as exc:
                answer = type(exc).__name__
            log.write(json.dumps([name, time.perf_counter() - t, answer]) + "\n")


def web_client(port: int, pid: int, games: int, clients: int, warmup: float, seconds: float, out: str) -> None:
    """bench/web.py's keep-alive clients on its "mix" of pages; the answer times, statuses and server CPU into ``out``."""
    tally = Tally()
    args = argparse.Namespace(games=games, hot=min(400, games), clients=clients, warmup=warmup, seconds=seconds)
    cpu = asyncio.run(drive_measured(pid, port, "mix", args, tally))
    Path(out).write_text(json.dumps({"times": tally.times, "statuses": tally.statuses, "errors": tally.errors, "cpu": cpu}))


# ------------------------------------------------------------------ part 2
class Watcher:
    """Times at which players' Maildirs reached a count of mails (polled every POLL s)."""

    def __init__(self, root: Path) -> None:
        self.delivery = MaildirDelivery(str(root))
        self.waiting: dict[str, tuple[int, asyncio.Future[float]]] = {}

    def count(self, address: str) -> int:
        with contextlib.suppress(FileNotFoundError):
            return len(os.listdir(self.delivery.folder(address) / "new"))
        return 0

    def until(self, address: str, count: int) -> asyncio.Future[float]:
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting[address] = (count, fut)
        return fut

    async def run(self) -> None:
        while True:
            now = time.perf_counter()
            for address, (count, fut) in list(self.waiting.items()):
                if fut.done():
                    del self.waiting[address]
                elif self.count(address) >= count:
                    fut.set_result(now)
                    del self.waiting[address]
            await asyncio.sleep(POLL)

    def newest(self, address: str) -> bytes:
        folder = self.delivery.folder(address) / "new"
        files = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime_ns)
        return files[-1].read_bytes() if files else b""


class Honest:
    def __init__(self) -> None:
        self.to_250: list[float] = []
        self.to_reply: list[float] = []
        self.errors: list[str] = []
        self.timeouts = 0


async def play_board(board: Board, plies: range, port: int, watcher: Watcher, counts: dict[str, int], tag: str,
                     start: float, interval: float, end: float | None, into: Honest | None) -> None:  # fmt: skip
    """``board``'s plies in order, the first at ``start`` and each ``interval`` after the last (or as soon
    as the last is answered); stops at ``end``.  Each ply waits for the mover's reply file."""
    client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port, timeout=120)
    await client.connect()
    slot = start
    try:
        for k in plies:
            now = time.perf_counter()
            if end is not None and max(now, slot) >= end:
                break
            await asyncio.sleep(max(0.0, slot - now))
            ply = board.plies[k]
            other = next((p.address for p in board.plies if p.address != ply.address), ply.address)
            sender, data = mail_bytes(board, k, tag)
            for address in {ply.address, other}:
                counts[address] += 1
            reply = watcher.until(ply.address, counts[ply.address])
            t = time.perf_counter()
            slot = t + interval
            try:
                await client.sendmail(sender, [SERVER], data)
            except aiosmtplib.SMTPException as exc:
                if into is not None:
                    into.errors.append(f"board {board.number} ply {k}: {exc}")
                return
            ok = time.perf_counter()
            try:
                got = await asyncio.wait_for(reply, timeout=60)
            except TimeoutError:
                if into is not None:
                    into.timeouts += 1
                return
            if into is not None:
                into.to_250.append(ok - t)
                into.to_reply.append(got - t)
    finally:
        with contextlib.suppress(aiosmtplib.SMTPException, OSError):
            await client.quit()


async def ask_hints(port: int, players: list[tuple[str, int]], watcher: Watcher, start: float, spacing: float,
                    results: list[tuple[float, str]]) -> None:  # fmt: skip
    """Each (userid, board) asks for one hint, ``spacing`` s apart from ``start``; (latency, what came) of each."""
    client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port, timeout=120)
    await client.connect()

    async def wait(address: str, fut: asyncio.Future[float], t: float) -> None:
        try:
            got = await asyncio.wait_for(fut, timeout=120)
        except TimeoutError:
            results.append((float("nan"), "no answer in 120 s"))
            return
        text = watcher.newest(address)
        kind = ("hint" if b"Hint:" in text else "no move found" if b"solver found no move" in text
                else "busy" if b"busy" in text else "quota" if b"hints a minute" in text else "other")  # fmt: skip
        results.append((got - t, kind))

    waits = []
    try:
        for i, (userid, number) in enumerate(players):
            await asyncio.sleep(max(0.0, start + i * spacing - time.perf_counter()))
            address = f"{userid}@example.org"
            fut = watcher.until(address, watcher.count(address) + 1)
            data = (f"From: {address}\r\nTo: {SERVER}\r\nSubject: patience hint {number} {userid} {PASSWORD}\r\n"
                    f"Message-ID: <hint.{i}.{time.time_ns()}@players.bench>\r\n\r\n\r\n").encode()  # fmt: skip
            t = time.perf_counter()
            await client.sendmail(address, [SERVER], data)
            waits.append(asyncio.create_task(wait(address, fut, t)))
        await asyncio.gather(*waits)
    finally:
        with contextlib.suppress(aiosmtplib.SMTPException, OSError):
            await client.quit()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def part2(args: argparse.Namespace, workdir: Path, proc: subprocess.Popen[bytes], ports: dict[str, int],
                boards: list[Board], hinters: list[tuple[str, int]]) -> None:  # fmt: skip
    serve = proc.pid
    watcher = Watcher(workdir / MAILDIRS)
    poller = asyncio.create_task(watcher.run())
    counts = {p.address: watcher.count(p.address) for b in boards for p in b.plies}
    warm = 2
    t = time.perf_counter()
    warmup = Honest()
    await asyncio.gather(*(play_board(b, range(warm), ports["smtp"], watcher, counts, "warm", t, 0.0, None, warmup)
                           for b in boards))  # fmt: skip
    print(f"  warm-up (untimed, one argon2 check a player): {len(warmup.to_reply)} move mails answered in "
          f"{time.perf_counter() - t:.1f} s, reply p50 {pct(warmup.to_reply, 0.5) * 1000:.0f} ms"
          + (f"; {len(warmup.errors)} errors, {warmup.timeouts} timeouts" if warmup.errors or warmup.timeouts else ""),
          flush=True)  # fmt: skip
    web_pid = next((c for c in children(serve) if label(c) == "web"), None)
    ramp = 3.0
    ctx = multiprocessing.get_context("spawn")
    hostile_out, web_out = workdir / "hostile.json", workdir / "web.json"
    clients: dict[str, multiprocessing.process.BaseProcess] = {}
    if not args.no_hostile:
        clients["hostile client"] = ctx.Process(target=hostile_client, args=(ports["smtp"], str(hostile_out), args.exclude))
    if args.web_clients and web_pid is not None:
        clients["web clients"] = (ctx.Process(target=web_client, args=(ports["web"], web_pid, args.games, args.web_clients, ramp,
                                                              args.window, str(web_out))))  # fmt: skip
    load0 = os.getloadavg()
    for c in clients.values():
        c.start()
    await asyncio.sleep(ramp)
    begin = time.perf_counter()
    end = begin + args.window
    pids = {"serve": serve, "bench (players, hints)": os.getpid(), **{name: c.pid for name, c in clients.items()}}
    kids0 = {c: proc_cpu(c) for c in children(serve)}
    cpu0 = {k: proc_cpu(p) for k, p in pids.items() if p}
    box0 = box_cpu()
    lag0 = await asyncio.to_thread(metrics, ports["health"])
    log0 = (workdir / "serve.log").stat().st_size
    honest = Honest()
    hints: list[tuple[float, str]] = []
    spacing = args.window / max(1, args.hints)
    hint_task = asyncio.create_task(ask_hints(ports["smtp"], hinters[: args.hints], watcher, begin + 0.5, spacing, hints))
    stagger = args.interval / max(1, len(boards))
    await asyncio.gather(*(play_board(b, range(warm, len(b.plies)), ports["smtp"], watcher, counts, "timed",
                                      begin + i * stagger, args.interval, end, honest) for i, b in enumerate(boards)))  # fmt: skip
    lag1 = await asyncio.to_thread(metrics, ports["health"])
    elapsed = time.perf_counter() - begin
    cpu1 = {k: proc_cpu(p) for k, p in pids.items() if p}
    for c in children(serve):  # (a robot pool started in the window counts from 0)
        name = f"serve's {label(c)} {c}"
        cpu0[name], cpu1[name] = kids0.get(c, 0.0), proc_cpu(c)
    box1 = box_cpu()
    load1 = os.getloadavg()
    hostile = clients.get("hostile client")
    if hostile is not None:  # (its mail in flight is cut off: the listener drops a mail whose connection ends)
        hostile.terminate()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(hint_task, timeout=150)
    for c in clients.values():
        await asyncio.to_thread(c.join, 600)
    poller.cancel()
    log_tail = (workdir / "serve.log").read_bytes()[log0:].decode(errors="replace")

    print()
    print(f"Part 2: mixed load for {args.window:g} s (the last answer came {elapsed - args.window:.1f} s after): "
          f"{len(boards)} honest games (a move every {args.interval:g} s each), "
          + ("no hostile client" if args.no_hostile else "one hostile client" + (f" (without {args.exclude})" if args.exclude else ""))
          + f", {len(hinters[: args.hints])} hints, {args.web_clients} web clients")  # fmt: skip
    n = len(honest.to_reply)
    p50, p99, worst = pct(honest.to_reply, 0.5), pct(honest.to_reply, 0.99), max(honest.to_reply, default=float("nan"))
    print(f"honest move mails: {n} answered ({n / elapsed:.1f}/s), {honest.timeouts} timeouts, {len(honest.errors)} errors")
    print(f"  to the 250 (committed):   p50 {pct(honest.to_250, 0.5) * 1000:7.0f} ms, p99 {pct(honest.to_250, 0.99) * 1000:7.0f} ms, "
          f"max {max(honest.to_250, default=float('nan')) * 1000:7.0f} ms")  # fmt: skip
    print(f"  to the reply in the Maildir: p50 {p50 * 1000:5.0f} ms, p99 {p99 * 1000:7.0f} ms, max {worst * 1000:7.0f} ms "
          f"- target p99 <= {TARGET_P99 * 1000:.0f} ms: {'met' if p99 <= TARGET_P99 else 'MISSED'}")  # fmt: skip
    for line in honest.errors[:3]:
        print(f"    {line}")
    print(lag_summary(lag0, lag1))
    if lag0 is not None and lag1 is not None and "batches" in lag1:
        print(f"  (serve handled mails in {lag1['batches'] - lag0.get('batches', 0):.0f} transactions in the window)")
    stalls = re.findall(r"a step held the event loop for (\d+) ms(?:, at ([^\n(]*))?", log_tail)
    if stalls:
        places: dict[str, list[int]] = {}
        for ms, where in stalls:
            places.setdefault(where.strip() or "?", []).append(int(ms))
        print(f"  serve.log: {len(stalls)} stall warnings (at most one every 10 s is logged); where:")
        for where, mss in sorted(places.items(), key=lambda kv: -max(kv[1]))[:6]:
            print(f"    {len(mss)} x up to {max(mss)} ms at {where[:150]}")
    answered = [t for t, kind in hints if kind in ("hint", "no move found")]
    kinds: dict[str, int] = {}
    for _, kind in hints:
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"hints: {len(hints)} asked, answers {kinds}; latency to the hint mail p50 {pct(answered, 0.5) * 1000:.0f} ms, "
          f"max {max(answered, default=float('nan')) * 1000:.0f} ms")  # fmt: skip
    if hostile_out.exists():
        by: dict[str, list[tuple[float, str]]] = {}
        started = answered = 0
        for line in hostile_out.read_text().splitlines():
            name, wall, answer = json.loads(line)
            if wall is None:
                started += 1
                cut = name
            else:
                answered += answer == "250"
                cut = None
                by.setdefault(name, []).append((wall, answer))
        print(f"hostile client: {started} mails begun, {answered} answered 250"
              + (f", the last ({cut}) cut off at the window's end" if cut else "")
              + "; time to the SMTP answer under load:")  # fmt: skip
        for name, got in by.items():
            answers = sorted({a for _, a in got})
            print(f"    {name:<36} x{len(got):<3} max {max(w for w, _ in got) * 1000:7.0f} ms  {', '.join(answers)}")
    if web_out.exists():
        web = json.loads(web_out.read_text())
        times = sorted(web["times"])
        statuses = {int(k): v for k, v in web["statuses"].items()}
        pages = statuses.get(200, 0) + statuses.get(304, 0)
        print(f"web: {pages / args.window:.0f} pages/s ({len(times) / args.window:.0f} answers/s), p50 {pct(times, 0.5) * 1000:.0f} ms, "
              f"p99 {pct(times, 0.99) * 1000:.0f} ms, max {(times[-1] if times else float('nan')) * 1000:.0f} ms, statuses "
              f"{dict(sorted(statuses.items()))}, errors {web['errors']}, web process CPU "
              f"{1000 * web['cpu'] / max(1, len(times)):.2f} ms an answer")  # fmt: skip
    elif args.web_clients:
        print("web: no web process found among serve's children" if web_pid is None else "web: the clients reported nothing")
    cores = os.cpu_count() or 1
    busy = box1 - box0
    ours = sum(cpu1[k] - cpu0[k] for k in cpu1)
    print(f"CPU in the window ({elapsed:.0f} s, {cores} cores; load average {load0[0]:.1f} before, {load1[0]:.1f} after): "
          f"box {100 * busy / elapsed / cores:.0f} % busy = {busy:.1f} s: "
          + ", ".join(f"{k} {cpu1[k] - cpu0[k]:.1f}" for k in cpu1)
          + f", everything else on the box {busy - ours:.1f} s")  # fmt: skip


# ------------------------------------------------------------------ main
def pick_players(db_path: Path, boards: list[Board], want: int, hinters: int) -> tuple[list[Board], list[str]]:
    """``want`` boards whose two players play no other game, and ``hinters`` users who play none."""
    con = sqlite3.connect(db_path)
    try:
        seated = [u for (u,) in con.execute("SELECT u.userid FROM seats s JOIN users u ON u.id = s.user_id")]
        users = [u for (u,) in con.execute("SELECT userid FROM users WHERE userid LIKE 'u%' ORDER BY id")]
    finally:
        con.close()
    once = {u for u in seated if seated.count(u) == 1}
    chosen = [b for b in boards if {p.userid for p in b.plies} <= once][:want]
    idle = [u for u in users if u not in set(seated)][::-1][:hinters]
    return chosen, idle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small run (< ~1 minute): 15 s window, 10 games, 10 hints, 1 rep")
    parser.add_argument("--window", type=float, help="seconds of mixed load (default 60, quick 15)")
    parser.add_argument("--boards", type=int, help="honest games played (default 20, quick 10)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between one game's moves")
    parser.add_argument("--hints", type=int, help="solver hints asked in the window (default 30, quick 10)")
    parser.add_argument("--web-clients", type=int, default=200, help="concurrent web clients (0: none)")
    parser.add_argument("--games", type=int, default=200, help="games in the database (the web archive's boards)")
    parser.add_argument("--reps", type=int, help="runs of each shape in part 1 (default 3, quick 1)")
    parser.add_argument("--only", choices=["1", "2"], help="only part 1 or only part 2")
    parser.add_argument("--no-hostile", action="store_true", help="part 2 without the hostile client (a baseline)")
    parser.add_argument(
        "--exclude", action="append", default=[], metavar="TEXT",
        help="leave out the shapes whose name contains TEXT (both parts; repeatable), e.g. '12 MB empty'",
    )  # fmt: skip
    parser.add_argument("--keep", help="work in this directory (kept: serve.log, bench.db, maildirs)")
    args = parser.parse_args()
    args.window = args.window or (15.0 if args.quick else 60.0)
    args.boards = args.boards or (10 if args.quick else 20)
    args.hints = args.hints if args.hints is not None else (10 if args.quick else 30)
    args.reps = args.reps or (1 if args.quick else 3)
    started = time.perf_counter()
    print(f"box: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.keep or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        names = [name for name, _ in shapes() if not any(x in name for x in args.exclude)]
        sizes = {name: len(make("eve@outside.test", "<x@outside.test>")) for name, make in shapes()}
        inproc: dict[str, tuple[float, float, str, str]] = {}
        if args.only != "2":
            print("part 1 in-process (parse_message, then parse_message + Service.handle_mail):", flush=True)
            inproc = asyncio.run(part1_inprocess(workdir, args.reps, args.exclude))
        db_path = workdir / "bench.db"
        if db_path.exists():
            parser.error(f"{db_path} exists: --keep needs a fresh directory")
        url = f"sqlite:///{db_path}"
        t = time.perf_counter()
        asyncio.run(seed_games(url, args.games))
        with contextlib.closing(sqlite3.connect(db_path)) as con, con:  # store.seed's moves are not legal: no history
            con.execute("DELETE FROM moves")
            con.execute("UPDATE games SET ply = 0")
        per_board = 2 + int(args.window / args.interval) + 3
        boards, idle = pick_players(db_path, plan(db_path, per_board), args.boards, args.hints)
        hinters = [(u, 102 + i) for i, u in enumerate(idle)]
        asyncio.run(add_robx(url))
        asyncio.run(patience_boards(url, [(ROBX, ROBX_PW), *((u, PASSWORD) for u, _ in hinters)]))
        print(f"seeded {args.games} games, {len(boards)} honest games planned ({per_board} plies each), robx and "
              f"{len(hinters)} patience players in {time.perf_counter() - t:.1f} s", flush=True)  # fmt: skip
        ports = {"smtp": free_port(), "health": free_port(), "web": free_port()}
        proc = start_serve(workdir, url, ports["smtp"], ports["health"], ports["web"])
        smtp: dict[str, tuple[float, float, float, str]] = {}
        try:
            listening = wait_listening(proc, ports["smtp"])
            SENDERS.update(
                c for c in children(proc.pid) if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")
            )
            print(f"serve (pid {proc.pid}) listening after {listening:.1f} s; children: "
                  + ", ".join(f"{label(c)} {c}" for c in children(proc.pid)), flush=True)  # fmt: skip
            if args.only != "2":
                print("part 1 over SMTP (one mail at a time to the idle serve):", flush=True)
                smtp = part1_smtp(ports["smtp"], proc.pid, workdir / MAILDIRS, args.exclude, args.quick)
                print_part1(inproc, smtp, {n: sizes[n] for n in names})
                print(f"serve's peak resident memory after part 1: {memory(proc.pid).get('VmHWM', float('nan')):.0f} MB")
            if args.only != "1":
                asyncio.run(part2(args, workdir, proc, ports, boards, hinters))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        log = (workdir / "serve.log").read_text(errors="replace").splitlines()
        problems = [line for line in log if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")]
        print(f"serve exited with {code}; serve.log: {len(problems)} ERROR/Traceback lines; bench took "
              f"{time.perf_counter() - started:.0f} s")  # fmt: skip
        for line in problems[:5]:
            print(f"    {line[:200]}")


if __name__ == "__main__":
    random.seed(36)
    main()
