"""The whole loop with a real MTA (issue 20 item 4): players send to Postfix's smtpd
(as to port 25); Postfix delivers to Dovecot over LMTP (``pbmserv+KEY@`` into the
server's INBOX through ``recipient_delimiter``); ``serve`` reads the INBOX over IMAP
and sends its replies through Postfix's submission port with SASL (Dovecot's auth
service); the replies land in the players' Dovecot INBOXes.

One run, three phases: a scripted game of 14 plies (subject commands and reply-key
replies), Postfix stopped for 20 s while replies are due, and a 60-mail burst with
``serve`` SIGKILLed 3 times, each while its replies are going out.  Every reply the
server queued (its outbox) arrives in its recipient's mailbox; Message-IDs are
counted there.  Duplicates are told per kill (issue 43 part 6): ``serve`` logs each
reply the MTA took (at debug level), so each run's sends are known, and a reply a
killed run sent that a later run sent again was in the window between the MTA's
250 and the commit of its outcome at that kill: at most one per SMTP connection
per kill, never one twice in a run, never the same one at two kills.  The figures
(mails, replies, latency from send to reply arrival, duplicates per kill) are
printed, never asserted on time."""

from __future__ import annotations

import contextlib
import email
import imaplib
import itertools
import random
import re
import sqlite3
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from email.message import Message
from email.utils import make_msgid, parseaddr
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from pbmserv_terrace.games.terrace import start_position
from pbmserv_terrace.testing.dovecot import DovecotServer, LmtpRelay
from pbmserv_terrace.testing.postfix import PostfixServer

from ..mailservers import PLAYERS, SERVER, ServeProcess, addr, body
from ..service.policy import choose, text
from . import test_reply_dovecot as reply_shapes

GAME_PLIES = 14
REPLY_PLIES = {2, 3, 6, 7, 10, 11}
"""plies made by pressing Reply on the last board mail (pbmserv+KEY@); the others by subject"""
BURST = 60
KILLS = 3
OUTAGE = 20.0
CONNECTIONS = 4
"""smtp.connections (the default): replies in flight at once"""
TAKEN = re.compile(r"reply (<[^>\s]+>) to \S+: taken by the MTA")


@pytest.fixture
def dovecot() -> Iterator[DovecotServer]:
    users = {SERVER: "server-secret", **{addr(p): f"imap-{p}" for p in PLAYERS}}
    with DovecotServer(users, auth_listener=True) as d:
        yield d


@pytest.fixture
def postfix(dovecot: DovecotServer) -> Iterator[PostfixServer]:
    mailboxes = [SERVER, *(addr(p) for p in PLAYERS)]
    with PostfixServer(dovecot.lmtp_port, domains=["terrace.test", "players.test"], mailboxes=mailboxes,
                       sasl_port=dovecot.auth_port) as pf:  # fmt: skip
        yield pf


class Mailboxes:
    """The players' INBOXes over IMAP (one connection each), every new mail noted
    with the time it was first seen."""

    def __init__(self, dovecot: DovecotServer) -> None:
        self.dovecot = dovecot
        self.conns: dict[str, imaplib.IMAP4] = {}
        self.seen: dict[str, set[bytes]] = {p: set() for p in PLAYERS}
        self.mails: list[tuple[str, float, Message]] = []
        """(player, first seen, message)"""

    def poll(self) -> None:
        for p in PLAYERS:
            imap = self.conns.get(p)
            if imap is None:
                imap = self.conns[p] = imaplib.IMAP4("127.0.0.1", self.dovecot.imap_port, timeout=30)
                imap.login(addr(p), self.dovecot.users[addr(p)])
                imap.select("INBOX")
            imap.noop()
            _, data = imap.uid("search", "ALL")
            for uid in data[0].split():
                if uid in self.seen[p]:
                    continue
                _, parts = imap.uid("fetch", uid, "(BODY.PEEK[])")
                raw = next(part[1] for part in parts if isinstance(part, tuple))
                self.seen[p].add(uid)
                self.mails.append((p, time.time(), email.message_from_bytes(raw)))

    def close(self) -> None:
        for imap in self.conns.values():
            with contextlib.suppress(Exception):
                imap.logout()

    def answers(self, mid: str) -> list[tuple[str, float, Message]]:
        return [m for m in self.mails if (m[2]["In-Reply-To"] or "").strip() == mid]

    def ids(self) -> Counter[tuple[str, str]]:
        """(player, Message-ID) → copies in that player's INBOX"""
        return Counter((p, str(m["Message-ID"]).strip()) for p, _, m in self.mails)


