"""``destroy --yes`` revokes the provider's daemon tokens on the control plane (a
real ``lakeshore serve`` on 127.0.0.1): the removed install's token no longer
answers ``whoami`` and cannot register a ghost worker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.demo import EmbeddedServer, start_server
from dreamlake.engine.verbs.destroy import destroy

pytestmark = pytest.mark.slow


@pytest.fixture
def srv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedServer]:
    s = start_server(tmp_path / "lakeshore")
    for key in ("LAKESHORE_TOKEN", "DREAMRC", "LAKESHORE_NAMESPACE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in s.env().items():
        monkeypatch.setenv(key, value)
    try:
        yield s
    finally:
        s.stop()


def test_destroy_revokes_the_daemon_token(srv: EmbeddedServer, project: Path) -> None:
    name = f"rvk-{uuid.uuid4().hex[:8]}"
    create(name, "local", dream_dir=str(project), probe=False)
    admin = Client(srv.url, srv.admin_token_file.read_text().strip())
    token = admin.create_token(
        "default", label=f"nymph {name} on h", scope="daemon", provider=name, host="h"
    )
    other = admin.create_token(
        "default", label="nymph keep on h", scope="daemon", provider="keep", host="h"
    )
    daemon = Client(srv.url, token)
    assert daemon.whoami()["provider"] == name
    res = destroy(name, yes=True, dream_dir=str(project))
    assert res.exit_code == 0, res.to_json()
    assert any(f"revoked 1 daemon token of '{name}'" in n for n in res.notes), res.notes
    for call in (daemon.whoami, lambda: daemon.register(name, "ghost")):
        with pytest.raises(ApiFailure) as err:
            call()
        assert err.value.status == 401
    assert Client(srv.url, other).whoami()["provider"] == "keep"  # another provider's stays
