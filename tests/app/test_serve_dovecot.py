"""``serve`` against a real Dovecot: mail in over IMAP, replies out over SMTP (relay
→ LMTP → Dovecot), read back by the players over IMAP (issue 7)."""

from __future__ import annotations

import random
import time

from pbmserv_terrace.games.terrace import start_position

from ..mailservers import SERVER, addr, body
from ..service.policy import choose, text
from ..service.test_games import shortest_seed


def test_signup_challenge_game_error_and_chat(serve_factory, relay, players, dovecot):
    serve = serve_factory(relay).start()
    for name in ("ann", "ben"):
        assert "Welcome" in body(players.signup(name))
    players.send("ann", "terrace6x6 challenge ann pw-ann ben -short", "Good luck")
    for name in ("ann", "ben"):
        new = players.wait(name)[0]
        assert new["Subject"] == "New Terrace6x6 Board 101 ann **"
        assert new["Auto-Submitted"] == "auto-replied" and new["In-Reply-To"]
    # an error goes to the sender only
    players.send("ben", "terrace6x6 move 101 ben pw-ben b6-b5")
    err = players.wait("ben")[0]
    assert err["Subject"] == "Terrace6x6 Board 101 Error" and "not your turn" in body(err)
    # chat reaches both
    players.send("ben", "terrace6x6 chat 101 ben pw-ben", "Hello from ben")
    for name in ("ann", "ben"):
        assert "Hello from ben" in body(players.wait(name)[0])
    # a full game to a win
    pos = start_position("short", 6)
    rng = random.Random(shortest_seed("short", 6))
    names = ["ann", "ben"]
    while pos.outcome() is None:
        mover = names[pos.to_move - 1]
        move = choose(pos, rng)
        canonical = text(pos, move)
        pos = pos.play(move)
        players.send(mover, f"terrace6x6 move 101 {mover} pw-{mover} {canonical}")
        for name in names:
            mail = players.wait(name)[0]
            assert f"{mover} played {canonical}" in body(mail)
    winner = names[pos.outcome().winner - 1]
    assert mail["Subject"] == "Terrace6x6 Board 101 finished" and f"Game over: {winner} wins" in body(mail)
    # processed mails were moved out of the inbox into 'processed'
    assert dovecot.fetch_all(SERVER) == []
    assert len(dovecot.fetch_all(SERVER, "processed")) >= 6
    assert serve.stop() == 0
    log = serve.log.read_text()
    assert "command=terrace6x6 move result=ok" in log and "stopped" in log


def test_relay_down_replies_wait_then_go(serve_factory, relay, players):
    serve = serve_factory(relay).start()
    relay.pause()
    # the relay refuses outgoing replies; mail in still arrives by LMTP directly
    data = (
        f"From: {addr('ann')}\r\nTo: {SERVER}\r\nSubject: signup ann pw\r\nMessage-ID: <down1@players.test>\r\n\r\n\r\n".encode()
    )
    players.dovecot.deliver(addr("ann"), [SERVER], data)
    deadline = time.time() + 30  # (the sender's first try: a few seconds, more on a busy box)
    while "temporary failure" not in serve.log.read_text() and time.time() < deadline:
        time.sleep(0.2)
    assert "temporary failure" in serve.log.read_text()
    assert players.mailbox("ann") == []
    relay.resume()
    assert "Welcome" in body(players.wait("ann", timeout=40)[0])
    players.quiet("ann")
    serve.stop()


def test_imap_connection_cut_reconnects_without_loss_or_doubles(serve_factory, relay, players, dovecot):
    import subprocess

    serve = serve_factory(relay).start()
    players.signup("ann")
    subprocess.run(["doveadm", "-c", str(dovecot.base / "dovecot.conf"), "kick", SERVER], capture_output=True, timeout=30)
    players.send("ben", "signup ben pw-ben")
    welcome = players.wait("ben", 1, timeout=60)[0]
    assert "Welcome" in body(welcome)
    players.reply("ben", welcome)  # (confirms ben's address)
    players.wait("ben")
    players.send("ann", "terrace challenge ann pw-ann ben")
    assert players.wait("ann")[0]["Subject"] == "New Terrace Board 101 ann"
    players.wait("ben")
    players.quiet("ann")
    players.quiet("ben", 0.5)
    assert "reconnecting" in serve.log.read_text()
    serve.stop()


