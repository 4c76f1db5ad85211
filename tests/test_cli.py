"""The command line entry points, run as a user runs them (subprocesses)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pbmserv_terrace.games.terrace import render_board, setup_tpn, start_position


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pbmserv_terrace", *args], capture_output=True, text=True, timeout=120)


def test_perft_long_depth_2_last_line():
    out = run("perft", "--variant", "long", "--depth", "2")
    assert out.returncode == 0
    assert out.stdout.strip().splitlines()[-1] == "2450"


@pytest.mark.parametrize(("size", "variant", "count"), [("6", "4p", "1976"), ("8", "3p", "18339")])
def test_perft_variants_and_sizes(size, variant, count):
    out = run("perft", "--variant", variant, "--size", size, "--depth", "3")
    assert out.stdout.strip().splitlines()[-1] == count


def test_perft_position_overrides_setup():
    out = run("perft", "--position", setup_tpn("short"), "--depth", "1")
    assert out.stdout.strip() == "31"


def test_perft_position_says_its_own_board_size():
    six = setup_tpn("4p", 6)
    out = run("perft", "--position", six, "--depth", "3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1976"
    clash = run("perft", "--position", six, "--size", "8", "--depth", "1")
    assert clash.returncode == 2 and "error:" in clash.stderr


def test_board_prints_only_the_diagram():
    out = run("board", "--position", setup_tpn("4p"))
    assert out.returncode == 0
    assert out.stdout == render_board(start_position("4p")) + "\n"


def test_board_bad_position_is_a_clear_error():
    out = run("board", "--position", "DDCC/xx 1")
    assert out.returncode == 2
    assert "error:" in out.stderr and "Traceback" not in out.stderr


def _eml(sender: str, subject: str, mid: str) -> bytes:
    return f"From: {sender}\r\nTo: pbmserv@club.test\r\nSubject: {subject}\r\nMessage-ID: <{mid}@t>\r\n\r\nhello\r\n".encode()


def test_handle_pipe_mode_print_and_maildir(tmp_path):
    import mailbox
    import os

    env = {**os.environ, "PBMSERV_DATABASE_URL": f"sqlite:///{tmp_path}/club.db", "PBMSERV_ADDRESS": "pbmserv@club.test"}

    def handle(data: bytes, *flags: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "pbmserv_terrace", "handle", *flags], input=data, capture_output=True,
                              env=env, cwd=tmp_path, timeout=120)  # fmt: skip

    out = handle(_eml("ann@x.test", "signup ann pw", "1"), "--print")
    assert out.returncode == 0, out.stderr
    (tmp_path / "out.mbox").write_bytes(out.stdout)
    box = mailbox.mbox(tmp_path / "out.mbox")
    msgs = list(box)
    assert len(msgs) == 1 and msgs[0]["To"] == "ann@x.test" and "Welcome" in msgs[0].get_payload()
    assert out.stderr.count(b"result=ok") == 1  # each log line once
    # without --print the reply is delivered: here into the embedded default's Maildir
    out = handle(_eml("ben@x.test", "signup ben pw", "2"))
    assert out.returncode == 0 and out.stdout == b""
    inbox = mailbox.Maildir(tmp_path / "maildirs" / "ben@x.test", create=False)
    [subject] = [m["Subject"] for m in inbox]
    assert subject.startswith("confirm ")  # the welcome is the address's confirmation mail (issue 36)
    # the same mail again is a no-op
    out = handle(_eml("ben@x.test", "signup ben pw", "2"))
    assert b"result=duplicate" in out.stderr and len(list(inbox)) == 1


def test_board_png_writes_the_picture_and_refuses_bad_input(tmp_path):
    from PIL import Image

    out = run("board", "--png", str(tmp_path / "b.png"), setup_tpn("long"), "--last-move", "d2-e3")
    assert out.returncode == 0, out.stderr
    image = Image.open(tmp_path / "b.png")
    assert image.format == "PNG" and image.width >= 560
    bad = run("board", "--png", str(tmp_path / "c.png"), setup_tpn("long"), "--last-move", "d2-a8")
    assert bad.returncode == 2 and "error:" in bad.stderr and not (tmp_path / "c.png").exists()


def _maildir_file(folder, name: str, subject: str, mtime_ns: int, body: str = "hello") -> None:
    """One mail in ``folder``'s new/ (every Date the same second, as the server's replies of one batch)."""
    import os

    (folder / "new").mkdir(parents=True, exist_ok=True)
    path = folder / "new" / name
    path.write_text(f"From: pbmserv@club.test\nTo: ben@x.test\nDate: Tue, 04 Mar 2025 10:00:00 +0000\n"
                    f"Subject: {subject}\n\n{body}\n")  # fmt: skip
    os.utime(path, ns=(mtime_ns, mtime_ns))


def test_inbox_prints_the_mails_in_order_of_arrival(tmp_path):
    # issue 38 item 14: 'robot1 rejects the draw offer' came before 'ben proposes a
    # draw'; the names hold the time of delivery to the µs (the server's and Python's
    # mailbox's), the mtimes here go the other way, every Date is the same second
    import os

    folder = tmp_path / "maildirs" / "ben@x.test"
    base = 1741082400_000_000_000
    headlines = ["ben proposes a draw", "robot1 rejects the draw offer", "ben played d2-e3", "robot1 played D-e7-d6"]
    names = ["1741082400.M000101X9f3e.pbmserv", "1741082400.M000102X0a1b.pbmserv",
             "1741082400.M090000P77Q2.host", "1741082400.M090000P77Q10.host"]  # fmt: skip
    for i, (name, headline) in enumerate(zip(names, headlines, strict=True)):
        _maildir_file(folder, name, f"pbmserv: Board 101: {headline}", base + (10 - i) * 1000)
    # a reply of the same µs: its mtime decides; a name of no known form: its mtime
    _maildir_file(folder, "1741082401.M000005Xffff.pbmserv", "pbmserv: Board 101: fifth", base + 2_000_000_000)
    _maildir_file(folder, "1741082401.M000005X0000.pbmserv", "pbmserv: Board 101: sixth", base + 2_000_000_001)
    _maildir_file(folder, "odd-name", "pbmserv: Board 101: seventh", base + 1_000_001_000)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    out = subprocess.run([sys.executable, "-m", "pbmserv_terrace", "inbox", "ben@x.test"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    subjects = [line.split(": ", 3)[-1] for line in out.stdout.splitlines() if line.startswith("Subject:")]
    assert subjects == [*headlines, "seventh", "fifth", "sixth"]
    last = subprocess.run([sys.executable, "-m", "pbmserv_terrace", "inbox", "ben@x.test", "--last", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)  # fmt: skip
    assert "Subject: pbmserv: Board 101: sixth" in last.stdout and "fifth" not in last.stdout


def test_inbox_into_a_pipe_closed_early_ends_quietly(tmp_path):
    # issue 38 item 14: `inbox ... | head` ended with a BrokenPipeError traceback
    import os

    folder = tmp_path / "maildirs" / "ben@x.test"
    for i in range(200):
        _maildir_file(folder, f"1741082400.M{i:06d}Xab.pbmserv", f"mail {i}", 1741082400_000_000_000 + i, "x" * 2000)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    proc = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "inbox", "ben@x.test"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path, env=env)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"From: ")  # what head -1 reads
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err
