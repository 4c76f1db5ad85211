"""serve under systemd (issue 43 part 1): the notify protocol against a socket the
test holds (READY=1 once it takes mail, WATCHDOG=1 from the event loop at half
WATCHDOG_USEC, STOPPING=1 at SIGTERM), journald priorities and JSON log lines when
stderr is the journal, and the notifier's small parts."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time

from pbmserv_terrace.app.systemd import Notifier, notify_address, watchdog_interval
from pbmserv_terrace.lifecycle import JsonFormatter, LineFormatter, on_journal, syslog_priority
from pbmserv_terrace.testing.postgres import free_port


def receive(sock: socket.socket, until: float) -> list[tuple[float, str]]:
    got: list[tuple[float, str]] = []
    sock.settimeout(0.2)
    while time.monotonic() < until:
        try:
            got.append((time.monotonic(), sock.recv(4096).decode()))
        except TimeoutError:
            continue
    return got


def test_serve_notifies_ready_watchdog_and_stopping_and_logs_for_the_journal(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"pbmserv-test-notify-{os.getpid()}-{time.monotonic_ns()}"
    sock.bind("\0" + name)  # the abstract namespace, as systemd's own socket address is written with '@'
    log = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBMSERV_", "NOTIFY_", "WATCHDOG_", "JOURNAL_"))}
    with open(log, "wb") as stderr:
        st = os.fstat(stderr.fileno())
        env.update({
            "PBMSERV_EMBEDDED_LISTEN_PORT": str(free_port()), "PBMSERV_WEB_LISTEN": "off",
            "PBMSERV_LOG_FORMAT": "json", "NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "600000",
            "JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}",
        })  # fmt: skip
        serve = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=tmp_path, env=env,
                                 stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    try:
        messages: list[tuple[float, str]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("READY=1" in m for _, m in messages):
            messages += receive(sock, time.monotonic() + 0.5)
        ready = [t for t, m in messages if "READY=1" in m]
        assert ready, messages
        messages += receive(sock, time.monotonic() + 2.0)
        beats = [t for t, m in messages if m == "WATCHDOG=1" and t >= ready[0]]
        assert len(beats) >= 4, messages  # every 0.3 s
        assert max(b - a for a, b in itertools.pairwise(beats)) < 0.6
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
        messages += receive(sock, time.monotonic() + 0.5)
    finally:
        if serve.poll() is None:
            serve.kill()
        sock.close()
    texts = [m for _, m in messages]
    assert texts[0].startswith("STATUS=starting")
    assert any(m.startswith("READY=1\nSTATUS=serving: mail in by embedded") for m in texts)
    stopping = [i for i, m in enumerate(texts) if m.startswith("STOPPING=1")]
    assert len(stopping) == 1 and "WATCHDOG=1" not in texts[stopping[0] + 1 :]
    lines = log.read_text().splitlines()
    assert lines and all(line.startswith(("<6>{", "<4>{", "<3>{", "<7>{")) for line in lines), lines[:5]
    entries = [json.loads(line[3:]) for line in lines]
    assert {"time", "level", "logger", "message"} <= set(entries[0])
    assert any(e["message"] == "stopped" and e["level"] == "INFO" and line.startswith("<6>")
               for e, line in zip(entries, lines, strict=True))  # fmt: skip


def test_notify_socket_addresses_and_watchdog_interval():
    assert notify_address({"NOTIFY_SOCKET": "@abc"}) == "\0abc"
    assert notify_address({"NOTIFY_SOCKET": "/run/systemd/notify"}) == "/run/systemd/notify"
    assert notify_address({}) is None and notify_address({"NOTIFY_SOCKET": "vsock:2:1"}) is None
    assert watchdog_interval({"WATCHDOG_USEC": "30000000"}, 7) == 30.0
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"}, 7) is None
    assert watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}, 7) == 30.0
    assert watchdog_interval({}, 7) is None and watchdog_interval({"WATCHDOG_USEC": "x"}, 7) is None


def test_notifier_over_a_path_socket_and_without_one(tmp_path):
    path = tmp_path / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(5)
    notifier = Notifier({"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "100000"})
    try:
        assert notifier.ready("up") and sock.recv(100) == b"READY=1\nSTATUS=up"
        assert notifier.status("two\nlines") and sock.recv(100) == b"STATUS=two lines"

        async def beats() -> None:
            stop = asyncio.Event()
            task = asyncio.create_task(notifier.watchdog(stop))
            await asyncio.sleep(0.22)
            stop.set()
            await task

        asyncio.run(beats())
        assert [sock.recv(100) for _ in range(3)] == [b"WATCHDOG=1"] * 3
    finally:
        notifier.close()
        sock.close()
    assert not Notifier({}).enabled and not Notifier({}).ready()
    gone = Notifier({"NOTIFY_SOCKET": str(tmp_path / "nobody")})
    assert not gone.send("READY=1")  # said once in the log, never raised
    gone.close()


def record(level: int, msg: str, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            info = sys.exc_info()
    return logging.LogRecord("pbmserv.test", level, __file__, 1, msg, (), info)


def test_journald_priorities_and_json_lines(tmp_path):
    assert [syslog_priority(n) for n in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)] == [
        7,
        6,
        4,
        3,
        2,
    ]
    text = LineFormatter("%(levelname)s %(name)s: %(message)s", journal=True)
    assert text.format(record(logging.WARNING, "late\x1b[2J")) == "<4>WARNING pbmserv.test: late\\x1b[2J"
    traced = text.format(record(logging.ERROR, "failed", exc=True)).split("\n")
    assert len(traced) > 2 and all(line.startswith("<3>") for line in traced)
    entry = json.loads(JsonFormatter().format(record(logging.INFO, "a\nb \u202e")))
    assert entry["level"] == "INFO" and entry["logger"] == "pbmserv.test" and entry["message"] == "a\nb \u202e"
    assert entry["time"].endswith("Z") and "exception" not in entry
    assert "ValueError: boom" in json.loads(JsonFormatter().format(record(logging.ERROR, "x", exc=True)))["exception"]
    assert JsonFormatter(journal=True).format(record(logging.DEBUG, "d")).startswith('<7>{"time"')
    with open(tmp_path / "err", "w") as stream:
        st = os.fstat(stream.fileno())
        assert on_journal({"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}, stream)
        assert not on_journal({"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino + 1}"}, stream)
        assert not on_journal({}, stream)
