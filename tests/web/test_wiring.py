"""The archive as an operator runs it (issue 19): `serve` in the embedded default runs
it beside the mail loop and says where; a move mailed with `send` shows on the board
page; a port in use costs the web, not the mail; `pbmserv-terrace web` serves the
same database alone.  Real processes, real sockets, a fresh directory each."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from pbmserv_terrace.testing.postgres import free_port
from pbmserv_terrace.web.process import WEB_NICE


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update(extra)
    return env


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pbmserv_terrace", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def start(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=40)
    assert process.returncode == 0, out
    return out


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_for(what: str, check, process: subprocess.Popen[str], seconds: float = 30.0):  # type: ignore[no-untyped-def]
    """Poll ``check()`` until it returns something true (the process must stay up)."""
    deadline = time.monotonic() + seconds
    while True:
        assert process.poll() is None, f"exited while waiting for {what}: {process.communicate()[0]}"
        try:
            found = check()
        except OSError:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def smtp_up(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        return True


def test_serve_runs_the_archive_and_web_runs_it_alone(tmp_path: Path) -> None:
    mail, web, alone = free_port(), free_port(), free_port()
    env = environment(PBMSERV_EMBEDDED_LISTEN_PORT=str(mail), PBMSERV_WEB_LISTEN=f"127.0.0.1:{web}")
    serve = start("serve", cwd=tmp_path, env=env)
    base = f"http://127.0.0.1:{web}"
    try:
        wait_for("the web archive", lambda: get(f"{base}/healthz")[0] == 200, serve)
        wait_for("the mail listener", lambda: smtp_up(mail), serve)
        for sender, subject, body in [
            ("ann@home.test", "signup ann pw-ann", ""),
            ("ben@home.test", "signup ben pw-ben", ""),
            ("ann@home.test", "terrace challenge ann pw-ann ben -short", "Short one?"),
            ("ann@home.test", "terrace move 101 ann pw-ann g1-g2", "my first move"),
        ]:
            out = cli("send", "--from", sender, subject, body, cwd=tmp_path, env=env)
            assert out.returncode == 0, out.stderr

        def board_after_the_move() -> str | None:
            status, body = get(f"{base}/boards/terrace/101")
            return body if status == 200 and 'After ply <span id="ply">1</span> of 1' in body else None

        page = wait_for("the move on the board page", board_after_the_move, serve)
        assert "T-g1-g2" in page and "/players/ann" in page and "/players/ben" in page
        assert "ben" in page and "turn" in page
        status, home = get(f"{base}/")
        assert status == 200 and "/boards/terrace/101" in home
        assert get(f"{base}/boards/101")[0] == 200  # the short address redirects to the terrace board
        status, player = get(f"{base}/players/ann")
        assert status == 200 and "/boards/terrace/101" in player
        for body in (page, home, player):
            assert "@home.test" not in body
        # how to join: the server's own address ([server] address), as a mailto: link (issue 38 item 4)
        status, help_page = get(f"{base}/help")
        assert status == 200 and '<a href="mailto:pbmserv@localhost?subject=help">pbmserv@localhost</a>' in help_page
        assert 'href="mailto:pbmserv@localhost?subject=help"' in home
    finally:
        out = stop(serve)
    assert f"web archive http://127.0.0.1:{web}/" in out and "embedded default" in out and "stopped" in out

    # the same database, served alone (e.g. by another process or host)
    web_alone = start("web", "--listen", f"127.0.0.1:{alone}", cwd=tmp_path, env=env)
    try:
        base = f"http://127.0.0.1:{alone}"
        wait_for("pbmserv-terrace web", lambda: get(f"{base}/healthz")[0] == 200, web_alone)
        status, record = get(f"{base}/boards/terrace/101.txt")
        assert status == 200 and "1. ann: T-g1-g2" in record and "Players: ann (army 1" in record
        status, page = get(f"{base}/boards/terrace/101?ply=0")
        assert status == 200 and "The start, before ply 1 of 1" in page
        assert get(f"{base}/boards/terrace/102")[0] == 404
        assert 'href="mailto:pbmserv@localhost?subject=help"' in get(f"{base}/help")[1]
    finally:
        out = stop(web_alone)
    assert f"web archive on http://127.0.0.1:{alone}/" in out


def test_a_port_in_use_costs_serve_the_web_not_the_mail(tmp_path: Path) -> None:
    mail = free_port()
    with socket.create_server(("127.0.0.1", 0)) as taken:
        web = taken.getsockname()[1]
        env = environment(PBMSERV_EMBEDDED_LISTEN_PORT=str(mail), PBMSERV_WEB_LISTEN=f"127.0.0.1:{web}")
        serve = start("serve", cwd=tmp_path, env=env)
        try:
            wait_for("the mail listener", lambda: smtp_up(mail), serve)
            out = cli("send", "--from", "ann@home.test", "signup ann pw-ann", cwd=tmp_path, env=env)
            assert out.returncode == 0, out.stderr
            wait_for("the signup reply", lambda: "Subject:" in cli("inbox", "ann@home.test", cwd=tmp_path, env=env).stdout, serve)
        finally:
            out = stop(serve)
        # `web` alone on a port in use: one line, exit status 2
        alone = cli("web", "--listen", f"127.0.0.1:{web}", cwd=tmp_path, env=env)
    errors = [line for line in out.splitlines() if "web archive: cannot listen on" in line]
    assert len(errors) == 1 and f"127.0.0.1:{web}" in errors[0] and "serving mail without it" in errors[0]
    assert "web archive not running" in out
    lines = alone.stderr.strip().splitlines()
    assert alone.returncode == 2 and len(lines) == 1, alone.stderr
    assert lines[0].startswith(f"pbmserv-terrace: error: web archive: cannot listen on 127.0.0.1:{web}: Address already in use")


def test_web_alone_wants_a_schema_and_a_valid_address(tmp_path: Path) -> None:
    env = environment()
    out = cli("web", "--listen", f"127.0.0.1:{free_port()}", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "has no schema yet" in out.stderr and "pbmserv-terrace migrate" in out.stderr
    out = cli("web", "--listen", "8080", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "is not host:port" in out.stderr
    (tmp_path / "pbmserv.toml").write_text('[web]\nlisten = "somewhere"\n')
    out = cli("web", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "web.listen" in out.stderr


def children_of(pid: int) -> dict[int, str]:
    """The live child processes of ``pid``: pid → command line."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out[int(entry.name)] = cmdline
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_serve_runs_the_archive_in_a_child_that_never_outlives_it(tmp_path: Path) -> None:
    """Issue 36: the archive is served by a process of its own beside serve's mail loop
    (so web clients cannot starve the mail), at a lower CPU priority and read-only; a child
    that dies is started again; a serve killed with SIGKILL takes it along, and the port."""
    mail, web = free_port(), free_port()
    env = environment(PBMSERV_EMBEDDED_LISTEN_PORT=str(mail), PBMSERV_WEB_LISTEN=f"127.0.0.1:{web}")
    serve = start("serve", cwd=tmp_path, env=env)
    base = f"http://127.0.0.1:{web}"
    try:
        wait_for("the web archive", lambda: get(f"{base}/healthz")[0] == 200, serve)

        def web_child() -> int | None:
            found = [pid for pid, cmd in children_of(serve.pid).items() if "pbmserv_terrace.web.process" in cmd]
            return found[0] if len(found) == 1 else None

        child = wait_for("the web process", web_child, serve)
        # nicer than serve (capped at 19: the suite itself may run niced)
        assert os.getpriority(os.PRIO_PROCESS, child) == min(19, os.getpriority(os.PRIO_PROCESS, serve.pid) + WEB_NICE)
        assert "database_url" not in children_of(serve.pid)[child]  # settings come on stdin, not in ps
        os.kill(child, signal.SIGKILL)  # a crash of the web costs the web a second, not the mail
        again = wait_for("a new web process", lambda: (c := web_child()) != child and c, serve)
        wait_for("the web archive again", lambda: get(f"{base}/healthz")[0] == 200, serve)
        assert get(f"{base}/boards/terrace/99999999999999999999")[0] == 404
        assert smtp_up(mail)
    finally:
        serve.kill()
        out, _ = serve.communicate(timeout=30)
    deadline = time.monotonic() + 15
    while alive(again) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(again), "the web process outlived serve"
    try:
        with socket.create_connection(("127.0.0.1", web), timeout=2):
            refused = False
    except OSError:
        refused = True
    assert refused, "the web port is still held after serve was killed"
    assert "the web archive's process ended" in out
