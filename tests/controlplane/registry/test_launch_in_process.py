"""The launch route with a launcher installed in-process.

The launcher here is a test double (no cloud account exists on this machine): it
records what it was handed and answers like a launcher that echoes its input, so
the test can prove the route scrubs secret values out of whatever comes back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dreamlake.controlplane.registry.merge import LaunchSpec
from dreamlake.controlplane.server.app import create_app
from dreamlake.controlplane.server.settings import Settings
from fastapi.testclient import TestClient
from registry_harness import PLAINTEXTS, record


@pytest.fixture
def app_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, Any]]:
    monkeypatch.delenv("LAKESHORE_SECRET_KEY", raising=False)
    app = create_app(Settings(data_dir=tmp_path))
    token = (tmp_path / "admin.token").read_text().strip()
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        yield client, app
    app.state.engine.dispose()


def test_launcher_gets_plaintext_response_never_does(app_client: tuple[TestClient, Any]) -> None:
    client, app = app_client
    seen: list[LaunchSpec] = []

    def ec2_double(spec: LaunchSpec) -> dict[str, Any]:
        seen.append(spec)
        return {
            "instances": ["i-1"],
            "echo": spec.kwargs,
            "note": "used " + spec.kwargs["creds"]["secretAccessKey"],
        }

    def failing_double(spec: LaunchSpec) -> dict[str, Any]:
        raise RuntimeError(f"auth failed for {spec.kwargs['creds']['accessKeyId']}")

    app.state.registry_launchers = {"EC2": ec2_double, "GCE": failing_double}
    p = "/api/namespaces/default"
    assert (
        client.post(
            p + "/secrets", json={"name": "aws", "kind": "aws_keypair", "value": PLAINTEXTS["aws"]}
        ).status_code
        == 201
    )
    kw = {"region": "r", "creds": {"$secret": "aws"}}
    client.post(p + "/providers", json={"name": "cloud", "launcher": "EC2", "kwargs": kw})
    client.post(
        p + "/providers",
        json={"name": "g", "launcher": "GCE", "kwargs": {**kw, "project": "p", "zone": "z"}},
    )

    r = client.post(
        p + "/launch",
        json={"provider": "cloud", "runConfig": {"instance_type": "t3.micro", "runner": "docker"}},
    )
    record("in-process launch", r.text)
    assert r.status_code == 201, r.text
    assert seen[0].kwargs["creds"] == {
        "accessKeyId": PLAINTEXTS["aws_id"],
        "secretAccessKey": PLAINTEXTS["aws_secret"],
    }
    assert seen[0].kwargs["instance_type"] == "t3.micro" and seen[0].tags["lakeshore"] == "true"
    body = r.json()
    assert body["kwargs"]["creds"] == {"$secret": "aws"}
    assert body["result"]["instances"] == ["i-1"]
    assert body["result"]["note"] == "used [redacted]"
    assert PLAINTEXTS["aws_secret"] not in r.text and PLAINTEXTS["aws_id"] not in r.text

    r = client.post(p + "/launch", json={"provider": "g"})
    record("in-process launch failure", r.text)
    assert r.status_code == 502 and "[redacted]" in r.json()["detail"]
    assert PLAINTEXTS["aws_id"] not in r.text


def test_a_secret_in_a_repr_or_with_padding_is_still_scrubbed(
    app_client: tuple[TestClient, Any],
) -> None:
    """A launcher error quoting ``repr(kwargs)`` shows a multi-line key with escaped
    newlines, and an aws_keypair stored with padding reaches the launcher stripped:
    neither spelling may come back on the wire."""
    client, app = app_client
    key = "-----BEGIN KEY-----\nAAAAkeyline1secret\nBBBBkeyline2secret\n-----END KEY-----\n"

    def failing_double(spec: LaunchSpec) -> dict[str, Any]:
        raise RuntimeError(f"cannot use {spec.kwargs!r}")

    app.state.registry_launchers = {"EC2": failing_double}
    p = "/api/namespaces/default"
    for name, kind, value in (
        ("ssh", "ssh_key", key),
        ("aws", "aws_keypair", " AKIAPADDEDID : padded/secret+key \n"),
    ):
        r = client.post(p + "/secrets", json={"name": name, "kind": kind, "value": value})
        assert r.status_code == 201, r.text
    kw = {"region": "r", "key": {"$secret": "ssh"}, "creds": {"$secret": "aws"}}
    client.post(p + "/providers", json={"name": "cloud", "launcher": "EC2", "kwargs": kw})

    r = client.post(p + "/launch", json={"provider": "cloud"})
    record("in-process launch failure quoting repr(kwargs)", r.text)
    assert r.status_code == 502 and "[redacted]" in r.json()["detail"]
    for needle in ("keyline1secret", "keyline2secret", "AKIAPADDEDID", "padded/secret+key"):
        assert needle not in r.text
