"""A throwaway Postfix on 127.0.0.1: the MTA in front of a test Dovecot.

``PostfixServer`` runs a private Postfix instance (``postfix -c DIR start``) whose
config, queue and data directories live in a temporary directory; the system's own
instance and ``/etc/postfix`` are never touched.  It listens on two free ports of
127.0.0.1: ``smtp_port`` takes mail for the test domains as port 25 would (no
AUTH, from ``mynetworks`` only), ``submission_port`` takes mail from authenticated
clients only (SASL through Dovecot's auth service, ``smtpd_sasl_type = dovecot``,
offering what Dovecot offers: XOAUTH2 and OAUTHBEARER too when that Dovecot has an
``oauth2`` passdb; no TLS: loopback).  Mail for the virtual domains goes to
Dovecot over LMTP (``virtual_transport``), with ``recipient_delimiter = +`` so
``user+key@`` is delivered to ``user@``; ``transports`` sends chosen addresses
elsewhere (``transport_maps``: the game address to ``serve``'s LMTP socket, as
deploy/postfix/README.md does; ``user+key@`` follows ``user@``).  No DNS, no relayhost, no local delivery; retries every
couple of seconds so a stopped instance's queue flushes quickly after a start.

Needs the Debian package ``postfix`` (its ``postfix`` user and ``postdrop`` group)
and root.  When Postfix cannot start this raises :class:`PostfixUnavailable` with
the tail of its log (the tests fail, they never skip).
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import smtplib
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from .postgres import free_port


class PostfixUnavailable(RuntimeError):
    pass


MAIN_CF = """\
compatibility_level = 3.6
queue_directory = {base}/queue
data_directory = {base}/data
mail_owner = postfix
setgid_group = postdrop
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
myhostname = {hostname}
mydomain = {hostname}
myorigin = $myhostname
mydestination =
local_recipient_maps =
local_transport = error:5.1.1 no local delivery in the test MTA
alias_maps =
alias_database =
relayhost =
relay_domains =
mynetworks = 127.0.0.0/8
smtp_dns_support_level = disabled
smtp_host_lookup = native
lmtp_host_lookup = native
smtpd_peername_lookup = no
virtual_mailbox_domains = {domains}
virtual_mailbox_maps = texthash:{base}/conf/vmailbox
virtual_transport = lmtp:inet:127.0.0.1:{lmtp_port}
transport_maps = texthash:{base}/conf/transport
recipient_delimiter = +
smtpd_relay_restrictions = permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination
smtpd_sasl_type = dovecot
smtpd_sasl_path = {sasl_path}
smtpd_sasl_auth_enable = no
smtpd_tls_security_level = none
smtp_tls_security_level = none
lmtp_tls_security_level = none
queue_run_delay = {retry}s
minimal_backoff_time = {retry}s
maximal_backoff_time = {max_retry}s
smtpd_error_sleep_time = 0
smtpd_soft_error_limit = 1000
smtpd_hard_error_limit = 1000
smtpd_client_connection_count_limit = 0
smtputf8_enable = no
biff = no
maillog_file = {base}/log/postfix.log
maillog_file_prefixes = {base}
"""

MASTER_CF = """\
127.0.0.1:{smtp_port} inet n - n - - smtpd
127.0.0.1:{submission_port} inet n - n - - smtpd
  -o syslog_name=postfix/submission
  -o smtpd_sasl_auth_enable=yes
  -o smtpd_client_restrictions=permit_sasl_authenticated,reject
  -o smtpd_relay_restrictions=permit_sasl_authenticated,reject
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""


