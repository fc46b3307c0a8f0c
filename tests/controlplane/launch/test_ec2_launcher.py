"""The EC2 launcher against a real AWS API implementation on 127.0.0.1 (moto's
server), through the real control-plane app: the launch route, the instances
listing, terminate, client-token idempotency, and secrets that never come back."""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any

import pytest
from launch_harness import AMI, AWS_ID, AWS_SECRET, P, ec2, ok


def _tags(inst: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in inst.get("Tags", [])}


def _user_data(api: Any, instance_id: str) -> str:
    attr = api.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    return base64.b64decode(attr["UserData"]["Value"]).decode()


def _setup(client: Any, *, creds: bool = True) -> None:
    ok(
        client.post(
            P + "/secrets",
            json={"name": "aws", "kind": "aws_keypair", "value": f"{AWS_ID}:{AWS_SECRET}"},
        ),
        201,
    )
    kwargs: dict[str, Any] = {"region": "us-east-1", "image_id": AMI}
    if creds:
        kwargs["aws_credentials"] = {"$secret": "aws"}
    ok(
        client.post(P + "/providers", json={"name": "aws", "launcher": "EC2", "kwargs": kwargs}),
        201,
    )
    ok(
        client.post(
            P + "/modes",
            json={
                "name": "small",
                "provider": "aws",
                "instance_type": "t3.small",
                "tags": {"team": "ml"},
            },
        ),
        201,
    )


def test_launch_list_retry_terminate(
    aws_api: str,
    app_client: tuple[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_api)
    client, app = app_client
    _setup(client)
    texts: list[str] = []

    r = client.post(P + "/launch", json={"mode": "small", "count": 2, "clientToken": "ct-one"})
    texts.append(r.text)
    out = ok(r, 201)
    ids = [i["id"] for i in out["instances"]]
    assert len(ids) == 2 and out["launcher"] == "EC2" and out["clientToken"] == "ct-one"
    assert out["kwargs"]["aws_credentials"] == {"$secret": "aws"}

    api = ec2(aws_api)
    found = {
        i["InstanceId"]: i
        for res in api.describe_instances(InstanceIds=ids)["Reservations"]
        for i in res["Instances"]
    }
    assert set(found) == set(ids)
    bundle_sha = app.state.daemon_bundle[0]
    tokens = []
    for iid in ids:
        inst = found[iid]
        assert inst["InstanceType"] == "t3.small" and inst["ImageId"] == AMI
        tags = _tags(inst)
        assert tags["lakeshore"] == "true"
        assert tags["lakeshore-namespace"] == "default"
        assert tags["lakeshore-provider"] == "aws"
        assert tags["team"] == "ml" and tags["lakeshore-client-token"] == "ct-one"
        data = _user_data(api, iid)
        assert len(data.encode()) < 16 * 1024
        assert f"/api/namespaces/default/daemon/{bundle_sha}" in data
        assert "http://127.0.0.1:7878" in data and "--provider aws" in data
        token = data.split("<<'LAKESHORE_TOKEN'\n", 1)[1].split("\n", 1)[0]
        assert token.startswith("lks_") and token not in r.text
        tokens.append(token)
    assert tokens[0] != tokens[1]

    # Each instance's token is scoped to the namespace and fetches the bundle by hash.
    fetched = client.get(
        P + f"/daemon/{bundle_sha}", headers={"Authorization": f"Bearer {tokens[0]}"}
    )
    assert fetched.status_code == 200
    assert fetched.content == Path(app.state.daemon_bundle[1]).read_bytes()
    ok(client.post("/api/namespaces", json={"name": "other"}), 201)
    assert (
        client.get(
            "/api/namespaces/other/instances", headers={"Authorization": f"Bearer {tokens[0]}"}
        ).status_code
        == 403
    )

    # A retried request (same client token) launches nothing more.
    r = client.post(P + "/launch", json={"mode": "small", "count": 2, "clientToken": "ct-one"})
    texts.append(r.text)
    again = ok(r, 201)
    assert again["replayed"] is True and [i["id"] for i in again["instances"]] == ids
    tagged = api.describe_instances(
        Filters=[{"Name": "tag:lakeshore-client-token", "Values": ["ct-one"]}]
    )["Reservations"]
    assert sum(len(res["Instances"]) for res in tagged) == 2

    listed = ok(client.get(P + "/instances"))
    texts.append(str(listed))
    assert {i["id"]: i["state"] for i in listed["instances"]} == dict.fromkeys(ids, "running")
    assert listed["errors"] == {}

    r = client.delete(P + f"/instances/{ids[0]}")
    texts.append(r.text)
    gone = ok(r)
    assert gone["state"] == "terminated" and gone["terminatedAt"]
    state = api.describe_instances(InstanceIds=[ids[0]])["Reservations"][0]["Instances"][0]
    assert state["State"]["Name"] in ("shutting-down", "terminated")
    # its token is revoked, the other instance's is not
    for token, code in ((tokens[0], 401), (tokens[1], 200)):
        got = client.get(P + f"/daemon/{bundle_sha}", headers={"Authorization": f"Bearer {token}"})
        assert got.status_code == code
    left = ok(client.get(P + "/instances"))
    assert [i["id"] for i in left["instances"]] == [ids[1]]
    everything = ok(client.get(P + "/instances", params={"all": "true", "live": "false"}))
    assert len(everything["instances"]) == 2

    # no plaintext anywhere: responses, logs, the database file
    db = b"".join(p.read_bytes() for p in (tmp_path / "data").glob("*.db*"))
    for needle in (AWS_SECRET, AWS_ID):
        assert all(needle not in t for t in texts)
        assert needle.encode() not in db
    # the secret half is in no log line at any level; the access key id shows up only
    # in botocore's own DEBUG request-signing lines, never at INFO or above
    assert AWS_SECRET not in caplog.text
    assert all(AWS_ID not in r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)


def test_server_credential_chain_and_direct_dispatch(
    aws_api: str, app_client: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without aws_credentials, on a server whose operator allows it, the server's own
    chain is used; direct dispatch sends no user-data and mints no token."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", aws_api)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "server-chain")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "server-chain")
    client, app = app_client
    app.state.settings.launch_server_credentials = True
    ok(
        client.post(
            P + "/providers",
            json={
                "name": "plain",
                "launcher": "EC2",
                "dispatch": "direct",
                "kwargs": {"region": "eu-west-1", "image_id": AMI},
            },
        ),
        201,
    )
    out = ok(client.post(P + "/launch", json={"provider": "plain"}), 201)
    (iid,) = [i["id"] for i in out["instances"]]
    api = ec2(aws_api, "eu-west-1")
    attr = api.describe_instance_attribute(InstanceId=iid, Attribute="userData")
    assert not attr.get("UserData", {}).get("Value")


