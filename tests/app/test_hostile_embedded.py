"""Issue 36, as an outsider tries it: hostile mails over SMTP to the embedded
default (`serve` in a fresh directory), each answered clearly or not at all,
the server answering other mail and /healthz meanwhile."""

from __future__ import annotations

import json
import mailbox
import os
import signal
import smtplib
import subprocess
import sys
import time
import urllib.request
from email.message import Message
from pathlib import Path

import pytest

from pbmserv_terrace.mail.delivery import MaildirDelivery
from pbmserv_terrace.testing.postgres import free_port

SERVER = "pbmserv@localhost"


class Embedded:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port, self.health = free_port(), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
        env.update({"PBMSERV_EMBEDDED_LISTEN_PORT": str(self.port), "PBMSERV_HEALTH_PORT": str(self.health),
                    "PBMSERV_WEB_LISTEN": "off"})  # fmt: skip
        self.proc = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=workdir, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                self.healthz()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("serve did not start")

    def healthz(self) -> dict[str, object]:
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.health}/healthz", timeout=5).read())

    def send(self, sender: str, raw: bytes, *, utf8: bool = False) -> None:
        with smtplib.SMTP("127.0.0.1", self.port, timeout=60) as smtp:
            smtp.sendmail(sender, [SERVER], raw, mail_options=["SMTPUTF8"] if utf8 else [])

    def mails(self, address: str) -> list[Message]:
        folder = MaildirDelivery(str(self.workdir / "maildirs")).folder(address)
        if not folder.exists():
            return []
        box = mailbox.Maildir(folder, create=False)
        return [box[key] for key in sorted(box.keys())]  # by name: the time each reply was queued

    def wait(self, address: str, count: int, timeout: float = 60.0) -> list[Message]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = self.mails(address)
            if len(got) >= count:
                return got
            time.sleep(0.2)
        raise AssertionError(f"{address}: {len(self.mails(address))} mails, wanted {count}")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=60)
        return out


def text_of(msg: Message) -> str:
    part = next((p for p in msg.walk() if p.get_content_type() == "text/plain"), msg)
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode(part.get_content_charset() or "utf-8")


def mail(sender: str, subject: str, body: bytes = b"", *, headers: bytes = b"", ctype: bytes = b"text/plain") -> bytes:
    return (
        f"From: {sender}\r\nTo: {SERVER}\r\nSubject: {subject}\r\n".encode() + headers
        + b"Content-Type: " + ctype + b"; charset=utf-8\r\n\r\n" + body + b"\r\n"
    )  # fmt: skip


@pytest.fixture
def server(tmp_path):
    embedded = Embedded(tmp_path)
    yield embedded
    log = embedded.stop()
    assert "Traceback" not in log, log[-3000:]


def test_hostile_mails_are_answered_clearly_and_the_server_stays_responsive(server):
    # the mail that froze the server for 16 s: HTML only, "help" then 12,500 <script>
    markup = b"<html>help" + b"<script>" * 12_500
    folded = b"\r\n".join(markup[i : i + 900] for i in range(0, len(markup), 900))
    server.send("eve@outside.test", mail("eve@outside.test", "", folded, ctype=b"text/html"))
    assert server.healthz()["status"] == "ok"
    help_reply = server.wait("eve@outside.test", 1)[-1]
    assert "help" in str(help_reply["Subject"]).lower() or "signup" in text_of(help_reply)
    # 3,000 nested multiparts: refused with the reason, nothing run
    nested = b"".join(b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i) for i in range(3_000))
    server.send("eve@outside.test", f"From: eve@outside.test\r\nTo: {SERVER}\r\nSubject: signup eve pw-eve\r\n".encode() + nested)
    # (found by what it says: two replies written in the same second have equal Date headers)
    refused = [m for m in server.wait("eve@outside.test", 2) if "did not read your mail's text" in text_of(m)]
    assert len(refused) == 1 and "pw-eve" not in text_of(refused[0])
    # a raw UTF-8 Subject (SMTPUTF8) is read as UTF-8, and a Message-ID's control characters go
    server.send("zoe@outside.test", mail("zoe@outside.test", "terrace hellö wörld", headers=b"Message-ID: <a\x1bb@outside.test>\r\n"),
                utf8=True)  # fmt: skip
    zoe = server.wait("zoe@outside.test", 1)[-1]
    assert "> Subject: terrace hellö wörld" in text_of(zoe) and "\ufffd" not in text_of(zoe)
    assert str(zoe["In-Reply-To"]) == "<ab@outside.test>"
    # automatic mail that still has a From: silence
    server.send("bot@outside.test", mail("bot@outside.test", "help", headers=b"X-Auto-Response-Suppress: All\r\n"))
    server.send("ann@outside.test", mail("ann@outside.test", "help"))
    server.wait("ann@outside.test", 1)
    assert server.mails("bot@outside.test") == []
