"""The OAuth2 refresh token under systemd (issue 43 part 1): the first one from a
credential, a rotated one written into the state directory (atomically, 0600) and
read from there; a write that fails is a loud error, the token is kept in memory,
used, shown on /healthz and /metrics, and written once the directory is writable;
older configurations (refresh_token_file alone) work as before."""

from __future__ import annotations

import asyncio
import json
import logging
import stat
from pathlib import Path
from typing import Any

import pytest

from pbmserv_terrace.app.health import HealthEndpoint, Metrics
from pbmserv_terrace.config import ConfigError, load_config
from pbmserv_terrace.mail.oauth2 import SAVE_RETRY, TokenSource, token_source, unsaved_tokens
from pbmserv_terrace.store import Database

OAUTH2 = """
[imap]
host = "outlook.office365.com"
user = "club@example.org"
auth = "oauth2"
[smtp]
host = "smtp.office365.com"
user = "club@example.org"
auth = "oauth2"
[oauth2]
token_url = "https://login.example/token"
client_id = "client"
"""


class Provider:
    """A token endpoint that rotates the refresh token at every refresh (Microsoft 365)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    def post(self, url: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        self.sent.append(form["refresh_token"])
        n = len(self.sent)
        return 200, {"access_token": f"at-{n}", "expires_in": 3600, "refresh_token": f"rt-{n + 1}"}


def config(tmp_path: Path, extra: str, env: dict[str, str]) -> Any:
    path = tmp_path / "pbmserv.toml"
    path.write_text(OAUTH2 + extra)
    return load_config(path, environ=env)


def refresh(tokens: TokenSource, provider: Provider) -> None:
    provider.now += 4000  # past renewal
    asyncio.run(tokens.access())


def test_first_token_from_a_credential_rotated_ones_into_the_state_directory(tmp_path):
    creds, state = tmp_path / "creds", tmp_path / "state"
    creds.mkdir()
    state.mkdir()
    (creds / "oauth2-refresh-token").write_text("rt-1\n")
    (creds / "oauth2-client-secret").write_text("s3cret\n")
    env = {"CREDENTIALS_DIRECTORY": str(creds), "STATE_DIRECTORY": str(state)}
    cfg = config(
        tmp_path, 'refresh_token_credential = "oauth2-refresh-token"\nclient_secret_credential = "oauth2-client-secret"\n', env
    )
    assert cfg.oauth2.client_secret == "s3cret" and cfg.server.state_directory == str(state)
    assert cfg.oauth2.rotated_token_file == str(state / "oauth2-refresh-token")
    provider = Provider()
    tokens = TokenSource(cfg.oauth2, clock=provider.clock, post=provider.post)
    monkey = pytest.MonkeyPatch()
    monkey.setenv("CREDENTIALS_DIRECTORY", str(creds))
    try:
        refresh(tokens, provider)
        stored = state / "oauth2-refresh-token"
        assert stored.read_text() == "rt-2\n" and stat.S_IMODE(stored.stat().st_mode) == 0o600
        refresh(tokens, provider)
        assert provider.sent == ["rt-1", "rt-2"] and stored.read_text() == "rt-3\n"
        assert (creds / "oauth2-refresh-token").read_text() == "rt-1\n"  # the credential is never written
        assert sorted(p.name for p in state.iterdir()) == ["oauth2-refresh-token"]  # no temporary file left
    finally:
        monkey.undo()


def test_a_failed_write_is_loud_and_the_token_is_kept_and_written_later(tmp_path, caplog):
    (tmp_path / "refresh").write_text("rt-1\n")
    state = tmp_path / "state"
    state.write_text("a file where the directory should be: no token can be written under it")
    cfg = config(tmp_path, f'refresh_token_file = "{tmp_path}/refresh"\n', {"STATE_DIRECTORY": str(state)})
    provider = Provider()
    tokens = token_source(cfg.oauth2)  # (the process's source: /healthz looks at those)
    tokens.clock, tokens.post = provider.clock, provider.post
    with caplog.at_level(logging.WARNING, logger="pbmserv.oauth2"):
        refresh(tokens, provider)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and str(state / "oauth2-refresh-token") in errors[0].getMessage()
    assert "rt-2" not in caplog.text  # never the token itself
    assert [where for where in unsaved_tokens() if str(state) in where]

    async def health() -> tuple[dict[str, Any], str]:
        db = Database(f"sqlite+aiosqlite:///{tmp_path}/h.db")
        await db.migrate()
        endpoint = HealthEndpoint(db, Metrics(), "imap")
        await endpoint.start("127.0.0.1", 0)
        try:
            answers = []
            for path in ("/healthz", "/metrics"):
                reader, writer = await asyncio.open_connection("127.0.0.1", endpoint.port)
                writer.write(f"GET {path} HTTP/1.0\r\n\r\n".encode())
                answers.append((await reader.read()).partition(b"\r\n\r\n")[2].decode())
                writer.close()
            return json.loads(answers[0]), answers[1]
        finally:
            endpoint.close()
            await db.close()

    info, metrics = asyncio.run(health())
    assert info["status"] == "degraded" and any(str(state) in w for w in info["oauth2_token_unsaved"])
    assert "pbmserv_oauth2_token_unsaved 1.0" in metrics
    refresh(tokens, provider)
    assert provider.sent == ["rt-1", "rt-2"]  # the kept token, not the old file's
    state.unlink()
    state.mkdir()  # the operator mends it
    provider.now += SAVE_RETRY
    asyncio.run(tokens.access())
    assert (state / "oauth2-refresh-token").read_text() == "rt-3\n" and tokens.unsaved is None
    assert not [where for where in unsaved_tokens() if str(state) in where]


def test_an_old_config_rotates_into_its_refresh_token_file(tmp_path):
    (tmp_path / "refresh").write_text("rt-1\n")
    cfg = config(tmp_path, f'refresh_token_file = "{tmp_path}/refresh"\n', {})
    assert cfg.server.state_directory == "" and cfg.oauth2.rotated_token_file == str(tmp_path / "refresh")
    provider = Provider()
    tokens = TokenSource(cfg.oauth2, clock=provider.clock, post=provider.post)
    refresh(tokens, provider)
    refresh(tokens, provider)
    assert provider.sent == ["rt-1", "rt-2"] and (tmp_path / "refresh").read_text() == "rt-3\n"


def test_passwords_from_credentials_else_their_files(tmp_path):
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "imap-password").write_text("from-credential\n")
    (tmp_path / "imap-password").write_text("from-file\n")
    path = tmp_path / "pbmserv.toml"
    path.write_text(f'[server]\nlog_level = "debug"\nlog_format = "json"\n[imap]\nhost = "imap.example.org"\nuser = "u"\n'
                    f'password_credential = "imap-password"\npassword_file = "{tmp_path}/imap-password"\n'
                    '[smtp]\nhost = "smtp.example.org"\n')  # fmt: skip
    assert load_config(path, environ={"CREDENTIALS_DIRECTORY": str(creds)}).imap.password == "from-credential"
    assert load_config(path, environ={}).imap.password == "from-file"  # an operator's command outside the unit
    (creds / "imap-password").unlink()
    with pytest.raises(ConfigError, match=r"imap\.password_credential: cannot read .*LoadCredential=imap-password"):
        load_config(path, environ={"CREDENTIALS_DIRECTORY": str(creds)})
    with pytest.raises(ConfigError, match=r"server\.log_level: must be one of debug"):
        load_config(path, environ={"PBMSERV_LOG_LEVEL": "loud"})
    with pytest.raises(ConfigError, match=r"server\.log_format: must be text or json"):
        load_config(path, environ={"PBMSERV_SERVER_LOG_FORMAT": "xml"})
