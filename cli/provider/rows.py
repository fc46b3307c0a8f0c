"""The row CRUD verbs on the ``provider`` group, beside the lifecycle verbs:

    dreamlake provider create -f FILE            # YAML or JSON {name, launcher, kwargs, dispatch?}
    dreamlake provider show NAME [--json]
    dreamlake provider update NAME --kwarg k=v [--kwarg k=null] [--kwargs-file F] [--dispatch D]
    dreamlake provider delete NAME [--yes]       # see provider_day2: one delete for both

They talk to the control plane through the existing client with the registry's
rules (deep-merge on ``--kwarg``, ``--kwargs-file`` replaces, the launcher is
immutable, ``$secret`` markers must name a secret, delete is soft). A name that is
both a lifecycle provider under the root and a row is one provider: ``show`` prints
both halves. The control plane is the one the root's ``.dreamrc`` / environment
names, as for every other verb.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from ..groups import provider_app
from ..options import DreamDir, Json, NameArg, NameOpt, name_problem

if TYPE_CHECKING:
    from dreamlake.controlplane.client import Client


def fail(
    message: str,
    command: str,
    as_json: bool,
    kind: str = "usage",
    file: Path | None = None,
    approval: bool = False,
) -> NoReturn:
    """rc 1, and with --json still one JSON document carrying a next action (with
    ``file``: fix that file, then run ``command``)."""
    if as_json:
        nxt: dict[str, Any] = {"kind": "run", "command": command}
        if file is not None:
            nxt = {"kind": "edit_then_continue", "file": str(file), "command": command}
        if approval:
            nxt["approval"] = True
        doc = {"error": message, "kind": kind, "nextAction": nxt}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        edit = f"edit {file}, then " if file is not None else ""
        mark = "   # needs a person's yes: it deletes" if approval else ""
        sys.stderr.write(f"✗ {message}\nnext: {edit}{command}{mark}\n")
    raise typer.Exit(1)


def _client(dream_dir: str | None) -> Client:
    from dreamlake.controlplane.client import Client
    from dreamlake.engine.world.lakeshore import resolve_control_plane
    from dreamlake.engine.world.paths import find_root

    cp = resolve_control_plane(find_root(dream_dir).path)
    return Client.from_control_plane(cp, timeout=10)


def _request(client: Client, as_json: bool, again: str, fn: Any, *args: Any) -> Any:
    from dreamlake.controlplane.client import ApiFailure, Unreachable

    try:
        return fn(*args)
    except Unreachable as exc:
        fail(exc.message, "lakeshore serve   # or set LAKESHORE_URL", as_json, "no_lakeshore")
    except ApiFailure as exc:
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        kind = {404: "unknown_provider", 409: "conflict", 422: "invalid"}.get(
            exc.status, "lakeshore"
        )
        fail(f"{exc.status} {exc.error}: {detail}", again, as_json, kind)


def load_row_file(path: Path) -> dict[str, Any]:
    """``{name, launcher, kwargs, dispatch?}`` from a YAML or JSON file (the wire shape)."""
    from dreamlake.engine.settings import yamlload
    from dreamlake.engine.settings.readers import read_text

    text = read_text(path)  # bounded in size; not UTF-8 is a ValueError naming the file
    data = yamlload.safe_load(text)  # JSON is YAML; bounded in depth and alias expansion
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold one mapping {{name, launcher, kwargs, dispatch?}}")
    unknown = sorted(set(data) - {"name", "launcher", "kwargs", "dispatch", "tunnel", "hidden"})
    if unknown:
        raise ValueError(
            f"{path}: unknown field(s) {', '.join(unknown)}; the shape is "
            "{name, launcher, kwargs, dispatch?}"
        )
    for key in ("name", "launcher"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ValueError(f"{path}: {key} is required (a string)")
    if data.get("kwargs") is not None and not isinstance(data["kwargs"], dict):
        raise ValueError(f"{path}: kwargs must be a mapping")
    return data


def create_from_file(file: Path, dream_dir: str | None, as_json: bool) -> NoReturn:
    """``provider create -f FILE``: register one row."""
    again = f"dreamlake provider create -f {shlex.quote(str(file))}"
    try:
        body = load_row_file(file)
    except (OSError, ValueError) as exc:
        fail(str(exc), again, as_json, file=file.absolute())
    except Exception as exc:  # a YAML syntax error, or past the bounds
        fail(f"{file} is not YAML or JSON: {exc}", again, as_json, file=file.absolute())
    from dreamlake.controlplane.registry.launchers import LAUNCHERS

    if body["launcher"] not in LAUNCHERS:
        fail(
            f"launcher {body['launcher']!r} is not one of {', '.join(LAUNCHERS)} (spelled exactly so)",
            again,
            as_json,
            file=file.absolute(),
        )
    client = _client(dream_dir)
    row = _request(client, as_json, again, client.create_provider_row, body)
    if as_json:
        sys.stdout.write(json.dumps(row, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(
            f"✓ created provider row {row['name']} ({row['launcher']}, dispatch {row['dispatch']})"
            f" in namespace {row.get('namespace', client.namespace)}\n"
            f"next: dreamlake provider show {row['name']}\n"
        )
    raise typer.Exit(0)


@provider_app.command("show")
def show_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """One provider: its row in the control plane and, when it lives under this root,
    its lifecycle status."""
    from dreamlake.controlplane.client import ApiFailure, Unreachable
    from dreamlake.engine.world.paths import find_root

    n = name or name_arg
    if not n:
        fail("a provider name is required", "dreamlake provider list", as_json)
    bad = name_problem(n)
    if bad is not None:  # never put into a path, a request or a command
        fail(bad, "dreamlake provider list", as_json)
    root = find_root(dream_dir)
    lifecycle = None
    if (root.provider_dir(n) / "provider.json").is_file():
        from dreamlake.engine.verbs.status import status

        lifecycle = status(n, dream_dir=dream_dir, probe=False)
    client = _client(dream_dir)
    row: dict[str, Any] | None = None
    problem = None
    try:
        row = client.provider_row(n)
    except ApiFailure as exc:
        if exc.status != 404 or lifecycle is None:
            detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
            problem = f"{exc.status} {exc.error}: {detail}"
    except Unreachable as exc:
        problem = exc.message
    if row is None and lifecycle is None:
        fail(
            problem or f"no provider named {n!r}",
            "dreamlake provider list",
            as_json,
            "unknown_provider",
        )
    if as_json:
        doc: dict[str, Any] = dict(row or {"name": n})
        if lifecycle is not None:
            doc["lifecycle"] = lifecycle.to_wire()
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        raise typer.Exit(0)
    if row is not None:
        from dreamlake.controlplane.registry.render import provider_detail

        sys.stdout.write(provider_detail(row) + "\n")
    else:
        sys.stdout.write(
            f"no row in the control plane for '{n}'" + (f" ({problem})" if problem else "") + "\n"
        )
    if lifecycle is not None:
        from ..render import render

        sys.stdout.write(f"lifecycle: {lifecycle.status}\n" + render(lifecycle) + "\n")
    raise typer.Exit(0)


@provider_app.command("update")
def update_cmd(
    name_arg: NameArg = None,
    name: NameOpt = None,
    kwarg: Annotated[
        list[str] | None,
        typer.Option("--kwarg", help="KEY=VALUE, repeatable; dotted keys nest; KEY=null deletes."),
    ] = None,
    kwargs_file: Annotated[
        Path | None,
        typer.Option("--kwargs-file", help="YAML or JSON kwargs: replaces them wholesale."),
    ] = None,
    dispatch: Annotated[
        str | None, typer.Option("--dispatch", help='direct or daemon; "" returns to the default.')
    ] = None,
    launcher: Annotated[str | None, typer.Option("--launcher", hidden=True)] = None,
    dream_dir: DreamDir = None,
    as_json: Json = False,
) -> None:
    """Change a provider row: --kwarg deep-merges (KEY=null deletes), --kwargs-file replaces;
    the launcher is immutable."""
    from dreamlake.controlplane.registry.kwargs import (
        KwargsError,
        assignments_to_patch,
        build_kwargs,
        load_kwargs_file,
    )

    n = name or name_arg
    if not n:
        fail("a provider name is required", "dreamlake provider list", as_json)
    bad = name_problem(n)
    if bad is not None:  # never put into a path, a request or a command
        fail(bad, "dreamlake provider list", as_json)
    again = f"dreamlake provider update {n} --kwarg KEY=VALUE"
    if launcher is not None:
        fail(
            "the launcher is immutable; changing it means deleting the row, then creating it "
            "again with `dreamlake provider create -f FILE`",
            f"dreamlake provider delete {shlex.quote(n)} --yes",
            as_json,
            approval=True,  # it deletes: a person's yes, never an agent's own step
        )
    body: dict[str, Any] = {}
    if kwargs_file is not None:
        try:
            load_kwargs_file(kwargs_file)
        except KwargsError as exc:  # the file to fix, then the same update again
            retry = f"dreamlake provider update {shlex.quote(n)} --kwargs-file {shlex.quote(str(kwargs_file))}"
            fail(str(exc), retry, as_json, file=kwargs_file.absolute())
    try:
        if kwargs_file is not None:
            body["kwargs"] = build_kwargs(kwarg or [], kwargs_file, flag="--kwarg")
        elif kwarg:
            body["kwargsPatch"] = assignments_to_patch(kwarg, flag="--kwarg")
    except KwargsError as exc:
        fail(str(exc), again, as_json)
    if dispatch is not None:
        if dispatch not in ("", "direct", "daemon"):
            fail(f'--dispatch {dispatch!r} is not direct or daemon ("" resets it)', again, as_json)
        body["dispatch"] = dispatch or None
    if not body:
        fail("nothing to update", again, as_json)
    client = _client(dream_dir)
    row = _request(client, as_json, again, client.update_provider_row, n, body)
    if as_json:
        sys.stdout.write(json.dumps(row, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(
            f"✓ updated provider row {row['name']}\nnext: dreamlake provider show {n}\n"
        )
    raise typer.Exit(0)