class Loop:
    """The test's players and its view of the server's outbox."""

    def __init__(self, postfix: PostfixServer, dovecot: DovecotServer, db: Path) -> None:
        self.postfix, self.dovecot, self.db = postfix, dovecot, db
        self.boxes = Mailboxes(dovecot)
        self.sent: dict[str, float] = {}
        """inbound Message-ID → when it was sent"""
        self.lock = threading.Lock()

    def mail(self, name: str, subject: str, text_body: str = "", to: str = SERVER, extra: str = "") -> tuple[str, bytes]:
        mid = make_msgid(domain="players.test")
        data = (
            f"From: {name.capitalize()} <{addr(name)}>\r\nTo: {to}\r\nSubject: {subject}\r\nMessage-ID: {mid}\r\n{extra}"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text_body}\r\n"
        ).encode()
        return mid, data

    def send(self, name: str, subject: str, text_body: str = "") -> str:
        """A player's mail to the server through Postfix's smtpd."""
        mid, data = self.mail(name, subject, text_body)
        with self.lock:
            self.sent[mid] = time.time()
        self.postfix.send(addr(name), SERVER, data)
        return mid

    def reply(self, name: str, board_mail: Message, move: str, shape: int) -> str:
        """Press Reply on a board mail: to its Reply-To (pbmserv+KEY@), quoting it."""
        to = parseaddr(board_mail["Reply-To"])[1]
        assert to.startswith("pbmserv+") and to.endswith("@terrace.test"), to
        original = body(board_mail)
        quote = "\r\n".join("> " + line for line in original.splitlines())
        shapes = reply_shapes.SHAPES
        text_body = shapes[shape % len(shapes)].format(
            move=move, quote=quote, plain=original.replace("\n", "\r\n"), server=SERVER
        )
        refs = f"In-Reply-To: {board_mail['Message-ID']}\r\nReferences: {board_mail['Message-ID']}\r\n"
        mid, data = self.mail(name, f"Re: {board_mail['Subject']}", text_body, to=f"Test PBM Server <{to}>", extra=refs)
        self.sent[mid] = time.time()
        self.postfix.send(addr(name), to, data)
        return mid

    def signup(self, players: list[str], timeout: float = 60) -> list[str]:
        """Sign the players up and confirm each address by Reply (issue 36: board
        mail reaches an address only once it is confirmed); the mails sent."""
        mids = [self.send(p, f"signup {p} pw-{p}") for p in players]
        self.wait_answered(mids, timeout)
        for name, mid in zip(players, list(mids), strict=True):
            welcome = next(m for p, _, m in self.boxes.answers(mid) if p == name)
            to = parseaddr(welcome["Reply-To"])[1]
            refs = f"In-Reply-To: {welcome['Message-ID']}\r\nReferences: {welcome['Message-ID']}\r\n"
            confirm, data = self.mail(name, f"Re: {welcome['Subject']}", "yes", to=to, extra=refs)
            with self.lock:
                self.sent[confirm] = time.time()
            self.postfix.send(addr(name), to, data)
            mids.append(confirm)
        self.wait_answered(mids, timeout)
        return mids

    def outbox(self, mids: list[str] | None = None) -> list[tuple[str, str, str, str]]:
        """(message_id, in_reply_to, recipient, state) of the server's queued replies."""
        with sqlite3.connect(self.db, timeout=30) as db:
            rows = db.execute("SELECT message_id, in_reply_to, recipient, state FROM outbox").fetchall()
        wanted = set(mids) if mids is not None else None
        return [tuple(r) for r in rows if wanted is None or r[1] in wanted]

    def wait_answered(self, mids: list[str], timeout: float) -> None:
        """Until every mail has queued replies and each of them is in its recipient's INBOX."""
        deadline = time.time() + timeout
        missing: object = None
        while time.time() < deadline:
            self.boxes.poll()
            rows = self.outbox(mids) if self.db.exists() else []
            have = {(p, str(m["Message-ID"]).strip()) for p, _, m in self.boxes.mails}
            answered = {r[1] for r in rows}
            missing = [mid for mid in mids if mid not in answered] + [r for r in rows if (r[2].split("@")[0], r[0]) not in have]
            if not missing:
                return
            time.sleep(0.05)
        raise AssertionError(f"not answered within {timeout}s: {missing!r:.1500}")

    def latencies(self, mids: list[str]) -> list[float]:
        """Seconds from sending each mail to the arrival of each of its replies."""
        return [t - self.sent[mid] for mid in mids for _, t, _ in self.boxes.answers(mid)]


