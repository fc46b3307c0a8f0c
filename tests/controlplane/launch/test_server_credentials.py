"""The server's own cloud credentials are lent only by its operator's choice.

* EC2 with no ``aws_credentials`` and GCE with no ``credentials``, launched with a
  namespace token on a server started without ``--launch-server-credentials``: 422
  naming the secret it needs and what to do, nothing launched;
* the launchers' own rule, offline (``validate``), with and without the opt-in;
* the opt-in (flag, or ``LAKESHORE_LAUNCH_SERVER_CREDENTIALS``): an EC2 launch with no
  secret goes through on the server's own AWS chain (the AWS API on 127.0.0.1).
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from dreamlake.controlplane.client import ApiFailure, Client
from dreamlake.controlplane.launchers import ec2, gce
from dreamlake.controlplane.launchers.errors import LaunchRejected
from dreamlake.controlplane.launchers.order import LaunchOrder
from dreamlake.controlplane.server.settings import Settings
from launch_harness import AMI
from launch_harness import ec2 as ec2_api

SHARES_SERVER = True  # its refused launches go to namespaces of its own: the session's server

CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    # launcher: (kwargs with no credentials, the kwarg named, the secret named)
    "EC2": ({"region": "us-east-1", "image_id": AMI}, "aws_credentials", "kind aws_keypair"),
    "GCE": ({"project": "p", "zone": "europe-west4-a"}, "credentials", "service-account key"),
}


def _order(launcher: str, **extra: Any) -> LaunchOrder:
    kwargs = CASES[launcher][0]
    return LaunchOrder(
        provider="c",
        namespace="n",
        launcher=launcher,
        dispatch="direct",
        kwargs=dict(kwargs),
        tags={},
        **extra,
    )


@pytest.mark.parametrize("launcher", sorted(CASES))
def test_a_cloud_launch_without_a_credentials_secret_is_refused(server: Any, launcher: str) -> None:
    ns = f"ns-{secrets.token_hex(4)}"
    server.admin.create_namespace(ns)
    # a namespace token; the wait allows for the SDK's first import on a busy machine
    api = Client(server.url, server.admin.create_token(ns), namespace=ns, timeout=180)
    p = f"/api/namespaces/{ns}"
    kwargs, kwarg, secret = CASES[launcher]
    api.request("POST", p + "/providers", {"name": "cloud", "launcher": launcher, "kwargs": kwargs})
    with pytest.raises(ApiFailure) as err:
        api.request("POST", p + "/launch", {"provider": "cloud"})
    assert err.value.status == 422, err.value
    text = str(err.value)
    assert f"{kwarg} is required, a secret holding" in text and secret in text, text
    assert f'set {kwarg}={{"$secret": NAME}}' in text, text  # what to do next
    assert "--launch-server-credentials" in text, text
    listed = api.request("GET", p + "/instances", query={"all": "true", "live": "false"})
    assert listed["instances"] == []


@pytest.mark.parametrize("launcher", sorted(CASES))
def test_the_launchers_lend_the_servers_credentials_only_when_allowed(launcher: str) -> None:
    module = {"EC2": ec2, "GCE": gce}[launcher]
    with pytest.raises(LaunchRejected) as err:
        module.validate(_order(launcher))
    assert err.value.status == 422 and CASES[launcher][1] in str(err.value)
    module.validate(_order(launcher, server_credentials=True))  # the operator's opt-in


def test_the_setting_is_off_unless_the_operator_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAKESHORE_LAUNCH_SERVER_CREDENTIALS", raising=False)
    assert Settings.from_env().launch_server_credentials is False
    monkeypatch.setenv("LAKESHORE_LAUNCH_SERVER_CREDENTIALS", "1")
    assert Settings.from_env().launch_server_credentials is True
    monkeypatch.setenv("LAKESHORE_LAUNCH_SERVER_CREDENTIALS", "off")
    assert Settings.from_env().launch_server_credentials is False
    assert Settings.from_env(launch_server_credentials=True).launch_server_credentials is True
    monkeypatch.setenv("LAKESHORE_LAUNCH_SERVER_CREDENTIALS", "maybe")
    with pytest.raises(ValueError, match="LAKESHORE_LAUNCH_SERVER_CREDENTIALS"):
        Settings.from_env()


def test_with_the_opt_in_an_ec2_launch_uses_the_servers_own_chain(
    aws_api: str, start_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_api)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "server-chain")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "server-chain")
    srv = start_server(extra=["--launch-server-credentials"])
    ns = f"ns-{secrets.token_hex(4)}"
    srv.admin.create_namespace(ns)
    api = Client(srv.url, srv.admin.create_token(ns), namespace=ns, timeout=180)
    p = f"/api/namespaces/{ns}"
    kwargs = CASES["EC2"][0]
    api.request(
        "POST",
        p + "/providers",
        {"name": "cloud", "launcher": "EC2", "dispatch": "direct", "kwargs": kwargs},
    )
    out = api.request("POST", p + "/launch", {"provider": "cloud"})
    (iid,) = [i["id"] for i in out["instances"]]
    found = ec2_api(aws_api).describe_instances(InstanceIds=[iid])["Reservations"]
    assert [i["InstanceId"] for r in found for i in r["Instances"]] == [iid]
