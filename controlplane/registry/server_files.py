"""Kwargs that would make the control plane read a file on its own disk (or run one
of its programs): a launcher takes credentials only as content, through secrets.

``server_file_fields(launcher, kwargs)`` lists the dotted kwargs paths that name a
file on the server; a provider write, a launch's merged kwargs and the kwargs after
secrets are decrypted are each refused (422) when it lists any. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SSH_FILES = ("key_file", "known_hosts", "identity_file", "ssh_config")

FILE_KWARGS: dict[str, tuple[str, ...]] = {
    "SSH": _SSH_FILES,
    "SLURM": _SSH_FILES,
    "EC2": (
        "aws_shared_credentials_file",
        "aws_config_file",
        "shared_credentials_file",
        "credentials_file",
        "config_file",
    ),
    "GCE": ("credentials_file", "service_account_file", "key_file"),
    "Kube": ("kubeconfig_path", "kubeconfig_file", "config_file", "token_file"),
}
"""Per launcher, kwargs whose value would be a path on the server: always refused."""

KUBECONFIG_FILE_KEYS: tuple[str, ...] = (
    "certificate-authority",
    "client-certificate",
    "client-key",
    "tokenFile",
    "token-file",
    "exec",
    "auth-provider",
)
"""Keys in a kubeconfig that read a file or run a program where the client runs
(``*-data`` and ``token`` carry content and are fine)."""

GCE_FILE_KEYS: tuple[str, ...] = ("credential_source", "service_account_impersonation_url")
"""Keys of a Google credentials document that read a file, a URL or run a program."""


def _looks_like_path(value: str) -> bool:
    v = value.strip()
    return v.startswith(("/", "~", "./", "../", "file:")) or v.endswith((".json", ".yaml"))


def _walk(value: Any, keys: tuple[str, ...], path: str) -> list[str]:
    found: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            here = f"{path}.{k}"
            if k in keys:
                found.append(here)
            else:
                found.extend(_walk(v, keys, here))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(_walk(v, keys, f"{path}[{i}]"))
    return found


def _kubeconfig(raw: Any) -> list[str]:
    if isinstance(raw, str):
        import yaml

        try:
            doc = yaml.safe_load(raw)
        except (yaml.YAMLError, RecursionError):
            return []  # not a document at all: the launcher says so
        if isinstance(doc, str) and _looks_like_path(doc):
            return ["kwargs.kubeconfig"]
        raw = doc
    return _walk(raw, KUBECONFIG_FILE_KEYS, "kwargs.kubeconfig")


def _gce_credentials(raw: Any) -> list[str]:
    if isinstance(raw, str):
        if raw.lstrip().startswith("{"):
            import json

            try:
                raw = json.loads(raw)
            except ValueError:
                return []
        elif _looks_like_path(raw):
            return ["kwargs.credentials"]
    out = _walk(raw, GCE_FILE_KEYS, "kwargs.credentials")
    if isinstance(raw, Mapping) and raw.get("type") not in (None, "service_account"):
        out.append("kwargs.credentials.type")
    return out


def server_file_fields(launcher: str, kwargs: Mapping[str, Any]) -> list[str]:
    """Every dotted kwargs path in ``kwargs`` that names a file on the server."""
    found = [f"kwargs.{k}" for k in FILE_KWARGS.get(launcher, ()) if kwargs.get(k) is not None]
    if launcher == "Kube" and kwargs.get("kubeconfig") is not None:
        found.extend(_kubeconfig(kwargs["kubeconfig"]))
    if launcher == "GCE" and kwargs.get("credentials") is not None:
        found.extend(_gce_credentials(kwargs["credentials"]))
    return found


def refusal(fields: list[str]) -> str:
    """The 422 detail for ``fields``."""
    return (
        f"{', '.join(fields)}: names a file or program on the control plane's own disk, which "
        "a launcher never reads; give the content instead, through a secret "
        '({"$secret": NAME}): an SSH key as private_key, the host key as text in host_key, '
        "a kubeconfig or a service-account key as a document"
    )
