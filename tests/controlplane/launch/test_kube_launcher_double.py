"""The Kube launcher against an in-process TEST DOUBLE of a Kubernetes apiserver (no
apiserver can run here), through the control plane's real app and the official
``kubernetes`` client: the exact Secret, Pod and Job bodies, their labels, node
selector and tolerations, the bearer token from the kubeconfig secret on every
request — and that token in no response and no log line."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from launch_harness import P, RecordingApiDouble, ok

pytest.importorskip("kubernetes", reason="needs the kubernetes client (the kube extra)")

KUBE_TOKEN = "kube-double-bearer-token-0123456789abcdef"


@pytest.fixture
def apiserver() -> Iterator[RecordingApiDouble]:
    objects: dict[tuple[str, str], dict[str, Any]] = {}

    def handler(method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        # /api/v1/namespaces/NS/KIND[/NAME]  or  /apis/batch/v1/namespaces/NS/KIND[/NAME]
        i = parts.index("namespaces")
        kind = parts[i + 2]
        name = parts[i + 3] if len(parts) > i + 3 else None
        if method == "POST":
            key = (kind, body["metadata"]["name"])
            if key in objects:
                return 409, {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "AlreadyExists",
                    "code": 409,
                }
            objects[key] = body
            return 201, body
        if method == "GET" and name is None:
            items = [
                {**o, "status": {"phase": "Running"} if kind == "pods" else {"active": 1}}
                for (k, _), o in objects.items()
                if k == kind
            ]
            return 200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}
        if method == "DELETE" and name is not None:
            gone = objects.pop((kind, name), None)
            if gone is None:
                return 404, {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "NotFound",
                    "code": 404,
                }
            # as an apiserver does: a deleted Pod comes back as itself, the rest as a Status
            if kind == "pods":
                return 200, {**gone, "status": {"phase": "Running"}}
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
        return 404, {"kind": "Status", "code": 404}

    double = RecordingApiDouble(handler)
    yield double
    double.close()


def _kubeconfig(url: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "lab", "cluster": {"server": url}}],
            "users": [{"name": "lakeshore", "user": {"token": KUBE_TOKEN}}],
            "contexts": [
                {"name": "lab", "context": {"cluster": "lab", "user": "lakeshore"}},
            ],
            "current-context": "lab",
        }
    )


def _setup(client: Any, url: str, dispatch: str) -> None:
    ok(
        client.post(
            P + "/secrets", json={"name": "kcfg", "kind": "generic", "value": _kubeconfig(url)}
        ),
        201,
    )
    kwargs = {
        "kubeconfig": {"$secret": "kcfg"},
        "context": "lab",
        "namespace": "batch",
        "node_selector": {"gpu": "h100"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    body = {"name": "lab", "launcher": "Kube", "kwargs": kwargs, "dispatch": dispatch}
    ok(client.post(P + "/providers", json=body), 201)


LABELS = {
    "lakeshore": "true",
    "lakeshore-namespace": "default",
    "lakeshore-provider": "lab",
    "lakeshore-client-token": "k1",
}
SCHEDULING = {
    "nodeSelector": {"gpu": "h100"},
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
}


def test_daemon_pod_with_its_token_in_a_secret(
    app_client: tuple[Any, Any],
    apiserver: RecordingApiDouble,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    client, app = app_client
    _setup(client, apiserver.url, "daemon")
    r = client.post(P + "/launch", json={"provider": "lab", "clientToken": "K1"})
    out = ok(r, 201)
    assert [i["id"] for i in out["instances"]] == ["lakeshore-lab-k1-0"]

    for req in apiserver.requests:
        assert req["headers"]["authorization"] == f"Bearer {KUBE_TOKEN}"
    secret_req, pod_req = apiserver.of("POST")
    assert secret_req["path"] == "/api/v1/namespaces/batch/secrets"
    instance_token = secret_req["body"]["stringData"]["token"]
    assert instance_token.startswith("lks_")
    assert secret_req["body"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "lakeshore-lab-k1-0-token", "labels": LABELS},
        "type": "Opaque",
        "stringData": {"token": instance_token},
    }
    assert pod_req["path"] == "/api/v1/namespaces/batch/pods"
    pod = pod_req["body"]
    (container,) = pod["spec"]["containers"]
    script = container["command"][2]
    container["command"][2] = "<script>"
    assert pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "lakeshore-lab-k1-0", "labels": LABELS},
        "spec": {
            "restartPolicy": "Always",
            "containers": [
                {
                    "name": "nymph",
                    "image": "python:3.12-slim",
                    "command": ["sh", "-c", "<script>"],
                    "env": [
                        {
                            "name": "LAKESHORE_TOKEN",
                            "valueFrom": {
                                "secretKeyRef": {"name": "lakeshore-lab-k1-0-token", "key": "token"}
                            },
                        }
                    ],
                    "volumeMounts": [{"name": "nymph", "mountPath": "/var/lib/lakeshore/nymph"}],
                }
            ],
            "volumes": [{"name": "nymph", "emptyDir": {}}],
            **SCHEDULING,
        },
    }
    assert instance_token not in script and 'printf "%s" "$LAKESHORE_TOKEN" > token' in script
    assert script.rstrip().endswith('exec "$D/run.sh"')
    sha = app.state.daemon_bundle[0]
    assert f"/daemon/{sha}" in script

    # a retry meets AlreadyExists and reports the same pod
    again = ok(client.post(P + "/launch", json={"provider": "lab", "clientToken": "K1"}), 201)
    assert again["replayed"] is True

    listed = ok(client.get(P + "/instances"))
    assert [(i["id"], i["state"]) for i in listed["instances"]] == [
        ("lakeshore-lab-k1-0", "Running")
    ]
    pod_list = apiserver.of("GET", "/api/v1/namespaces/batch/pods")[0]
    assert pod_list["query"]["labelSelector"] == (
        "lakeshore=true,lakeshore-namespace=default,lakeshore-provider=lab"
    )
    ok(client.delete(P + "/instances/lakeshore-lab-k1-0"))
    deleted = {r["path"] for r in apiserver.of("DELETE")}
    assert "/api/v1/namespaces/batch/pods/lakeshore-lab-k1-0" in deleted
    assert "/api/v1/namespaces/batch/secrets/lakeshore-lab-k1-0-token" in deleted
    revoked = client.get(
        P + f"/daemon/{sha}", headers={"Authorization": f"Bearer {instance_token}"}
    )
    assert revoked.status_code == 401

    texts = r.text + json.dumps(again) + json.dumps(listed)
    assert KUBE_TOKEN not in texts and instance_token not in texts
    assert KUBE_TOKEN not in caplog.text


def test_direct_job_runs_the_command(
    app_client: tuple[Any, Any], apiserver: RecordingApiDouble
) -> None:
    client, _ = app_client
    _setup(client, apiserver.url, "direct")
    r = client.post(
        P + "/launch",
        json={
            "provider": "lab",
            "clientToken": "K1",
            "command": "python train.py",
            "runConfig": {"image": "ghcr.io/acme/train:1"},
        },
    )
    ok(r, 201)
    (job_req,) = apiserver.of("POST")
    assert job_req["path"] == "/apis/batch/v1/namespaces/batch/jobs"
    template_spec = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "run",
                "image": "ghcr.io/acme/train:1",
                "command": ["sh", "-c", "python train.py"],
            }
        ],
        **SCHEDULING,
    }
    assert job_req["body"] == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "lakeshore-lab-k1-0", "labels": LABELS},
        "spec": {
            "backoffLimit": 0,
            "template": {"metadata": {"labels": LABELS}, "spec": template_spec},
        },
    }
    # no command: refused before anything reaches the apiserver
    r = client.post(P + "/launch", json={"provider": "lab"})
    assert r.status_code == 422 and "command" in r.json()["detail"]
    assert len(apiserver.of("POST")) == 1
