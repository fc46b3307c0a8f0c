"""A terminated instance's token stops working at once, on every replica: the
launch code revokes it the way the tokens route does (the cache of known-good
tokens is emptied, and over PostgreSQL every replica is told). Real ``lakeshore
serve`` processes on 127.0.0.1 launching through the EC2 launcher against a real
AWS API implementation (moto's server) on 127.0.0.1."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from dreamlake.controlplane.client import Client
from lakeshore_fixtures import ServerProc, refused_within
from launch_harness import AMI, AWS_ID, AWS_SECRET, ec2

NS = "/api/namespaces/default"


def _launch_one(admin: Client, aws_api: str) -> tuple[str, str]:
    """Launch one daemon instance; ``(instance id, the instance's token)``."""
    secret = {"name": "aws", "kind": "aws_keypair", "value": f"{AWS_ID}:{AWS_SECRET}"}
    admin.request("POST", NS + "/secrets", secret)
    kwargs = {"region": "us-east-1", "image_id": AMI, "aws_credentials": {"$secret": "aws"}}
    admin.request("POST", NS + "/providers", {"name": "aws", "launcher": "EC2", "kwargs": kwargs})
    out = admin.request("POST", NS + "/launch", {"provider": "aws", "count": 1}, timeout=120)
    iid = out["instances"][0]["id"]
    attr = ec2(aws_api).describe_instance_attribute(InstanceId=iid, Attribute="userData")
    data = base64.b64decode(attr["UserData"]["Value"]).decode()
    token = data.split("<<'LAKESHORE_TOKEN'\n", 1)[1].split("\n", 1)[0]
    assert token.startswith("lks_")
    return iid, token


def test_terminate_forgets_the_cached_instance_token(
    start_server: Callable[..., ServerProc], aws_api: str
) -> None:
    """Over SQLite; over PostgreSQL, replica a's own check in the test below."""
    s = start_server(env={"AWS_ENDPOINT_URL": aws_api})
    iid, token = _launch_one(s.admin, aws_api)
    assert s.client(token).whoami()["namespace"] == "default"  # now cached as good
    s.admin.request("DELETE", NS + f"/instances/{iid}")
    assert refused_within(s.client(token), 0.0), "a terminated instance's token still works"


@pytest.mark.needs_postgres
def test_terminate_on_one_replica_is_refused_by_the_other(
    start_server: Callable[..., ServerProc], postgres: Any, aws_api: str
) -> None:
    """Cached as good on both replicas; terminated on a: refused by a at once (its
    own cache forgotten, as over SQLite above) and by b within seconds."""
    db = postgres.new_database()
    env = {"AWS_ENDPOINT_URL": aws_api}
    a = start_server(db_url=db, env=env)
    b = start_server(db_url=db, env=env)
    iid, token = _launch_one(a.admin, aws_api)
    assert a.client(token).whoami()["namespace"] == "default"  # cached on a
    assert b.client(token).whoami()["namespace"] == "default"  # cached on b
    a.admin.request("DELETE", NS + f"/instances/{iid}")
    assert refused_within(a.client(token), 0.0), "a terminated instance's token still works"
    assert refused_within(b.client(token), 5.0), "replica b still accepts the instance's token"
