"""Configuration: a TOML file, overridden by ``PBMSERV_*`` environment variables.

Every key has a default, so no file at all is the embedded default (SQLite in the
working directory, mail in on 127.0.0.1:2525, replies into ./maildirs).  Secrets can
come from files (``password_file``, ``secret_file``) or from systemd credentials
(``password_credential``, ``secret_credential``: a name in ``$CREDENTIALS_DIRECTORY``,
which ``LoadCredential=`` fills; outside the unit the ``*_file`` key is read instead).  :func:`load_config` validates
everything at start and raises :class:`ConfigError` naming the key and the problem.

Environment overrides: ``PBMSERV_<SECTION>_<KEY>`` (``PBMSERV_IMAP_HOST``), and for
the ``server`` section also ``PBMSERV_<KEY>`` (``PBMSERV_DATABASE_URL``,
``PBMSERV_ADDRESS``).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .configfile import DEFAULT_ADDRESS, config_file
from .configfile import DEFAULT_CONFIG_FILE as DEFAULT_CONFIG_FILE  # (re-exported)
from .lifecycle import LEVELS, LOG_FORMATS

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///pbmserv.db"
CREDENTIALS_ENV = "CREDENTIALS_DIRECTORY"
"""where systemd puts the unit's credentials (``LoadCredential=``)"""
STATE_ENV = "STATE_DIRECTORY"
"""the unit's ``StateDirectory=`` (systemd sets it)"""
ROTATED_TOKEN_NAME = "oauth2-refresh-token"  # noqa: S105 (a file name, not a secret)
"""the refresh token's file in the state directory"""


class ConfigError(ValueError):
    """A configuration problem; the message names the key."""


@dataclass
class ServerConfig:
    address: str = DEFAULT_ADDRESS
    """the server's own mail address (players mail commands here)"""
    name: str = "PBM Server"
    database_url: str = DEFAULT_DATABASE_URL
    poll_interval: float = 60.0
    """seconds between IMAP polls when the server lacks IDLE"""
    scheduler_interval: float = 3600.0
    """seconds between timer runs (nags, forfeits)"""
    rate_limit_per_minute: int = 60
    """commands one sender may mail per minute before being throttled"""
    secret: str = ""
    """server secret (HMAC key of the password cache); generated per run if empty"""
    secret_file: str = ""
    secret_credential: str = ""
    """the systemd credential holding ``secret`` (read from ``$CREDENTIALS_DIRECTORY``)"""
    state_directory: str = ""
    """where the server keeps state it changes besides the database (the OAuth2 refresh
    token a provider rotates); empty = ``$STATE_DIRECTORY`` (systemd's
    ``StateDirectory=``), else none"""
    log_level: str = "info"
    """debug, info, warning or error (``--log-level`` overrides it)"""
    log_format: str = "text"
    """text, or json: one JSON object a line (time, level, logger, message)"""
    health_port: int = 0
    """port of the /healthz and /metrics HTTP endpoint on 127.0.0.1; 0 = off"""
    health_outbox_stuck_minutes: float = 30.0
    """/healthz says the outbox is stuck (503) when a due reply has waited longer"""
    health_max_loop_lag: float = 5.0
    """/healthz says the event loop lags (503) when it was held longer at a stretch
    (seconds) in the last 10 seconds"""
    pid_file: str = ""
    """where ``serve`` writes its pid (``status`` finds it there); empty =
    ``pbmserv.pid`` in ``state_directory`` if one is set, else beside the config
    file, else in the current directory"""
    concurrency: int = 32
    """mails in their transactions at once (moves on different boards by different
    players); mails that may touch the same things always run in delivery order.
    The mails that are ready share a transaction (:mod:`.app.batching`), so under
    load this is also how large a batch (and on PostgreSQL a claim of the inbound
    queue: half of it) can grow: fewer transactions and statements a mail"""
    robot_workers: int = 1
    """worker processes computing the robot players' moves (``serve``; at least 1)"""
    review_nodes: int = 10_000
    """a game review's search per position (issue 42: the review mail after a finished
    game, computed by the robots' workers); 0 = no reviews"""
    review_game_nodes: int = 400_000
    """a game review's search for the whole game at most: a long game's positions get
    fewer nodes each (at least 200); 0 = no cap.  A review takes about 10 s of an
    engine worker for 400,000 nodes, in steps of one position each (0.1-0.5 s): a
    robot's move asked meanwhile waits for one step, not for the review"""
    bounce_threshold: int = 3
    """hard bounces of replies to one address, within ``bounce_window_days``, after
    which the address is marked bouncing: it gets no mail until its player writes
    again (``service.bounces``); 0 = never mark"""
    bounce_window_days: float = 30.0
    outbox_process: bool = True
    """``serve`` sends replies from a process of its own (on another core than the
    one handling mail); false: from the same process"""


