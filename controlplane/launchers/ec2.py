"""EC2: ``run_instances`` through boto3, one call per instance so each one carries
its own client token (``<request token>-<i>``: a retried request launches nothing
twice) and, for ``daemon`` dispatch, its own user-data and token.

Credentials: an ``aws_credentials`` kwarg (an ``aws_keypair`` secret, expanded to
``{accessKeyId, secretAccessKey}``); without one a launch is refused, unless the
operator lets launches use the server's own AWS credential chain
(``order.server_credentials``, see own_credentials.py). Endpoints: the engine's settings (``AWS_ENDPOINT_URL_EC2``,
``AWS_ENDPOINT_URL``, ``DREAMLAKE_AWS_ENDPOINT_URL``, ``.dreamrc``), as for the
probes and terraform.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from . import bootstrap, own_credentials
from .errors import LaunchRejected
from .order import LaunchOrder

DEFAULT_INSTANCE_TYPE = "t3.micro"
# Error codes that mean "these credentials or this request are refused", not "AWS is down".
_REFUSED = {
    "AuthFailure",
    "UnauthorizedOperation",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "AccessDenied",
    "OptInRequired",
    "InvalidAMIID.Malformed",
    "InvalidAMIID.NotFound",
    "InvalidParameterValue",
    "InvalidParameterCombination",
    "InvalidKeyPair.NotFound",
    "InvalidGroup.NotFound",
    "InvalidSubnetID.NotFound",
}


def available() -> str | None:
    try:
        import boto3  # noqa: F401
    except ImportError:
        return "boto3 is not installed"
    return None


def _credentials(order: LaunchOrder) -> dict[str, str]:
    creds = order.kwargs.get("aws_credentials")
    if creds is None:
        if order.server_credentials:
            return {}  # the server's own chain, as its operator allows
        raise own_credentials.refused(
            "EC2", "aws_credentials", "an AWS key pair (kind aws_keypair)"
        )
    if (
        not isinstance(creds, Mapping)
        or not isinstance(creds.get("accessKeyId"), str)
        or not isinstance(creds.get("secretAccessKey"), str)
    ):
        raise LaunchRejected(
            "aws_credentials must reference an aws_keypair secret "
            '({"$secret": NAME} of kind aws_keypair, stored as ACCESS_KEY_ID:SECRET_ACCESS_KEY)'
        )
    out = {
        "aws_access_key_id": creds["accessKeyId"],
        "aws_secret_access_key": creds["secretAccessKey"],
    }
    if isinstance(creds.get("sessionToken"), str):
        out["aws_session_token"] = creds["sessionToken"]
    return out


_SESSION: list[Any] = []
_LOCK = threading.Lock()


def client(order: LaunchOrder) -> Any:
    """An EC2 client for the order's region and credentials. Clients come from one
    shared session (it caches the service model; clients are built under a lock, as
    boto3 sessions are not thread-safe) and hold the credentials only for the call."""
    from botocore.config import Config
    from dreamlake.engine.settings import endpoints

    region = order.kwargs.get("region")
    if not isinstance(region, str) or not region:
        raise LaunchRejected("an EC2 provider needs a region kwarg")
    creds = _credentials(order)
    with _LOCK:
        if not _SESSION:
            import boto3

            _SESSION.append(boto3.session.Session())
        return _SESSION[0].client(
            "ec2",
            region_name=region,
            endpoint_url=endpoints.resolve(None).aws.endpoint_for("ec2"),
            config=Config(
                connect_timeout=5,
                read_timeout=30,
                retries={"max_attempts": 3, "mode": "standard"},
                user_agent_extra="lakeshore-launcher",
            ),
            **creds,
        )


def _refused(exc: Exception) -> LaunchRejected | None:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    if code in _REFUSED:
        msg = getattr(exc, "response", {}).get("Error", {}).get("Message", "")
        return LaunchRejected(f"AWS refused the request ({code}): {msg}")
    return None


def _call(fn: Any, **params: Any) -> Any:
    from botocore.exceptions import ClientError

    try:
        return fn(**params)
    except ClientError as exc:
        rejected = _refused(exc)
        if rejected is not None:
            raise rejected from None
        raise


def tags(order: LaunchOrder) -> dict[str, str]:
    """The instance's tags: the managed three, the queue and client token, the mode's."""
    out: dict[str, str] = {}
    mode_tags = order.run.get("tags")
    if isinstance(mode_tags, Mapping):
        out.update({str(k): str(v) for k, v in mode_tags.items()})
    elif isinstance(mode_tags, list):
        for item in mode_tags:
            k, sep, v = str(item).partition("=")
            out[k] = v if sep else "true"
    out.update(order.tags)
    out["lakeshore-client-token"] = order.client_token
    if order.queue:
        out["lakeshore-queue"] = order.queue
    return out


def _image(kw: dict[str, Any]) -> str:
    """The AMI: ``image_id``, or ``ami`` as the ec2 template's decision and the
    Pulumi component call it (``image_id`` wins when both are given)."""
    for key in ("image_id", "ami"):
        image = kw.get(key)
        if isinstance(image, str) and image:
            return image
    raise LaunchRejected("an EC2 launch needs image_id (or ami) on the provider or the mode")


def run_params(order: LaunchOrder, index: int) -> dict[str, Any]:
    """The ``run_instances`` parameters of the index-th instance (pure)."""
    kw = order.kwargs
    image = _image(kw)
    params: dict[str, Any] = {
        "ImageId": image,
        "InstanceType": str(kw.get("instance_type") or DEFAULT_INSTANCE_TYPE),
        "MinCount": 1,
        "MaxCount": 1,
        "ClientToken": f"{order.client_token}-{index}"[:64],
        "TagSpecifications": [
            {
                "ResourceType": "instance",
                "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags(order).items())],
            }
        ],
    }
    if kw.get("key_name"):
        params["KeyName"] = str(kw["key_name"])
    groups = kw.get("security_group") or kw.get("security_groups")
    if groups:
        names = [groups] if isinstance(groups, str) else [str(g) for g in groups]
        if all(g.startswith("sg-") for g in names):
            params["SecurityGroupIds"] = names
        else:
            params["SecurityGroups"] = names
    if kw.get("subnet_id"):
        params["SubnetId"] = str(kw["subnet_id"])
    if kw.get("iam_instance_profile_arn"):
        params["IamInstanceProfile"] = {"Arn": str(kw["iam_instance_profile_arn"])}
    if order.dispatch == "daemon":
        data = bootstrap.script(order, index)
        if len(data.encode()) > bootstrap.USER_DATA_LIMIT:
            raise LaunchRejected(f"the user-data is {len(data.encode())} bytes, over 16 KB")
        params["UserData"] = data
    return params


def validate(order: LaunchOrder) -> None:
    """Offline: what the launch cannot do without."""
    region = order.kwargs.get("region")
    if not isinstance(region, str) or not region:
        raise LaunchRejected("an EC2 provider needs a region kwarg")
    _credentials(order)
    _image(order.kwargs)


def launch(order: LaunchOrder) -> dict[str, Any]:
    ec2 = client(order)
    instances: list[dict[str, Any]] = []
    for i in range(order.count):
        resp = _call(ec2.run_instances, **run_params(order, i))
        for inst in resp.get("Instances", []):
            instances.append(
                {
                    "id": inst["InstanceId"],
                    "state": inst.get("State", {}).get("Name", "pending"),
                    "index": i,
                    "instanceType": inst.get("InstanceType"),
                    "privateIp": inst.get("PrivateIpAddress"),
                }
            )
    return {"instances": instances, "region": order.kwargs.get("region")}


def _filters(order: LaunchOrder) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{k}", "Values": [v]} for k, v in sorted(order.tags.items())]


def describe(order: LaunchOrder, ids: Sequence[str]) -> dict[str, str]:
    """Live state of every tagged instance among ``ids`` (all of them when empty)."""
    ec2 = client(order)
    params: dict[str, Any] = {"Filters": _filters(order)}
    if ids:
        params["InstanceIds"] = list(ids)
    out: dict[str, str] = {}
    paginator = ec2.get_paginator("describe_instances")
    from botocore.exceptions import ClientError

    try:
        pages = list(paginator.paginate(**params))
    except ClientError as exc:
        if "InvalidInstanceID" in str(exc) and ids:
            return {i: describe(order, [i]).get(i, "gone") for i in ids} if len(ids) > 1 else {}
        rejected = _refused(exc)
        if rejected is not None:
            raise rejected from None
        raise
    for page in pages:
        for res in page.get("Reservations", []):
            for inst in res.get("Instances", []):
                out[inst["InstanceId"]] = inst.get("State", {}).get("Name", "unknown")
    return out


def terminate(order: LaunchOrder, ids: Sequence[str]) -> None:
    if ids:
        _call(client(order).terminate_instances, InstanceIds=list(ids))


def suspend(order: LaunchOrder, ids: Sequence[str]) -> None:
    if ids:
        _call(client(order).stop_instances, InstanceIds=list(ids))


def resume(order: LaunchOrder, ids: Sequence[str]) -> None:
    if ids:
        _call(client(order).start_instances, InstanceIds=list(ids))
