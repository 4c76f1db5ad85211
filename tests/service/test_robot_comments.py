"""A robot says its view of the game when it changes, not on every move (issue 38
item 15: 'robot1 thinks the game is level' eight times in one game)."""

from __future__ import annotations

import random

import pytest

from pbmserv_terrace.games.breakthrough import format_move as bt_format
from pbmserv_terrace.games.breakthrough import load as bt_load
from pbmserv_terrace.games.terrace import parse_tpn

from .harness import Harness, Reply
from .test_robots import game_state


@pytest.fixture
def h():
    harness = Harness()
    harness.signup("ann")
    yield harness
    harness.close()


def robot_said(reply: Reply, robot: str) -> str | None:
    """The robot's comment in its board mail (None: it wrote none)."""
    lines = reply.body.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == f"{robot} writes:" and i + 1 < len(lines):
            return lines[i + 1].strip()
    return None


def a_random_move(h: Harness, game: str, rng: random.Random) -> str | None:
    text = game_state(h, 101, game)[0].position
    if game == "terrace":
        pos = parse_tpn(text)
        moves = pos.legal_moves()
        return f"{pos.geo.name(m.frm)}-{pos.geo.name(m.to)}" if (m := rng.choice(moves) if moves else None) else None
    bt = bt_load(text)
    moves = bt.legal_moves()
    return bt_format(bt, rng.choice(moves)) if moves else None


@pytest.mark.parametrize(("game", "robot", "seed"), [("terrace", "robot1", 3), ("breakthrough", "robot1", 5)])
def test_a_robot_does_not_repeat_its_view_while_nobody_writes(h, game: str, robot: str, seed: int) -> None:
    rng = random.Random(seed)
    h.challenge("ann", robot, game=game)
    said: list[str | None] = []
    for ply in range(16):
        if game_state(h, 101, game)[0].status != "active":
            break
        move = a_random_move(h, game, rng)
        assert move is not None
        # the person writes something on the 9th move: the robot may then say its view again
        body = "what do you think?" if ply == 8 else ""
        replies = h.move(101, "ann", move, body=body, game=game)
        robot_replies = [r for r in replies if f"{robot} played" in r.subject or f": {robot} played" in r.body]
        if not robot_replies:
            break
        said.append(robot_said(robot_replies[-1], robot))
        if ply == 8:
            assert said[-1] is not None, "after the person's comment the robot says its view"
    assert said and said[0] is not None and said[0].startswith(f"{robot} "), said
    last: str | None = None
    for i, words in enumerate(said):
        if words is None:
            continue
        if i != 8:
            assert words != last, f"the robot repeated {words!r} on its move {i + 1}: {said}"
        last = words
    assert said.count(None) >= 1, f"the robot had something new to say on every move: {said}"