class PostfixServer:
    """A private Postfix delivering the test domains to Dovecot's LMTP port.

    ``mailboxes`` are the addresses that exist (``virtual_mailbox_maps``: other
    recipients in ``domains`` are refused at RCPT); ``sasl_port`` is Dovecot's auth
    listener (:class:`.dovecot.DovecotServer` with ``auth_listener=True``) and
    enables the submission port; ``retry`` is Postfix's queue run delay and
    shortest backoff in seconds.

    :meth:`start` starts it (the first time it writes the instance), :meth:`stop`
    stops it and keeps its queue, :meth:`pause` stops it for a while and starts it
    again; leaving the ``with`` block stops it and removes the directory."""

    def __init__(
        self,
        lmtp_port: int,
        *,
        domains: list[str],
        mailboxes: list[str],
        sasl_port: int = 0,
        retry: int = 2,
        hostname: str = "mta.test",
        transports: dict[str, str] | None = None,
        chroot_lmtp: bool = False,
    ) -> None:
        self.lmtp_port, self.sasl_port = lmtp_port, sasl_port
        self.transports = dict(transports or {})
        """address → Postfix transport (``lmtp:unix:/path``), before ``virtual_transport``"""
        self.chroot_lmtp = chroot_lmtp
        """run the ``lmtp`` client chrooted in the queue directory, as Debian's master.cf does
        (a ``lmtp:unix:`` path is then relative to the queue directory)"""
        self.domains, self.mailboxes = list(domains), list(mailboxes)
        self.retry, self.hostname = retry, hostname
        self.base: Path | None = None
        self.smtp_port = 0
        self.submission_port = 0
        self.running = False
        self.binary = shutil.which("postfix") or "/usr/sbin/postfix"

    # ------------------------------------------------------------------ setup
    def _prepare(self) -> Path:
        if not Path(self.binary).exists():
            raise PostfixUnavailable("postfix is not installed (Debian: apt-get install postfix)")
        if os.geteuid() != 0:
            raise PostfixUnavailable("a private Postfix instance needs root (its daemons run as the postfix user)")
        try:
            owner = pwd.getpwnam("postfix")
            grp.getgrnam("postdrop")
        except KeyError as exc:
            raise PostfixUnavailable(
                f"the postfix user or postdrop group is missing ({exc}); install the postfix package"
            ) from exc
        base = Path(tempfile.mkdtemp(prefix="pbmserv-postfix-"))
        os.chmod(base, 0o755)
        for sub in ("conf", "queue", "data", "log"):
            (base / sub).mkdir(mode=0o755)
        os.chown(base / "data", owner.pw_uid, owner.pw_gid)
        self.smtp_port = free_port()
        self.submission_port = free_port() if self.sasl_port else 0
        sasl_path = f"inet:127.0.0.1:{self.sasl_port}" if self.sasl_port else ""
        (base / "conf" / "main.cf").write_text(
            MAIN_CF.format(
                base=base,
                hostname=self.hostname,
                domains=" ".join(self.domains),
                lmtp_port=self.lmtp_port,
                sasl_path=sasl_path,
                retry=self.retry,
                max_retry=2 * self.retry,
            )
        )
        master = MASTER_CF.format(smtp_port=self.smtp_port, submission_port=self.submission_port)
        if self.chroot_lmtp:
            master = master.replace("lmtp      unix  -       -       n", "lmtp      unix  -       -       y")
        if not self.sasl_port:  # no SASL: no submission service
            lines = master.splitlines()
            master = "\n".join([lines[0], *lines[6:]]) + "\n"
        (base / "conf" / "master.cf").write_text(master)
        (base / "conf" / "transport").write_text("".join(f"{a.lower()} {t}\n" for a, t in self.transports.items()))
        (base / "conf" / "vmailbox").write_text("".join(f"{m.lower()} ok\n" for m in self.mailboxes))
        return base

    def _postfix(self, action: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        assert self.base is not None
        return subprocess.run([self.binary, "-c", str(self.base / "conf"), action],
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip

    def log(self) -> str:
        if self.base is None:
            return ""
        path = self.base / "log" / "postfix.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _fail(self, what: str, out: subprocess.CompletedProcess[str] | None = None) -> PostfixUnavailable:
        said = f"\n{out.stdout}{out.stderr}" if out is not None else ""
        return PostfixUnavailable(f"postfix {what}{said}\n--- postfix.log (tail) ---\n{self.log()[-3000:]}")

    def _ports(self) -> list[int]:
        return [p for p in (self.smtp_port, self.submission_port) if p]

    @staticmethod
    def _answers(port: int) -> bool:
        try:
            with smtplib.SMTP("127.0.0.1", port, timeout=2) as probe:
                return probe.ehlo()[0] == 250
        except (OSError, smtplib.SMTPException):
            return False

    def _master_pid(self) -> int:
        assert self.base is not None
        try:
            return int((self.base / "queue" / "pid" / "master.pid").read_text().strip())
        except (OSError, ValueError):
            return 0

    @staticmethod
    def _alive(pid: int) -> bool:
        """Running (a zombie is not: a container's init may never reap it)."""
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "?")
        return state not in ("Z", "X")

    # ---------------------------------------------------------------- control
    def start(self) -> PostfixServer:
        """Start the instance and wait until both ports answer EHLO."""
        if self.base is None:
            self.base = self._prepare()
        out = self._postfix("start")
        if out.returncode != 0:
            raise self._fail(f"start failed (exit {out.returncode})", out)
        deadline = time.time() + 30
        while time.time() < deadline:
            if all(self._answers(p) for p in self._ports()):
                self.running = True
                return self
            time.sleep(0.1)
        raise self._fail(f"did not answer on 127.0.0.1:{self._ports()} within 30 s")

    def stop(self) -> None:
        """Stop the instance (mail in its queue stays there for the next start)."""
        if self.base is None or not self.running:
            return
        pid = self._master_pid()
        out = self._postfix("stop")
        if out.returncode != 0:
            raise self._fail(f"stop failed (exit {out.returncode})", out)
        deadline = time.time() + 30
        while time.time() < deadline:
            if not (pid and self._alive(pid)) and not any(self._answers(p) for p in self._ports()):
                self.running = False
                return
            time.sleep(0.1)
        raise self._fail("did not stop within 30 s")

    def pause(self, seconds: float) -> None:
        """Stop, wait ``seconds``, start again (an MTA outage)."""
        self.stop()
        time.sleep(seconds)
        self.start()

    def close(self) -> None:
        """Stop (abort if need be) and remove the instance's directory."""
        if self.base is None:
            return
        try:
            self.stop()
        except PostfixUnavailable:
            self._postfix("abort")
        shutil.rmtree(self.base, ignore_errors=True)
        self.base = None

    def __enter__(self) -> PostfixServer:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------ client side
    def send(self, sender: str, recipient: str, data: bytes) -> None:
        """A mail from the outside world to port 25 (as a player's provider sends)."""
        with smtplib.SMTP("127.0.0.1", self.smtp_port, timeout=30) as smtp:
            smtp.sendmail(sender, [recipient], data)

    def queue_size(self) -> int:
        """Messages in the instance's queue (``postqueue -j``: one line each)."""
        assert self.base is not None
        out = subprocess.run(["postqueue", "-c", str(self.base / "conf"), "-j"], capture_output=True, text=True, timeout=30)
        return len([line for line in out.stdout.splitlines() if line.strip()])
