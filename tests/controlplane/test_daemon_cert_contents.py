"""What a daemon's certificate says (docs/deploy.md, "A daemon's identity is a
certificate", step 3): subject ``CN=nymph <provider>, O=<namespace>``, the
``lakeshore://`` name (with the instance for a launched one), client authentication
only, valid a day unless ``LAKESHORE_DAEMON_CERT_SECONDS`` says otherwise (never
under 60 s). Signed here from the daemon's own request (its standard-library key)."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from dreamlake.controlplane.nymph.keypair import KeyPair
from dreamlake.controlplane.server.builtin_ca import make_ca
from dreamlake.controlplane.server.identity.issue import LIFETIME_ENV, lifetime, sign


def _signed(instance: str | None = None) -> tuple[x509.Certificate, dt.datetime]:
    ca_pem, ca_key = make_ca("test CA")
    now = dt.datetime.now(dt.UTC)
    csr = KeyPair().csr_pem("nymph lab")
    signed = sign(csr, ca_pem, ca_key, namespace="team", provider="lab", instance=instance,
                  now=now)  # fmt: skip
    return x509.load_pem_x509_certificate(signed.pem), now


def test_the_certificate_says_what_the_page_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LIFETIME_ENV, raising=False)
    cert, now = _signed()
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "nymph lab"
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "team"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.UniformResourceIdentifier) == ["lakeshore://team/lab"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert cert.not_valid_after_utc == (now + dt.timedelta(days=1)).replace(microsecond=0)
    launched, _ = _signed("i-0abc")
    san = launched.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.UniformResourceIdentifier) == [
        "lakeshore://team/lab/i-0abc"
    ]


def test_the_servers_variable_sets_the_life(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LIFETIME_ENV, "3600")
    assert lifetime() == dt.timedelta(hours=1)
    cert, now = _signed()
    assert cert.not_valid_after_utc == (now + dt.timedelta(hours=1)).replace(microsecond=0)
    monkeypatch.setenv(LIFETIME_ENV, "5")
    assert lifetime() == dt.timedelta(seconds=60)  # never under a minute
    monkeypatch.setenv(LIFETIME_ENV, "a day")
    assert lifetime() == dt.timedelta(days=1)  # not a number: the default