@dataclass
class ImapConfig:
    host: str = ""
    port: int = 0
    user: str = ""
    password: str = ""
    password_file: str = ""
    password_credential: str = ""
    """the systemd credential holding the password"""
    tls: str = "ssl"
    """ssl (implicit TLS, port 993), starttls (port 143), or none"""
    ca_file: str = ""
    """PEM file of the CA to trust for TLS (a private mail host); empty = the system's"""
    allow_plaintext: bool = False
    """tls = "none" to a host that is not loopback (the password crosses the network)"""
    auth: str = "password"
    """password (LOGIN) or oauth2 (SASL XOAUTH2 with a token from [oauth2])"""
    inbox: str = "INBOX"
    processed_folder: str = "processed"
    failed_folder: str = "failed"
    idle_timeout: float = 25 * 60.0
    """re-issue IDLE before RFC 2177's 29 minutes"""
    fast_poll: float = 0.0
    """seconds between NOOPs used instead of IDLE (0 = use IDLE).  For the lowest
    latency on your own mail host: Dovecot delays IDLE notifications by ~0.5 s"""
    linger: float = 2.0
    """seconds to keep asking (NOOP every 0.05 s) after mail was handled, before
    IDLE: mail comes in bursts (replies to replies), and IDLE news can come late"""


@dataclass
class SmtpConfig:
    host: str = ""
    port: int = 0
    user: str = ""
    password: str = ""
    password_file: str = ""
    password_credential: str = ""
    """the systemd credential holding the password"""
    tls: str = "starttls"
    """ssl (implicit TLS, port 465), starttls (port 587), or none"""
    ca_file: str = ""
    """PEM file of the CA to trust for TLS (a private mail host); empty = the system's"""
    allow_plaintext: bool = False
    """tls = "none" to a host that is not loopback"""
    auth: str = "password"
    """password (AUTH PLAIN/LOGIN when user is set) or oauth2 (AUTH XOAUTH2)"""
    max_per_minute: int = 0
    """replies sent per minute at most (providers cap it); 0 = no limit.  Replies
    over the limit wait in the outbox, in order"""
    timeout: float = 30.0
    give_up_hours: float = 48.0
    """stop retrying a reply after this long"""
    connections: int = 4
    """SMTP connections sending at once (each recipient's replies stay in order)"""
    retry_base_seconds: float = 15.0
    """first retry after this long, doubling each time (at most an hour); also the
    first pause when the server answers 421/451/452 ("slow down")"""


@dataclass
class OAuth2Config:
    """The OAuth2 client used when imap.auth or smtp.auth is "oauth2"."""

    token_url: str = ""
    """the provider's token endpoint (refresh-token grant)"""
    device_url: str = ""
    """the device-authorization endpoint (RFC 8628), for `pbmserv-terrace oauth2 login`"""
    client_id: str = ""
    client_secret: str = ""
    client_secret_file: str = ""
    client_secret_credential: str = ""
    """the systemd credential holding the client secret"""
    refresh_token_file: str = ""
    """the refresh token (``oauth2 login`` writes it there when no state directory is
    set); read at each refresh when ``rotated_token_file`` has none"""
    refresh_token_credential: str = ""
    """the systemd credential holding the first refresh token (``LoadCredential=``)"""
    rotated_token_file: str = ""
    """where a refresh token is written when the provider rotates it (Microsoft 365:
    at every refresh) and by ``oauth2 login``, atomically, mode 0600; read first.
    Default: ``oauth2-refresh-token`` in the state directory when there is one, else
    ``refresh_token_file``"""
    scope: str = ""
    """space-separated scopes asked for at login (the provider's IMAP/SMTP scopes)"""
    refresh_margin: float = 300.0
    """seconds before an access token expires that a new one is fetched"""


@dataclass
class EmbeddedConfig:
    listen_host: str = "127.0.0.1"
    listen_port: int = 2525
    maildir_root: str = "maildirs"