def test_sigkill_while_mails_in_flight_then_restart(serve_factory, relay, players, dovecot, tmp_path):
    import sqlite3

    serve = serve_factory(relay).start()
    for name in ("ann", "ben"):
        players.signup(name)
    players.send("ann", "terrace challenge ann pw-ann ben")
    players.wait("ann")
    players.wait("ben")
    pos = start_position()
    rng = random.Random(7)
    moves = []
    for _ in range(12):
        m = choose(pos, rng)
        moves.append(text(pos, m))
        pos = pos.play(m)
    names = ["ann", "ben"]
    sent = [players.send(names[i % 2], f"terrace queue 101 {names[i % 2]} pw-{names[i % 2]} {mv}") for i, mv in enumerate(moves)]
    time.sleep(0.8)  # the server is working through the queue of mails
    serve.kill()
    serve.start()
    deadline = time.time() + 90
    while dovecot.fetch_all(SERVER) and time.time() < deadline:
        time.sleep(0.5)
    assert dovecot.fetch_all(SERVER) == [], "mail left unprocessed"
    serve.stop()
    db = sqlite3.connect(tmp_path / "serve.db")
    # every command applied exactly once: twelve plies, in order, none doubled
    plies = db.execute("SELECT m.ply, m.move FROM moves m JOIN games g ON g.id = m.game_id ORDER BY m.ply").fetchall()
    assert [mv for _, mv in plies] == moves
    # every mail answered, and no reply queued twice
    for mid in sent:
        assert db.execute("SELECT count(*) FROM processed_messages WHERE message_id = ?", (mid,)).fetchone()[0] == 1
        rows = db.execute(
            "SELECT recipient, count(*), min(state) FROM outbox WHERE in_reply_to = ? GROUP BY recipient", (mid,)
        ).fetchall()
        assert rows and all(n == 1 and state == "sent" for _, n, state in rows), (mid, rows)


def test_check_config_tries_both_connections(serve_factory, relay, dovecot):
    import subprocess
    import sys

    serve = serve_factory(relay)  # writes the config; not started
    run = [sys.executable, "-m", "pbmserv_terrace", "check-config", "--config", str(serve.config)]
    out = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"ok    IMAP 127.0.0.1:{dovecot.imap_port}" in out.stdout and f"ok    SMTP 127.0.0.1:{relay.port}" in out.stdout
    serve.config.write_text(serve.config.read_text().replace('password = "server-secret"', 'password = "wrong"'))
    out = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "FAIL  IMAP" in out.stdout


def test_imap_over_tls_and_starttls(tmp_path):
    """Implicit TLS and STARTTLS logins against a Dovecot with a self-signed
    certificate (trusted through imap.ca_file); without it verification fails."""
    import subprocess
    import sys

    from pbmserv_terrace.testing.dovecot import DovecotServer

    with DovecotServer({SERVER: "server-secret"}, tls=True) as d:

        def check(tls: str, port: int, ca: str) -> subprocess.CompletedProcess[str]:
            cfg = tmp_path / f"{tls}.toml"
            ca_line = f'ca_file = "{ca}"' if ca else ""
            cfg.write_text(
                f'[server]\naddress = "{SERVER}"\ndatabase_url = "sqlite:///{tmp_path}/t.db"\n'
                f'[imap]\nhost = "127.0.0.1"\nport = {port}\nuser = "{SERVER}"\npassword = "server-secret"\ntls = "{tls}"\n{ca_line}\n'
                f'[smtp]\nhost = "127.0.0.1"\nport = 1\ntls = "none"\n'
            )
            return subprocess.run([sys.executable, "-m", "pbmserv_terrace", "check-config", "--config", str(cfg)],
                                  capture_output=True, text=True, timeout=60)  # fmt: skip

        assert f"ok    IMAP 127.0.0.1:{d.imaps_port} (ssl)" in check("ssl", d.imaps_port, d.ca_file).stdout
        assert f"ok    IMAP 127.0.0.1:{d.imap_port} (starttls)" in check("starttls", d.imap_port, d.ca_file).stdout
        untrusted = check("ssl", d.imaps_port, "").stdout
        assert "FAIL  IMAP" in untrusted and "not signed by the system's CA store" in untrusted
