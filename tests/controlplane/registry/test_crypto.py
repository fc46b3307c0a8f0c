"""Secret encryption: key from env or a 0600 file, never reusable across rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.controlplane.registry.crypto import (
    KEY_ENV,
    SecretBox,
    SecretDecryptError,
    SecretKeyError,
    generate_key,
    load_or_create_key,
)


def test_key_file_created_0600_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    key = load_or_create_key(tmp_path)
    path = tmp_path / "secret.key"
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_or_create_key(tmp_path) == key
    path.chmod(0o644)
    with pytest.raises(SecretKeyError, match="chmod 600"):
        load_or_create_key(tmp_path)


def test_env_key_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = generate_key()
    monkeypatch.setenv(KEY_ENV, key.decode())
    assert load_or_create_key(tmp_path) == key
    assert not (tmp_path / "secret.key").exists()
    monkeypatch.setenv(KEY_ENV, "not-a-key")
    with pytest.raises(SecretKeyError, match="Fernet"):
        load_or_create_key(tmp_path)


def test_round_trip_bound_to_row() -> None:
    box = SecretBox(generate_key())
    token = box.encrypt("hunter2", namespace="ns", name="pw")
    assert "hunter2" not in token
    assert box.decrypt(token, namespace="ns", name="pw") == "hunter2"
    with pytest.raises(SecretDecryptError):
        box.decrypt(token, namespace="ns", name="other")
    with pytest.raises(SecretDecryptError) as exc:
        SecretBox(generate_key()).decrypt(token, namespace="ns", name="pw")
    assert "hunter2" not in str(exc.value)
    assert "key" not in repr(box).replace("<key hidden>", "")
