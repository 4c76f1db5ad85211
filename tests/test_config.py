"""Configuration: TOML + environment, validated with messages naming the key."""

from __future__ import annotations

import pytest

from pbmserv_terrace.config import ConfigError, load_config


def write(tmp_path, text: str):
    path = tmp_path / "pbmserv.toml"
    path.write_text(text)
    return path


def test_defaults_are_the_embedded_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = load_config(None, {})
    assert not cfg.uses_imap and not cfg.uses_smtp
    assert cfg.server.database_url == "sqlite+aiosqlite:///pbmserv.db"
    assert cfg.embedded.listen_port == 2525 and cfg.source == "built-in defaults"


def test_file_env_overrides_and_secret_files(tmp_path):
    secret = tmp_path / "imap.pw"
    secret.write_text("s3cret\n")
    path = write(
        tmp_path,
        f"""
[server]
address = "games@club.test"
database_url = "postgresql://pbm@db.test/pbm"
[imap]
host = "imap.club.test"
user = "games@club.test"
password_file = "{secret}"
[smtp]
host = "smtp.club.test"
user = "games@club.test"
""",
    )
    cfg = load_config(path, {"PBMSERV_SMTP_PORT": "2587", "PBMSERV_POLL_INTERVAL": "30"})
    assert cfg.imap.password == "s3cret" and cfg.imap.port == 993
    assert cfg.smtp.port == 2587 and cfg.server.poll_interval == 30.0
    assert cfg.server.database_url == "postgresql+asyncpg://pbm@db.test/pbm"


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("[server]\naddress = 'nope'\n", {}, "server.address"),
        ("[imapp]\nhost = 'x'\n", {}, "[imapp]: unknown section"),
        ("[imap]\nhots = 'x'\n", {}, "imap.hots: unknown key"),
        ("[server]\npoll_interval = 'soon'\n", {}, "server.poll_interval: expected float"),
        ("[imap]\nhost = 'x'\nuser = 'u'\n", {}, "smtp.host: set both"),
        ("[imap]\nhost = 'x'\n[smtp]\nhost = 'y'\n", {}, "imap.user: required"),
        ("[smtp]\ntls = 'maybe'\n", {}, "smtp.tls: must be ssl, starttls or none"),
        ("[timers]\nnagtime = 10\nforfeittime = 5\n", {}, "timers.forfeittime"),
        ("[server]\ndatabase_url = 'mysql://x/y'\n", {}, "server.database_url: unsupported"),
        ("x = [", {}, "not valid TOML"),
        ("", {"PBMSERV_EMBEDDED_LISTEN_PORT": "http"}, "PBMSERV_EMBEDDED_LISTEN_PORT (embedded.listen_port): expected int"),
        ("[imap]\npassword_file = '/nonexistent/pw'\n", {}, "imap.password_file: cannot read"),
    ],
)
def test_invalid_configs_name_the_key(tmp_path, text, env, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        load_config(write(tmp_path, text), env)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "none.toml", {})


def test_every_problem_of_a_config_is_reported_not_only_the_first(tmp_path):
    path = write(tmp_path, '[server]\naddress = "bad"\nconcurrency = 0\nbogus = 1\n[imap]\nport = "x"\n[nonsense]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    text = str(caught.value)
    assert text.startswith("3 problems in")
    assert "server.bogus: unknown key" in text and "imap.port: expected int" in text and "[nonsense]: unknown section" in text
    path = write(tmp_path, '[server]\naddress = "bad"\nconcurrency = 0\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    assert "server.address: 'bad' is not a mail address" in str(caught.value)
    assert "server.concurrency: must be between 1 and 64" in str(caught.value)
