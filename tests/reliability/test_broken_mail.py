"""Malformed and hostile MIME (issue 6): no crash, no state change, each answerable
mail answered, and the server keeps going — in-process and through a running serve."""

from __future__ import annotations

import base64
import os
import smtplib
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbmserv_terrace.testing.postgres import free_port

from ..service.harness import Harness
from ..service.test_hostile import snapshot

pytestmark = pytest.mark.reliability


def head(subject: str = "terrace show 101", extra: str = "", mid: str = "x") -> str:
    return f"From: ann@players.test\r\nTo: s@t\r\nSubject: {subject}\r\nMessage-ID: <{mid}@broken>\r\n{extra}"


def nested(depth: int) -> str:
    out = "Content-Type: text/plain\r\n\r\nterrace show 101\r\n"
    for i in range(depth):
        out = f'Content-Type: multipart/mixed; boundary="b{i}"\r\n\r\n--b{i}\r\n{out}\r\n--b{i}--\r\n'
    return out


BIG = base64.encodebytes(os.urandom(10 * 1024 * 1024 // 4 * 3)).decode().replace("\n", "\r\n")
CORPUS = {
    "bad-boundary": head(
        extra='Content-Type: multipart/mixed; boundary="nope"\r\n\r\n--wrong\r\nContent-Type: text/plain\r\n\r\nhello\r\n--wrong--\r\n'
    ),
    "no-closing-boundary": head(
        extra='Content-Type: multipart/alternative; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n'
    ),
    "unknown-charset": head(
        extra="Content-Type: text/plain; charset=x-klingon-9\r\nContent-Transfer-Encoding: 8bit\r\n\r\n\xff\xfe caf\xe9\r\n"
    ),
    "wrong-charset": head(
        extra="Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nTr\xe8s \xe0 bient\xf4t\r\n"
    ),
    "broken-base64": head(extra="Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!not*base64===\r\n"),
    "broken-qp": head(extra="Content-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=ZZ=\r\n=4\r\n"),
    "huge-header": head(extra="X-Huge: " + "a" * 200_000 + "\r\n\r\nbody\r\n"),
    "many-headers": head(extra="".join(f"X-H{i}: {i}\r\n" for i in range(5000)) + "\r\nbody\r\n"),
    "ten-mb-attachment": head(
        extra='Content-Type: multipart/mixed; boundary="z"\r\n\r\n--z\r\nContent-Type: text/plain\r\n\r\nsee attachment\r\n'
        f"--z\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n{BIG}\r\n--z--\r\n"
    ),
    "deep-nesting": head(extra=nested(120)),
    "encoded-word-garbage": head(subject="=?utf-8?q?terrace_show_101?= =?bogus?x?zz?= =?utf-8?b?////?=", extra="\r\nbody\r\n"),
    "no-from": "Subject: help\r\nMessage-ID: <nofrom@broken>\r\n\r\nhi\r\n",
    "from-garbage": "From: <<<@@@>>>\r\nSubject: help\r\nMessage-ID: <fromgarbage@broken>\r\n\r\nhi\r\n",
    "lf-only": head().replace("\r\n", "\n") + "\nterrace show 101\n",
    "binary-junk": "\x00\x01\x02 not a mail at all \xff" * 100,
    "html-bomb": head(extra="Content-Type: text/html\r\n\r\n" + "<div>" * 50_000 + "x" + "</div>" * 50_000 + "\r\n"),
}
ANSWERABLE = {"bad-boundary", "no-closing-boundary", "unknown-charset", "wrong-charset", "broken-base64", "broken-qp", "huge-header",
              "many-headers", "ten-mb-attachment", "deep-nesting", "encoded-word-garbage", "lf-only", "html-bomb"}  # fmt: skip


def data_of(name: str, tag: str = "") -> bytes:
    text = CORPUS[name]
    data = text.encode() if name == "many-headers" else text.encode("latin-1")
    return data.replace(b"<x@broken>", f"<{name}{tag}@broken>".encode())


@pytest.fixture(scope="module")
def h():
    harness = Harness()
    harness.signup("ann", "ben")
    harness.send("ann", "terrace challenge ann pw-ann ben")
    yield harness
    harness.close()


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_broken_mail_is_handled(h, name):
    before = snapshot(h)
    started = time.perf_counter()
    replies = h.raw(data_of(name))
    assert h.last.status in ("ok", "error", "ignored"), h.last
    assert snapshot(h) == before
    if name in ANSWERABLE:
        assert [r.to for r in replies] == ["ann@players.test"], (name, h.last)
    else:
        assert replies == []
    assert time.perf_counter() - started < 60


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    headers=st.lists(
        st.tuples(
            st.sampled_from(["Subject", "From", "Content-Type", "Content-Transfer-Encoding", "MIME-Version", "X-Y"]),
            st.text(max_size=60),
        ),
        max_size=8,
    ),
    body=st.binary(max_size=2000),
)
def test_random_raw_mail(h, headers, body):
    h.service.throttle.per_minute = 10**9
    raw = b"".join(
        f"{k}: {v}".encode("utf-8", "surrogateescape").replace(b"\r", b" ").replace(b"\n", b" ") + b"\r\n" for k, v in headers
    )
    before = snapshot(h)
    h.raw(raw + b"\r\n" + body)
    assert h.last.status in ("ok", "error", "ignored", "duplicate"), h.last
    assert snapshot(h) == before


def test_running_server_keeps_going_through_broken_mail(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update({"PBMSERV_EMBEDDED_LISTEN_PORT": str(port), "PBMSERV_ADDRESS": "s@t.test"})
    serve = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.time() + 30
        while True:
            try:
                smtplib.SMTP("127.0.0.1", port, timeout=5).quit()
                break
            except OSError:
                assert time.time() < deadline
                time.sleep(0.2)
        refused = set()
        for name in sorted(CORPUS):
            with smtplib.SMTP("127.0.0.1", port, timeout=120) as smtp:
                try:
                    smtp.sendmail("ann@players.test", ["s@t.test"], data_of(name, "-serve"))
                except smtplib.SMTPDataError as exc:  # lines over SMTP's 1000-octet limit are refused cleanly
                    assert exc.smtp_code == 500 and b"Line too long" in exc.smtp_error
                    refused.add(name)
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as smtp:
            smtp.sendmail(
                "ann@players.test", ["s@t.test"], b"From: ann@players.test\r\nSubject: help\r\nMessage-ID: <last@x>\r\n\r\n\r\n"
            )
        inbox = tmp_path / "maildirs" / "ann@players.test" / "new"
        assert refused <= {"huge-header", "html-bomb", "binary-junk"}
        expected = len(ANSWERABLE - refused) + 1

        def count() -> int:
            return len(list(inbox.iterdir())) if inbox.exists() else 0

        # replies are written by the sender process after each mail's commit: wait
        # for them (a fixed 2 s found 12 of 14 once in CI), then for any extra one
        deadline = time.time() + 60
        while count() < expected and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        assert count() == expected
    finally:
        serve.terminate()
        out, _ = serve.communicate(timeout=60)
    assert serve.returncode == 0 and "Traceback" not in out, out[-3000:]