def figures(name: str, mails: int, lat: list[float]) -> str:
    if not lat:
        return f"{name}: {mails} mails, no replies"
    q = statistics.quantiles(lat, n=20) if len(lat) > 1 else [lat[0]] * 19
    return (f"{name}: {mails} mails, {len(lat)} replies, latency p50 {statistics.median(lat):.2f} s, "
            f"p95 {q[18]:.2f} s, max {max(lat):.2f} s")  # fmt: skip


def per_kill(serve: ServeProcess, runs: list[int], ids: Counter[tuple[str, str]]) -> list[str]:
    """The duplicates of each kill, from the replies each run's log says the MTA
    took: a reply the killed run sent that a later run sent again.  Asserts at most
    one per SMTP connection per kill, none twice within a run, none at two kills,
    and that the copies in the players' INBOXes are the sends the logs count."""
    log = serve.log.read_bytes()
    bounds = [*runs, len(log)]
    taken = [Counter(TAKEN.findall(log[a:b].decode(errors="replace"))) for a, b in itertools.pairwise(bounds)]
    twice_in_a_run = {mid: n for run in taken for mid, n in run.items() if n > 1}
    assert twice_in_a_run == {}, f"sent twice without a kill between: {twice_in_a_run}"
    lines, again = [], []
    for k in range(1, len(taken)):
        later = set().union(*taken[k:])
        resent = sorted(set(taken[k - 1]) & later)
        again.append(set(resent))
        lines.append(f"kill {k}: the killed run's MTA took {sum(taken[k - 1].values())} replies; sent again after it: "
                     f"{len(resent)}" + (f" ({', '.join(resent)})" if resent else ""))  # fmt: skip
        assert len(resent) <= CONNECTIONS, lines[-1]
    at_two = [mid for i, a in enumerate(again) for b in again[i + 1 :] for mid in a & b]
    assert at_two == [], f"the same reply sent again at two kills: {at_two}"
    copies: Counter[str] = Counter()
    for (_, mid), n in ids.items():
        copies[mid] += n
    logged = Counter(mid for run in taken for mid in run.elements())
    unlogged = {mid: copies[mid] - logged[mid] for mid in copies if copies[mid] > logged[mid]}
    # (a kill between the MTA's 250 and the log line leaves a copy no log counts: told, not failed)
    lines.append(f"copies in the INBOXes {sum(copies.values())}, sends logged {sum(logged.values())}, "
                 f"copies no log counts {sum(unlogged.values())}")  # fmt: skip
    assert all(copies[mid] >= n for mid, n in logged.items()), "a logged send that never arrived"
    return lines