@dataclass
class LmtpConfig:
    """``serve`` taking mail by LMTP from the local MTA (issue 43; deploy/postfix/)."""

    listen: str = ""
    """``unix:/path`` (or ``/path``) for a UNIX socket, or ``host:port``; empty = off"""
    socket_mode: str = "0660"
    """the UNIX socket's permissions (octal)"""
    socket_group: str = ""
    """the UNIX socket's group (e.g. ``postfix``, whose ``lmtp`` client connects); empty = serve's own"""

    @property
    def mode(self) -> int:
        return int(self.socket_mode, 8)


@dataclass
class TimerConfig:
    nagtime: float = 7.0
    """days without a move before a nag"""
    forfeittime: float = 21.0
    """days without a move before a forfeit"""
    vacation_days: float = 30.0
    """vacation days each player has a calendar year (issue 40 item 4): a vacation
    stops the clocks of all the player's boards"""


DEFAULT_WEB_LISTEN = "127.0.0.1:8080"


def parse_listen(value: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8080`` for IPv6) as (host, port); ValueError when it is not one."""
    host, sep, port = value.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(value)
    return host, int(port)


@functools.lru_cache(maxsize=16)
def _link_base(public_url: str, listen: str) -> str:
    """:attr:`WebConfig.link_base` of these settings (asked several times a board
    mail: parsing the address each time was 1 % of a move command)."""
    if public_url:
        return public_url.rstrip("/")
    if listen in ("", "off"):
        return ""
    host, port = parse_listen(listen)
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        return ""
    return f"http://{'[' + host.strip('[]') + ']' if ':' in host else host}:{port}"


@dataclass
class WebConfig:
    """The read-only web archive (issue 19), run by ``serve`` beside the mail loop or
    alone by ``pbmserv-terrace web``."""

    listen: str = ""
    """host:port to serve it on, or "off".  Unset: on at 127.0.0.1:8080 in the embedded
    default (no [imap]/[smtp]), off with real mail (an operator opens a port on purpose)"""
    public_url: str = ""
    """the archive's address as players reach it (https://games.example.org): board mails
    end with the board's URL and feed ids use it; empty = no links in mail"""

    @property
    def enabled(self) -> bool:
        return self.listen not in ("", "off")

    @property
    def link_base(self) -> str:
        """Where mails link the archive: ``public_url``; else, when the archive listens
        on a loopback address (the embedded default, whose players read their mail on
        this machine), that address; else nothing (an operator's public address is
        never guessed)."""
        return _link_base(self.public_url, self.listen)

    def address(self) -> tuple[str, int]:
        """(host, port) of ``listen`` (validated by :func:`load_config`)."""
        return parse_listen(self.listen)


@dataclass
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    imap: ImapConfig = field(default_factory=ImapConfig)
    smtp: SmtpConfig = field(default_factory=SmtpConfig)
    embedded: EmbeddedConfig = field(default_factory=EmbeddedConfig)
    lmtp: LmtpConfig = field(default_factory=LmtpConfig)
    timers: TimerConfig = field(default_factory=TimerConfig)
    oauth2: OAuth2Config = field(default_factory=OAuth2Config)
    web: WebConfig = field(default_factory=WebConfig)
    source: str = "built-in defaults"

    @property
    def uses_imap(self) -> bool:
        return bool(self.imap.host)

    @property
    def uses_smtp(self) -> bool:
        return bool(self.smtp.host)

    @property
    def inbound(self) -> str:
        """Where mail comes in (a key of ``app.transports.INBOUND``): ``imap`` when an
        IMAP host is configured, ``lmtp`` when ``[lmtp] listen`` is, else ``embedded``
        (the SMTP listener on loopback)."""
        return "imap" if self.uses_imap else "lmtp" if self.lmtp.listen else "embedded"

    @property
    def outbound(self) -> str:
        """Where replies go (a key of ``mail.delivery.OUTBOUND``): ``smtp`` when an SMTP
        host is configured, else ``maildir`` (local Maildirs)."""
        return "smtp" if self.uses_smtp else "maildir"

    @property
    def uses_oauth2(self) -> bool:
        return (self.uses_imap and self.imap.auth == "oauth2") or (self.uses_smtp and self.smtp.auth == "oauth2")


_SECTIONS = {
    "server": ServerConfig,
    "imap": ImapConfig,
    "smtp": SmtpConfig,
    "embedded": EmbeddedConfig,
    "lmtp": LmtpConfig,
    "timers": TimerConfig,
    "oauth2": OAuth2Config,
    "web": WebConfig,
}


