"""What the MTA in front of Dovecot costs a mail: ``bench/e2e.py``'s relay against a real Postfix.

``bench/e2e.py`` counts "the relay" (an aiosmtpd server handing each reply to
Dovecot over LMTP, in a process of its own) against the box, as a real
deployment's local MTA would be.  This measures whether that stand-in costs
about what a real one does: the same mails (a board reply's size, ~30 kB) go
over 4 SMTP connections, once to that relay and once to a private Postfix
(:mod:`pbmserv_terrace.testing.postfix`, delivering to the same Dovecot over
LMTP), alternately, and the box's CPU a mail is split into this client, the
relay's process, and the rest (Postfix's processes, Dovecot, the kernel).  With
the relay, the rest is Dovecot's delivery; with Postfix it is Postfix and
Dovecot's delivery, so the difference of the two rests is Postfix's own cost.

Needs root, Dovecot and Postfix (the test command installs them).
Run: python bench/mta.py [--mails 600] [--rounds 2]
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import smtplib
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import box_cpu, proc_cpu

from pbmserv_terrace.testing.dovecot import DovecotServer
from pbmserv_terrace.testing.postfix import PostfixServer

PLAYERS = [f"p{i}@players.test" for i in range(40)]
CONNECTIONS = 4
BODY = base64.encodebytes(random.Random(18).randbytes(21_000)).decode().replace("\n", "\r\n")
"""~28 kB of base64: a board reply's picture part is about that"""


def reply(i: int, to: str) -> bytes:
    return (
        f"From: PBM Server <pbmserv@game.test>\r\nTo: {to}\r\nSubject: Terrace Board {i}\r\n"
        f"Message-ID: <r{i}.{time.time_ns()}@game.test>\r\nIn-Reply-To: <m{i}@players.test>\r\n"
        f"MIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n{BODY}"
    ).encode()


def send_all(port: int, n: int) -> None:
    """``n`` replies over CONNECTIONS SMTP connections at once."""

    def connection(k: int) -> None:
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as smtp:
            for i in range(k, n, CONNECTIONS):
                to = PLAYERS[i % len(PLAYERS)]
                smtp.sendmail("pbmserv@game.test", [to], reply(i, to))

    threads = [threading.Thread(target=connection, args=(k,)) for k in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mails", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2, help="relay then Postfix, this many times")
    args = parser.parse_args()
    users = dict.fromkeys(PLAYERS, "pw")
    with DovecotServer(users, auth_listener=True) as dovecot:
        relay = subprocess.Popen(
            [sys.executable, "-m", "pbmserv_terrace.testing.dovecot", str(dovecot.lmtp_port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert relay.stdin is not None and relay.stdout is not None
        relay_port = int(relay.stdout.readline().split()[1])
        out = relay.stdout
        threading.Thread(target=lambda: [None for _ in out], daemon=True).start()  # its "relayed" lines
        try:
            with PostfixServer(dovecot.lmtp_port, domains=["players.test"], mailboxes=PLAYERS,
                               sasl_port=dovecot.auth_port) as postfix:  # fmt: skip
                rests: dict[str, list[float]] = {"relay": [], "postfix": []}
                relay_own: list[float] = []
                for _ in range(args.rounds):
                    for name, port in (("relay", relay_port), ("postfix", postfix.smtp_port)):
                        send_all(port, 40)  # warm: connections, processes, mailboxes
                        while name == "postfix" and postfix.queue_size():
                            time.sleep(0.2)
                        time.sleep(1)
                        box0, me0, relay0 = box_cpu(), proc_cpu(os.getpid()), proc_cpu(relay.pid)
                        start = time.monotonic()
                        send_all(port, args.mails)
                        while name == "postfix" and postfix.queue_size():  # until delivered into Dovecot
                            time.sleep(0.1)
                        took = time.monotonic() - start
                        time.sleep(0.5)
                        box, me = box_cpu() - box0, proc_cpu(os.getpid()) - me0
                        rel = proc_cpu(relay.pid) - relay0
                        per = 1000 / args.mails
                        rests[name].append(per * (box - me - rel))
                        if name == "relay":
                            relay_own.append(per * rel)
                        print(
                            f"{name:8s} {args.mails} mails in {took:.1f} s = {args.mails / took:.0f}/s; box CPU "
                            f"{per * box:.1f} ms/mail: this client {per * me:.1f}, the relay's process {per * rel:.1f}, "
                            f"the rest (MTA processes, Dovecot, kernel) {per * (box - me - rel):.1f}",
                            flush=True,
                        )
        finally:
            assert relay.stdin is not None
            relay.stdin.close()
            relay.wait(timeout=30)
    delivery = sum(rests["relay"]) / len(rests["relay"])
    postfix_own = [rest - delivery for rest in rests["postfix"]]
    print(
        f"a mail: the relay's own CPU {min(relay_own):.1f}-{max(relay_own):.1f} ms; Postfix's own "
        f"{min(postfix_own):.1f}-{max(postfix_own):.1f} ms (its runs' rest minus the relay runs' mean rest, "
        f"{delivery:.1f} ms: Dovecot's delivery and the kernel)"
    )


if __name__ == "__main__":
    main()
