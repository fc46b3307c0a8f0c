""".dreamrc's server pull against a real server, then its on-disk cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dreamlake.engine.settings.dreamrc import cache_path, load_dreamrc, resolve_provider
from registry_harness import Server, free_port, record


def test_pull_composes_providers_and_modes_then_cache_answers(
    sqlite_server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = sqlite_server
    ns = s.namespace()
    api = s.client()
    api.post(
        f"/api/namespaces/{ns}/secrets",
        json={"name": "k", "kind": "token", "value": "pull-secret-value-1"},
    )
    api.post(
        f"/api/namespaces/{ns}/providers",
        json={
            "name": "aws",
            "launcher": "EC2",
            "kwargs": {"region": "r", "creds": {"$secret": "k"}},
        },
    )
    api.post(
        f"/api/namespaces/{ns}/modes",
        json={"name": "gpu", "provider": "aws", "instance_type": "g5"},
    )
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("LAKESHORE_URL", s.url)
    monkeypatch.setenv("LAKESHORE_TOKEN", s.token_for(ns))
    monkeypatch.setenv("LAKESHORE_NAMESPACE", ns)
    work = tmp_path / "work"
    work.mkdir()

    rc = load_dreamrc(cwd=work)
    assert rc.source == "server"
    assert rc.providers["aws"].launcher == "EC2" and rc.providers["aws"].dispatch == "daemon"
    assert rc.providers["aws"].kwargs == {"region": "r", "creds": {"$secret": "k"}}
    assert rc.run_config("gpu") == {
        "provider": "aws",
        "instance_type": "g5",
        "backend": "fabric",
        "runner": "process",
    }
    cached = cache_path(ns)
    assert cached.is_file() and cached.stat().st_mode & 0o777 == 0o600
    record("dreamrc cache", cached.read_text())

    # resolve_provider pulls, as the document's order says: the server answers
    spec = resolve_provider("aws", cwd=work)
    assert spec is not None and spec.kwargs["region"] == "r"
    # ...and the `dreamlake providers` command too, without being asked to
    doc = _providers_json(work)
    assert (doc["source"], [p["name"] for p in doc["providers"]]) == ("server", ["aws"])
    assert _providers_json(work, "--no-pull")["source"] == "cache"  # opted out: the cache

    # a server that does not answer: the cache of the last pull does
    monkeypatch.setenv("LAKESHORE_URL", f"http://127.0.0.1:{free_port()}")
    assert load_dreamrc(cwd=work).source == "cache"
    spec = resolve_provider("aws", cwd=work)
    assert spec is not None and spec.kwargs["region"] == "r"
    assert _providers_json(work)["source"] == "cache"

    # a local file always wins over the server and the cache
    (work / ".dreamrc").write_text("providers:\n  aws: !providers.SSH {host: h}\n")
    assert resolve_provider("aws", cwd=work).launcher == "SSH"  # type: ignore[union-attr]


def _providers_json(cwd: Path, *flags: str) -> dict[str, Any]:
    """``dreamlake providers --json`` run in ``cwd`` (in this process)."""
    import contextlib
    import io
    import json
    import os

    from dreamlake.cli.main import main

    out = io.StringIO()
    here = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main(["providers", "--json", *flags])
    finally:
        os.chdir(here)
    return dict(json.loads(out.getvalue()))
