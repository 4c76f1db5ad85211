"""A throwaway certificate authority for the TLS tests (``openssl`` command line).

A test makes a :class:`TestCA`, issues a server certificate for the names the
test wants (``IP:127.0.0.1``, or deliberately a wrong one), gives the servers the
certificate and the client ``ca.cert`` as its ``ca_file``.  Nothing here is
trusted by the system, so a client without ``ca_file`` must refuse these servers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path


class CertificatesUnavailable(RuntimeError):
    pass


def _openssl(*args: str, cwd: Path) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise CertificatesUnavailable("openssl is not installed (Debian: apt-get install openssl)")
    done = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise CertificatesUnavailable(f"openssl {args[0]} failed: {done.stderr.strip()}")


class TestCA:
    """A CA certificate and key in a directory of their own (``dir``)."""

    __test__ = False  # not a pytest test class

    def __init__(self, name: str = "pbmserv test CA", directory: Path | None = None) -> None:
        self.dir = directory or Path(tempfile.mkdtemp(prefix="pbmserv-ca-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cert = self.dir / "ca.pem"
        self.key = self.dir / "ca.key"
        self._serial = 0
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(self.key), "-out", str(self.cert),
                 "-days", "2", "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=self.dir)  # fmt: skip

    def issue(self, names: list[str], stem: str = "server") -> tuple[Path, Path]:
        """A server certificate for ``names`` (``IP:127.0.0.1``, ``DNS:mail.test``)
        signed by this CA: (certificate PEM, key PEM), readable by every user
        (Dovecot reads them as root, aiosmtpd in the test process)."""
        self._serial += 1
        cert, key, csr = self.dir / f"{stem}.pem", self.dir / f"{stem}.key", self.dir / f"{stem}.csr"
        ext = self.dir / f"{stem}.ext"
        ext.write_text(f"subjectAltName={','.join(names)}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        first = names[0].split(":", 1)[1]
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={first}", cwd=self.dir
        )
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(self.cert), "-CAkey", str(self.key), "-set_serial",
                 str(1000 + self._serial), "-days", "2", "-extfile", str(ext), "-out", str(cert), cwd=self.dir)  # fmt: skip
        os.chmod(key, 0o644)
        os.chmod(self.dir, 0o755)
        return cert, key

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
