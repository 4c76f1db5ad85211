"""``--config FILE`` wherever an operator types it (issue 43 part 7): before the
command's name, after it, and after an admin or oauth2 sub-command's, for every
command; the value typed last wins, and a command without it reads the default."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pbmserv_terrace.cli.main import build_parser

EXTRA = {
    ("perft",): ["--depth", "1"],
    ("send",): ["--from", "a@b.test", "help"],
    ("inbox",): ["a@b.test"],
    ("admin", "game"): ["terrace", "101"],
    ("admin", "user"): ["ann"],
    ("admin", "reset-password"): ["ann"],
    ("admin", "remove"): ["terrace", "101"],
    ("admin", "export"): ["terrace", "101", "out"],
    ("admin", "backup"): ["f"],
    ("admin", "restore"): ["f"],
}
"""the arguments a command needs besides --config"""


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path the parser knows (admin games, oauth2 login, serve, ...)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # (argparse's own names)
    if not subs:
        return [path]
    return [found for name, child in subs[0].choices.items() for found in commands(child, (*path, name))]


def test_every_command_takes_config_before_and_after_its_name():
    parser = build_parser()
    paths = commands(parser)
    assert ("admin", "games") in paths and ("oauth2", "login") in paths and ("serve",) in paths and len(paths) > 20
    for path in paths:
        extra = EXTRA.get(path, [])
        spots = [["--config", "x.toml", *path, *extra], [*path, *extra, "--config", "x.toml"]]
        if len(path) == 2:
            spots.append([path[0], "--config", "x.toml", path[1], *extra])
        for argv in spots:
            assert parser.parse_args(argv).config == "x.toml", argv
        assert parser.parse_args([*path, *extra]).config is None, path
        assert parser.parse_args(["--config", "a.toml", *path, *extra, "--config", "b.toml"]).config == "b.toml", path


@pytest.mark.parametrize("where", ["before", "after"])
def test_admin_games_with_the_config_from_another_directory(tmp_path: Path, where: str):
    home, elsewhere = tmp_path / "srv", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    config = home / "pbmserv.toml"
    config.write_text(f'[server]\ndatabase_url = "sqlite:///{home}/pbm.db"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBMSERV_")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pbmserv_terrace", *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    migrated = cli("migrate", "--config", str(config))
    assert migrated.returncode == 0, migrated.stderr
    argv = ["--config", str(config), "admin", "games"] if where == "before" else ["admin", "games", "--config", str(config)]
    out = cli(*argv)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(no boards)", out.stdout
    assert not (elsewhere / "pbmserv.db").exists()  # the configured database, not one in the current directory
