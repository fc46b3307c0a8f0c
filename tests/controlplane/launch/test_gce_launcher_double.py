"""The GCE launcher against a recorded-HTTP TEST DOUBLE of the Compute API (no GCE
API can run here): the control plane's real app signs in with a service-account key
from a secret (the double plays Google's token endpoint too), and the test asserts
the exact requests: the instance body, its labels, the request id, the bearer token
— and that the decrypted key appears in no response and no log line."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from launch_harness import P, RecordingApiDouble, ok

pytest.importorskip("google.cloud.compute_v1", reason="needs google-cloud-compute (the gcp extra)")


def _private_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _assert_signed_by(header: str, pem: str, email: str) -> None:
    """The request carries a JWT the service-account key signed (the google client
    signs its own access JWT for a service account), not the key."""
    from cryptography.hazmat.primitives import serialization
    from google.auth import jwt

    scheme, _, token = header.partition(" ")
    assert scheme == "Bearer"
    public = (
        serialization.load_pem_private_key(pem.encode(), None)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    claims = jwt.decode(token, certs={"kid-1": public.decode()}, verify=True)
    assert claims["iss"] == email and claims["sub"] == email


@pytest.fixture
def gce_double() -> Iterator[RecordingApiDouble]:
    instances: dict[str, str] = {}

    def handler(method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        base = "/compute/v1/projects/proj-1/zones/europe-west4-a/instances"
        op = {
            "kind": "compute#operation",
            "name": f"op-{uuid.uuid4().hex[:8]}",
            "status": "RUNNING",
        }
        if method == "POST" and path == base:
            instances[body["name"]] = "PROVISIONING"
            return 200, op
        if method == "GET" and path == base:
            return 200, {"items": [{"name": n, "status": s} for n, s in instances.items()]}
        if method == "DELETE" and path.startswith(base + "/"):
            instances.pop(path.rsplit("/", 1)[1], None)
            return 200, op
        return 404, {"error": {"code": 404, "message": f"no route {method} {path}"}}

    double = RecordingApiDouble(handler)
    yield double
    double.close()


def test_insert_list_delete_requests(
    app_client: tuple[Any, Any],
    gce_double: RecordingApiDouble,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("LAKESHORE_GCE_ENDPOINT", gce_double.url)
    client, app = app_client
    pem = _private_key()
    key = {
        "type": "service_account",
        "project_id": "proj-1",
        "private_key_id": "kid-1",
        "private_key": pem,
        "client_email": "lakeshore@proj-1.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": f"{gce_double.url}/token",  # never called: the client self-signs
    }
    ok(
        client.post(
            P + "/secrets", json={"name": "gsa", "kind": "generic", "value": json.dumps(key)}
        ),
        201,
    )
    kwargs = {
        "project": "proj-1",
        "zone": "europe-west4-a",
        "machine_type": "n2-standard-4",
        "image": "projects/debian-cloud/global/images/family/debian-12",
        "credentials": {"$secret": "gsa"},
    }
    ok(
        client.post(P + "/providers", json={"name": "gcp-eu", "launcher": "GCE", "kwargs": kwargs}),
        201,
    )

    r = client.post(P + "/launch", json={"provider": "gcp-eu", "clientToken": "G1", "queue": "cpu"})
    out = ok(r, 201)
    (name,) = [i["id"] for i in out["instances"]]
    assert name == "lakeshore-gcp-eu-g1-0"

    (insert,) = gce_double.of("POST", "/compute/")
    _assert_signed_by(insert["headers"]["authorization"], pem, key["client_email"])
    assert insert["query"]["requestId"] == str(
        uuid.uuid5(uuid.UUID("5b0c3c4e-6a59-4d5e-9a55-6c616b65736f"), "default/gcp-eu/G1-0")
    )
    body = insert["body"]
    script = body["metadata"]["items"][0]["value"]
    body["metadata"]["items"][0]["value"] = "<startup-script>"
    assert body == {
        "name": "lakeshore-gcp-eu-g1-0",
        "machineType": "zones/europe-west4-a/machineTypes/n2-standard-4",
        "labels": {
            "lakeshore": "true",
            "lakeshore-namespace": "default",
            "lakeshore-provider": "gcp-eu",
            "lakeshore-client-token": "g1",
            "lakeshore-queue": "cpu",
        },
        "disks": [
            {
                "boot": True,
                "autoDelete": True,
                "initializeParams": {
                    "sourceImage": "projects/debian-cloud/global/images/family/debian-12"
                },
            }
        ],
        "networkInterfaces": [
            {
                "network": "global/networks/default",
                "accessConfigs": [{"name": "External NAT", "type": "ONE_TO_ONE_NAT"}],
            }
        ],
        "metadata": {"items": [{"key": "startup-script", "value": "<startup-script>"}]},
    }
    sha = app.state.daemon_bundle[0]
    assert f"/api/namespaces/default/daemon/{sha}" in script
    assert "LAKESHORE_INSTANCE_ID:-lakeshore-gcp-eu-g1-0" in script and "--queues cpu" in script
    token = script.split("<<'LAKESHORE_TOKEN'\n", 1)[1].split("\n", 1)[0]
    assert (
        client.get(P + f"/daemon/{sha}", headers={"Authorization": f"Bearer {token}"}).status_code
        == 200
    )

    listed = ok(client.get(P + "/instances"))
    assert [(i["id"], i["state"]) for i in listed["instances"]] == [(name, "PROVISIONING")]
    assert listed["errors"] == {}
    (lst,) = gce_double.of("GET", "/compute/")
    assert lst["query"]["filter"] == (
        "labels.lakeshore=true AND labels.lakeshore-namespace=default "
        "AND labels.lakeshore-provider=gcp-eu"
    )
    gone = ok(client.delete(P + f"/instances/{name}"))
    assert gone["state"] == "terminated"
    (delete,) = gce_double.of("DELETE", "/compute/")
    assert delete["path"].endswith(f"/instances/{name}")
    _assert_signed_by(delete["headers"]["authorization"], pem, key["client_email"])

    texts = r.text + json.dumps(listed) + json.dumps(gone)
    for line in pem.splitlines()[1:-1]:
        assert line not in texts
        assert line not in caplog.text
    assert all(line not in json.dumps(gce_double.requests) for line in pem.splitlines()[1:-1])
