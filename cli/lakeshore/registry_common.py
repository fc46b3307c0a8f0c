"""What the registry commands (``lakeshore providers | secrets | modes``) share: the
connection options every command takes, the client they build, one request helper
and the ``--kwarg`` / ``--field`` parsers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..completion import namespaces
from .common import fail, fail_from

if TYPE_CHECKING:
    from dreamlake.controlplane.client import Client

ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="LAKESHORE_URL",
        help="Control plane URL (default: http://127.0.0.1:7878).",
    ),
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-N",
        envvar="LAKESHORE_NAMESPACE",
        help="Namespace (default: 'default').",
        autocompletion=namespaces,
    ),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        help="File holding a bearer token (default: LAKESHORE_TOKEN / LAKESHORE_TOKEN_FILE).",
    ),
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Server data directory, for the admin token (default: LAKESHORE_DATA_DIR).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
KwargOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--kwarg", help="KEY=VALUE, repeatable; dotted keys nest (a.b=c); KEY=null deletes."
    ),
]
KwargsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--kwargs-file",
        help="YAML or JSON kwargs; on add the base --kwarg layers on, on update a wholesale replacement.",
    ),
]
FieldOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--field",
        help="KEY=VALUE, repeatable; dotted keys nest (resources.gpu=1); KEY=null deletes.",
    ),
]


def _client(
    server: str | None, namespace: str | None, token_file: Path | None, data_dir: Path | None
) -> Client:
    """Flags first; otherwise the engine's resolution (env, the ``.dreamrc``
    ``lakeshore:`` section, the embedded default and its admin token)."""
    from .options import make_client

    if token_file is not None or data_dir is not None:
        return make_client(server, token_file, data_dir, namespace)
    from dreamlake.controlplane.client import Client
    from dreamlake.engine.world.lakeshore import resolve_control_plane

    cp = resolve_control_plane(Path.cwd())
    if server is not None and server.rstrip("/") != cp.url:
        # the token resolved for cp.url (perhaps this machine's admin token) is not
        # for another server
        return make_client(server, None, None, namespace or cp.namespace)
    return Client(url=cp.url, token=cp.token, namespace=namespace or cp.namespace, ca=cp.ca)


def _ns_path(client: Client, *parts: str) -> str:
    from urllib.parse import quote

    tail = "/".join(quote(p, safe="") for p in parts)
    return f"/api/namespaces/{quote(client.namespace, safe='')}/{tail}"


def _call(
    client: Client,
    method: str,
    *parts: str,
    body: Any = None,
    query: dict[str, Any] | None = None,
    timeout: float | None = None,
    retries: int = 0,
) -> Any:
    """One request under the client's namespace; failures end the command with the
    control plane's own message. With ``retries``: no answer, or the first of these
    requests still being launched (``in_progress``), sends the same request again
    (its client token makes it answer once)."""
    import time

    from dreamlake.controlplane.client import ApiFailure, ControlPlaneError, Unreachable

    attempt = 0
    while True:
        try:
            return client.request(
                method, _ns_path(client, *parts), body, query=query, timeout=timeout
            )
        except (Unreachable, ApiFailure) as exc:
            waiting = isinstance(exc, ApiFailure) and exc.error == "in_progress"
            if attempt >= retries or not (waiting or isinstance(exc, Unreachable)):
                fail_from(exc, client.namespace, client.token)
            attempt += 1
            time.sleep(min(1.0 * attempt, 10.0))
        except ControlPlaneError as exc:
            fail_from(exc, client.namespace, client.token)


def _emit(data: Any, as_json: bool, prose: str) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True) if as_json else prose)


def _kwargs(
    items: list[str] | None, kwargs_file: Path | None, flag: str = "--kwarg"
) -> dict[str, Any]:
    from dreamlake.controlplane.registry.kwargs import KwargsError, build_kwargs

    try:
        return build_kwargs(items or [], kwargs_file, flag=flag)
    except KwargsError as exc:
        in_file = kwargs_file is not None and str(kwargs_file) in str(exc)
        fail(
            str(exc),
            f"fix {kwargs_file} (a YAML or JSON mapping) and re-run"
            if in_file
            else f"fix the {flag} value (KEY=VALUE, dotted keys nest) and re-run",
        )


def _patch(items: list[str] | None, flag: str) -> dict[str, Any]:
    from dreamlake.controlplane.registry.kwargs import KwargsError, assignments_to_patch

    try:
        return assignments_to_patch(items or [], flag=flag)
    except KwargsError as exc:
        fail(str(exc), f"fix the {flag} value (KEY=VALUE, dotted keys nest) and re-run")


def _check_launcher(launcher: str) -> str:
    from dreamlake.controlplane.registry.launchers import LAUNCHERS

    if launcher not in LAUNCHERS:
        fail(
            f"launcher {launcher!r} is not one of {', '.join(LAUNCHERS)} (spelled exactly so)",
            "re-run with --launcher " + "|".join(LAUNCHERS),
        )
    return launcher
