"""Certificates for a local trial of TLS: a private certificate authority, and server and client certificates it
signs, made with the ``openssl`` command (Debian's ``openssl`` package; `make bootstrap` installs it).

For tests, benchmarks and ``bosun cluster up --tls`` on one machine, never for production: the keys are written
unencrypted (mode 0600) beside the certificates, and a server certificate names only loopback (``localhost``,
``127.0.0.1``, ``::1``) unless told other names.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from infra.errors import ConfigError

DAYS = 30


@dataclass(frozen=True)
class CertPair:
    """A certificate and its private key (PEM files)."""

    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise ConfigError("the openssl command is missing: install Debian's openssl package (make bootstrap does)")
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise ConfigError(f"openssl {args[0]} failed: {proc.stderr.strip()[-500:]}")


def make_ca(folder: Path, name: str = "bosun-dev-ca") -> CertPair:
    """A self-signed certificate authority ``NAME.pem`` / ``NAME.key`` in ``folder`` (made if absent)."""
    folder.mkdir(parents=True, exist_ok=True)
    pair = CertPair(folder / f"{name}.pem", folder / f"{name}.key")
    if not pair.cert.exists():
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", pair.key.name, "-out", pair.cert.name, "-days", str(DAYS), "-subj", f"/CN={name}",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                 cwd=folder)
        pair.key.chmod(0o600)
    return pair


def issue(ca: CertPair, folder: Path, name: str, *, server: bool = True,
          hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")) -> CertPair:
    """A certificate ``NAME.pem`` / ``NAME.key`` signed by ``ca``: for a server (its names: ``hosts``) or, with
    ``server=False``, for a client (mutual TLS). Made again only when absent."""
    folder.mkdir(parents=True, exist_ok=True)
    pair = CertPair(folder / f"{name}.pem", folder / f"{name}.key")
    if pair.cert.exists():
        return pair
    csr = folder / f"{name}.csr"
    ext = folder / f"{name}.ext"
    if server:
        alt = ",".join(f"IP:{h}" if h.replace(".", "").isdigit() or ":" in h else f"DNS:{h}" for h in hosts)
        ext.write_text(f"subjectAltName={alt}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n")
    else:
        ext.write_text("extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", pair.key.name,
             "-out", csr.name, "-subj", f"/CN={name}", cwd=folder)
    _openssl("x509", "-req", "-in", csr.name, "-CA", str(ca.cert), "-CAkey", str(ca.key), "-CAcreateserial",
             "-out", pair.cert.name, "-days", str(DAYS), "-extfile", ext.name, cwd=folder)
    pair.key.chmod(0o600)
    csr.unlink(missing_ok=True)
    ext.unlink(missing_ok=True)
    return pair
