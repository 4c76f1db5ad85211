"""A ``serve`` killed with SIGKILL leaves no process behind (issue 36): its
robot worker (the engine's process pool) and multiprocessing's resource tracker
used to stay under PID 1 for good.  Through the real ``serve`` of the embedded
default: a robot thinks, ``serve`` is killed, and every child it had ends."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from pbmserv_terrace.games.terrace import parse_tpn

from .test_sender_process import Serve, alive, children, wait_for


def robot_to_think(serve: Serve, cwd: Path) -> None:
    """ann challenges robot3 and makes her first move: the robot is to move."""
    serve.mail("ann@home.test", "signup ann pw-ann")
    serve.mail("ann@home.test", "terrace challenge ann pw-ann robot3")
    db = cwd / "pbmserv.db"

    def board() -> tuple[str, int] | None:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT position, ply FROM games WHERE board_number = 101").fetchone()
        return (str(row[0]), int(row[1])) if row else None

    wait_for(lambda: board() is not None, "board 101")
    found = board()
    assert found is not None
    pos = parse_tpn(found[0])
    move = pos.legal_moves()[0]
    serve.mail("ann@home.test", f"terrace move 101 ann pw-ann {pos.geo.name(move.frm)}-{pos.geo.name(move.to)}")


def test_a_killed_serve_takes_its_robot_worker_and_the_resource_tracker_with_it(tmp_path: Path) -> None:
    serve = Serve(tmp_path)
    try:
        robot_to_think(serve, tmp_path)
        # the sender process and the robot worker (both spawned), and the tracker
        wait_for(lambda: len([c for _, c in children(serve.proc.pid) if "spawn_main" in c]) >= 2, "the robot worker")
        kids = children(serve.proc.pid)
        assert any("resource_tracker" in cmd for _, cmd in kids), kids
    finally:
        serve.proc.kill()
        serve.proc.wait(30)
    # a generous bound, not a timing check: before the fix they were there 20 minutes later
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid, _ in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [(pid, cmd) for pid, cmd in kids if alive(pid)]
    assert left == [], f"outlived serve: {left}"