def _coerce(key: str, value: Any, kind: type) -> Any:
    try:
        if kind is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError
            return bool(value)
        if kind is int:
            if isinstance(value, bool):
                raise ValueError
            return int(value)
        if kind is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if not isinstance(value, str | int | float):
            raise ValueError
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: expected {kind.__name__}, got {value!r}") from None


def _types(section_cls: type) -> dict[str, type]:
    hints = {"str": str, "int": int, "float": float, "bool": bool}
    return {f.name: hints[str(f.type)] for f in fields(section_cls)}


def normalise_url(url: str) -> str:
    """Accept the plain URLs an operator writes and pick the async driver:
    ``sqlite:///x.db`` → aiosqlite, ``postgresql://…`` → asyncpg.  (SQLAlchemy is
    imported here, not with this module: a command that reads no database, such as
    ``--help`` or ``handle`` passing a mail to ``serve``, never loads it.)"""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.drivername in ("sqlite", "sqlite+pysqlite"):
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    elif parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg2", "postgresql+psycopg"):
        parsed = parsed.set(drivername="postgresql+asyncpg")
    if parsed.drivername not in ("sqlite+aiosqlite", "postgresql+asyncpg"):
        raise ValueError(
            f"unsupported database URL scheme {parsed.drivername!r}: use sqlite:///FILE or postgresql://USER@HOST/DB"
        )
    return parsed.render_as_string(hide_password=False)


