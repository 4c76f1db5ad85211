"""A person plays a whole game against a robot through the embedded server, by
replies only (issue 17): ``serve`` in a fresh directory, ``send`` and
``send --reply-to-last``, ``inbox``.  The robot's moves come from the server's
worker process, after the person's mail was answered."""

from __future__ import annotations

import email
import email.policy
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from email.message import EmailMessage
from pathlib import Path

from pbmserv_terrace.games.terrace import Move, Position, parse_tpn
from pbmserv_terrace.testing.postgres import free_port

WAIT = 60.0
"""seconds to wait for one answer before the test gives up (a hang, not a timing check)"""


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pbmserv_terrace", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def board(db: Path, number: int = 101, game_type: str = "terrace") -> tuple[str, int, str]:
    """(position, ply, status) of a board, read as the server stored it."""
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT position, ply, status FROM games WHERE game_type = ? AND board_number = ?", (game_type, number)
        ).fetchone()
    assert row is not None
    return str(row[0]), int(row[1]), str(row[2])


def choose(pos: Position, rng: random.Random) -> Move:
    """The person's move: a win when one is there, else a seeded random legal move."""
    moves = pos.legal_moves()
    for move in moves:
        outcome = pos.play(move).outcome()
        if outcome is not None and outcome.winner == pos.to_move:
            return move
    return rng.choice(moves)


def texts(root: Path, address: str, last: int = 1) -> list[str]:
    """The text parts of the ``last`` newest mails in ``address``'s local Maildir,
    oldest first: by file name, which the server makes from the time it queued the
    reply, to the microsecond (the files' times tie for replies written together)."""
    folder = root / "maildirs" / address
    files = sorted(folder.glob("*/*"), key=lambda p: p.name) if folder.exists() else []
    found = []
    for path in files[-last:]:
        msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        assert isinstance(msg, EmailMessage)
        part = msg.get_body(preferencelist=("plain",))
        found.append(part.get_content() if part is not None else "")
    return found


def newest_text(root: Path, address: str) -> str:
    """The text part of the newest mail in ``address``'s local Maildir ('' if none)."""
    return (texts(root, address) or [""])[-1]


def game_over(root: Path, address: str) -> str:
    """The game-end mail among the newest two ('' if none): the game's review (issue
    42) may follow it as soon as the robots' worker has made it."""
    return next((t for t in reversed(texts(root, address, 2)) if "Game over" in t), "")


def play_against_robot(tmp: Path, robot: str, setup: str, game_type: str = "terrace", seed: int = 7) -> tuple[str, int, str]:
    """Sign up, challenge ``robot``, answer each board mail by Reply until the game
    ends; the text of the last mail, the number of plies and the final status."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}
    env.update({"PBMSERV_EMBEDDED_LISTEN_PORT": str(free_port()), "PBMSERV_WEB_LISTEN": "off"})
    serve = subprocess.Popen([sys.executable, "-m", "pbmserv_terrace", "serve"], cwd=tmp, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    db = tmp / "pbmserv.db"
    rng = random.Random(seed)
    try:
        deadline = time.time() + WAIT
        while True:
            out = cli("send", "--from", "ann@home.test", "signup ann pw-ann", cwd=tmp, env=env)
            if out.returncode == 0:
                break
            assert time.time() < deadline, out.stderr
            time.sleep(0.2)
        deadline = time.time() + WAIT
        while "To confirm: press Reply" not in newest_text(tmp, "ann@home.test"):  # the welcome: answered by Reply
            assert time.time() < deadline, "no confirmation mail"
            time.sleep(0.05)
        out = cli("send", "--from", "ann@home.test", "--reply-to-last", "yes", cwd=tmp, env=env)
        assert out.returncode == 0, out.stderr
        out = cli("send", "--from", "ann@home.test", f"{game_type} challenge ann pw-ann {robot} {setup}".strip(), cwd=tmp, env=env)
        assert out.returncode == 0, out.stderr
        while True:
            # wait for the mail that answers the last one: the person to move, or the game over
            deadline = time.time() + WAIT
            while True:
                tpn, ply, status = board(db, game_type=game_type) if db.exists() else ("", 0, "")
                newest = newest_text(tmp, "ann@home.test")
                if status not in ("", "active") and game_over(tmp, "ann@home.test"):
                    return game_over(tmp, "ann@home.test"), ply, status
                if (
                    status == "active"
                    and parse_tpn(tpn).to_move == 1
                    and f"It is ann's turn (army 1, t), ply {ply + 1}." in newest
                ):
                    break
                assert time.time() < deadline, f"no answer at ply {ply}: {newest[:300]}"
                time.sleep(0.05)
            pos = parse_tpn(tpn)
            move = choose(pos, rng)
            text = f"{pos.geo.name(move.frm)}-{pos.geo.name(move.to)}"
            out = cli("send", "--from", "ann@home.test", "--reply-to-last", text, cwd=tmp, env=env)
            assert out.returncode == 0, out.stderr
    finally:
        serve.send_signal(signal.SIGTERM)
        log, _ = serve.communicate(timeout=40)
        assert serve.returncode == 0, log
        assert "Traceback" not in log, log


def test_a_whole_game_against_robot1_by_replies(tmp_path):
    last, plies, status = play_against_robot(tmp_path, "robot1", "-short", "terrace6x6")
    assert status in ("won", "draw") and plies > 2
    assert "Game over:" in last and "Rating changes:" in last
    assert "robot1:" in last and "ann:" in last
