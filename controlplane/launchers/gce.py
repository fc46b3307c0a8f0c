"""GCE: ``instances.insert`` through google-cloud-compute (the ``gcp`` extra), REST
transport. One insert per instance, named ``lakeshore-<provider>-<token>-<i>``,
with a ``requestId`` derived from the client token (GCE ignores a repeated request
id, so a retried launch creates nothing twice), the lakeshore labels, and for
``daemon`` dispatch a ``startup-script`` that fetches and starts the daemon.

Credentials: ``credentials`` is a service-account key (a JSON secret: a mapping or
its text) or an OAuth access token (any other string); without it a launch is
refused, unless the operator lets launches use the server's application-default
credentials (``order.server_credentials``, see own_credentials.py). ``LAKESHORE_GCE_ENDPOINT`` points the client at
another API endpoint (a private one, or a test double on 127.0.0.1).
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from . import bootstrap, own_credentials
from .errors import LaunchRejected
from .labels import label_value, labels
from .order import LaunchOrder

ENDPOINT_ENV = "LAKESHORE_GCE_ENDPOINT"
SCOPES = ("https://www.googleapis.com/auth/compute",)
DEFAULT_MACHINE_TYPE = "e2-small"
DEFAULT_IMAGE = "projects/debian-cloud/global/images/family/debian-12"
_REQUEST_NS = uuid.UUID("5b0c3c4e-6a59-4d5e-9a55-6c616b65736f")


def available() -> str | None:
    try:
        from google.cloud import compute_v1  # noqa: F401
    except ImportError:
        return "google-cloud-compute is not installed"
    return None


def credentials(order: LaunchOrder) -> Any:
    raw = order.kwargs.get("credentials")
    if raw is None:
        if order.server_credentials:
            return None  # application-default credentials, as the operator allows
        raise own_credentials.refused(
            "GCE", "credentials", "a service-account key (JSON) or an access token"
        )
    info: Any = raw
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            info = json.loads(raw)
        except ValueError:
            raise LaunchRejected(
                "credentials is neither a service-account key nor a token"
            ) from None
    if isinstance(info, Mapping):
        from google.oauth2 import service_account

        try:
            return service_account.Credentials.from_service_account_info(
                dict(info), scopes=list(SCOPES)
            )
        except (ValueError, KeyError) as exc:
            raise LaunchRejected(
                f"credentials is not a usable service-account key: {exc}"
            ) from None
    if isinstance(info, str) and info.strip():
        from google.oauth2.credentials import Credentials

        return Credentials(token=info.strip())
    raise LaunchRejected("credentials must be a service-account key or an access token")


def client(order: LaunchOrder) -> Any:
    from google.api_core.client_options import ClientOptions
    from google.cloud import compute_v1

    endpoint = os.environ.get(ENDPOINT_ENV)
    opts = ClientOptions(api_endpoint=endpoint) if endpoint else None
    return compute_v1.InstancesClient(
        credentials=credentials(order), client_options=opts, transport="rest"
    )


def _where(order: LaunchOrder) -> tuple[str, str]:
    project, zone = order.kwargs.get("project"), order.kwargs.get("zone")
    if not isinstance(project, str) or not isinstance(zone, str) or not project or not zone:
        raise LaunchRejected("a GCE provider needs project and zone kwargs")
    return project, zone


def request_id(order: LaunchOrder, index: int) -> str:
    return str(
        uuid.uuid5(_REQUEST_NS, f"{order.namespace}/{order.provider}/{order.client_token}-{index}")
    )


def instance_body(order: LaunchOrder, index: int) -> dict[str, Any]:
    """The ``Instance`` resource of the index-th instance, as the API's JSON (pure)."""
    kw = order.kwargs
    _, zone = _where(order)
    name = order.name_for(index)
    machine = str(kw.get("machine_type") or DEFAULT_MACHINE_TYPE)
    body: dict[str, Any] = {
        "name": name,
        "machineType": machine if "/" in machine else f"zones/{zone}/machineTypes/{machine}",
        "labels": labels(order),
        "disks": [
            {
                "boot": True,
                "autoDelete": True,
                "initializeParams": {"sourceImage": str(kw.get("image") or DEFAULT_IMAGE)},
            }
        ],
        "networkInterfaces": [
            {
                "network": str(kw.get("network") or "global/networks/default"),
                "accessConfigs": [{"name": "External NAT", "type": "ONE_TO_ONE_NAT"}],
            }
        ],
    }
    sa = kw.get("service_account")
    if isinstance(sa, str) and sa:
        body["serviceAccounts"] = [
            {"email": sa, "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}
        ]
    elif isinstance(sa, Mapping):
        body["serviceAccounts"] = [dict(sa)]
    if order.dispatch == "daemon":
        script = bootstrap.script(order, index, instance_id=name)
        body["metadata"] = {"items": [{"key": "startup-script", "value": script}]}
    return body


def _call(fn: Any, **params: Any) -> Any:
    from google.api_core import exceptions as gexc

    try:
        return fn(**params)
    except (gexc.Unauthorized, gexc.Forbidden, gexc.BadRequest) as exc:
        raise LaunchRejected(f"Google Cloud refused the request: {exc.message}") from None


def validate(order: LaunchOrder) -> None:
    """Offline: project, zone and usable credentials."""
    _where(order)
    credentials(order)


def launch(order: LaunchOrder) -> dict[str, Any]:
    from google.cloud import compute_v1

    project, zone = _where(order)
    api = client(order)
    out: list[dict[str, Any]] = []
    for i in range(order.count):
        resource = compute_v1.Instance.from_json(json.dumps(instance_body(order, i)))
        request = compute_v1.InsertInstanceRequest(
            project=project, zone=zone, instance_resource=resource, request_id=request_id(order, i)
        )
        _call(api.insert, request=request)
        out.append({"id": resource.name, "state": "PROVISIONING", "index": i, "zone": zone})
    return {"instances": out, "project": project, "zone": zone}


def describe(order: LaunchOrder, ids: Sequence[str]) -> dict[str, str]:
    project, zone = _where(order)
    flt = " AND ".join(f"labels.{k}={label_value(v)}" for k, v in sorted(order.tags.items()))
    # GCE's TERMINATED is a stopped instance, not a deleted one
    from google.cloud import compute_v1

    request = compute_v1.ListInstancesRequest(project=project, zone=zone, filter=flt)
    found = {
        inst.name: "STOPPED" if inst.status == "TERMINATED" else inst.status
        for inst in _call(client(order).list, request=request)
    }
    return {i: found[i] for i in ids if i in found} if ids else found


def terminate(order: LaunchOrder, ids: Sequence[str]) -> None:
    from google.api_core import exceptions as gexc

    project, zone = _where(order)
    api = client(order)
    for name in ids:
        with contextlib.suppress(gexc.NotFound):
            _call(api.delete, project=project, zone=zone, instance=name)


def suspend(order: LaunchOrder, ids: Sequence[str]) -> None:
    project, zone = _where(order)
    api = client(order)
    for name in ids:
        _call(api.stop, project=project, zone=zone, instance=name)


def resume(order: LaunchOrder, ids: Sequence[str]) -> None:
    project, zone = _where(order)
    api = client(order)
    for name in ids:
        _call(api.start, project=project, zone=zone, instance=name)