def test_a_wrong_secret_is_a_4xx_without_plaintext(
    aws_api: str,
    app_client: tuple[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_api)
    client, _ = app_client
    plain = "this-is-not-an-aws-keypair-0123456789"
    ok(client.post(P + "/secrets", json={"name": "wrong", "kind": "token", "value": plain}), 201)
    kwargs = {"region": "us-east-1", "image_id": AMI, "aws_credentials": {"$secret": "wrong"}}
    ok(
        client.post(P + "/providers", json={"name": "bad", "launcher": "EC2", "kwargs": kwargs}),
        201,
    )
    r = client.post(P + "/launch", json={"provider": "bad"})
    assert r.status_code == 422 and "aws_keypair" in r.json()["detail"]
    assert plain not in r.text and plain not in caplog.text
    # and an image the API does not have is the caller's problem, not a 5xx
    pair = {"name": "aws", "kind": "aws_keypair", "value": f"{AWS_ID}:{AWS_SECRET}"}
    ok(client.post(P + "/secrets", json=pair), 201)
    kwargs = {"region": "us-east-1", "aws_credentials": {"$secret": "aws"}}
    ok(client.patch(P + "/providers/bad", json={"kwargs": kwargs}))
    r = client.post(P + "/launch", json={"provider": "bad", "runConfig": {"image_id": ""}})
    assert r.status_code == 422 and "image_id" in r.json()["detail"]
    assert ok(client.get(P + "/instances"))["instances"] == []
