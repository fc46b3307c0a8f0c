"""The server's TLS context: TLS 1.2 at least, loaded again in place on SIGHUP (even
with unchanged files) or on a changed file, and a pair that does not load is
refused with the previous one kept."""

from __future__ import annotations

import os
import signal
import ssl
import time
from pathlib import Path

import pytest
from dreamlake.controlplane.server import tls
from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca


def _pair(folder: Path) -> tuple[Path, Path, bytes, object]:
    folder.mkdir(parents=True, exist_ok=True)
    ca_pem, ca_key = make_ca("reload CA")
    cert, key = issue_server(ca_pem, ca_key, ["localhost"])
    (folder / "server.crt").write_bytes(cert)
    (folder / "server.key").write_bytes(key)
    return folder / "server.crt", folder / "server.key", ca_pem, ca_key


def _wait(predicate: object, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return bool(predicate())  # type: ignore[operator]


def test_the_context_is_tls_1_2_at_least(tmp_path: Path) -> None:
    cert, key, _, _ = _pair(tmp_path)
    context = tls.server_context(cert, key)
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2


def test_a_pair_that_does_not_load_is_a_clear_error(tmp_path: Path) -> None:
    _, key, ca_pem, _ = _pair(tmp_path)
    with pytest.raises(tls.TlsConfigError, match="does not exist"):
        tls.server_context(tmp_path / "nope.crt", key)
    (tmp_path / "ca.crt").write_bytes(ca_pem)
    with pytest.raises(tls.TlsConfigError, match="not a PEM certificate and its private key"):
        tls.server_context(tmp_path / "ca.crt", key)  # a key of another certificate


def test_an_encrypted_key_is_a_clear_error_never_a_prompt(tmp_path: Path) -> None:
    """OpenSSL would ask for its passphrase on the terminal (and again at each
    reload); the server says the key is encrypted instead."""
    from cryptography.hazmat.primitives import serialization

    cert, key, _, _ = _pair(tmp_path)
    loaded = serialization.load_pem_private_key(key.read_bytes(), None)
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_bytes(loaded.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    ))  # fmt: skip
    with pytest.raises(tls.TlsConfigError, match=f"{encrypted} is encrypted: .*unencrypted"):
        tls.server_context(cert, encrypted)


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on this platform")
def test_sighup_and_a_changed_file_reload_a_broken_pair_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tls, "WATCH_SECONDS", 0.1)
    cert, key, ca_pem, ca_key = _pair(tmp_path)
    before = signal.getsignal(signal.SIGHUP)
    reloader = tls.Reloader(cert, key).start()
    try:
        assert reloader.loads == 1
        os.kill(os.getpid(), signal.SIGHUP)  # the same files: loaded again all the same
        assert _wait(lambda: reloader.loads == 2, 5)
        new_cert, new_key = issue_server(ca_pem, ca_key, ["localhost"])
        key.write_bytes(new_key)
        cert.write_bytes(new_cert)
        assert _wait(lambda: reloader.loads >= 3 and not reloader.changed(), 5)
        loads = reloader.loads
        cert.write_text("half a certificate")
        assert reloader.reload() is False
        assert reloader.loads == loads
    finally:
        reloader.stop()
        signal.signal(signal.SIGHUP, before)
