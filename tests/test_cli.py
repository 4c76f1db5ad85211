"""The command line entry points, run as a user runs them (subprocesses)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pbmserv_terrace.rules import render_board, setup_tpn, start_position


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


def test_board_prints_only_the_diagram():
    out = run("board", "--position", setup_tpn("4p"))
    assert out.returncode == 0
    assert out.stdout == render_board(start_position("4p")) + "\n"


def test_board_bad_position_is_a_clear_error():
    out = run("board", "--position", "DDCC/xx 1")
    assert out.returncode == 2
    assert "error:" in out.stderr and "Traceback" not in out.stderr
