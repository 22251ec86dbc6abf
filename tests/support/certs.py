"""A throw-away internal CA and service certificates for the TLS tests (``cryptography``).
Operators get theirs from their PKI (cert-manager in deploy/k8s); nothing here ships."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pem:
    cert: Path
    key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write(path: Path, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> Pem:
    key_path, cert_path = path.with_suffix(".key"), path.with_suffix(".crt")
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Pem(cert_path, key_path)


class Authority:
    """A CA in ``folder`` that issues certificates for service names (CN and DNS name)."""

    def __init__(self, folder: Path, name: str = "paiju-internal-ca") -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.key = _key()
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=1))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.pem = _write(folder / name, self.key, self.cert)

    @property
    def ca_file(self) -> Path:
        return self.pem.cert

    def issue(self, service: str, *extra_dns: str, days: float = 1,
              ips: tuple[str, ...] | list[str] = ()) -> Pem:
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        names = [x509.DNSName(n) for n in (service, *extra_dns, "localhost")]
        cert = (x509.CertificateBuilder().subject_name(_name(service))
                .issuer_name(self.cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=days))
                .add_extension(x509.SubjectAlternativeName(
                    [*names, *(x509.IPAddress(ipaddress.ip_address(ip))
                               for ip in ("127.0.0.1", *ips))]),
                    critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        return _write(self.folder / f"{service}-{x509.random_serial_number() % 10**6}", key, cert)


def tls_env(ca: Authority, pem: Pem, probe_port: int | None = None) -> dict[str, str]:
    """The environment that turns internal mutual TLS on for one service process."""
    env = {"PAIJU_TLS__CA_FILE": str(ca.ca_file), "PAIJU_TLS__CERT_FILE": str(pem.cert),
           "PAIJU_TLS__KEY_FILE": str(pem.key)}
    if probe_port is not None:
        env["PAIJU_TLS__PROBE_PORT"] = str(probe_port)
    return env
