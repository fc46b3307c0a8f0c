"""suspend / resume watch the claims of this provider's identity only, as ``status``
counts them (the real ``lakeshore serve`` on 127.0.0.1): a daemon of a namesake in
another root does not make a resume read as connected."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dreamlake.controlplane.client import Client
from dreamlake.engine.verbs._power import watch_claim
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.demo import EmbeddedServer, start_server
from dreamlake.engine.world.observe import observe
from dreamlake.engine.world.paths import find_root
from dreamlake.engine.world.record import read_record


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    s = start_server(tmp_path_factory.mktemp("lakeshore"), live_seconds=2.0)
    try:
        yield s
    finally:
        s.stop()


def test_the_watch_counts_only_this_providers_identity(
    srv: EmbeddedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in srv.env().items():
        monkeypatch.setenv(k, v)
    admin = Client(srv.url, srv.admin_token_file.read_text().strip())
    name = f"rc-{uuid.uuid4().hex[:8]}"
    root = tmp_path / "proj"
    root.mkdir()
    create(name, "local", dream_dir=str(root), probe=False)
    pdir = root / ".dream/providers" / name
    record = read_record(pdir / "provider.json")
    assert record is not None
    obs = observe(name, find_root(str(root)), str(root), probe=False, infra=False)

    admin.register(name, "elsewhere-1", identity="prv-someone-else")
    assert watch_claim(obs, True, 0.0).claims.live == 0  # type: ignore[union-attr]

    admin.register(name, "mine-1", identity=record.identity(pdir))
    seen = watch_claim(obs, True, 0.0).claims
    assert seen is not None and seen.live == 1 and list(seen.instances) == ["mine-1"]
