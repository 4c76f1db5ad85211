"""Issue 36 part 5 tried again as an outsider would, through the real mail path:
``serve`` with its embedded SMTP listener, mails sent with ``send`` (forged From
included), answers read from the local inboxes and confirmations answered by a
real Reply (``send --reply-to-last``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from pbmserv_terrace.testing.postgres import free_port

from ..cli.test_embedded import cli


def test_forged_from_attacks_fail_over_the_embedded_listener(tmp_path):
    port, health = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update({"PBMSERV_EMBEDDED_LISTEN_PORT": str(port), "PBMSERV_HEALTH_PORT": str(health)})
    (tmp_path / "pbmserv.toml").write_text("[server]\nrate_limit_per_minute = 5\n")
    serve = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip

    def send(sender: str, subject: str, body: str = "", *extra: str) -> None:
        out = cli("send", "--from", sender, *extra, subject, body, cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr

    def inbox(address: str) -> str:
        return cli("inbox", address, cwd=tmp_path, env=env).stdout

    def settle(check, what: str) -> None:  # type: ignore[no-untyped-def]
        deadline = time.time() + 20
        while time.time() < deadline:
            if check():
                return
            time.sleep(0.2)
        raise AssertionError(what)

    try:
        settle(lambda: (tmp_path / "pbmserv.db").exists(), "serve did not start")
        time.sleep(1.0)
        for name in ("ann", "ben"):
            send(f"{name}@home.test", f"signup {name} pw-{name}")
            settle(lambda n=name: "Subject: confirm " in inbox(f"{n}@home.test"), f"{name}'s confirmation")
            send(f"{name}@home.test", "", "", "--reply-to-last")  # Reply to it
            settle(lambda n=name: "address confirmed" in inbox(f"{n}@home.test"), f"{name}'s address confirmed")

        # signup claiming strangers' addresses: one confirmation each, nothing claimed
        send("eve@evil.test", "signup eve pw victim@victim.test ann@home.test")
        settle(lambda: "Subject: confirm " in inbox("victim@victim.test"), "victim's one confirmation")
        send("ben@home.test", "message ben pw-ben eve", "hello eve")

        # a forged From opens no board, not even against a robot: ann gets a confirmation
        send("ann@home.test", "terrace challenge ann robot3")
        settle(lambda: inbox("ann@home.test").count("Subject: confirm ") == 3, "ann's challenge confirmation")
        send("eve@evil.test", "terrace challenge ann ben")
        settle(lambda: "give your password" in inbox("eve@evil.test"), "the stranger is refused")

        # a flood under ann's From, then her real mail with her password is answered
        for _ in range(8):
            send("ann@home.test", "help")
        send("ann@home.test", "terrace challenge ann pw-ann ben", "real one")
        settle(lambda: "New Terrace Board 101 ann **" in inbox("ben@home.test"), "ann's real challenge")

        # seven wrong passwords from seven addresses: ann is not locked out
        for k in range(7):
            send(f"eve{k}@evil.test", "terrace move 101 ann wrong d2-e3")
        send("ann@home.test", "terrace move 101 ann pw-ann d2-e3")
        settle(lambda: "ann played" in inbox("ben@home.test"), "ann's move")

        time.sleep(1.0)
        victim = inbox("victim@victim.test")
        assert victim.count("To: victim@victim.test") == 1 and "Subject: confirm " in victim
        assert "Terrace Board" not in inbox("ann@home.test").split("robot3")[0]  # no board before ann's own
        assert inbox("ann@home.test").count("New Terrace Board") == 1  # only the one with her password
    finally:
        serve.send_signal(signal.SIGTERM)
        out, _ = serve.communicate(timeout=40)
    assert serve.returncode == 0, out