def load_config(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Read ``path`` (or ./pbmserv.toml when present), apply the environment, validate."""
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    source = "built-in defaults"
    path = config_file(path, env)
    if path is not None:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {p} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: not valid TOML: {exc}") from None
        source = str(p)
    cfg = Config(source=source)
    problems: list[str] = []  # every one is reported, not only the first
    for name, section in data.items():
        if name not in _SECTIONS:
            problems.append(f"[{name}]: unknown section; sections are {', '.join(_SECTIONS)}")
            continue
        if not isinstance(section, dict):
            problems.append(f"{name}: must be a [section] table")
            continue
        types = _types(_SECTIONS[name])
        target = getattr(cfg, name)
        for key, value in section.items():
            if key not in types:
                problems.append(f"{name}.{key}: unknown key; keys of [{name}] are {', '.join(types)}")
                continue
            try:
                setattr(target, key, _coerce(f"{name}.{key}", value, types[key]))
            except ConfigError as exc:
                problems.append(str(exc))
    for name, section_cls in _SECTIONS.items():
        target = getattr(cfg, name)
        for key, kind in _types(section_cls).items():
            for var in (f"PBMSERV_{name.upper()}_{key.upper()}", f"PBMSERV_{key.upper()}" if name == "server" else ""):
                if var and var in env:
                    try:
                        setattr(target, key, _coerce(f"{var} ({name}.{key})", env[var], kind))
                    except ConfigError as exc:
                        problems.append(str(exc))
    _read_secret_files(cfg, problems, env)
    _resolve_state(cfg, env)
    if not problems:  # the checks of values once every value could be read
        _validate(cfg, problems)
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"{len(problems)} problems in {source}:\n" + "\n".join(f"  - {p}" for p in problems))
    return cfg


def credential_path(name: str, environ: Mapping[str, str]) -> Path | None:
    """The file of the systemd credential ``name``, or None outside a unit with credentials."""
    directory = environ.get(CREDENTIALS_ENV, "")
    return Path(directory) / name if directory else None


def _bad_credential_name(name: str) -> bool:
    return "/" in name or name in (".", "..")


def _read_secret_files(cfg: Config, problems: list[str], env: Mapping[str, str]) -> None:
    """Secrets from their credential (under systemd), else their file, else the value."""
    for section, key in (("imap", "password"), ("smtp", "password"), ("server", "secret"), ("oauth2", "client_secret")):
        target = getattr(cfg, section)
        name = getattr(target, f"{key}_credential")
        if name:
            where = credential_path(name, env)
            if _bad_credential_name(name):
                problems.append(f"{section}.{key}_credential: {name!r} is not a credential name (no '/')")
                continue
            if where is not None:
                try:
                    setattr(target, key, where.read_text(encoding="utf-8").strip())
                except OSError as exc:
                    problems.append(f"{section}.{key}_credential: cannot read {where}: {exc.strerror} "
                                    f"(LoadCredential={name}:... in the unit?)")  # fmt: skip
                continue
            # not under systemd (an operator's own command): the file or the value, as without it
        file_key = f"{key}_file"
        path = getattr(target, file_key)
        if path:
            try:
                setattr(target, key, Path(path).read_text(encoding="utf-8").strip())
            except OSError as exc:
                problems.append(f"{section}.{file_key}: cannot read {path}: {exc.strerror}")


def _resolve_state(cfg: Config, env: Mapping[str, str]) -> None:
    """The state directory (else systemd's ``$STATE_DIRECTORY``, its first entry) and
    where a rotated refresh token goes (there, else ``refresh_token_file``, as before)."""
    if not cfg.server.state_directory:
        cfg.server.state_directory = env.get(STATE_ENV, "").split(":")[0]
    oauth2 = cfg.oauth2
    if not oauth2.rotated_token_file:
        if cfg.server.state_directory:
            oauth2.rotated_token_file = str(Path(cfg.server.state_directory) / ROTATED_TOKEN_NAME)
        else:
            oauth2.rotated_token_file = oauth2.refresh_token_file


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (no network between us and it)."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _validate_mail(cfg: Config, problems: list[str]) -> None:
    """TLS only switched off where nothing can listen in, a known auth method,
    and an OAuth2 client when one is asked for."""
    for section in ("imap", "smtp"):
        target = getattr(cfg, section)
        if not target.host:
            continue
        if target.tls == "none" and not is_loopback(target.host) and not target.allow_plaintext:
            problems.append(
                f"{section}.tls: 'none' sends the password in clear to {target.host}; use ssl or starttls, "
                f"or set {section}.allow_plaintext = true if the network to it is trusted"
            )
        if target.auth not in ("password", "oauth2"):
            problems.append(f"{section}.auth: must be password or oauth2, not {target.auth!r}")
        if target.auth == "oauth2" and not target.user:
            problems.append(f"{section}.user: required with {section}.auth = 'oauth2' (the account's address)")
    if cfg.smtp.max_per_minute < 0:
        problems.append("smtp.max_per_minute: must be 0 (no limit) or more")
    if cfg.uses_oauth2:
        for key in ("token_url", "client_id"):
            if not getattr(cfg.oauth2, key):
                problems.append(f"oauth2.{key}: required when imap.auth or smtp.auth is 'oauth2'")
        if not (cfg.oauth2.refresh_token_file or cfg.oauth2.refresh_token_credential or cfg.oauth2.rotated_token_file):
            problems.append("oauth2.refresh_token_file: required when imap.auth or smtp.auth is 'oauth2' "
                            "(or refresh_token_credential, or a server.state_directory)")  # fmt: skip
    if cfg.oauth2.refresh_token_credential and _bad_credential_name(cfg.oauth2.refresh_token_credential):
        problems.append(f"oauth2.refresh_token_credential: {cfg.oauth2.refresh_token_credential!r} is not a credential name")
    if cfg.oauth2.refresh_margin < 0:
        problems.append("oauth2.refresh_margin: must be 0 or more seconds")


def _validate(cfg: Config, problems: list[str]) -> None:
    if "@" not in cfg.server.address or any(c in cfg.server.address for c in " \r\n<>"):
        problems.append(f"server.address: {cfg.server.address!r} is not a mail address")
    try:
        cfg.server.database_url = normalise_url(cfg.server.database_url)
    except Exception as exc:
        problems.append(f"server.database_url: {exc}")
    if cfg.server.bounce_threshold < 0:
        problems.append("server.bounce_threshold: must be 0 (never mark) or more")
    if cfg.server.bounce_window_days <= 0:
        problems.append("server.bounce_window_days: must be more than 0")
    for key in ("poll_interval", "scheduler_interval", "health_max_loop_lag"):
        if getattr(cfg.server, key) <= 0:
            problems.append(f"server.{key}: must be more than 0 seconds")
    if cfg.server.health_outbox_stuck_minutes <= 0:
        problems.append("server.health_outbox_stuck_minutes: must be more than 0 minutes")
    if cfg.server.log_level.lower() not in LEVELS:
        problems.append(f"server.log_level: must be one of {', '.join(LEVELS)}, not {cfg.server.log_level!r}")
    if cfg.server.log_format.lower() not in LOG_FORMATS:
        problems.append(f"server.log_format: must be text or json, not {cfg.server.log_format!r}")
    if not 1 <= cfg.smtp.connections <= 32:
        problems.append("smtp.connections: must be between 1 and 32")
    if not 1 <= cfg.server.concurrency <= 64:
        problems.append("server.concurrency: must be between 1 and 64")
    if cfg.server.rate_limit_per_minute < 1:
        problems.append("server.rate_limit_per_minute: must be at least 1")
    for section, defaults in (
        ("imap", {"ssl": 993, "starttls": 143, "none": 143}),
        ("smtp", {"ssl": 465, "starttls": 587, "none": 25}),
    ):
        target = getattr(cfg, section)
        if target.tls not in defaults:
            problems.append(f"{section}.tls: must be ssl, starttls or none, not {target.tls!r}")
        if target.host:
            if not target.port:
                target.port = defaults[target.tls]
            if section == "imap" and not target.user:
                problems.append("imap.user: required when imap.host is set")
        if not 0 <= target.port <= 65535:
            problems.append(f"{section}.port: {target.port} is not a port number")
    if cfg.uses_imap and not cfg.uses_smtp:
        problems.append("smtp.host: set both imap.host and smtp.host for real mail, or neither for the embedded default")
    # smtp without imap is pipe mode: mail arrives through `handle`, replies leave over SMTP
    for section in ("imap", "smtp"):
        ca = getattr(cfg, section).ca_file
        if ca and not Path(ca).is_file():
            problems.append(f"{section}.ca_file: {ca} is not a file")
    _validate_mail(cfg, problems)
    if not 0 <= cfg.imap.linger <= 60:
        problems.append("imap.linger: must be between 0 and 60 seconds")
    if cfg.imap.fast_poll < 0:
        problems.append("imap.fast_poll: must be 0 (use IDLE) or a number of seconds")
    _validate_lmtp(cfg, problems)
    if not 0 < cfg.embedded.listen_port <= 65535:
        problems.append(f"embedded.listen_port: {cfg.embedded.listen_port} is not a port number")
    if cfg.timers.nagtime <= 0 or cfg.timers.forfeittime <= 0:
        problems.append("timers.nagtime/forfeittime: must be more than 0 days")
    if not 0 <= cfg.timers.vacation_days <= 366:
        problems.append("timers.vacation_days: must be between 0 and 366")
    if cfg.timers.forfeittime < cfg.timers.nagtime:
        problems.append("timers.forfeittime: must not be shorter than timers.nagtime")
    _validate_web(cfg, problems)


def _validate_lmtp(cfg: Config, problems: list[str]) -> None:
    """``[lmtp] listen``: a UNIX socket's absolute path or host:port; not beside IMAP
    (``serve`` takes mail one way)."""
    lmtp = cfg.lmtp
    lmtp.listen = lmtp.listen.strip()
    if not lmtp.listen:
        return
    if cfg.uses_imap:
        problems.append("lmtp.listen: mail comes in one way; set imap.host or lmtp.listen, not both")
    path = lmtp.listen.removeprefix("unix:")
    if lmtp.listen.startswith("unix:") or path.startswith("/"):
        if not path.startswith("/"):
            problems.append(f"lmtp.listen: {lmtp.listen!r}: a UNIX socket needs an absolute path (unix:/run/pbmserv/lmtp)")
    else:
        try:
            parse_listen(lmtp.listen)
        except ValueError:
            problems.append(f"lmtp.listen: {lmtp.listen!r} is not unix:/path or host:port (e.g. 127.0.0.1:8024)")
    try:
        if not 0 <= lmtp.mode <= 0o777:
            raise ValueError
    except ValueError:
        problems.append(f"lmtp.socket_mode: {lmtp.socket_mode!r} is not an octal mode such as 0660")


def _validate_web(cfg: Config, problems: list[str]) -> None:
    """``web.listen`` resolved (unset: on in the embedded default, off with real mail) and
    checked; ``web.public_url`` an http(s) address without a trailing slash."""
    web = cfg.web
    web.listen = web.listen.strip()
    if web.listen.lower() in ("off", "none", "false", "no"):
        web.listen = "off"
    if not web.listen:
        web.listen = "off" if cfg.uses_imap or cfg.uses_smtp else DEFAULT_WEB_LISTEN
    if web.listen != "off":
        try:
            parse_listen(web.listen)
        except ValueError:
            problems.append(f"web.listen: {web.listen!r} is not host:port (e.g. {DEFAULT_WEB_LISTEN}) or off")
    web.public_url = web.public_url.strip().rstrip("/")
    if web.public_url and not (web.public_url.startswith(("http://", "https://")) and web.public_url.split("://", 1)[1]):
        problems.append(f"web.public_url: {web.public_url!r} is not an http:// or https:// address")