def test_the_whole_loop_through_postfix_and_dovecot(dovecot: DovecotServer, postfix: PostfixServer, tmp_path: Path) -> None:
    relay = cast(LmtpRelay, SimpleNamespace(port=postfix.submission_port))
    smtp_login = f'user = "{SERVER}"\npassword = "server-secret"\n'
    # (at debug level serve logs each reply the MTA took: the duplicates per kill)
    serve = ServeProcess(tmp_path, dovecot, relay, f"sqlite:///{tmp_path}/serve.db", smtp_login, env={"PBMSERV_LOG_LEVEL": "debug"})
    serve.start()
    loop = Loop(postfix, dovecot, tmp_path / "serve.db")
    report: list[str] = []
    try:
        _run(loop, serve, postfix, dovecot, report)
    finally:
        loop.boxes.close()
        serve.close()
        print("\n--- Postfix + Dovecot loop ---\n" + "\n".join(report))


def _run(loop: Loop, serve: ServeProcess, postfix: PostfixServer, dovecot: DovecotServer, report: list[str]) -> None:
    # ------------------------------------------------------ setup and the game
    setup = loop.signup(PLAYERS)
    # one challenge after the other: sent together, the two mails would pass Postfix in either
    # order and the boards be numbered in the order the server reads them (ann and ben get 101)
    setup.append(loop.send("ann", "terrace challenge ann pw-ann ben"))
    loop.wait_answered(setup, 60)
    setup.append(loop.send("cat", "terrace challenge cat pw-cat dan"))
    loop.wait_answered(setup, 60)
    last: dict[str, Message] = {}
    for p, _, m in loop.boxes.mails:
        if str(m["Subject"]).startswith("New Terrace Board"):
            last[p] = m
    assert set(last) == set(PLAYERS), [m[2]["Subject"] for m in loop.boxes.mails]
    pos = start_position()
    rng = random.Random(20)
    names = ["ann", "ben"]
    game: list[str] = []
    for ply in range(GAME_PLIES):
        mover = names[pos.to_move - 1]
        move = choose(pos, rng)
        canonical = text(pos, move)
        if ply in REPLY_PLIES:
            mid = loop.reply(mover, last[mover], f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}", ply)
        else:
            mid = loop.send(mover, f"terrace move 101 {mover} pw-{mover} {canonical}")
        pos = pos.play(move)
        game.append(mid)
        loop.wait_answered([mid], 60)
        answers = {p: m for p, _, m in loop.boxes.answers(mid)}
        assert set(answers) == {"ann", "ben"}, (ply, {p: body(m)[:200] for p, m in answers.items()})
        for p, m in answers.items():
            assert f"{mover} played {canonical}" in body(m), body(m)[:300]
            last[p] = m
    assert "result=error" not in serve.since(0)
    report.append(figures(f"game ({GAME_PLIES} plies, {len(REPLY_PLIES)} by reply key)", len(setup) + len(game),
                          loop.latencies(setup + game)))  # fmt: skip

    # --------------------------------------- Postfix down while replies are due
    before = len(loop.boxes.mails)
    offset = serve.log.stat().st_size
    postfix.stop()
    stopped = time.time()
    mover = names[pos.to_move - 1]
    move = choose(pos, rng)
    canonical = text(pos, move)
    pos = pos.play(move)
    down = []
    # mails Postfix had delivered to the INBOX before it went down
    for name, subject, text_body in [(mover, f"terrace move 101 {mover} pw-{mover} {canonical}", ""),
                                     ("cat", "terrace chat 102 cat pw-cat", "while the MTA is down"),
                                     ("dan", "terrace show 102", "")]:  # fmt: skip
        mid, data = loop.mail(name, subject, text_body)
        loop.sent[mid] = time.time()
        dovecot.deliver(addr(name), [SERVER], data)
        down.append(mid)
    deadline = time.time() + 30
    while time.time() < deadline and not (
        dovecot.fetch_all(SERVER) == [] and "temporary failure" in serve.since(offset) and len(loop.outbox(down)) >= 5
    ):
        time.sleep(0.2)
    assert dovecot.fetch_all(SERVER) == [], "the mails were not taken while Postfix was down"
    assert "temporary failure" in serve.since(offset), serve.since(offset)[-2000:]
    due = loop.outbox(down)
    assert len(due) == 5 and all(r[3] == "pending" for r in due), due
    time.sleep(max(0.0, stopped + OUTAGE - time.time()))
    loop.boxes.poll()
    assert len(loop.boxes.mails) == before, "a reply arrived while Postfix was down"
    postfix.start()
    started = time.time()
    loop.wait_answered(down, 90)
    flushed = max(t for mid in down for _, t, _ in loop.boxes.answers(mid)) - started
    time.sleep(3)
    loop.boxes.poll()
    doubles = [k for k, n in loop.boxes.ids().items() if n > 1]
    assert doubles == [], f"replies delivered twice: {doubles}"
    assert {r[3] for r in loop.outbox(down)} == {"sent"}
    report.append(figures(f"outage (Postfix stopped {OUTAGE:.0f} s, {len(due)} replies due)", len(down), loop.latencies(down))
                  + f"; last reply {flushed:.1f} s after Postfix started")  # fmt: skip

    # ------------------------------------------- a 60-mail burst with 3 SIGKILLs
    burst: list[str] = []
    boards = {"ann": 101, "ben": 101, "cat": 102, "dan": 102}

    def sender() -> None:
        for i in range(BURST):
            name = PLAYERS[i % len(PLAYERS)]
            if i % 2:
                burst.append(loop.send(name, f"terrace chat {boards[name]} {name} pw-{name}", f"burst {i}"))
            else:
                burst.append(loop.send(name, f"terrace show {boards[name]}"))

    thread = threading.Thread(target=sender)
    thread.start()
    kill_rng = random.Random(3)
    kills = 0
    handled_by_killed = 0
    runs = [serve.offset]
    """where each start's log begins: the run before the first kill, then one a restart"""
    for _ in range(KILLS):
        # killed while its replies are going out: after some the MTA took in this run
        threshold = kill_rng.randint(2, 8)
        deadline = time.time() + 30
        while time.time() < deadline and (serve.since().count(" result=") < 3 or len(TAKEN.findall(serve.since())) < threshold):
            time.sleep(0.005)
        handled_by_killed += serve.since().count(" result=")
        serve.kill()
        kills += 1
        serve.start()
        runs.append(serve.offset)
    thread.join(60)
    assert len(burst) == BURST
    loop.wait_answered(burst, 180)
    time.sleep(5)  # anything sent twice arrives meanwhile
    loop.boxes.poll()
    assert serve.stop() == 0
    assert "stopped" in serve.since()
    assert kills == KILLS

    rows = loop.outbox(burst)
    ids = loop.boxes.ids()
    # every mail answered: each reply the server queued is in its recipient's INBOX
    assert {r[1] for r in rows} == set(burst)
    assert len({(r[1], r[2]) for r in rows}) == len(rows), "a reply queued twice"
    assert all(ids[(r[2].split("@")[0], r[0])] >= 1 for r in rows)
    # ... and exactly once as a message: no other reply to the same mail and recipient
    distinct: dict[tuple[str, str], set[str]] = {}
    for p, _, m in loop.boxes.mails:
        distinct.setdefault((p, (m["In-Reply-To"] or "").strip()), set()).add(str(m["Message-ID"]).strip())
    assert all(len(distinct[(r[2].split("@")[0], r[1])]) == 1 for r in rows)
    duplicates = sum(ids[(r[2].split("@")[0], r[0])] - 1 for r in rows)
    # a kill can resend at most the reply in flight on each SMTP connection
    assert duplicates <= KILLS * CONNECTIONS, duplicates
    report.append(figures(f"burst ({KILLS} SIGKILLs after {handled_by_killed} of {BURST} mails handled)", BURST,
                          loop.latencies(burst)) + f"; duplicates {duplicates} (same Message-ID)")  # fmt: skip
    report += per_kill(serve, runs, ids)
    everything = list(loop.sent)
    report.append(figures("all", len(everything), loop.latencies(everything)) +
                  f"; {sum(ids.values())} mails in the players' INBOXes, {len(ids)} distinct")  # fmt: skip
    assert dovecot.fetch_all(SERVER) == [] and dovecot.fetch_all(SERVER, "failed") == []
    assert "result=error" not in serve.since(0)
