"""Kube: a Pod (``daemon`` dispatch: it fetches and runs ``nymph``) or a Job
(``direct``: it runs the launch's command) through the official ``kubernetes``
client (the ``kube`` extra), with the lakeshore labels, the ``node_selector`` and
``tolerations`` kwargs, in the ``namespace`` kwarg (default ``default``).

Credentials: ``kubeconfig`` (a secret holding a kubeconfig, YAML text or a mapping;
``context`` picks one of its contexts). A daemon Pod's token goes into a Secret of
its own (``<pod>-token``), read from the environment, never into the Pod spec.
The daemon's folder is an ``emptyDir`` volume: a restarted container finds the
bundle, its key and its certificate there (over TLS its bootstrap token was spent
on that certificate by the first start).
Names derive from the client token, so a retried launch meets ``AlreadyExists``
and reports the object already there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import bootstrap
from .errors import LaunchRejected
from .labels import labels, selector
from .order import LaunchOrder

DAEMON_IMAGE = "python:3.12-slim"
JOB_IMAGE = "busybox:1.36"
TOKEN_ENV = "LAKESHORE_TOKEN"


def available() -> str | None:
    try:
        import kubernetes  # noqa: F401
    except ImportError:
        return "the kubernetes client is not installed"
    return None


def api_client(order: LaunchOrder) -> Any:
    import yaml
    from kubernetes import config

    raw = order.kwargs.get("kubeconfig")
    if raw is None:
        raise LaunchRejected(
            'a Kube provider needs kubeconfig (a secret: --kwarg kubeconfig={"$secret": NAME})'
        )
    if isinstance(raw, str):
        try:
            raw = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise LaunchRejected("kubeconfig is not YAML") from None
    if not isinstance(raw, Mapping):
        raise LaunchRejected("kubeconfig must be a kubeconfig document")
    try:
        return config.new_client_from_config_dict(dict(raw), context=order.kwargs.get("context"))
    except Exception as exc:
        raise LaunchRejected(f"kubeconfig cannot be used: {type(exc).__name__}") from None


def _ns(order: LaunchOrder) -> str:
    return str(order.kwargs.get("namespace") or "default")


def _scheduling(order: LaunchOrder) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(order.kwargs.get("node_selector"), Mapping):
        out["nodeSelector"] = {str(k): str(v) for k, v in order.kwargs["node_selector"].items()}
    if isinstance(order.kwargs.get("tolerations"), list):
        out["tolerations"] = list(order.kwargs["tolerations"])
    return out


NYMPH_DIR = "/var/lib/lakeshore/nymph"


def token_secret(order: LaunchOrder, index: int) -> dict[str, Any]:
    assert order.bootstrap is not None
    name = order.name_for(index)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-token", "labels": labels(order)},
        "type": "Opaque",
        "stringData": {"token": order.bootstrap.tokens[index]},
    }


def pod(order: LaunchOrder, index: int) -> dict[str, Any]:
    """The daemon Pod of the index-th instance (pure)."""
    name = order.name_for(index)
    script = bootstrap.script(
        order,
        index,
        instance_id=name,
        token_env=TOKEN_ENV,
        foreground=True,
        install_dir=NYMPH_DIR,
    )
    container = {
        "name": "nymph",
        "image": str(order.kwargs.get("daemon_image") or DAEMON_IMAGE),
        "command": ["sh", "-c", script],
        "env": [
            {
                "name": TOKEN_ENV,
                "valueFrom": {"secretKeyRef": {"name": f"{name}-token", "key": "token"}},
            }
        ],
        "volumeMounts": [{"name": "nymph", "mountPath": NYMPH_DIR}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels(order)},
        "spec": {
            "restartPolicy": "Always",
            "containers": [container],
            "volumes": [{"name": "nymph", "emptyDir": {}}],  # kept across container restarts
            **_scheduling(order),
        },
    }


def job(order: LaunchOrder, index: int) -> dict[str, Any]:
    """The direct-dispatch Job of the index-th instance (pure)."""
    command = order.run.get("command")
    if not isinstance(command, str) or not command:
        raise LaunchRejected("a direct Kube launch runs a command: pass command in the launch")
    name = order.name_for(index)
    image = order.run.get("image") or order.kwargs.get("image") or JOB_IMAGE
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels(order)},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels(order)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "run", "image": str(image), "command": ["sh", "-c", command]}
                    ],
                    **_scheduling(order),
                },
            },
        },
    }


def _create(fn: Any, namespace: str, body: dict[str, Any]) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        fn(namespace, body)
    except ApiException as exc:
        if exc.status == 409:
            return  # a retried launch: the object is already there
        if exc.status in (400, 401, 403, 404, 422):
            raise LaunchRejected(
                f"the apiserver refused the request ({exc.status} {exc.reason})"
            ) from None
        raise


def validate(order: LaunchOrder) -> None:
    """Offline: a usable kubeconfig, and a command for a direct Job."""
    api_client(order)
    if order.dispatch != "daemon" and not order.run.get("command"):
        raise LaunchRejected("a direct Kube launch runs a command: pass command in the launch")


def launch(order: LaunchOrder) -> dict[str, Any]:
    from kubernetes import client

    api = api_client(order)
    ns = _ns(order)
    core = client.CoreV1Api(api)
    out: list[dict[str, Any]] = []
    for i in range(order.count):
        if order.dispatch == "daemon":
            _create(core.create_namespaced_secret, ns, token_secret(order, i))
            _create(core.create_namespaced_pod, ns, pod(order, i))
            kind = "Pod"
        else:
            _create(client.BatchV1Api(api).create_namespaced_job, ns, job(order, i))
            kind = "Job"
        out.append(
            {"id": order.name_for(i), "state": "Pending", "index": i, "kind": kind, "namespace": ns}
        )
    return {"instances": out, "namespace": ns}


def describe(order: LaunchOrder, ids: Sequence[str]) -> dict[str, str]:
    from kubernetes import client

    api = api_client(order)
    ns = _ns(order)
    sel = selector(order)
    found: dict[str, str] = {}
    for p in client.CoreV1Api(api).list_namespaced_pod(ns, label_selector=sel).items:
        if p.metadata is not None and p.metadata.name:
            found[str(p.metadata.name)] = (p.status.phase if p.status else None) or "Unknown"
    for j in client.BatchV1Api(api).list_namespaced_job(ns, label_selector=sel).items:
        st = j.status
        state = "Succeeded" if st and st.succeeded else "Failed" if st and st.failed else "Running"
        if j.metadata is not None and j.metadata.name:
            found[str(j.metadata.name)] = state
    return {i: found[i] for i in ids if i in found} if ids else found


def terminate(order: LaunchOrder, ids: Sequence[str]) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = api_client(order)
    ns = _ns(order)
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    for name in ids:
        calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = [
            (core.delete_namespaced_pod, (name, ns), {}),
            (core.delete_namespaced_secret, (f"{name}-token", ns), {}),
            (batch.delete_namespaced_job, (name, ns), {"propagation_policy": "Background"}),
        ]
        for fn, args, kwargs in calls:
            try:
                fn(*args, **kwargs)
            except ApiException as exc:
                if exc.status != 404:
                    raise
