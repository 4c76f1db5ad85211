"""TLS for the mail connections: one way to build the client context, and
errors an operator can act on.

Certificates are always verified (chain and host name) against ``ca_file`` when
it is set, else the system's store; there is no setting that skips verification
and no silent fall-back to plain text (``tls = "none"`` is a separate, explicit
choice that the configuration allows on loopback only).
"""

from __future__ import annotations

import ssl

NAME_MISMATCH = frozenset({62, 64})
"""OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH"""
UNTRUSTED = frozenset({2, 18, 19, 20, 21, 27})
"""OpenSSL verify codes meaning "not signed by a CA we trust" (self-signed, unknown issuer, ...)"""


class TlsError(OSError):
    """A TLS connection was refused on our side (certificate) or failed; the
    message says which and what to change."""


def client_context(ca_file: str = "") -> ssl.SSLContext:
    """Verifying client context: ``ca_file`` (a PEM of CA certificates) or the
    system's store; TLS 1.2 at least."""
    context = ssl.create_default_context(cafile=ca_file or None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def _find(exc: BaseException) -> BaseException | None:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ssl.SSLError | ssl.CertificateError):
            return current
        todo += [current.__cause__, current.__context__]
    return None


def explain(exc: BaseException, section: str, host: str, port: int, ca_file: str) -> str | None:
    """A sentence for the operator when ``exc`` (or what caused it) is a TLS
    problem, else None.  ``section`` is ``imap`` or ``smtp`` (the config keys)."""
    found = _find(exc)
    if found is None:
        return None
    where = f"{section.upper()} {host}:{port}"
    trust = f"the CA in {section}.ca_file ({ca_file})" if ca_file else "the system's CA store"
    if isinstance(found, ssl.SSLCertVerificationError):
        detail = found.verify_message or str(found)
        if found.verify_code in NAME_MISMATCH:
            return (
                f"{where}: refused: the server's certificate is not for {host!r} ({detail}); "
                f"set {section}.host to a name the certificate is for"
            )
        if found.verify_code in UNTRUSTED:
            return (
                f"{where}: refused: the server's certificate is not signed by {trust} ({detail}); "
                f"for a private CA set {section}.ca_file to its PEM file"
            )
        return f"{where}: refused: the server's certificate did not verify ({detail})"
    reason = getattr(found, "reason", None) or str(found)
    hint = ""
    if reason in ("WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE"):
        hint = f"; the port may not speak TLS at once (try {section}.tls = 'starttls', or the TLS port)"
    return f"{where}: TLS handshake failed ({reason}){hint}"
