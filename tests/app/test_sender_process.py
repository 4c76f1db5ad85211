"""Replies sent from a process of their own (``[server] outbox_process``, the
default; issue 18: ``serve`` takes mail on one core while its replies go out on
the other).  Through the real ``serve`` of the embedded default: replies arrive
and ``/metrics`` counts them; a sender process that dies is started again and
nothing is lost; a ``serve`` killed with SIGKILL takes its sender process with it
(a new ``serve`` never finds the old one's senders still at work)."""

from __future__ import annotations

import mailbox
import os
import signal
import smtplib
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from pbmserv_terrace.testing.postgres import free_port

SERVER = "pbmserv@localhost"


class Serve:
    """``pbmserv-terrace serve`` with no config file, on free ports."""

    def __init__(self, cwd: Path, *, sender: bool = True, **env: str) -> None:
        self.cwd, self.port, self.health = cwd, free_port(), free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        self.env.update({"PBMSERV_EMBEDDED_LISTEN_PORT": str(self.port), "PBMSERV_HEALTH_PORT": str(self.health),
                         "PBMSERV_WEB_LISTEN": "off", **env})  # fmt: skip
        self.log = cwd / "serve.log"
        self.proc = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=cwd, env=self.env,
                                     stdout=self.log.open("ab"), stderr=subprocess.STDOUT)  # fmt: skip
        try:
            wait_for(lambda: self.listening() and (self.sender_pid() is not None or not sender), "serve to start")
        except BaseException:
            self.proc.kill()  # a serve that did not start is not left running after the test
            self.proc.wait(30)
            raise

    def listening(self) -> bool:
        try:
            with smtplib.SMTP("127.0.0.1", self.port, timeout=2):
                return True
        except OSError:
            return False

    def sender_pid(self) -> int | None:
        """serve's child running the senders (by its name: the robot workers and
        multiprocessing's resource tracker are children too)."""
        found = [pid for pid, _ in children(self.proc.pid) if comm(pid) == "pbmserv-sender"]
        return found[0] if len(found) == 1 else None

    def mail(self, sender: str, subject: str) -> None:
        with smtplib.SMTP("127.0.0.1", self.port, timeout=30) as smtp:
            smtp.sendmail(sender, [SERVER], f"From: {sender}\r\nTo: {SERVER}\r\nSubject: {subject}\r\n\r\n\r\n")

    def metric(self, name: str) -> float:
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.health}/metrics", timeout=5).read().decode()
        return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)


def children(pid: int) -> list[tuple[int, str]]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if f"\nPPid:\t{pid}\n" in status:
            out.append((int(entry.name), cmd))
    return out


def comm(pid: int) -> str:
    """A process's name (``lifecycle.name_process``)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return "Z" not in state.split()[1]  # a zombie has ended


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.1)


def replies(cwd: Path, address: str) -> list[str]:
    folder = cwd / "maildirs" / address
    if not all((folder / sub).is_dir() for sub in ("tmp", "new", "cur")):
        return []  # (not yet, or being made: the delivery makes the folder, then its three)
    return sorted(str(m["Subject"]) for m in mailbox.Maildir(folder, create=False))


def test_replies_go_out_from_the_sender_process_and_metrics_count_them(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    try:
        sender = serve.sender_pid()
        assert sender is not None and sender != serve.proc.pid
        for name in ("ann", "ben", "cy"):
            serve.mail(f"{name}@home.test", f"signup {name} pw-{name}")
        wait_for(lambda: all(len(replies(tmp_path, f"{n}@home.test")) == 1 for n in ("ann", "ben", "cy")), "the replies")
        wait_for(lambda: serve.metric("pbmserv_replies_sent_total") == 3, "the metric to count the three replies")
        assert serve.sender_pid() == sender  # the same process sent them all
        # a SIGTERM (or Ctrl-C) meant for the whole group: serve decides, the sender goes on
        os.kill(sender, signal.SIGTERM)
        os.kill(sender, signal.SIGINT)
        serve.mail("dee@home.test", "signup dee pw-dee")
        wait_for(lambda: len(replies(tmp_path, "dee@home.test")) == 1, "a reply after the signals")
        assert serve.sender_pid() == sender and alive(sender)
    finally:
        code = serve.stop()
    assert code == 0
    assert not alive(sender), "the sender process outlived serve's stop"
    log = serve.log.read_text()
    assert " ERROR " not in log, log


def test_a_sender_process_that_dies_is_started_again_and_nothing_is_lost(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    try:
        serve.mail("ann@home.test", "signup ann pw-ann")
        wait_for(lambda: len(replies(tmp_path, "ann@home.test")) == 1, "the first reply")
        wait_for(lambda: serve.metric("pbmserv_replies_sent_total") == 1, "the first reply counted")
        first = serve.sender_pid()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        serve.mail("ben@home.test", "signup ben pw-ben")  # queued while no sender process runs, or just after
        wait_for(lambda: serve.sender_pid() not in (None, first), "a new sender process")
        wait_for(lambda: len(replies(tmp_path, "ben@home.test")) == 1, "the reply queued meanwhile")
        serve.mail("cy@home.test", "signup cy pw-cy")
        wait_for(lambda: len(replies(tmp_path, "cy@home.test")) == 1, "a reply after the restart")
        # the counter goes on from what the first process had sent
        wait_for(lambda: serve.metric("pbmserv_replies_sent_total") == 3, "the counter to go on")
        assert len(replies(tmp_path, "ann@home.test")) == 1
    finally:
        code = serve.stop()
    assert code == 0
    log = serve.log.read_text()
    assert "the sender process ended (exit code -9); starting it again" in log, log


def test_a_killed_serve_takes_its_sender_process_with_it(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    sender = serve.sender_pid()
    assert sender is not None
    serve.mail("ann@home.test", "signup ann pw-ann")
    serve.proc.kill()
    serve.proc.wait(30)
    wait_for(lambda: not alive(sender), "the sender process to end with serve", timeout=10)
    # a new serve sends what the killed one left, once
    again = Serve(tmp_path)
    try:
        wait_for(lambda: len(replies(tmp_path, "ann@home.test")) == 1, "ann's reply")
        time.sleep(1.0)
        assert len(replies(tmp_path, "ann@home.test")) == 1
    finally:
        assert again.stop() == 0


def test_with_outbox_process_off_serve_sends_from_its_own_process(tmp_path: Path) -> None:
    serve = Serve(tmp_path, sender=False, PBMSERV_SERVER_OUTBOX_PROCESS="false")
    try:
        serve.mail("ann@home.test", "signup ann pw-ann")
        wait_for(lambda: len(replies(tmp_path, "ann@home.test")) == 1, "the reply")
        wait_for(lambda: serve.metric("pbmserv_replies_sent_total") == 1, "the reply counted")
        assert [pid for pid, _ in children(serve.proc.pid) if comm(pid) == "pbmserv-sender"] == []
    finally:
        assert serve.stop() == 0
